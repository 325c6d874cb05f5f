#include "xylem/shape.hpp"

#include <algorithm>
#include <numeric>
#include <ostream>
#include <sstream>

#include "xylem/error.hpp"

namespace xylem {
namespace {

std::string join(std::span<const std::int64_t> values) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < values.size(); ++i) os << (i ? ", " : "") << values[i];
  os << ']';
  return os.str();
}

void check_rank(std::size_t rank) {
  if (rank > static_cast<std::size_t>(kMaxRank))
    throw Error(ErrorCode::invalid_argument,
                "shape of rank " + std::to_string(rank) + " exceeds the maximum rank " + std::to_string(kMaxRank));
}

}  // namespace

Shape::Shape(std::initializer_list<std::int64_t> dims) : Shape(std::span<const std::int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const std::int64_t> dims) {
  check_rank(dims.size());
  rank_ = static_cast<int>(dims.size());
  for (int i = 0; i < rank_; ++i) {
    if (dims[i] < 0)
      throw Error(ErrorCode::invalid_argument, "negative dimension in shape " + join(dims));
    dims_[i] = dims[i];
  }
  set_contiguous_strides();
}

Shape Shape::strided(std::span<const std::int64_t> dims, std::span<const std::int64_t> strides,
                     std::int64_t offset) {
  if (dims.size() != strides.size())
    throw Error(ErrorCode::invalid_argument, "shape " + join(dims) + " and strides " + join(strides) +
                                                 " have different ranks");
  Shape s(dims);
  std::copy(strides.begin(), strides.end(), s.strides_.begin());
  s.offset_ = offset;
  return s;
}

void Shape::set_contiguous_strides() noexcept {
  std::int64_t stride = 1;
  for (int i = rank_ - 1; i >= 0; --i) {
    strides_[i] = stride;
    stride *= std::max<std::int64_t>(dims_[i], 1);
  }
}

int Shape::normalize_axis(int axis) const {
  const int a = axis < 0 ? axis + rank_ : axis;
  if (a < 0 || a >= rank_)
    throw Error(ErrorCode::invalid_argument,
                "axis " + std::to_string(axis) + " is out of range for shape " + dims_string());
  return a;
}

std::int64_t Shape::dim(int axis) const { return dims_[normalize_axis(axis)]; }
std::int64_t Shape::stride(int axis) const { return strides_[normalize_axis(axis)]; }

std::int64_t Shape::numel() const noexcept {
  std::int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

bool Shape::is_contiguous() const noexcept {
  std::int64_t expected = 1;
  for (int i = rank_ - 1; i >= 0; --i) {
    if (dims_[i] != 1 && strides_[i] != expected) return false;
    expected *= dims_[i];
  }
  return true;
}

std::int64_t Shape::extent() const noexcept {
  if (numel() == 0) return offset_;
  std::int64_t last = offset_;
  for (int i = 0; i < rank_; ++i)
    if (strides_[i] > 0) last += (dims_[i] - 1) * strides_[i];
  return last + 1;
}

Shape Shape::reshape(std::initializer_list<std::int64_t> dims) const {
  return reshape(std::span<const std::int64_t>(dims.begin(), dims.size()));
}

Shape Shape::reshape(std::span<const std::int64_t> dims) const {
  check_rank(dims.size());
  std::array<std::int64_t, kMaxRank> resolved{};
  int inferred = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (inferred >= 0) throw Error(ErrorCode::invalid_argument, "reshape to " + join(dims) + ": more than one -1");
      inferred = static_cast<int>(i);
    } else if (dims[i] < 0) {
      throw Error(ErrorCode::invalid_argument, "reshape to " + join(dims) + ": negative dimension");
    } else {
      known *= dims[i];
    }
    resolved[i] = dims[i];
  }
  if (inferred >= 0) {
    if (known == 0 || numel() % known != 0)
      throw Error(ErrorCode::shape_mismatch, "cannot reshape " + dims_string() + " to " + join(dims));
    resolved[inferred] = numel() / known;
    known *= resolved[inferred];
  }
  if (known != numel())
    throw Error(ErrorCode::shape_mismatch, "cannot reshape " + dims_string() + " (" + std::to_string(numel()) +
                                               " elements) to " + join(dims));
  Shape s(std::span<const std::int64_t>(resolved.data(), dims.size()));
  s.offset_ = offset_;
  if (is_contiguous() || numel() == 0) return s;
  if (!s.reshape_strides_from(*this))
    throw Error(ErrorCode::invalid_argument, "reshape of the view " + dims_string() + " with strides " +
                                                 strides_string() + " to " + s.dims_string() +
                                                 " needs a copy: make it contiguous first (xylem::contiguous)");
  return s;
}

// Strides that let this shape view the same elements as `from` in the same
// row-major order, without a copy. Works group by group: a run of `from`'s
// dimensions that multiplies to a run of ours must be dense within itself.
bool Shape::reshape_strides_from(const Shape& from) noexcept {
  std::array<std::int64_t, kMaxRank> old_dims{}, old_strides{};
  int old_rank = 0;
  for (int i = 0; i < from.rank_; ++i) {
    if (from.dims_[i] == 1) continue;  // size-1 dimensions have no stride that matters
    old_dims[old_rank] = from.dims_[i];
    old_strides[old_rank++] = from.strides_[i];
  }
  int oi = 0, ni = 0;
  while (ni < rank_ && oi < old_rank) {
    int nj = ni + 1, oj = oi + 1;
    std::int64_t np = dims_[ni], op = old_dims[oi];
    while (np != op) {
      if (np < op) {
        if (nj >= rank_) return false;
        np *= dims_[nj++];
      } else {
        if (oj >= old_rank) return false;
        op *= old_dims[oj++];
      }
    }
    for (int k = oi; k + 1 < oj; ++k)
      if (old_strides[k] != old_strides[k + 1] * old_dims[k + 1]) return false;
    strides_[nj - 1] = old_strides[oj - 1];
    for (int k = nj - 1; k > ni; --k) strides_[k - 1] = strides_[k] * dims_[k];
    ni = nj;
    oi = oj;
  }
  for (; ni < rank_; ++ni) strides_[ni] = 1;  // trailing size-1 dimensions
  return true;
}

Shape Shape::slice(int axis, std::int64_t begin, std::int64_t end, std::int64_t step) const {
  const int a = normalize_axis(axis);
  if (step <= 0) throw Error(ErrorCode::invalid_argument, "slice step must be positive, got " + std::to_string(step));
  const std::int64_t n = dims_[a];
  if (begin < 0) begin += n;
  if (end < 0) end += n;
  begin = std::clamp<std::int64_t>(begin, 0, n);
  end = std::clamp<std::int64_t>(end, begin, n);
  Shape s = *this;
  s.dims_[a] = (end - begin + step - 1) / step;
  s.offset_ = offset_ + begin * strides_[a];
  s.strides_[a] = strides_[a] * step;
  return s;
}

Shape Shape::transpose(int a, int b) const {
  const int x = normalize_axis(a), y = normalize_axis(b);
  Shape s = *this;
  std::swap(s.dims_[x], s.dims_[y]);
  std::swap(s.strides_[x], s.strides_[y]);
  return s;
}

Shape Shape::permute(std::span<const int> order) const {
  if (static_cast<int>(order.size()) != rank_)
    throw Error(ErrorCode::invalid_argument, "permute of " + dims_string() + " needs " + std::to_string(rank_) + " axes");
  std::array<bool, kMaxRank> seen{};
  Shape s = *this;
  for (int i = 0; i < rank_; ++i) {
    const int from = normalize_axis(order[i]);
    if (seen[from]) throw Error(ErrorCode::invalid_argument, "permute of " + dims_string() + ": axis repeated");
    seen[from] = true;
    s.dims_[i] = dims_[from];
    s.strides_[i] = strides_[from];
  }
  return s;
}

bool Shape::same_dims(const Shape& other) const noexcept {
  return rank_ == other.rank_ && std::equal(dims_.begin(), dims_.begin() + rank_, other.dims_.begin());
}

bool operator==(const Shape& a, const Shape& b) noexcept {
  return a.same_dims(b) && a.offset_ == b.offset_ &&
         std::equal(a.strides_.begin(), a.strides_.begin() + a.rank_, b.strides_.begin());
}

std::string Shape::dims_string() const { return join(dims()); }
std::string Shape::strides_string() const { return join(strides()); }

std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.dims_string(); }

}  // namespace xylem
