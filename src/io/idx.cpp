#include "io/idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <string>

#include "xylem/data.hpp"
#include "xylem/error.hpp"
#include "xylem/layout.hpp"

namespace xylem {
namespace io {

namespace {

// A file read through zlib, which passes a file that is not gzip'd through
// unchanged; positions count the uncompressed bytes.
class GzReader {
 public:
  GzReader(const std::filesystem::path& path, std::string source) : path_(path.string()), source_(std::move(source)) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      throw Error(ErrorCode::io, source_ + ": cannot open: " +
                                     (std::filesystem::exists(path, ec) ? "not a regular file" : "no such file"));
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) throw Error(ErrorCode::io, source_ + ": cannot open");
    // Larger than zlib's 8 KiB default: data sets are tens of megabytes.
    gzbuffer(file_, 1u << 17);
  }
  ~GzReader() { gzclose(file_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Up to n bytes; fewer only at the end of the data.
  std::size_t read_some(void* out, std::size_t n) {
    auto* p = static_cast<unsigned char*>(out);
    std::size_t done = 0;
    while (done < n) {
      const auto chunk = static_cast<unsigned>(std::min<std::size_t>(n - done, 1u << 30));
      const int got = gzread(file_, p + done, chunk);
      if (got < 0) {
        throw Error(ErrorCode::io, source_ + ": corrupt data at byte " + std::to_string(position_ + done) +
                                       " of the uncompressed data: " + zlib_error());
      }
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    // zlib reports a gzip stream cut short only here, as an error after the
    // bytes it could inflate.
    int code = Z_OK;
    gzerror(file_, &code);
    if (code != Z_OK)
      throw Error(ErrorCode::io, source_ + ": truncated or corrupt at byte " + std::to_string(position_ + done) +
                                     " of the uncompressed data: " + zlib_error());
    position_ += done;
    return done;
  }

  void read(void* out, std::size_t n, const std::string& what) {
    if (read_some(out, n) != n)
      throw Error(ErrorCode::io, source_ + ": truncated: the file ends at byte " + std::to_string(position_) +
                                     " of the uncompressed data, inside the " + what);
  }

  [[nodiscard]] std::uint64_t position() const noexcept { return position_; }

 private:
  // zlib's message, without the "<path>: " it puts first (ours has it).
  std::string zlib_error() {
    int code = Z_OK;
    std::string why = gzerror(file_, &code);
    if (why.starts_with(path_ + ": ")) why.erase(0, path_.size() + 2);
    return why;
  }

  std::string path_;
  std::string source_;
  gzFile file_ = nullptr;
  std::uint64_t position_ = 0;
};

std::string hex(unsigned byte) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  return std::string("0x") + kDigits[(byte >> 4) & 0xF] + kDigits[byte & 0xF];
}

std::uint32_t big_endian_u32(const unsigned char* p) {
  return std::uint32_t(p[0]) << 24 | std::uint32_t(p[1]) << 16 | std::uint32_t(p[2]) << 8 | std::uint32_t(p[3]);
}

// Reverses each element's bytes: IDX is big-endian.
void to_host_order(std::vector<unsigned char>& bytes, std::size_t element) {
  if constexpr (std::endian::native == std::endian::big) return;
  for (std::size_t k = 0; k + element <= bytes.size(); k += element)
    std::reverse(bytes.begin() + std::ptrdiff_t(k), bytes.begin() + std::ptrdiff_t(k + element));
}

DType element_type(unsigned code, const std::string& source) {
  switch (code) {
    case 0x08:
      return DType::u8;
    case 0x0C:
      return DType::i32;
    case 0x0D:
      return DType::f32;
    case 0x0E:
      return DType::f64;
    case 0x09:
    case 0x0B:
      throw Error(ErrorCode::unsupported, source + ": element type " + hex(code) + " at byte 2 (" +
                                              (code == 0x09 ? "signed bytes" : "16-bit integers") +
                                              ") has no xylem dtype");
    default:
      throw Error(ErrorCode::invalid_argument, source + ": unknown element type " + hex(code) +
                                                   " at byte 2 (IDX has 0x08, 0x09, 0x0B, 0x0C, 0x0D, 0x0E)");
  }
}

}  // namespace

IdxData read_idx_data(const std::filesystem::path& path) {
  const std::string source = "read_idx: " + path.string();
  GzReader in(path, source);
  unsigned char magic[4];
  in.read(magic, 4, "magic number");
  if (magic[0] != 0 || magic[1] != 0)
    throw Error(ErrorCode::invalid_argument, source + ": not an IDX file: bytes 0 and 1 are " +
                                                 std::to_string(magic[0]) + " and " + std::to_string(magic[1]) +
                                                 ", not 0 and 0");
  IdxData out;
  out.dtype = element_type(magic[2], source);
  const int rank = magic[3];
  if (rank == 0 || rank > kMaxRank)
    throw Error(ErrorCode::invalid_argument,
                source + ": rank " + std::to_string(rank) + " at byte 3 is not in 1.." + std::to_string(kMaxRank));
  std::uint64_t numel = 1;
  for (int k = 0; k < rank; ++k) {
    unsigned char size[4];
    in.read(size, 4, "dimension size");
    const std::uint64_t d = big_endian_u32(size);
    // At most 8 factors below 2^32: checked against kMaxNumel as they come.
    if (d != 0 && numel > std::uint64_t(kMaxNumel) / d)
      throw Error(ErrorCode::invalid_argument,
                  source + ": the dimensions overflow at byte " + std::to_string(idx_data_start(std::size_t(k))));
    numel *= d;
    out.dims.push_back(static_cast<std::int64_t>(d));
  }
  std::int64_t signed_bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::int64_t>(numel), static_cast<std::int64_t>(size_of(out.dtype)),
                             &signed_bytes))
    throw Error(ErrorCode::invalid_argument, source + ": the dimensions overflow: their bytes do not fit in 64 bits");
  const auto bytes = static_cast<std::uint64_t>(signed_bytes);
  // Grown as the data arrives, so a header claiming more than the file
  // holds fails on the missing bytes, not on a huge allocation.
  constexpr std::uint64_t kChunk = std::uint64_t{1} << 24;
  while (out.bytes.size() < bytes) {
    const std::size_t have = out.bytes.size();
    out.bytes.resize(have + std::min<std::uint64_t>(kChunk, bytes - have));
    in.read(out.bytes.data() + have, out.bytes.size() - have,
            "data (the dimensions say " + std::to_string(bytes) + " bytes)");
  }
  unsigned char extra;
  if (in.read_some(&extra, 1) != 0)
    throw Error(ErrorCode::invalid_argument, source + ": bytes after the data, from byte " +
                                                 std::to_string(in.position() - 1) + " (the dimensions say " +
                                                 std::to_string(bytes) + " bytes of data)");
  to_host_order(out.bytes, size_of(out.dtype));
  return out;
}

}  // namespace io

namespace data {

Tensor read_idx(const std::filesystem::path& path) {
  io::IdxData d = io::read_idx_data(path);
  return Tensor::from_bytes(d.bytes.data(), d.bytes.size(), Layout(std::span(d.dims)), d.dtype);
}

}  // namespace data

}  // namespace xylem
