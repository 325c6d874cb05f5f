#pragma once
// Random op arguments for the fuzzers and the soak test: small shapes (ranks
// 0..4, some zero-sized axes), any dtype, and views of every kind over a
// 1-D storage tensor (offsets, gaps, transposed axes, stride-0 broadcasts for
// inputs), or an output over an input's storage. Every choice comes from a
// Picker: the fuzzer's input bytes, or a seeded generator in the soak test.
// After an op, check() compares the output view with a float64 reference
// and every storage element outside it with what it held before.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "reference.hpp"
#include "xylem/xylem.hpp"

namespace xylem_fuzz {

using xylem::DType;
using xylem::Tensor;
using xylem_ref::Dims;

inline constexpr std::int64_t kMaxElements = 4096;
inline constexpr DType kAllDTypes[] = {DType::f16, DType::bf16, DType::f32, DType::f64,
                                       DType::i32, DType::i64,  DType::u8,  DType::boolean};

class Picker {
 public:
  // source(n) returns a choice in [0, n); value_seed seeds the tensors' values.
  Picker(std::function<std::uint32_t(std::uint32_t)> source, std::uint64_t value_seed)
      : source_(std::move(source)), values_(value_seed) {}
  std::uint32_t pick(std::uint32_t n) { return n <= 1 ? 0 : std::min(source_(n), n - 1); }
  bool one_in(std::uint32_t n) { return pick(n) == 0; }
  template <class T, std::size_t N>
  T from(const T (&options)[N]) {
    return options[pick(N)];
  }
  // Values exact in every float dtype (multiples of 1/64 in [-2, 2], never
  // zero), small non-negative integers, or 0/1 for boolean.
  double value(DType t) {
    if (t == DType::boolean) return double(values_() % 2);
    if (!xylem::is_floating(t)) return double(values_() % 101);
    const auto k = std::int64_t(values_() % 256) - 128;
    return double(k >= 0 ? k + 1 : k) / 64;
  }

 private:
  std::function<std::uint32_t(std::uint32_t)> source_;
  std::mt19937_64 values_;
};

// A float dtype, or (one time in `wrong`) any dtype.
inline DType pick_dtype(Picker& p, std::uint32_t wrong = 12) {
  static constexpr DType floats[] = {DType::f16, DType::bf16, DType::f32, DType::f64};
  return p.one_in(wrong) ? p.from(kAllDTypes) : p.from(floats);
}

// Dims of the given rank, at most kMaxElements elements; one axis in
// `zero_in` is empty.
inline Dims pick_dims(Picker& p, int rank, std::uint32_t zero_in = 16) {
  static constexpr std::int64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 16, 1, 3};
  Dims d(std::size_t(rank), 1);
  for (auto& x : d) x = p.from(sizes);
  while (xylem_ref::numel(d) > kMaxElements) *std::max_element(d.begin(), d.end()) /= 2;
  if (rank > 0 && p.one_in(zero_in)) d[p.pick(std::uint32_t(rank))] = 0;
  return d;
}

inline std::string dims_string(const Dims& d) {
  std::ostringstream s;
  s << '[';
  for (std::size_t i = 0; i < d.size(); ++i) s << (i ? ", " : "") << d[i];
  return s.str() + ']';
}

// One argument: a view over a 1-D storage tensor, and what the host knows.
struct Arg {
  Tensor base, view;
  Dims dims;
  DType dtype = DType::f32;
  std::vector<double> before;     // base's values before the op
  std::vector<std::int64_t> pos;  // storage index of each logical element

  [[nodiscard]] xylem_ref::Array logical() const {
    xylem_ref::Array a{dims, {}};
    for (auto k : pos) a.v.push_back(before[std::size_t(k)]);
    return a;
  }
  [[nodiscard]] std::string describe() const {
    std::ostringstream s;
    s << xylem::name(dtype) << ' ' << dims_string(dims) << " strides " << view.layout().strides_string() << " offset "
      << view.layout().offset() << " of storage [" << before.size() << ']';
    return s.str();
  }
};

inline std::vector<std::int64_t> positions(const xylem::Layout& s) {
  std::vector<std::int64_t> pos;
  const Dims dims(s.dims().begin(), s.dims().end());
  for (std::int64_t k = 0; k < xylem_ref::numel(dims); ++k) {
    const Dims idx = xylem_ref::unravel(dims, k);
    std::int64_t at = s.offset();
    for (std::size_t a = 0; a < idx.size(); ++a) at += idx[a] * s.strides()[a];
    pos.push_back(at);
  }
  return pos;
}

// Storage of `n` fresh values in dtype t, written on backend b.
inline Tensor storage(const xylem::Backend& b, Picker& p, DType t, std::int64_t n, std::vector<double>& values) {
  values.resize(std::size_t(n));
  for (auto& v : values) v = p.value(t);
  Tensor host = Tensor::from(values);
  return t == DType::f64 ? host : xylem::cast(b, host, t);
}

inline void set_view(Arg& a, const Dims& strides, std::int64_t offset) {
  a.view = a.base.as_strided(xylem::Layout::strided(a.dims, strides, offset));
  a.pos = positions(a.view.layout());
}

// A view of dims over new storage: axes in any order, a gap on one axis, an
// offset, and (inputs only) a stride-0 axis.
inline Arg make_arg(const xylem::Backend& b, Picker& p, DType t, const Dims& dims, bool input = true) {
  Arg a;
  a.dims = dims;
  a.dtype = t;
  const std::size_t rank = dims.size();
  std::vector<std::size_t> order(rank);
  std::iota(order.begin(), order.end(), 0);
  if (rank >= 2 && p.one_in(3)) std::swap(order[p.pick(std::uint32_t(rank))], order[p.pick(std::uint32_t(rank))]);
  const std::size_t gap = p.one_in(3) ? p.pick(std::uint32_t(rank) + 1) : rank;
  Dims strides(rank);
  std::int64_t running = 1;
  for (std::size_t i = rank; i-- > 0;) {
    const std::size_t ax = order[i];
    strides[ax] = running * (ax == gap ? 2 : 1);
    running = strides[ax] * std::max<std::int64_t>(dims[ax], 1);
  }
  if (input && rank > 0 && p.one_in(8)) strides[p.pick(std::uint32_t(rank))] = 0;
  const std::int64_t offset = p.one_in(3) ? p.pick(5) : 0;
  std::int64_t extent = offset + 1;
  for (std::size_t ax = 0; ax < rank; ++ax) extent += std::max<std::int64_t>(dims[ax] - 1, 0) * strides[ax];
  a.base = storage(b, p, t, extent + p.pick(3), a.before);
  set_view(a, strides, offset);
  return a;
}

// An output of dims over an input's storage: the input's own view, or a
// contiguous view at some offset (nullopt-like: an empty base when it does
// not fit).
inline Arg alias_arg(Picker& p, const Arg& in, const Dims& dims) {
  Arg a = in;
  a.dims = dims;
  // The input's own view, unless a stride-0 axis makes it name an element
  // twice (invalid for an output).
  bool reusable = dims == in.dims;
  for (std::size_t ax = 0; reusable && ax < dims.size(); ++ax)
    reusable = in.view.layout().strides()[ax] != 0 || dims[ax] <= 1;
  if (reusable && p.one_in(2)) return a;
  const std::int64_t n = xylem_ref::numel(dims), room = std::int64_t(in.before.size()) - n;
  if (room < 0) return Arg{};
  Dims strides(dims.size());
  std::int64_t running = 1;
  for (std::size_t i = dims.size(); i-- > 0;) strides[i] = running, running *= std::max<std::int64_t>(dims[i], 1);
  set_view(a, strides, p.pick(std::uint32_t(room) + 1));
  return a;
}

// An output: usually fresh storage, sometimes over one of the inputs of the
// same dtype (the result must be as if the inputs were read first).
inline Arg make_out(const xylem::Backend& b, Picker& p, DType t, const Dims& dims, const std::vector<const Arg*>& ins) {
  if (!ins.empty() && p.one_in(4)) {
    const Arg& in = *ins[p.pick(std::uint32_t(ins.size()))];
    if (in.dtype == t && in.view.defined()) {
      Arg a = alias_arg(p, in, dims);
      if (a.base.defined()) return a;
    }
  }
  return make_arg(b, p, t, dims, false);
}

// An output and the reference's values for its logical elements.
struct Checked {
  const Arg* out;
  const xylem_ref::Expect* expect;
};

// Empty: each output's logical elements match its reference and every
// storage of `args` (the outputs' included) holds what it held before
// everywhere else. Otherwise the first few differences.
inline std::string check(const std::vector<const Arg*>& args, const std::vector<Checked>& outs) {
  std::ostringstream report;
  int bad = 0;
  std::vector<const void*> seen;
  for (const Checked& c : outs)
    if (c.expect->v.size() != c.out->pos.size())
      return "the reference has " + std::to_string(c.expect->v.size()) + " elements";
  for (const Arg* a : args) {
    if (!a->base.defined() || std::find(seen.begin(), seen.end(), a->base.storage().get()) != seen.end()) continue;
    seen.push_back(a->base.storage().get());
    const auto now = a->base.to_doubles();
    std::vector<char> in_view(now.size(), 0);
    for (const Checked& c : outs) {
      if (c.out->base.storage() != a->base.storage()) continue;
      const xylem_ref::Expect& e = *c.expect;
      for (std::size_t k = 0; k < c.out->pos.size(); ++k) {
        const auto at = std::size_t(c.out->pos[k]);
        in_view[at] = 1;
        if (!xylem_ref::matches(c.out->dtype, e.v[k], e.mag[k], now[at]) && bad++ < 4)
          report << "\n  element " << k << " of the output " << c.out->describe() << ": got " << now[at]
                 << ", expected " << e.v[k] << " (allowed " << xylem_ref::allowed(c.out->dtype, e.v[k], e.mag[k])
                 << ")";
      }
    }
    for (std::size_t i = 0; i < now.size(); ++i)
      if (!in_view[i] && !(now[i] == a->before[i]) && bad++ < 4)
        report << "\n  storage element " << i << " outside the output changed: " << a->before[i] << " -> " << now[i];
  }
  return report.str();
}

// The same for one output, or none (`out` null: nothing may change).
inline std::string check(const std::vector<const Arg*>& args, const Arg* out, const xylem_ref::Expect& e) {
  if (!out) return check(args, std::vector<Checked>{});
  return check(args, std::vector<Checked>{{out, &e}});
}

}  // namespace xylem_fuzz
