// libFuzzer target: shapes, strides and views with sizes at the ends of
// int64. The input is a sequence of steps, each a Layout construction
// (Layout(dims), Layout::strided) or a view (reshape, slice, transpose,
// permute) of the current shape, or a Tensor view (as_strided, slice,
// transpose, reshape) over a small storage tensor. Every step must either
// throw xylem::Error or give a shape that a 128-bit recomputation agrees
// with: the element count, the extent and lowest index, all within int64;
// where the rules say exactly when a call is refused (constructions, slice,
// transpose, permute, as_strided), the step must be refused exactly then.
// Small views read through a Tensor must hold what a host-side gather from
// the storage predicts. Any disagreement aborts with the step described.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "xylem/xylem.hpp"

namespace {

__extension__ typedef __int128 i128;

using xylem::Layout;
using xylem::Tensor;
using Ints = std::vector<std::int64_t>;

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kStorage = 48;     // elements of the storage tensor views are made over
constexpr std::int64_t kEnumerate = 4096;  // views up to this many elements are checked element by element

std::string ints(const Ints& v) {
  std::ostringstream s;
  s << '[';
  for (std::size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  return s.str() + ']';
}
Ints to_ints(std::span<const std::int64_t> s) { return {s.begin(), s.end()}; }
std::string describe(const Layout& s) {
  return s.dims_string() + " strides " + s.strides_string() + " offset " + std::to_string(s.offset());
}

[[noreturn]] void fail(const std::string& step, const std::string& what) {
  std::fprintf(stderr, "layout_fuzz: %s: %s\n", step.c_str(), what.c_str());
  std::abort();
}

// Int64 values near every edge the checks guard, small ones most often.
std::int64_t pick_int(FuzzedDataProvider& in) {
  static constexpr std::int64_t edges[] = {
      0, 1, 2, 3, -1, -2, std::int64_t{1} << 31, std::int64_t{1} << 32, std::int64_t{1} << 61,
      std::int64_t{1} << 62, -(std::int64_t{1} << 62), (std::int64_t{1} << 62) / 3, kMax, kMin, kMax / 2, kMin / 2};
  switch (in.ConsumeIntegralInRange<int>(0, 5)) {
    case 0:
    case 1:
    case 2: return in.ConsumeIntegralInRange<std::int64_t>(-3, 12);
    case 3:
    case 4: {
      const std::int64_t edge = edges[in.ConsumeIntegralInRange<std::size_t>(0, std::size(edges) - 1)];
      std::int64_t near = 0;
      return __builtin_add_overflow(edge, in.ConsumeIntegralInRange<std::int64_t>(-2, 2), &near) ? edge : near;
    }
    default: return in.ConsumeIntegral<std::int64_t>();
  }
}

// Mostly small, sometimes anything pick_int gives (negative ones included).
std::int64_t pick_dim(FuzzedDataProvider& in) {
  return in.ConsumeIntegralInRange<int>(0, 3) != 0 ? in.ConsumeIntegralInRange<std::int64_t>(0, 6) : pick_int(in);
}

Ints pick_dims(FuzzedDataProvider& in, int rank) {
  Ints d(static_cast<std::size_t>(rank));
  for (auto& x : d) x = pick_dim(in);
  return d;
}

// ---- the 128-bit model of what a Layout must be ----------------------------

struct Model {
  bool valid = false;
  i128 numel = 0, low = 0, high = 0;  // low/high: lowest and highest element index reached
};

// The element count counting non-zero dims, refused past 2^62; the reach
// of the strides from the offset, refused where an index, the extent or
// the span would not fit in int64. Mirrors the documented rule, not the code.
Model model(const Ints& dims, const Ints& strides, std::int64_t offset) {
  Model m;
  if (dims.size() > static_cast<std::size_t>(xylem::kMaxRank) || dims.size() != strides.size()) return m;
  i128 nonzero = 1;
  m.numel = 1;
  for (const std::int64_t d : dims) {
    if (d < 0) return m;
    m.numel *= d;
    if (d != 0 && (nonzero *= d) > xylem::kMaxNumel) return m;
  }
  m.low = m.high = offset;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] <= 1) continue;
    const i128 reach = i128(dims[i] - 1) * strides[i];
    (reach < 0 ? m.low : m.high) += reach;
  }
  m.valid = m.low >= kMin && m.high < kMax && m.high - m.low < kMax;
  return m;
}

Ints contiguous_strides(const Ints& dims) {
  Ints s(dims.size());
  std::int64_t stride = 1;
  for (std::size_t i = dims.size(); i-- > 0;) {
    s[i] = stride;
    stride *= std::max<std::int64_t>(dims[i], 1);
  }
  return s;
}

// Element indices of a view in row-major order, in 128 bits so that a
// wrong stride shows as a wrong index, not as an overflow here.
std::vector<i128> indices(const Layout& v) {
  std::vector<i128> out;
  const auto n = static_cast<std::size_t>(v.numel());
  out.reserve(n);
  std::array<std::int64_t, xylem::kMaxRank> at{};
  for (std::size_t k = 0; k < n; ++k) {
    i128 index = v.offset();
    for (int a = 0; a < v.rank(); ++a) index += i128(at[a]) * v.strides()[a];
    out.push_back(index);
    for (int a = v.rank() - 1; a >= 0 && ++at[a] == v.dims()[a]; --a) at[a] = 0;
  }
  return out;
}

// What every Layout, however made, must satisfy.
void check_shape(const std::string& step, const Layout& s) {
  const Ints dims = to_ints(s.dims()), strides = to_ints(s.strides());
  const Model m = model(dims, strides, s.offset());
  const std::string d = describe(s);
  if (!m.valid) fail(step, "made " + d + ", which the model refuses");
  if (s.numel() != m.numel) fail(step, d + ": numel " + std::to_string(s.numel()));
  const bool empty = m.numel == 0;
  if (s.extent() != (empty ? i128(s.offset()) : m.high + 1)) fail(step, d + ": extent " + std::to_string(s.extent()));
  if (s.lowest() != (empty ? i128(s.offset()) : m.low)) fail(step, d + ": lowest " + std::to_string(s.lowest()));
  if (s.is_contiguous() && !empty) {
    for (int a = 0; a < s.rank(); ++a)
      if (dims[a] != 1 && strides[a] != contiguous_strides(dims)[a]) fail(step, d + ": called contiguous");
  }
  if (m.numel > 0 && m.numel <= kEnumerate) {
    const auto idx = indices(s);
    const auto [lo, hi] = std::minmax_element(idx.begin(), idx.end());
    if (*lo != m.low || *hi != m.high) fail(step, d + ": the elements span another range than the model's");
  }
}

// Runs `make`; a refusal must be a xylem::Error, and must happen exactly
// when `refused` says (std::nullopt: either is allowed).
template <class F>
std::optional<Layout> attempt(const std::string& step, std::optional<bool> refused, F&& make) {
  std::optional<Layout> out;
  try {
    out = make();
  } catch (const xylem::Error&) {
    if (refused == false) fail(step, "refused a valid call");
    return std::nullopt;
  } catch (const std::exception& e) {
    fail(step, std::string("threw a non-xylem exception: ") + e.what());
  }
  if (refused == true) fail(step, "accepted an invalid call, giving " + describe(*out));
  check_shape(step, *out);
  return out;
}

bool axis_ok(int axis, int rank) { return axis >= -rank && axis < rank; }
int norm(int axis, int rank) { return axis < 0 ? axis + rank : axis; }

// ---- steps -----------------------------------------------------------------

struct State {
  Layout shape;
  Tensor storage;  // kStorage f64 values, i + 0.5 (never zero)
  Tensor view;     // a view over storage
};

void step_dims(FuzzedDataProvider& in, State& st) {
  const Ints dims = pick_dims(in, in.ConsumeIntegralInRange<int>(0, xylem::kMaxRank + 1));
  const Model m = model(dims, Ints(dims.size(), 0), 0);
  const std::string step = "Layout(" + ints(dims) + ")";
  if (auto s = attempt(step, !m.valid, [&] { return Layout(dims); })) {
    if (to_ints(s->strides()) != contiguous_strides(dims)) fail(step, "strides " + s->strides_string());
    st.shape = *s;
  }
}

void step_strided(FuzzedDataProvider& in, State& st) {
  const int rank = in.ConsumeIntegralInRange<int>(0, xylem::kMaxRank);
  const Ints dims = pick_dims(in, rank);
  Ints strides(static_cast<std::size_t>(rank + (in.ConsumeIntegralInRange<int>(0, 15) == 0 ? 1 : 0)));
  for (auto& s : strides) s = pick_int(in);
  const std::int64_t offset = pick_int(in);
  const std::string step = "Layout::strided(" + ints(dims) + ", " + ints(strides) + ", " + std::to_string(offset) + ")";
  if (auto s = attempt(step, !model(dims, strides, offset).valid, [&] { return Layout::strided(dims, strides, offset); })) {
    if (to_ints(s->dims()) != dims || to_ints(s->strides()) != strides || s->offset() != offset)
      fail(step, "gave " + describe(*s));
    st.shape = *s;
  }
}

void step_reshape(FuzzedDataProvider& in, State& st) {
  const Layout& from = st.shape;
  Ints dims = pick_dims(in, in.ConsumeIntegralInRange<int>(0, xylem::kMaxRank));
  if (!dims.empty() && in.ConsumeBool()) dims[in.ConsumeIntegralInRange<std::size_t>(0, dims.size() - 1)] = -1;
  const std::string step = describe(from) + " .reshape(" + ints(dims) + ")";
  // A contiguous shape takes any dims of its element count.
  i128 product = 1, nonzero = 1;
  bool plain = from.is_contiguous();
  for (const std::int64_t d : dims) {
    plain = plain && d >= 0 && (d == 0 || (nonzero *= d) <= xylem::kMaxNumel);
    product *= plain ? d : 1;
  }
  plain = plain && product == from.numel();
  // Its strides must fit beside the offset like every Layout's: an empty
  // source at an offset near 2^63 cannot take dims whose strides reach past
  // it, though it addresses nothing (the result would be a Layout the
  // constructor refuses).
  plain = plain && model(dims, contiguous_strides(dims), from.offset()).valid;
  const auto s = attempt(step, plain ? std::optional<bool>(false) : std::nullopt, [&] { return from.reshape(dims); });
  if (!s) return;
  if (s->numel() != from.numel() || s->offset() != from.offset()) fail(step, "gave " + describe(*s));
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != -1 && s->dims()[i] != dims[i]) fail(step, "gave " + describe(*s));
  if (from.numel() <= kEnumerate && indices(*s) != indices(from)) fail(step, "views other elements: " + describe(*s));
  st.shape = *s;
}

void step_slice(FuzzedDataProvider& in, State& st) {
  const Layout& from = st.shape;
  const int axis = in.ConsumeIntegralInRange<int>(-xylem::kMaxRank - 1, xylem::kMaxRank);
  const std::int64_t begin = pick_int(in), end = pick_int(in);
  const std::int64_t step_by = in.ConsumeBool() ? in.ConsumeIntegralInRange<std::int64_t>(1, 4) : pick_int(in);
  const std::string step = describe(from) + " .slice(" + std::to_string(axis) + ", " + std::to_string(begin) + ", " +
                           std::to_string(end) + ", " + std::to_string(step_by) + ")";
  const bool refused = !axis_ok(axis, from.rank()) || step_by <= 0;
  const auto s = attempt(step, refused, [&] { return from.slice(axis, begin, end, step_by); });
  if (!s) return;
  // Python's rules, in 128 bits.
  const int a = norm(axis, from.rank());
  const i128 n = from.dims()[a];
  const i128 b = std::clamp<i128>(begin < 0 ? begin + n : begin, 0, n);
  const i128 e = std::clamp<i128>(end < 0 ? end + n : end, b, n);
  const i128 count = (e - b + step_by - 1) / step_by;
  if (s->dims()[a] != count) fail(step, "gave " + describe(*s));
  if (count > 0 && s->offset() != from.offset() + b * from.strides()[a]) fail(step, "offset of " + describe(*s));
  if (count > 1 && s->strides()[a] != i128(from.strides()[a]) * step_by) fail(step, "stride of " + describe(*s));
  st.shape = *s;
}

void step_permute(FuzzedDataProvider& in, State& st) {
  const Layout& from = st.shape;
  const int rank = from.rank();
  std::vector<int> order(static_cast<std::size_t>(rank + (in.ConsumeIntegralInRange<int>(0, 15) == 0 ? 1 : 0)));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  for (std::size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[in.ConsumeIntegralInRange<std::size_t>(0, i - 1)]);
  if (!order.empty() && in.ConsumeIntegralInRange<int>(0, 7) == 0)
    order[in.ConsumeIntegralInRange<std::size_t>(0, order.size() - 1)] = in.ConsumeIntegralInRange<int>(-10, 10);
  bool refused = static_cast<int>(order.size()) != rank;
  std::array<bool, xylem::kMaxRank> seen{};
  for (const int o : order) {
    if (refused || !axis_ok(o, rank) || seen[norm(o, rank)]) {
      refused = true;
      break;
    }
    seen[norm(o, rank)] = true;
  }
  const std::string step = describe(from) + " .permute(" + std::to_string(order.size()) + " axes)";
  const auto s = attempt(step, refused, [&] { return from.permute(order); });
  if (!s) return;
  for (int i = 0; i < rank; ++i) {
    const int o = norm(order[i], rank);
    if (s->dims()[i] != from.dims()[o] || s->strides()[i] != from.strides()[o]) fail(step, "gave " + describe(*s));
  }
  st.shape = *s;
}

void step_transpose(FuzzedDataProvider& in, State& st) {
  const Layout& from = st.shape;
  const int x = in.ConsumeIntegralInRange<int>(-9, 9), y = in.ConsumeIntegralInRange<int>(-9, 9);
  const std::string step = describe(from) + " .transpose(" + std::to_string(x) + ", " + std::to_string(y) + ")";
  const bool refused = !axis_ok(x, from.rank()) || !axis_ok(y, from.rank());
  const auto s = attempt(step, refused, [&] { return from.transpose(x, y); });
  if (!s) return;
  if (s->transpose(x, y) != from) fail(step, "transposing back gave " + describe(s->transpose(x, y)));
  st.shape = *s;
}

// What reading `view` of st.storage must give, gathered on the host.
std::vector<double> gathered(const Layout& view) {
  std::vector<double> out;
  for (const i128 index : indices(view)) out.push_back(double(index) + 0.5);
  return out;
}

void check_read(const std::string& step, const Tensor& t) {
  if (t.numel() > kEnumerate) return;  // the read would be large: the unit tests cover huge reads
  std::vector<double> got;
  try {
    got = t.to_vector<double>();
  } catch (const xylem::Error& e) {
    fail(step, std::string("reading ") + describe(t.layout()) + " failed: " + e.what());
  }
  if (got != gathered(t.layout())) fail(step, "reading " + describe(t.layout()) + " gave other elements");
}

void step_as_strided(FuzzedDataProvider&, State& st) {
  const Layout& view = st.shape;
  const bool inside = view.offset() >= 0 && view.lowest() >= 0 && view.extent() <= kStorage;
  const std::string step = "storage[" + std::to_string(kStorage) + "].as_strided(" + describe(view) + ")";
  try {
    st.view = st.storage.as_strided(view);
  } catch (const xylem::Error&) {
    if (inside) fail(step, "refused a view inside the storage");
    return;
  }
  if (!inside) fail(step, "accepted a view reaching outside the storage");
  check_read(step, st.view);
}

// The same views through Tensor: the shape the Layout op gives, the elements
// a gather predicts.
void step_tensor_view(FuzzedDataProvider& in, State& st) {
  const Tensor& t = st.view;
  const Layout& from = t.layout();
  std::optional<Tensor> out;
  std::optional<Layout> expected;
  std::string step = describe(from);
  try {
    switch (in.ConsumeIntegralInRange<int>(0, 2)) {
      case 0: {
        const int axis = in.ConsumeIntegralInRange<int>(-3, 3);
        const std::int64_t b = pick_int(in), e = pick_int(in), by = in.ConsumeIntegralInRange<std::int64_t>(1, 3);
        step += " tensor.slice(" + std::to_string(axis) + ", " + std::to_string(b) + ", " + std::to_string(e) + ", " +
                std::to_string(by) + ")";
        out = t.slice(axis, b, e, by);
        expected = from.slice(axis, b, e, by);
        break;
      }
      case 1: {
        const int x = in.ConsumeIntegralInRange<int>(-3, 3), y = in.ConsumeIntegralInRange<int>(-3, 3);
        step += " tensor.transpose(" + std::to_string(x) + ", " + std::to_string(y) + ")";
        out = t.transpose(x, y);
        expected = from.transpose(x, y);
        break;
      }
      default: {
        Ints dims = pick_dims(in, in.ConsumeIntegralInRange<int>(0, 4));
        if (!dims.empty() && in.ConsumeBool()) dims[0] = -1;
        step += " tensor.reshape(" + ints(dims) + ")";
        out = t.reshape(dims);
        expected = from.reshape(dims);
        break;
      }
    }
  } catch (const xylem::Error&) {
    return;
  } catch (const std::exception& e) {
    fail(step, std::string("threw a non-xylem exception: ") + e.what());
  }
  if (!(out->layout() == *expected)) fail(step, "gave " + describe(out->layout()) + ", Layout gave " + describe(*expected));
  if (!out->shares_data_with(st.storage)) fail(step, "the view does not share the storage");
  check_shape(step, out->layout());
  check_read(step, *out);
  st.view = *out;
}

using Step = void (*)(FuzzedDataProvider&, State&);
constexpr Step kSteps[] = {step_dims,      step_strided,    step_reshape,       step_slice,
                           step_permute,   step_transpose,  step_as_strided,    step_tensor_view};

Tensor make_storage() {
  std::vector<double> values(kStorage);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = double(i) + 0.5;
  return Tensor::from(values);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Tensor storage = make_storage();
  FuzzedDataProvider in(data, size);
  State st{Layout{}, storage, storage};
  for (int steps = 0; steps < 32 && in.remaining_bytes() > 0; ++steps)
    kSteps[in.ConsumeIntegralInRange<std::size_t>(0, std::size(kSteps) - 1)](in, st);
  return 0;
}
