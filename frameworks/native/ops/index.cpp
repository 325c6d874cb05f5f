// index::check, index::gather and index::scatter natively (op.hpp). Gather
// and assigning scatter move bits, so one kernel per element size serves
// every dtype; the accumulating scatter computes in each float dtype's
// compute type. A scatter walks columns (every position but the axis) in
// parallel and each column along the axis in order: repeated indices fall
// in one column, so no two threads write one element and the result is
// the same on every run.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "frameworks/native/ops/convert.hpp"
#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"
#include "xylem/plugin/bits.hpp"
#include "xylem/plugin/index.hpp"

namespace xylem::native {
namespace {

using plugin::OpCall;
using plugin::OpId;

// Elements per task: enough that the split costs nothing next to the work.
constexpr std::int64_t kGrain = 64 * 1024;

template <class I>
void check_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::index_check>(call);
  const I* index = element_ptr<const I>(a.index);
  const std::int64_t n = a.n;
  const auto layout = make_layout<1>({&a.index.view});
  const std::int64_t s = layout.inner_stride(0);
  std::atomic<bool> bad{false};
  parallel_runs(layout, kGrain, [&](const std::array<std::int64_t, 1>& o, std::int64_t count, std::int64_t) {
    const I* p = index + o[0];
    // Without a branch per element: a negative index is a huge unsigned one.
    bool any = false;
    for (std::int64_t j = 0; j < count; ++j) any |= std::uint64_t(std::int64_t(p[j * s])) >= std::uint64_t(n);
    if (any) bad.store(true, std::memory_order_relaxed);
  });
  if (bad.load()) *element_ptr<std::int32_t>(a.flag) = 1;
}

template <class Word, class I>
void gather_as(const plugin::TensorArg& x, const plugin::TensorArg& index, const plugin::TensorArg& y, int axis) {
  const Layout starts = plugin::line_starts(x.view, index.view, axis);
  const auto layout = make_layout<3>({&index.view, &y.view, &starts});
  const std::int64_t n = x.view.dims()[std::size_t(axis)], step = x.view.strides()[std::size_t(axis)];
  const std::int64_t si = layout.inner_stride(0), sy = layout.inner_stride(1), sx = layout.inner_stride(2);
  const I* ip = element_ptr<const I>(index);
  const Word* xp = element_ptr<const Word>(x);
  Word* yp = element_ptr<Word>(y);
  parallel_runs(layout, kGrain, [&](const std::array<std::int64_t, 3>& o, std::int64_t count, std::int64_t) {
    const I* in = ip + o[0];
    Word* to = yp + o[1];
    const Word* from = xp + o[2];
    if (si == 0 && sy == 1 && sx == 1) {
      // One index for the whole run (an embedding row, an index_select
      // slice): a row copy.
      const std::int64_t v = in[0];
      if (v >= 0 && v < n) {
        std::memcpy(to, from + v * step, std::size_t(count) * sizeof(Word));
      } else {
        std::memset(to, 0, std::size_t(count) * sizeof(Word));
      }
      return;
    }
    const auto within = [n](std::int64_t v) { return std::uint64_t(v) < std::uint64_t(n); };
    if (sx == 0 && si == 1 && sy == 1) {
      // One line of x for the whole run, index and y dense
      // (take_along_axis on the last axis): a table look-up.
      for (std::int64_t j = 0; j < count; ++j) {
        const std::int64_t v = in[j];
        to[j] = within(v) ? from[v * step] : Word{};
      }
      return;
    }
    for (std::int64_t j = 0; j < count; ++j) {
      const std::int64_t v = in[j * si];
      to[j * sy] = within(v) ? from[j * sx + v * step] : Word{};
    }
  });
}

template <class Word>
void gather_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::index_gather>(call);
  const int axis = int(a.axis);
  if (a.index.dtype == DType::i32) return gather_as<Word, std::int32_t>(a.x, a.index, a.y, axis);
  gather_as<Word, std::int64_t>(a.x, a.index, a.y, axis);
}

// T: the element's type; Sum: whether it accumulates (T a float type).
template <class T, bool Sum, class I>
void scatter_as(const plugin::args::index_scatter<plugin::TensorArg>& a) {
  const int axis = int(a.axis);
  const auto ax = std::size_t(axis);
  const Layout ic = plugin::columns(a.index.view, axis), sc = plugin::columns(a.src.view, axis);
  const Layout yc = plugin::columns(plugin::line_starts(a.y.view, a.index.view, axis), axis);
  const auto layout = make_layout<3>({&ic, &sc, &yc});
  const std::int64_t k = a.index.view.dims()[ax], n = a.y.view.dims()[ax];
  const std::int64_t is = a.index.view.strides()[ax], ss = a.src.view.strides()[ax], ys = a.y.view.strides()[ax];
  const std::int64_t ci = layout.inner_stride(0), cs = layout.inner_stride(1), cy = layout.inner_stride(2);
  const std::int64_t skip = a.skip;
  const I* ip = element_ptr<const I>(a.index);
  const T* sp = element_ptr<const T>(a.src);
  T* yp = element_ptr<T>(a.y);
  // At least a few hundred columns per task, so that each step along the
  // axis reads a stretch of src (a row of an embedding gradient), not a word.
  const std::int64_t grain = std::max<std::int64_t>(256, kGrain / std::max<std::int64_t>(k, 1));
  const auto put = [&](T& dst, const T& value) {
    if constexpr (Sum) {
      dst = from_compute<T>(to_compute(dst) + to_compute(value));
    } else {
      dst = value;
    }
  };
  const auto within = [&](std::int64_t v) { return v != skip && std::uint64_t(v) < std::uint64_t(n); };
  // Index and src dense along the axis (take_along_axis's put and add on
  // the last axis): each column in turn, its line read straight through.
  // Walking across columns there would read one word per line of index
  // and src at every step.
  if (std::abs(is) + std::abs(ss) < std::abs(ci) + std::abs(cs)) {
    parallel_runs(layout, grain, [&](const std::array<std::int64_t, 3>& o, std::int64_t count, std::int64_t) {
      for (std::int64_t c = 0; c < count; ++c) {
        const I* in = ip + o[0] + c * ci;
        const T* from = sp + o[1] + c * cs;
        T* to = yp + o[2] + c * cy;
        for (std::int64_t j = 0; j < k; ++j) {
          const std::int64_t v = in[j * is];
          if (within(v)) put(to[v * ys], from[j * ss]);
        }
      }
    });
    return;
  }
  // Along the axis outside, across the run's columns inside: each column
  // still sees its indices in order, and a row of the run (an embedding
  // gradient's row of dy) is read while it is in cache.
  parallel_runs(layout, grain, [&](const std::array<std::int64_t, 3>& o, std::int64_t count, std::int64_t) {
    for (std::int64_t j = 0; j < k; ++j) {
      const I* in = ip + o[0] + j * is;
      const T* from = sp + o[1] + j * ss;
      T* to = yp + o[2];
      for (std::int64_t c = 0; c < count; ++c) {
        const std::int64_t v = in[c * ci];
        if (within(v)) put(to[c * cy + v * ys], from[c * cs]);
      }
    }
  });
}

template <class T, bool Sum>
void scatter_with(const plugin::args::index_scatter<plugin::TensorArg>& a) {
  if (a.index.dtype == DType::i32) return scatter_as<T, Sum, std::int32_t>(a);
  scatter_as<T, Sum, std::int64_t>(a);
}

// Word: the bits every dtype of its size moves as; Float: the float type
// accumulated in, or void for dtypes that only assign.
template <class Word, class Float>
void scatter_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::index_scatter>(call);
  if constexpr (!std::is_void_v<Float>) {
    if (a.accumulate) return scatter_with<Float, true>(a);
  } else {
    if (a.accumulate)
      throw Error(ErrorCode::unsupported, "index::scatter: accumulating " + std::string(name(a.y.dtype)));
  }
  scatter_with<Word, false>(a);
}

}  // namespace

void register_index(KernelTable& table) {
  table.set(OpId::index_check, DType::i32, &check_kernel<std::int32_t>);
  table.set(OpId::index_check, DType::i64, &check_kernel<std::int64_t>);
#define XYLEM_NATIVE_GATHER(e, n, bytes, f)                                              \
  table.set(OpId::index_gather, DType::e, &gather_kernel<plugin::BitsOf<bytes>::type>);          \
  if constexpr (!f) table.set(OpId::index_scatter, DType::e, &scatter_kernel<plugin::BitsOf<bytes>::type, void>);
  XYLEM_DTYPES(XYLEM_NATIVE_GATHER)
#undef XYLEM_NATIVE_GATHER
  for_float_types([&]<class T>(std::type_identity<T>, DType dtype) {
    table.set(OpId::index_scatter, dtype, &scatter_kernel<typename plugin::BitsOf<sizeof(T)>::type, T>);
  });
}

}  // namespace xylem::native
