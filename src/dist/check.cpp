#include "dist/check.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "xylem/error.hpp"

namespace xylem::dist::detail {
namespace {

using plugin::dist::Combine;

std::uint64_t fnv1a(std::uint64_t h, std::string_view text) {
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// A fixed-size record, so every rank's fits one all_gather slot.
struct Record {
  char call[96];
  char shape[152];
  std::int32_t dtype;
};

void put(char* dst, std::size_t size, const std::string& text) {
  const std::size_t n = std::min(size - 1, text.size());
  std::memcpy(dst, text.data(), n);
  dst[n] = '\0';
}

std::string describe(const Record& rec) {
  return std::string(rec.call) + (rec.shape[0] ? std::string(" on ") + rec.shape : std::string());
}

}  // namespace

void check_same(plugin::dist::Transport& transport, const Signature& mine, plugin::dist::Deadline deadline) {
  const std::uint64_t h = fnv1a(fnv1a(0xcbf29ce484222325ull, mine.call), mine.shape);
  // max(h) and max(-h) = -min(h): equal hashes everywhere iff they agree.
  const std::int64_t half = static_cast<std::int64_t>(h >> 1);
  std::int64_t bounds[2] = {half, -half};
  transport.all_reduce(bounds, 2, DType::i64, Combine::max, deadline);
  if (bounds[0] == -bounds[1]) return;

  Record own{};
  put(own.call, sizeof own.call, mine.call);
  put(own.shape, sizeof own.shape, mine.shape);
  own.dtype = static_cast<std::int32_t>(mine.dtype);
  std::vector<Record> all(std::size_t(transport.size()));
  transport.all_gather(&own, all.data(), sizeof(Record), deadline);
  for (std::size_t r = 0; r < all.size(); ++r) {
    const Record& other = all[r];
    if (std::strcmp(other.call, own.call) == 0 && std::strcmp(other.shape, own.shape) == 0) continue;
    ErrorCode code = ErrorCode::shape_mismatch;
    if (std::strcmp(other.call, own.call) != 0) {
      code = ErrorCode::invalid_argument;
    } else if (other.dtype != own.dtype) {
      code = ErrorCode::dtype_mismatch;
    }
    throw Error(code, "dist::" + std::string(own.call) + ": rank " + std::to_string(transport.rank()) + " calls " +
                          describe(own) + " but rank " + std::to_string(r) + " calls " + describe(other) +
                          "; every rank must pass the same call, dtype and shape");
  }
  // The hashes differ only past the records' length: report it plainly.
  throw Error(ErrorCode::invalid_argument, "dist::" + mine.call + ": the ranks pass different arguments (" + mine.shape + " here)");
}

}  // namespace xylem::dist::detail
