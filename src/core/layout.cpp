#include "xylem/layout.hpp"

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

std::string too_many_elements(std::span<const std::int64_t> dims) {
  return "shape " + join(dims) + " has more than 2^62 (" + std::to_string(kMaxNumel) +
         ") elements: no tensor can hold that many";
}

// Refuses negative dimensions and more than kMaxNumel elements. Zero
// dimensions are left out of the count, so a zero beside absurd dimensions
// does not hide them (NumPy's rule). Every contiguous stride, a product of
// some of those dimensions, then fits in int64 too.
void check_dims(std::span<const std::int64_t> dims) {
  std::int64_t count = 1;
  for (const std::int64_t d : dims) {
    if (d < 0) throw Error(ErrorCode::invalid_argument, "negative dimension in shape " + join(dims));
    if (d != 0 && (__builtin_mul_overflow(count, d, &count) || count > kMaxNumel))
      throw Error(ErrorCode::invalid_argument, too_many_elements(dims));
  }
}

// a * b, or `otherwise` where int64 cannot hold it.
std::int64_t mul_or(std::int64_t a, std::int64_t b, std::int64_t otherwise) noexcept {
  std::int64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? otherwise : product;
}

}  // namespace

Layout::Layout(std::initializer_list<std::int64_t> dims) : Layout(std::span<const std::int64_t>(dims.begin(), dims.size())) {}

Layout::Layout(std::span<const std::int64_t> dims) {
  check_rank(dims.size());
  check_dims(dims);
  rank_ = static_cast<int>(dims.size());
  std::copy(dims.begin(), dims.end(), dims_.begin());
  set_contiguous_strides();
}

Layout Layout::strided(std::span<const std::int64_t> dims, std::span<const std::int64_t> strides,
                     std::int64_t offset) {
  if (dims.size() != strides.size())
    throw Error(ErrorCode::invalid_argument, "shape " + join(dims) + " and strides " + join(strides) +
                                                 " have different ranks");
  Layout s(dims);
  std::copy(strides.begin(), strides.end(), s.strides_.begin());
  s.offset_ = offset;
  s.check_reach("Layout::strided");
  return s;
}

// Every element index of the view is offset + sum(i_k * stride_k) with
// 0 <= i_k < dim_k, so it and every partial sum a kernel forms on the way
// lie in [lowest(), extent()). Both ends, and the distance between them,
// must fit in int64.
void Layout::check_reach(const char* op) const {
  std::int64_t low = offset_, high = offset_;
  bool fits = true;
  for (int i = 0; i < rank_ && fits; ++i) {
    if (dims_[i] <= 1) continue;  // the stride of a size-0 or size-1 dimension is never applied
    std::int64_t reach = 0;
    fits = !__builtin_mul_overflow(dims_[i] - 1, strides_[i], &reach) &&
           !(reach < 0 ? __builtin_add_overflow(low, reach, &low) : __builtin_add_overflow(high, reach, &high));
  }
  std::int64_t span = 0;
  fits = fits && high < INT64_MAX && !__builtin_sub_overflow(high, low, &span) && span < INT64_MAX;
  if (!fits)
    throw Error(ErrorCode::invalid_argument, std::string(op) + ": the view " + dims_string() + " with strides " +
                                                 strides_string() + " and offset " + std::to_string(offset_) +
                                                 " reaches element indices that int64 cannot hold");
}

void Layout::set_contiguous_strides() noexcept {
  std::int64_t stride = 1;
  for (int i = rank_ - 1; i >= 0; --i) {
    strides_[i] = stride;
    stride *= std::max<std::int64_t>(dims_[i], 1);
  }
}

int Layout::normalize_axis(int axis) const {
  const int a = axis < 0 ? axis + rank_ : axis;
  if (a < 0 || a >= rank_)
    throw Error(ErrorCode::invalid_argument,
                "axis " + std::to_string(axis) + " is out of range for shape " + dims_string());
  return a;
}

std::int64_t Layout::dim(int axis) const { return dims_[normalize_axis(axis)]; }
std::int64_t Layout::stride(int axis) const { return strides_[normalize_axis(axis)]; }

std::int64_t Layout::numel() const noexcept {
  std::int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

bool Layout::is_contiguous() const noexcept {
  std::int64_t expected = 1;
  for (int i = rank_ - 1; i >= 0; --i) {
    if (dims_[i] != 1 && strides_[i] != expected) return false;
    expected *= dims_[i];
  }
  return true;
}

std::int64_t Layout::extent() const noexcept {
  if (numel() == 0) return offset_;
  std::int64_t last = offset_;
  for (int i = 0; i < rank_; ++i)
    if (strides_[i] > 0) last += (dims_[i] - 1) * strides_[i];
  return last + 1;
}

std::int64_t Layout::lowest() const noexcept {
  if (numel() == 0) return offset_;
  std::int64_t first = offset_;
  for (int i = 0; i < rank_; ++i)
    if (strides_[i] < 0) first += (dims_[i] - 1) * strides_[i];
  return first;
}

Layout Layout::reshape(std::initializer_list<std::int64_t> dims) const {
  return reshape(std::span<const std::int64_t>(dims.begin(), dims.size()));
}

Layout Layout::reshape(std::span<const std::int64_t> dims) const {
  check_rank(dims.size());
  std::array<std::int64_t, kMaxRank> resolved{};
  int inferred = -1;
  bool has_zero = false;
  std::int64_t known = 1;  // product of the non-zero dimensions given
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (inferred >= 0) throw Error(ErrorCode::invalid_argument, "reshape to " + join(dims) + ": more than one -1");
      inferred = static_cast<int>(i);
    } else if (dims[i] < 0) {
      throw Error(ErrorCode::invalid_argument, "reshape to " + join(dims) + ": negative dimension");
    } else if (dims[i] == 0) {
      has_zero = true;
    } else if (__builtin_mul_overflow(known, dims[i], &known) || known > kMaxNumel) {
      throw Error(ErrorCode::invalid_argument, "reshape of " + dims_string() + ": " + too_many_elements(dims));
    }
    resolved[i] = dims[i];
  }
  const std::int64_t count = numel();
  if (inferred >= 0) {
    // Beside a zero dimension any value fits -1: ambiguous, as in NumPy.
    if (has_zero || count % known != 0)
      throw Error(ErrorCode::shape_mismatch, "cannot reshape " + dims_string() + " (" + std::to_string(count) +
                                                 " elements) to " + join(dims));
    resolved[inferred] = count / known;
  } else if ((has_zero ? 0 : known) != count) {
    throw Error(ErrorCode::shape_mismatch, "cannot reshape " + dims_string() + " (" + std::to_string(count) +
                                               " elements) to " + join(dims));
  }
  Layout s(std::span<const std::int64_t>(resolved.data(), dims.size()));
  s.offset_ = offset_;
  // An empty source addresses nothing, but the result's own strides (over
  // its non-zero dimensions) must still fit beside the offset, as every
  // Layout's do. A non-empty contiguous source reaches exactly as far as its
  // contiguous result.
  if (count == 0) {
    s.check_reach("reshape");
    return s;
  }
  if (is_contiguous()) return s;
  if (!s.reshape_strides_from(*this))
    throw Error(ErrorCode::invalid_argument, "reshape of the view " + dims_string() + " with strides " +
                                                 strides_string() + " to " + s.dims_string() +
                                                 " needs a copy: make it contiguous first (xylem::contiguous)");
  s.check_reach("reshape");
  return s;
}

// Strides that let this shape view the same elements as `from` in the same
// row-major order, without a copy. Works group by group: a run of `from`'s
// dimensions that multiplies to a run of ours must be dense within itself.
bool Layout::reshape_strides_from(const Layout& from) noexcept {
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
    for (int k = oi; k + 1 < oj; ++k) {
      std::int64_t dense = 0;  // a product int64 cannot hold is no stride: not dense
      if (__builtin_mul_overflow(old_strides[k + 1], old_dims[k + 1], &dense) || old_strides[k] != dense)
        return false;
    }
    strides_[nj - 1] = old_strides[oj - 1];
    // The group spans what the old one did, so each stride fits where its
    // dimension is 2 or more; an overflow reaches only the size-1
    // dimensions outside them, whose stride is never applied.
    for (int k = nj - 1; k > ni; --k) strides_[k - 1] = mul_or(strides_[k], dims_[k], strides_[k]);
    ni = nj;
    oi = oj;
  }
  for (; ni < rank_; ++ni) strides_[ni] = 1;  // trailing size-1 dimensions
  return true;
}

Layout Layout::slice(int axis, std::int64_t begin, std::int64_t end, std::int64_t step) const {
  const int a = normalize_axis(axis);
  if (step <= 0) throw Error(ErrorCode::invalid_argument, "slice step must be positive, got " + std::to_string(step));
  const std::int64_t n = dims_[a];
  // Python's rules: a negative bound counts from the end, then both clamp.
  // Adding n (>= 0) to a negative bound cannot overflow.
  if (begin < 0) begin += n;
  if (end < 0) end += n;
  begin = std::clamp<std::int64_t>(begin, 0, n);
  end = std::clamp<std::int64_t>(end, begin, n);
  const std::int64_t length = end - begin;
  Layout s = *this;
  s.dims_[a] = length == 0 ? 0 : (length - 1) / step + 1;  // ceil(length / step) without overflow for a huge step
  // With an element, begin < n and the new offset lies in this view's
  // reach; with two, so does the new stride. Otherwise they are never
  // applied, and the old ones stay (begin * stride might not fit).
  if (s.dims_[a] > 0) s.offset_ = offset_ + begin * strides_[a];
  if (s.dims_[a] > 1) s.strides_[a] = strides_[a] * step;
  s.check_reach("slice");
  return s;
}

// Transpose and permute reorder dimensions with their strides: the element
// count and the reach, checked when this shape was made, do not change.
Layout Layout::transpose(int a, int b) const {
  const int x = normalize_axis(a), y = normalize_axis(b);
  Layout s = *this;
  std::swap(s.dims_[x], s.dims_[y]);
  std::swap(s.strides_[x], s.strides_[y]);
  return s;
}

Layout Layout::permute(std::span<const int> order) const {
  if (static_cast<int>(order.size()) != rank_)
    throw Error(ErrorCode::invalid_argument, "permute of " + dims_string() + " needs " + std::to_string(rank_) + " axes");
  std::array<bool, kMaxRank> seen{};
  Layout s = *this;
  for (int i = 0; i < rank_; ++i) {
    const int from = normalize_axis(order[i]);
    if (seen[from]) throw Error(ErrorCode::invalid_argument, "permute of " + dims_string() + ": axis repeated");
    seen[from] = true;
    s.dims_[i] = dims_[from];
    s.strides_[i] = strides_[from];
  }
  return s;
}

bool Layout::same_dims(const Layout& other) const noexcept {
  return rank_ == other.rank_ && std::equal(dims_.begin(), dims_.begin() + rank_, other.dims_.begin());
}

bool operator==(const Layout& a, const Layout& b) noexcept {
  return a.same_dims(b) && a.offset_ == b.offset_ &&
         std::equal(a.strides_.begin(), a.strides_.begin() + a.rank_, b.strides_.begin());
}

std::string Layout::dims_string() const { return join(dims()); }
std::string Layout::strides_string() const { return join(strides()); }

std::ostream& operator<<(std::ostream& os, const Layout& s) { return os << s.dims_string(); }

}  // namespace xylem
