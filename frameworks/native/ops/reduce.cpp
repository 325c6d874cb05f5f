// math::reduce natively: y[o, i] = reduce over j of x[o, j, i] for sum,
// mean, max, min, argmax, argmin and var, f16/bf16/f32/f64, any strides;
// sum, max, min, argmax and argmin of i32 and i64 (IntReduction below).
//
// Two shapes of work. Rows (each output reduces a dense run along j, or
// inner == 1): outputs are split further into segments of kSegment elements
// so one long row still spreads over every core, and the segments' partial
// results are combined (Chan's formula for var). Columns (inner > 1 with
// j strided): each task accumulates a block of kWidth columns row by row in
// vector registers, with unit-stride inner loops. The vector loops are in
// reduce_simd-inl.h (best SIMD target chosen at run time).

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3  // as in elementwise.cpp: saves compile time
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "frameworks/native/ops/reduce_simd-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// After highway.h: the static target's copy.
#include "frameworks/native/ops/reduce_simd-inl.h"

#if HWY_ONCE
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"
#include "xylem/plugin/math.h"

namespace xylem::native {

#define XYLEM_NATIVE_REDUCE_EXPORTS(Suffix) \
  HWY_EXPORT(RowSum##Suffix);               \
  HWY_EXPORT(RowSumSq##Suffix);             \
  HWY_EXPORT(RowMax##Suffix);               \
  HWY_EXPORT(RowMin##Suffix);               \
  HWY_EXPORT(RowFind##Suffix);              \
  HWY_EXPORT(ColumnAccumulate##Suffix);
XYLEM_NATIVE_REDUCE_EXPORTS(F16)
XYLEM_NATIVE_REDUCE_EXPORTS(BF16)
XYLEM_NATIVE_REDUCE_EXPORTS(F32)
XYLEM_NATIVE_REDUCE_EXPORTS(F64)
#undef XYLEM_NATIVE_REDUCE_EXPORTS

namespace {

using plugin::OpCall;
using plugin::OpId;

// Vector loops of one storage type, through the best target.
#define XYLEM_NATIVE_REDUCE_LOOPS(Name, Suffix, Type)                                                       \
  struct Name {                                                                                             \
    using T = Type;                                                                                         \
    using C = ComputeOf<T>;                                                                                 \
    static double sum(const T* x, std::size_t n, double shift) { return HWY_DYNAMIC_DISPATCH(RowSum##Suffix)(x, n, shift); } \
    static double sum_sq(const T* x, std::size_t n, double shift) {                                        \
      return HWY_DYNAMIC_DISPATCH(RowSumSq##Suffix)(x, n, shift);                                          \
    }                                                                                                       \
    static C max(const T* x, std::size_t n) { return HWY_DYNAMIC_DISPATCH(RowMax##Suffix)(x, n); }         \
    static C min(const T* x, std::size_t n) { return HWY_DYNAMIC_DISPATCH(RowMin##Suffix)(x, n); }         \
    static std::size_t find(const T* x, std::size_t n, C v) { return HWY_DYNAMIC_DISPATCH(RowFind##Suffix)(x, n, v); } \
    static void columns(int kind, const T* x, std::int64_t row_stride, std::size_t rows, std::size_t w,   \
                        const C* shift, C* acc) {                                                           \
      HWY_DYNAMIC_DISPATCH(ColumnAccumulate##Suffix)(kind, x, row_stride, rows, w, shift, acc);            \
    }                                                                                                       \
  };
XYLEM_NATIVE_REDUCE_LOOPS(LoopsF16, F16, hwy::float16_t)
XYLEM_NATIVE_REDUCE_LOOPS(LoopsBF16, BF16, hwy::bfloat16_t)
XYLEM_NATIVE_REDUCE_LOOPS(LoopsF32, F32, float)
XYLEM_NATIVE_REDUCE_LOOPS(LoopsF64, F64, double)
#undef XYLEM_NATIVE_REDUCE_LOOPS

// Elements per row segment (256 KiB of f32: a task's worth, L2-resident for
// var's second pass over it).
constexpr std::int64_t kSegment = 64 * 1024;
// Columns per column task: a few KiB of accumulators, kept in L1.
constexpr std::int64_t kWidth = 512;
// Column kinds of ColumnAccumulate.
enum { kColSum = 0, kColSumSq = 1, kColMax = 2, kColMin = 3 };

bool is_arg(int code) { return code == XY_RED_ARGMAX || code == XY_RED_ARGMIN; }
bool wants_max(int code) { return code == XY_RED_MAX || code == XY_RED_ARGMAX; }

// What one segment of a row contributes.
struct Partial {
  double sum = 0, m2 = 0;  // sum; var: sum of squared deviations from the segment's mean
  double extreme = 0;      // max/min value (NaN propagating)
  std::int64_t index = 0;  // arg*: the first index of `extreme` (global)
  std::int64_t count = 0;
};

// Combines b (a later segment) into a.
void combine(Partial& a, const Partial& b, int code) {
  if (code == XY_RED_VAR) {
    const double n = double(a.count + b.count), delta = b.sum / double(b.count) - a.sum / double(a.count);
    a.m2 += b.m2 + delta * delta * double(a.count) * double(b.count) / n;
  } else if (code != XY_RED_SUM && code != XY_RED_MEAN) {
    const bool a_nan = a.extreme != a.extreme, b_nan = b.extreme != b.extreme;
    const bool take = !a_nan && (b_nan || (wants_max(code) ? b.extreme > a.extreme : b.extreme < a.extreme));
    if (take) a.extreme = b.extreme, a.index = b.index;
  }
  a.sum += b.sum;
  a.count += b.count;
}

// The result for r elements from the combined partial, as a double.
double finish(const Partial& p, int code, std::int64_t r, std::int64_t correction) {
  switch (code) {
    case XY_RED_SUM: return p.sum;
    case XY_RED_MEAN: return p.sum / double(r);
    case XY_RED_VAR: return p.m2 / double(std::max<std::int64_t>(0, r - correction));  // <= 0: Inf or 0/0
    default: return p.extreme;
  }
}

// A call's [outer, r, inner] view of x and [outer, inner] view of y, and
// which shape of work it is: rows (each output reduces a dense run, or
// inner == 1) or columns.
struct Geometry {
  explicit Geometry(const plugin::args::math_reduce<>& a) {
    const Layout& v = a.x.view;
    outer_ = v.dims()[0], r_ = v.dims()[1], inner_ = v.dims()[2];
    so_ = v.strides()[0], sr_ = v.strides()[1], si_ = v.strides()[2];
    yo_ = a.y.view.strides()[0], yi_ = a.y.view.strides()[1];
  }
  [[nodiscard]] bool empty() const { return outer_ * inner_ == 0; }
  [[nodiscard]] bool by_rows() const { return sr_ == 1 || r_ == 1 || inner_ == 1; }

  std::int64_t outer_ = 0, r_ = 0, inner_ = 0, so_ = 0, sr_ = 0, si_ = 0, yo_ = 0, yi_ = 0;
};

template <class L>
class Reduction : Geometry {
 public:
  using T = typename L::T;
  using C = typename L::C;

  explicit Reduction(const plugin::args::math_reduce<>& a)
      : Geometry(a), x_(element_ptr<const T>(a.x)), y_(a.y), code_(int(a.code)), correction_(a.correction) {}

  void run() {
    if (empty()) return;
    by_rows() ? rows() : columns();
  }

 private:
  // ---- rows: every output reduces r elements at stride sr_.
  void rows() {
    const std::int64_t outputs = outer_ * inner_, segments = (r_ + kSegment - 1) / kSegment;
    if (segments == 1) {
      parallel_chunks(outputs, std::max<std::int64_t>(1, kSegment / r_), [&](std::int64_t b, std::int64_t e) {
        std::vector<T> buf;
        for (std::int64_t k = b; k < e; ++k) write(k, segment(k, 0, buf));
      });
      return;
    }
    std::vector<Partial> parts(std::size_t(outputs * segments));
    parallel_chunks(outputs * segments, 1, [&](std::int64_t b, std::int64_t e) {
      std::vector<T> buf;
      for (std::int64_t item = b; item < e; ++item)
        parts[std::size_t(item)] = segment(item / segments, item % segments, buf);
    });
    parallel_chunks(outputs, 64, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t k = b; k < e; ++k) {
        Partial total = parts[std::size_t(k * segments)];
        for (std::int64_t s = 1; s < segments; ++s) combine(total, parts[std::size_t(k * segments + s)], code_);
        write(k, total);
      }
    });
  }

  // Segment s of output k (k = o*inner + i).
  Partial segment(std::int64_t k, std::int64_t s, std::vector<T>& buf) const {
    const std::int64_t j0 = s * kSegment, n = std::min(kSegment, r_ - j0);
    const std::int64_t step = r_ == 1 ? 1 : sr_;
    const T* p = x_ + (k / inner_) * so_ + (k % inner_) * si_ + j0 * step;
    if (step != 1) {  // gather the strided run once, then the dense loops
      buf.resize(std::size_t(n));
      for (std::int64_t j = 0; j < n; ++j) buf[std::size_t(j)] = p[j * step];
      p = buf.data();
    }
    const auto un = std::size_t(n);
    Partial out;
    out.count = n;
    switch (code_) {
      case XY_RED_SUM:
      case XY_RED_MEAN: out.sum = L::sum(p, un, 0.0); break;
      case XY_RED_VAR:
        out.sum = L::sum(p, un, 0.0);
        out.m2 = L::sum_sq(p, un, out.sum / double(n));
        break;
      default: {
        const C e = wants_max(code_) ? L::max(p, un) : L::min(p, un);
        out.extreme = double(e);
        if (is_arg(code_)) out.index = j0 + std::int64_t(L::find(p, un, e));
      }
    }
    return out;
  }

  void write(std::int64_t k, const Partial& p) const {
    const std::int64_t at = (k / inner_) * yo_ + (k % inner_) * yi_;
    if (is_arg(code_))
      static_cast<std::int64_t*>(y_.data)[y_.view.offset() + at] = p.index;
    else
      store(at, finish(p, code_, r_, correction_));
  }

  void store(std::int64_t at, double value) const {
    element_ptr<T>(y_)[at] = from_compute<T>(static_cast<C>(value));
  }

  // ---- columns: j strided, blocks of kWidth outputs along i.
  void columns() {
    const std::int64_t blocks = (inner_ + kWidth - 1) / kWidth;
    parallel_chunks(outer_ * blocks, 1, [&](std::int64_t b, std::int64_t e) {
      std::vector<C> acc(kWidth), mean(kWidth);
      std::vector<double> total(kWidth);
      std::vector<T> row(si_ == 1 ? 0 : kWidth);
      for (std::int64_t item = b; item < e; ++item) {
        const std::int64_t o = item / blocks, i0 = (item % blocks) * kWidth;
        column_block(o, i0, std::min(kWidth, inner_ - i0), acc.data(), mean.data(), total.data(), row.data());
      }
    });
  }

  // acc (op)= rows [j0, j0 + rows) of the block's columns.
  void accumulate(int kind, const T* base, std::int64_t j0, std::int64_t rows, std::size_t w, const C* shift,
                  C* acc, T* row) const {
    if (si_ == 1) return L::columns(kind, base + j0 * sr_, sr_, std::size_t(rows), w, shift, acc);
    for (std::int64_t j = j0; j < j0 + rows; ++j) {  // gather each row's strided block first
      for (std::size_t i = 0; i < w; ++i) row[i] = base[j * sr_ + std::int64_t(i) * si_];
      L::columns(kind, row, 0, 1, w, shift, acc);
    }
  }

  // Sums of (x - shift) (squared with kSquare) over all rows, in blocks of
  // kSumBlock rows whose f32 totals are added in f64.
  void column_sum(int kind, const T* base, std::size_t w, const C* shift, C* acc, double* total, T* row) const {
    std::fill(total, total + w, 0.0);
    for (std::int64_t j0 = 0; j0 < r_; j0 += std::int64_t(kSumBlock)) {
      std::fill(acc, acc + w, C(0));
      accumulate(kind, base, j0, std::min<std::int64_t>(std::int64_t(kSumBlock), r_ - j0), w, shift, acc, row);
      for (std::size_t i = 0; i < w; ++i) total[i] += double(acc[i]);
    }
  }

  void column_block(std::int64_t o, std::int64_t i0, std::int64_t width, C* acc, C* mean, double* total,
                    T* row) const {
    const T* base = x_ + o * so_ + i0 * si_;
    const auto w = std::size_t(width);
    const std::int64_t out0 = o * yo_ + i0 * yi_;
    if (is_arg(code_)) return column_arg(base, w, out0, acc);
    if (code_ == XY_RED_MAX || code_ == XY_RED_MIN) {
      for (std::size_t i = 0; i < w; ++i) acc[i] = to_compute(base[std::int64_t(i) * si_]);
      accumulate(code_ == XY_RED_MAX ? kColMax : kColMin, base, 1, r_ - 1, w, nullptr, acc, row);
      for (std::size_t i = 0; i < w; ++i) store(out0 + std::int64_t(i) * yi_, double(acc[i]));
      return;
    }
    column_sum(kColSum, base, w, nullptr, acc, total, row);
    if (code_ != XY_RED_VAR) {
      const double count = code_ == XY_RED_MEAN ? double(r_) : 1.0;
      for (std::size_t i = 0; i < w; ++i) store(out0 + std::int64_t(i) * yi_, total[i] / count);
      return;
    }
    // var: squared deviations from the (rounded) mean, corrected by the
    // deviations' own sum so the rounding of the mean does not bias it.
    std::vector<double> dev(w);
    for (std::size_t i = 0; i < w; ++i) mean[i] = static_cast<C>(total[i] / double(r_));
    column_sum(kColSum, base, w, mean, acc, dev.data(), row);
    column_sum(kColSumSq, base, w, mean, acc, total, row);
    const Partial none;
    for (std::size_t i = 0; i < w; ++i) {
      Partial p = none;
      // |dev|^2 <= r*total, so the correction is finite whenever total is;
      // an overflowed total stays Inf rather than becoming Inf - Inf.
      p.m2 = std::isinf(total[i]) ? total[i] : total[i] - dev[i] / double(r_) * dev[i];
      store(out0 + std::int64_t(i) * yi_, finish(p, XY_RED_VAR, r_, correction_));
    }
  }

  // argmax/argmin over columns: first index of the extreme, NaN winning.
  void column_arg(const T* base, std::size_t w, std::int64_t out0, C* best) const {
    std::vector<std::int64_t> index(w, 0);
    const bool max = wants_max(code_);
    for (std::size_t i = 0; i < w; ++i) best[i] = to_compute(base[std::int64_t(i) * si_]);
    for (std::int64_t j = 1; j < r_; ++j) {
      const T* p = base + j * sr_;
      for (std::size_t i = 0; i < w; ++i) {
        const C v = to_compute(p[std::int64_t(i) * si_]), b = best[i];
        if (b == b && (v != v || (max ? v > b : v < b))) best[i] = v, index[i] = j;
      }
    }
    auto* y = static_cast<std::int64_t*>(y_.data) + y_.view.offset();
    for (std::size_t i = 0; i < w; ++i) y[out0 + std::int64_t(i) * yi_] = index[i];
  }

  const T* x_;
  const plugin::TensorArg& y_;
  int code_;
  std::int64_t correction_;
};

template <class L>
void reduce_kernel(const OpCall& call) {
  Reduction<L>(plugin::unpack<plugin::args::math_reduce>(call)).run();
}

// ---- i32 and i64: sum, max, min, argmax, argmin (the core refuses mean and
// var). Sums accumulate in i64 and wrap modulo 2^64 (math.h's integer
// reductions: an i32 sum's y is i64); max and min stay in T. Plain loops
// the compiler vectorises, split as the float path: rows in segments of
// kSegment, columns in blocks of kWidth.
template <class T>
class IntReduction : Geometry {
 public:
  explicit IntReduction(const plugin::args::math_reduce<>& a)
      : Geometry(a), x_(element_ptr<const T>(a.x)), y_(a.y), code_(int(a.code)) {}

  void run() {
    if (empty()) return;
    by_rows() ? rows() : columns();
  }

 private:
  // The running value (a sum as i64, an extreme as T) and, for arg*, where
  // the extreme is.
  struct Partial {
    std::int64_t value = 0;
    std::int64_t index = 0;
  };

  // b (a later stretch) into a: the first extreme wins ties.
  void combine(Partial& a, const Partial& b) const {
    if (code_ == XY_RED_SUM)
      a.value = xy_int_binary_i64(XY_BIN_ADD, a.value, b.value);
    else if (wants_max(code_) ? b.value > a.value : b.value < a.value)
      a = b;
  }

  void rows() {
    const std::int64_t outputs = outer_ * inner_, segments = (r_ + kSegment - 1) / kSegment;
    if (segments == 1) {
      parallel_chunks(outputs, std::max<std::int64_t>(1, kSegment / r_), [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t k = b; k < e; ++k) write(k, segment(k, 0));
      });
      return;
    }
    std::vector<Partial> parts(std::size_t(outputs * segments));
    parallel_chunks(outputs * segments, 1, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t item = b; item < e; ++item) parts[std::size_t(item)] = segment(item / segments, item % segments);
    });
    parallel_chunks(outputs, 64, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t k = b; k < e; ++k) {
        Partial total = parts[std::size_t(k * segments)];
        for (std::int64_t s = 1; s < segments; ++s) combine(total, parts[std::size_t(k * segments + s)]);
        write(k, total);
      }
    });
  }

  // Segment s of output k (k = o*inner + i).
  Partial segment(std::int64_t k, std::int64_t s) const {
    const std::int64_t j0 = s * kSegment, n = std::min(kSegment, r_ - j0);
    const std::int64_t step = r_ == 1 ? 1 : sr_;
    const T* p = x_ + (k / inner_) * so_ + (k % inner_) * si_ + j0 * step;
    Partial out;
    if (code_ == XY_RED_SUM) {
      // Unsigned, so the compiler may reorder (vectorise) the wrapping adds.
      std::uint64_t sum = 0;
      if (step == 1) {
        for (std::int64_t j = 0; j < n; ++j) sum += std::uint64_t(std::int64_t(p[j]));
      } else {
        for (std::int64_t j = 0; j < n; ++j) sum += std::uint64_t(std::int64_t(p[j * step]));
      }
      out.value = std::int64_t(sum);
      return out;
    }
    const bool max = wants_max(code_);
    T best = p[0];
    std::int64_t at = 0;
    if (is_arg(code_)) {
      for (std::int64_t j = 1; j < n; ++j) {
        const T v = p[j * step];
        if (max ? v > best : v < best) best = v, at = j;
      }
    } else if (max) {
      for (std::int64_t j = 1; j < n; ++j) best = IntFormulas::binary(XY_BIN_MAXIMUM, best, p[j * step]);
    } else {
      for (std::int64_t j = 1; j < n; ++j) best = IntFormulas::binary(XY_BIN_MINIMUM, best, p[j * step]);
    }
    out.value = best;
    out.index = j0 + at;
    return out;
  }

  void write(std::int64_t k, const Partial& p) const { store((k / inner_) * yo_ + (k % inner_) * yi_, p); }

  void store(std::int64_t at, const Partial& p) const {
    if (is_arg(code_))
      element_ptr<std::int64_t>(y_)[at] = p.index;
    else if (code_ == XY_RED_SUM)
      element_ptr<std::int64_t>(y_)[at] = p.value;
    else
      element_ptr<T>(y_)[at] = T(p.value);
  }

  // j strided: blocks of kWidth outputs along i, accumulated row by row.
  void columns() {
    const std::int64_t blocks = (inner_ + kWidth - 1) / kWidth;
    parallel_chunks(outer_ * blocks, 1, [&](std::int64_t b, std::int64_t e) {
      std::vector<Partial> acc(kWidth);
      for (std::int64_t item = b; item < e; ++item) {
        const std::int64_t o = item / blocks, i0 = (item % blocks) * kWidth;
        const auto w = std::size_t(std::min(kWidth, inner_ - i0));
        const T* base = x_ + o * so_ + i0 * si_;
        for (std::size_t i = 0; i < w; ++i) acc[i] = Partial{code_ == XY_RED_SUM ? 0 : base[std::int64_t(i) * si_], 0};
        for (std::int64_t j = code_ == XY_RED_SUM ? 0 : 1; j < r_; ++j) {
          const T* row = base + j * sr_;
          for (std::size_t i = 0; i < w; ++i) combine(acc[i], Partial{row[std::int64_t(i) * si_], j});
        }
        for (std::size_t i = 0; i < w; ++i) store(o * yo_ + (i0 + std::int64_t(i)) * yi_, acc[i]);
      }
    });
  }

  struct IntFormulas {
    static T binary(int code, T a, T b) {
      if constexpr (sizeof(T) == 4)
        return xy_int_binary_i32(code, a, b);
      else
        return xy_int_binary_i64(code, a, b);
    }
  };

  const T* x_;
  const plugin::TensorArg& y_;
  int code_;
};

template <class T>
void int_reduce_kernel(const OpCall& call) {
  IntReduction<T>(plugin::unpack<plugin::args::math_reduce>(call)).run();
}

}  // namespace

void register_reduce(KernelTable& table) {
  table.set(OpId::math_reduce, DType::f16, &reduce_kernel<LoopsF16>);
  table.set(OpId::math_reduce, DType::bf16, &reduce_kernel<LoopsBF16>);
  table.set(OpId::math_reduce, DType::f32, &reduce_kernel<LoopsF32>);
  table.set(OpId::math_reduce, DType::f64, &reduce_kernel<LoopsF64>);
  table.set(OpId::math_reduce, DType::i32, &int_reduce_kernel<std::int32_t>);
  table.set(OpId::math_reduce, DType::i64, &int_reduce_kernel<std::int64_t>);
}

}  // namespace xylem::native
#endif  // HWY_ONCE
