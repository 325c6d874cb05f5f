// Printing tensors: values in shortest round-trip form for their dtype,
// nested brackets per dimension, long dimensions elided in the middle (and
// not read: only the elements shown are).
#include <array>
#include <charconv>
#include <cmath>
#include <ostream>

#include "xylem/tensor.hpp"

namespace xylem {
namespace {

constexpr std::int64_t kEdgeItems = 3;   // shown at each end of a long dimension
constexpr std::int64_t kElideAbove = 8;  // dimensions longer than this are elided

std::string format_value(double v, DType dtype) {
  char buffer[64];
  std::to_chars_result r{};
  switch (dtype) {
    case DType::f64: r = std::to_chars(buffer, buffer + sizeof buffer, v); break;
    case DType::f32:
    case DType::f16:
    case DType::bf16:
    case DType::c64: r = std::to_chars(buffer, buffer + sizeof buffer, static_cast<float>(v)); break;
    case DType::c128: r = std::to_chars(buffer, buffer + sizeof buffer, v); break;
    case DType::boolean: return v != 0 ? "true" : "false";
    default: r = std::to_chars(buffer, buffer + sizeof buffer, static_cast<long long>(v)); break;
  }
  return std::string(buffer, r.ptr);
}

// Doubles per element in to_doubles(): a complex one is two.
std::size_t width(DType dtype) { return is_complex(dtype) ? 2 : 1; }

// Element `k` of `values`; a complex one as NumPy prints it, "1.5-2j".
std::string format_element(const std::vector<double>& values, std::size_t k, DType dtype) {
  if (!is_complex(dtype)) return format_value(values[k], dtype);
  const double re = values[2 * k], im = values[2 * k + 1];
  std::string imag = format_value(im, dtype);
  if (!std::signbit(im) && imag.front() != '+') imag.insert(imag.begin(), '+');
  return format_value(re, dtype) + imag + "j";
}

// Elements shown along a dimension of n: all, or kEdgeItems at each end.
std::int64_t shown(std::int64_t n) { return n > kElideAbove ? 2 * kEdgeItems : n; }

// The shown elements only, row-major over the shown dimensions: one read per
// combination of head and tail of the elided dimensions. A view far larger
// than memory (a broadcast one) prints without being read whole.
std::vector<double> shown_values(const Tensor& t) {
  const Layout& shape = t.layout();
  std::vector<int> elided;
  std::int64_t count = 1;
  for (int a = 0; a < shape.rank(); ++a) {
    if (shape.dims()[a] > kElideAbove) elided.push_back(a);
    count *= shown(shape.dims()[a]);
  }
  if (elided.empty()) return t.to_doubles();
  const std::size_t w = width(t.dtype());
  std::vector<double> out(static_cast<std::size_t>(count) * w);
  for (unsigned mask = 0; mask < (1u << elided.size()); ++mask) {
    Tensor block = t;
    std::array<std::int64_t, kMaxRank> first{};  // where the block starts among the shown elements
    for (std::size_t k = 0; k < elided.size(); ++k) {
      const int a = elided[k];
      const std::int64_t n = shape.dims()[a];
      const bool tail = (mask >> k) & 1u;
      block = block.slice(a, tail ? n - kEdgeItems : 0, tail ? n : kEdgeItems);
      first[a] = tail ? kEdgeItems : 0;
    }
    const std::vector<double> values = block.to_doubles();
    std::array<std::int64_t, kMaxRank> at{};
    for (std::size_t k = 0; k < values.size(); k += w) {
      std::int64_t position = 0;
      for (int a = 0; a < shape.rank(); ++a) position = position * shown(shape.dims()[a]) + first[a] + at[a];
      for (std::size_t part = 0; part < w; ++part) out[static_cast<std::size_t>(position) * w + part] = values[k + part];
      for (int a = shape.rank() - 1; a >= 0 && ++at[a] == block.layout().dims()[a]; --a) at[a] = 0;
    }
  }
  return out;
}

// `values` holds the shown elements only (shown_values); `base` is the
// position of this sub-array among them.
void print_dim(std::ostream& os, const std::vector<double>& values, const Layout& shape, DType dtype, int axis,
               std::int64_t base) {
  const std::int64_t n = shape.dims()[axis];
  std::int64_t inner = 1;
  for (int a = axis + 1; a < shape.rank(); ++a) inner *= shown(shape.dims()[a]);
  os << '[';
  for (std::int64_t i = 0, position = 0; i < n; ++i, ++position) {
    if (n > kElideAbove && i == kEdgeItems) {
      os << "..., ";
      i = n - kEdgeItems;
    }
    if (axis + 1 == shape.rank()) {
      os << format_element(values, static_cast<std::size_t>(base + position), dtype);
    } else {
      print_dim(os, values, shape, dtype, axis + 1, base + position * inner);
    }
    if (i + 1 < n) os << ", ";
  }
  os << ']';
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "Tensor(empty handle)";
  if (t.version() == 0) {
    os << "[uninitialized]";
  } else {
    const auto values = shown_values(t);
    if (t.rank() == 0) {
      os << format_element(values, 0, t.dtype());
    } else {
      print_dim(os, values, t.layout(), t.dtype(), 0, 0);
    }
  }
  return os << " shape=" << t.layout().dims_string() << ", strides=" << t.layout().strides_string();
}

}  // namespace xylem
