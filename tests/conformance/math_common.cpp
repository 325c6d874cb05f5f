// Helpers of math_common.hpp.
#include "conformance/math_common.hpp"

#include <cstring>

namespace conformance {

double arith_tol(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return 0x1p-10;  // an ulp: the f32 result rounded once more to the storage type
    case DType::bf16:
      return 0x1p-7;
    default:
      return 4 * tol(dtype).eps;
  }
}

double math_tol(DType dtype) { return tol(dtype).elem; }

double tiny(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return 0x1p-24;
    case DType::f64:
      return 0x1p-1022;
    default:
      return 0x1p-126;
  }
}

double largest(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return 65504.0;
    case DType::bf16:
      return 0x1.FEp127;
    case DType::f32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

double smallest_normal(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return 0x1p-14;
    case DType::f64:
      return std::numeric_limits<double>::min();
    default:
      return 0x1p-126;
  }
}

Dims broadcast_dims(const Dims& a, const Dims& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::size_t broadcast_index(const Dims& out, const Dims& in, std::size_t k) {
  std::size_t index = 0, stride = 1;
  auto rest = static_cast<std::int64_t>(k);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::size_t axis = out.size() - 1 - i;
    const std::int64_t coordinate = rest % out[axis];
    rest /= out[axis];
    if (i >= in.size()) continue;
    const std::int64_t dim = in[in.size() - 1 - i];
    if (dim != 1) index += static_cast<std::size_t>(coordinate) * stride;
    stride *= static_cast<std::size_t>(dim);
  }
  return index;
}

std::string dims_string(const Dims& dims) { return Layout(std::span<const std::int64_t>(dims)).dims_string(); }

std::int64_t numel(const Dims& dims) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

Dims coords_of(const Dims& dims, std::int64_t k) {
  Dims c(dims.size());
  for (std::size_t d = dims.size(); d-- > 0;) {
    c[d] = k % dims[d];
    k /= dims[d];
  }
  return c;
}

std::int64_t flat_of(const Dims& dims, const Dims& coords) {
  std::int64_t k = 0;
  for (std::size_t d = 0; d < dims.size(); ++d) k = k * dims[d] + coords[d];
  return k;
}

std::vector<unsigned char> encode_any(DType dtype, const std::vector<double>& values) {
  if (xylem::is_floating(dtype)) return encode(dtype, values);
  std::vector<unsigned char> bytes(values.size() * xylem::size_of(dtype));
  for (std::size_t k = 0; k < values.size(); ++k) {
    unsigned char* p = bytes.data() + k * xylem::size_of(dtype);
    const double v = values[k];
    if (dtype == DType::i32) {
      const auto i = static_cast<std::int32_t>(v);
      std::memcpy(p, &i, 4);
    } else if (dtype == DType::i64) {
      // 2^63 stands for the largest i64 (doubles cannot hold it).
      const std::int64_t i = v >= 0x1p63 ? std::numeric_limits<std::int64_t>::max() : static_cast<std::int64_t>(v);
      std::memcpy(p, &i, 8);
    } else {
      *p = static_cast<unsigned char>(dtype == DType::boolean ? (v != 0) : v);
    }
  }
  return bytes;
}

Arg MathConformance::poisoned(DType dtype, ViewKind layout, const Dims& dims, double poison) {
  const Layout shape = detail::base_shape(layout, dims);
  Arg a;
  a.base_values.assign(static_cast<std::size_t>(shape.numel()),
                       xylem::is_floating(dtype) ? round_to(dtype, poison) : poison);
  if (backend.supports(OpId::creation_fill, dtype)) {
    a.base = Tensor(shape, dtype);
    xylem::fill(backend, a.base, poison);
  } else {  // a framework without fill in dtype: the poison comes from the host
    const auto bytes = encode_any(dtype, a.base_values);
    a.base = Tensor::from_bytes(bytes.data(), bytes.size(), shape, dtype);
  }
  a.view = detail::view_of(a.base, layout, dims);
  a.pos = positions(a.view.layout());
  return a;
}

Arg MathConformance::host_input(DType dtype, ViewKind layout, const Dims& dims, const std::vector<double>& logical) {
  const Layout shape = detail::base_shape(layout, dims);
  Arg a;
  a.pos = positions(detail::view_shape(layout, dims));
  // Storage outside the view holds a recognisable filler.
  a.base_values.assign(static_cast<std::size_t>(shape.numel()), dtype == DType::boolean ? 1.0 : 3.0);
  for (std::size_t k = 0; k < a.pos.size(); ++k) {
    const double v = logical.at(k);
    a.base_values[static_cast<std::size_t>(a.pos[k])] = xylem::is_floating(dtype) ? round_to(dtype, v) : v;
  }
  const auto bytes = encode_any(dtype, a.base_values);
  a.base = Tensor::from_bytes(bytes.data(), bytes.size(), shape, dtype);
  a.view = detail::view_of(a.base, layout, dims);
  return a;
}

Arg MathConformance::random_bools(ViewKind layout, const Dims& dims) {
  std::bernoulli_distribution coin(0.5);
  std::vector<double> v(static_cast<std::size_t>(numel(dims)));
  for (auto& b : v) b = coin(rng) ? 1.0 : 0.0;
  return host_input(DType::boolean, layout, dims, v);
}

bool MathConformance::runs_where(DType dtype) {
  return runs(OpId::math_where, dtype, [&] {
    auto x = input(dtype, ViewKind::contiguous, {4});
    auto c = random_bools(ViewKind::contiguous, {4});
    (void)xylem::where(backend, c.view, x.view, x.view);
  });
}

void MathConformance::expect_rejected(xylem::ErrorCode code, const std::string& op,
                                      const std::vector<std::string>& shapes, const std::vector<Tensor>& untouched,
                                      const std::function<void()>& fn) {
  std::vector<xylem_test::Snapshot> before;
  for (const auto& t : untouched) before.push_back(xylem_test::snapshot(t));
  const std::string message = XY_EXPECT_ERROR(code, fn());
  if (!message.empty()) {
    EXPECT_NE(message.find(op), std::string::npos) << "the message does not name the op '" << op << "': " << message;
    for (const auto& s : shapes)
      EXPECT_NE(message.find(s), std::string::npos) << "the message does not name the shape " << s << ": " << message;
  }
  for (std::size_t i = 0; i < untouched.size(); ++i) XY_EXPECT_UNCHANGED(untouched[i], before[i]);
}

}  // namespace conformance
