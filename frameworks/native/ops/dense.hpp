#pragma once
// Whole tensors as contiguous row-major arrays of the compute type, for the
// kernels that index in several dimensions at once (convolution, pooling,
// LRN). The common case, a contiguous f32/f64 view, is used in place; any
// other view (strided, or f16/bf16 storage) is converted once into scratch,
// in parallel, so the kernel itself is written for one layout and one type.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "frameworks/native/ops/float_rows.hpp"
#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"

namespace xylem::native {

// Elements converted per parallel chunk.
inline constexpr std::int64_t kDenseGrain = 32 * 1024;

template <DType D>
[[nodiscard]] bool usable_in_place(const plugin::TensorArg& t) noexcept {
  return std::is_same_v<StorageType<D>, ComputeType<D>> && t.view.is_contiguous();
}

// An input tensor, read-only.
template <DType D>
class DenseIn {
 public:
  using T = ComputeType<D>;
  explicit DenseIn(const plugin::TensorArg& t) {
    if constexpr (std::is_same_v<StorageType<D>, T>) {
      if (t.view.is_contiguous()) {
        data_ = element_ptr<const T>(t);
        return;
      }
    }
    scratch_ = std::make_unique_for_overwrite<T[]>(std::size_t(std::max<std::int64_t>(1, t.view.numel())));
    T* out = scratch_.get();
    const StorageType<D>* src = element_ptr<const StorageType<D>>(t);
    const auto layout = make_layout<1>({&t.view});
    const std::int64_t stride = layout.inner_stride(0);
    parallel_runs(layout, kDenseGrain,
                  [&](const std::array<std::int64_t, 1>& offsets, std::int64_t count, std::int64_t first) {
                    load_row<D>(src + offsets[0], stride, count, out + first);
                  });
    data_ = out;
  }
  [[nodiscard]] const T* data() const noexcept { return data_; }

 private:
  std::unique_ptr<T[]> scratch_;
  const T* data_ = nullptr;
};

// An output tensor, write-only: the kernel writes data(), then commit()
// rounds and scatters it into the view when scratch was needed.
template <DType D>
class DenseOut {
 public:
  using T = ComputeType<D>;
  explicit DenseOut(const plugin::TensorArg& t) : target_(t) {
    if (usable_in_place<D>(t)) {
      data_ = element_ptr<T>(t);
      return;
    }
    scratch_ = std::make_unique_for_overwrite<T[]>(std::size_t(std::max<std::int64_t>(1, t.view.numel())));
    data_ = scratch_.get();
  }
  [[nodiscard]] T* data() const noexcept { return data_; }

  void commit() const {
    if (!scratch_) return;
    const T* in = scratch_.get();
    StorageType<D>* dst = element_ptr<StorageType<D>>(target_);
    const auto layout = make_layout<1>({&target_.view});
    const std::int64_t stride = layout.inner_stride(0);
    parallel_runs(layout, kDenseGrain,
                  [&](const std::array<std::int64_t, 1>& offsets, std::int64_t count, std::int64_t first) {
                    store_row<D>(in + first, count, dst + offsets[0], stride);
                  });
  }

 private:
  const plugin::TensorArg& target_;
  std::unique_ptr<T[]> scratch_;
  T* data_ = nullptr;
};

}  // namespace xylem::native
