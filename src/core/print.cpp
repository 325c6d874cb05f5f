// Printing tensors: values in shortest round-trip form for their dtype,
// nested brackets per dimension, long dimensions elided in the middle.
#include <charconv>
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
    case DType::bf16: r = std::to_chars(buffer, buffer + sizeof buffer, static_cast<float>(v)); break;
    case DType::boolean: return v != 0 ? "true" : "false";
    default: r = std::to_chars(buffer, buffer + sizeof buffer, static_cast<long long>(v)); break;
  }
  return std::string(buffer, r.ptr);
}

void print_dim(std::ostream& os, const std::vector<double>& values, const Shape& shape, DType dtype, int axis,
               std::int64_t base) {
  const std::int64_t n = shape.dims()[axis];
  std::int64_t inner = 1;
  for (int a = axis + 1; a < shape.rank(); ++a) inner *= shape.dims()[a];
  os << '[';
  for (std::int64_t i = 0; i < n; ++i) {
    if (n > kElideAbove && i == kEdgeItems) {
      os << "..., ";
      i = n - kEdgeItems;
    }
    if (axis + 1 == shape.rank()) {
      os << format_value(values[static_cast<std::size_t>(base + i)], dtype);
    } else {
      print_dim(os, values, shape, dtype, axis + 1, base + i * inner);
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
    const auto values = t.to_doubles();
    if (t.rank() == 0) {
      os << format_value(values.at(0), t.dtype());
    } else {
      print_dim(os, values, t.shape(), t.dtype(), 0, 0);
    }
  }
  return os << " shape=" << t.shape().dims_string() << ", strides=" << t.shape().strides_string();
}

}  // namespace xylem
