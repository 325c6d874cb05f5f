// The IDX reader and Fashion-MNIST: hand-made files of every element type,
// plain and gzip'd; truncated, corrupt and lying files raise typed errors
// naming the file and byte; the real data set (Debian's
// dataset-fashion-mnist) has its counts, labels and pixel sums.
#include <zlib.h>

#include <cstdlib>

#include "common/support.hpp"
#include "unit/files.hpp"
#include "xylem/data.hpp"

namespace {

using xylem::DType;
using xylem::ErrorCode;
using xylem::Tensor;
using xylem::data::FashionMnist;
using xylem_test::contains;
using xylem_test::TempDir;
using xylem_test::write_file;

std::string be32(std::uint32_t v) { return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; }

// An IDX file: magic, sizes, then `data` as given (already big-endian).
std::string idx(unsigned char type, const std::vector<std::uint32_t>& dims, const std::string& data) {
  std::string s{'\0', '\0', char(type), char(dims.size())};
  for (const auto d : dims) s += be32(d);
  return s + data;
}

std::string gzip(const std::string& bytes) {
  uLongf size = compressBound(bytes.size()) + 32;
  std::string out(size, '\0');
  z_stream z{};
  // windowBits 15 + 16: a gzip wrapper, as the data sets ship.
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

TEST(Idx, EveryElementTypePlainAndGzipped) {
  TempDir dir;
  const std::string u8 = idx(0x08, {2, 3}, "\x01\x02\x03\xfd\xfe\xff");
  const std::string i32 = idx(0x0C, {2}, be32(7) + be32(0xFFFFFFFE));
  const float f = 1.5f;
  std::uint32_t fbits;
  std::memcpy(&fbits, &f, 4);
  const std::string f32 = idx(0x0D, {1}, be32(fbits));
  const double d = -2.25;
  std::uint64_t dbits;
  std::memcpy(&dbits, &d, 8);
  const std::string f64 = idx(0x0E, {1, 1}, be32(std::uint32_t(dbits >> 32)) + be32(std::uint32_t(dbits)));
  for (const bool zipped : {false, true}) {
    SCOPED_TRACE(zipped ? "gzip'd" : "plain");
    const auto put = [&](const std::string& name, const std::string& bytes) {
      const auto path = dir / (name + (zipped ? ".gz" : ""));
      write_file(path, zipped ? gzip(bytes) : bytes);
      return xylem::data::read_idx(path);
    };
    const Tensor a = put("u8", u8);
    EXPECT_EQ(a.dtype(), DType::u8);
    EXPECT_EQ(a.layout(), (xylem::Layout{2, 3}));
    EXPECT_EQ(a.to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{1, 2, 3, 253, 254, 255}));
    EXPECT_EQ(put("i32", i32).to_vector<std::int32_t>(), (std::vector<std::int32_t>{7, -2}));
    EXPECT_EQ(put("f32", f32).to_vector<float>(), (std::vector<float>{1.5f}));
    const Tensor e = put("f64", f64);
    EXPECT_EQ(e.layout(), (xylem::Layout{1, 1}));
    EXPECT_EQ(e.to_vector<double>(), (std::vector<double>{-2.25}));
  }
}

struct Bad {
  const char* what;
  std::string file;
  ErrorCode code;
  const char* names;
};

TEST(Idx, DamagedFilesRaiseTypedErrors) {
  TempDir dir;
  std::string pixels(400, '\0');
  for (std::size_t k = 0; k < pixels.size(); ++k) pixels[k] = char(k * k * 37 % 251);
  const std::string good = idx(0x08, {4, 100}, pixels);
  const std::string zipped = gzip(good);
  std::string corrupt = zipped;
  // Past the 10-byte gzip header, into the deflate stream.
  for (std::size_t k = 12; k < corrupt.size() - 8; ++k) corrupt[k] = char(corrupt[k] ^ 0x5A);
  const Bad bad[] = {
      {"empty", "", ErrorCode::io, "byte 0"},
      {"short magic", std::string("\0\0", 2), ErrorCode::io, "byte 2"},
      {"bad magic", "PK\x03\x04", ErrorCode::invalid_argument, "bytes 0 and 1"},
      {"unknown type", idx(0x07, {1}, "x"), ErrorCode::invalid_argument, "0x07"},
      {"signed bytes", idx(0x09, {1}, "x"), ErrorCode::unsupported, "0x09"},
      {"rank 0", idx(0x08, {}, "x"), ErrorCode::invalid_argument, "rank 0"},
      {"rank 9", idx(0x08, {1, 1, 1, 1, 1, 1, 1, 1, 1}, "x"), ErrorCode::invalid_argument, "rank 9"},
      {"sizes cut short", idx(0x08, {2, 3}, "").substr(0, 10), ErrorCode::io, "byte 10"},
      {"data cut short", idx(0x08, {2, 3}, "abcd"), ErrorCode::io, "byte 16"},
      {"dimensions overflow", idx(0x08, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, ""), ErrorCode::invalid_argument,
       "overflow at byte 8"},
      {"huge but empty", idx(0x08, {0x7FFFFFFF, 0x7FFFFFFF}, "12345678"), ErrorCode::io, "byte 20"},
      {"bytes overflow", idx(0x0E, {0x7FFFFFFF, 0x7FFFFFFF}, ""), ErrorCode::invalid_argument, "64 bits"},
      {"bytes after the data", idx(0x08, {2}, "abc"), ErrorCode::invalid_argument, "from byte 10"},
      {"gzip cut short", zipped.substr(0, zipped.size() / 2), ErrorCode::io, "of the uncompressed data"},
      {"gzip corrupt", corrupt, ErrorCode::io, "of the uncompressed data"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.what);
    const auto path = dir / "bad-idx-ubyte";
    write_file(path, b.file);
    const std::string message = XY_EXPECT_ERROR(b.code, (void)xylem::data::read_idx(path));
    EXPECT_TRUE(contains(message, path.string())) << message;
    EXPECT_TRUE(contains(message, b.names)) << message;
  }
  XY_EXPECT_ERROR(ErrorCode::io, (void)xylem::data::read_idx(dir / "absent"));
  XY_EXPECT_ERROR(ErrorCode::io, (void)xylem::data::read_idx(dir.path()));
}

// A small Fashion-MNIST in `dir`: n images whose pixels are their index,
// labels k % 10 (or `label` for the last).
void write_small_set(const TempDir& dir, std::uint32_t n, char last_label = 0) {
  std::string pixels, labels;
  for (std::uint32_t k = 0; k < n; ++k) {
    pixels += std::string(28 * 28, char(k));
    labels += char(k % 10);
  }
  if (last_label) labels.back() = last_label;
  for (const char* part : {"train", "t10k"}) {
    write_file(dir / (std::string(part) + "-images-idx3-ubyte"), idx(0x08, {n, 28, 28}, pixels));
    write_file(dir / (std::string(part) + "-labels-idx1-ubyte.gz"), gzip(idx(0x08, {n}, labels)));
  }
}

TEST(FashionMnist, ReadsADirectoryGivenOrFromTheEnvironment) {
  TempDir dir;
  write_small_set(dir, 3);
  const xylem::data::Split s = FashionMnist(dir.path()).train();
  EXPECT_EQ(s.images.dtype(), DType::f32);
  EXPECT_EQ(s.images.layout(), (xylem::Layout{3, 1, 28, 28}));
  EXPECT_EQ(s.labels.dtype(), DType::i64);
  EXPECT_EQ(s.labels.to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_FLOAT_EQ(s.images.to_vector<float>()[2 * 784 + 5], 2.0f / 255.0f);

  ::setenv("XYLEM_DATA_DIR", dir.path().c_str(), 1);
  EXPECT_EQ(FashionMnist().directory(), dir.path());
  EXPECT_EQ(FashionMnist().test().labels.numel(), 3);
  ::unsetenv("XYLEM_DATA_DIR");
}

TEST(FashionMnist, MissingOrLyingDataSets) {
  TempDir dir;
  const std::string missing = XY_EXPECT_ERROR(ErrorCode::io, FashionMnist{dir.path()});
  EXPECT_TRUE(contains(missing, dir.path().string())) << missing;
  EXPECT_TRUE(contains(missing, "train-images-idx3-ubyte")) << missing;
  EXPECT_TRUE(contains(missing, "dataset-fashion-mnist")) << missing;

  write_small_set(dir, 12, 10);
  const std::string label = XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)FashionMnist(dir.path()).train());
  EXPECT_TRUE(contains(label, "label 10 at byte 19")) << label;
}

TEST(FashionMnist, TheDebianDataSet) {
  std::error_code ec;
  if (!std::filesystem::exists(FashionMnist::kDebianDirectory, ec))
    GTEST_SKIP() << "Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)";
  const FashionMnist set{FashionMnist::kDebianDirectory};
  // The sums of every pixel byte and every label, computed once from the
  // package's files.
  struct Part {
    xylem::data::Split split;
    std::int64_t n;
    double pixel_sum;
    std::int64_t first_labels[3];
  };
  const Part parts[] = {{set.train(), 60000, 3431114169.0, {9, 0, 0}}, {set.test(), 10000, 573469082.0, {9, 2, 1}}};
  for (const Part& p : parts) {
    SCOPED_TRACE(p.n);
    EXPECT_EQ(p.split.images.layout(), (xylem::Layout{p.n, 1, 28, 28}));
    const auto labels = p.split.labels.to_vector<std::int64_t>();
    ASSERT_EQ(static_cast<std::int64_t>(labels.size()), p.n);
    std::vector<std::int64_t> per_class(10);
    for (const auto l : labels) {
      ASSERT_GE(l, 0);
      ASSERT_LE(l, 9);
      ++per_class[std::size_t(l)];
    }
    // Both parts are balanced: a tenth of the images in each class.
    for (const auto c : per_class) EXPECT_EQ(c, p.n / 10);
    EXPECT_EQ(std::vector<std::int64_t>(labels.begin(), labels.begin() + 3),
              std::vector<std::int64_t>(std::begin(p.first_labels), std::end(p.first_labels)));
    double sum = 0;
    float low = 1, high = 0;
    for (const float v : p.split.images.to_vector<float>()) {
      sum += std::round(double(v) * 255.0);
      low = std::min(low, v);
      high = std::max(high, v);
    }
    EXPECT_EQ(sum, p.pixel_sum);
    EXPECT_EQ(low, 0.0f);
    EXPECT_EQ(high, 1.0f);
  }
  const Tensor raw = xylem::data::read_idx(std::string(FashionMnist::kDebianDirectory) + "/train-images-idx3-ubyte.gz");
  EXPECT_EQ(raw.dtype(), DType::u8);
  EXPECT_EQ(raw.to_vector<std::uint8_t>()[14 * 28 + 14], 217);
}

}  // namespace
