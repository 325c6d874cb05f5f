// safetensors: every dtype round trips bit for bit, views are written
// contiguous, metadata survives, the bytes match Hugging Face's writer, and
// every kind of lying or damaged file raises its typed error naming the
// file and the byte or tensor.
#include "xylem/safetensors.hpp"

#include <complex>
#include <cstdint>
#include <random>

#include "common/support.hpp"
#include "unit/files.hpp"
#include "xylem/plugin/half.hpp"

namespace {

using xylem::DType;
using xylem::ErrorCode;
using xylem::Tensor;
using xylem_test::contains;
using xylem_test::read_file;
using xylem_test::TempDir;
using xylem_test::write_file;

constexpr DType kAll[] = {DType::f16, DType::bf16, DType::f32, DType::f64,
                          DType::i32, DType::i64,  DType::u8,  DType::boolean};

std::vector<unsigned char> bytes_of(const Tensor& t) { return t.read_bytes().get(); }

// Random elements of `dtype`: any bits for integers, finite values for
// floats (their bytes are copied, but a NaN would make a poor test), 0 or 1
// for bool.
Tensor random_tensor(std::mt19937_64& rng, DType dtype, std::vector<std::int64_t> dims) {
  const xylem::Layout shape{std::span<const std::int64_t>(dims)};
  const auto n = static_cast<std::size_t>(shape.numel());
  std::vector<unsigned char> bytes(n * xylem::size_of(dtype));
  for (auto& b : bytes) b = static_cast<unsigned char>(rng());
  std::uniform_real_distribution<double> value(-1000, 1000);
  for (std::size_t k = 0; k < n; ++k) {
    unsigned char* p = bytes.data() + k * xylem::size_of(dtype);
    const double v = value(rng);
    if (dtype == DType::boolean) *p &= 1;
    if (dtype == DType::f64) std::memcpy(p, &v, 8);
    if (dtype == DType::f32) {
      const auto f = static_cast<float>(v);
      std::memcpy(p, &f, 4);
    }
    if (dtype == DType::f16 || dtype == DType::bf16) {
      const std::uint16_t h = dtype == DType::f16 ? xylem::detail::float_to_half(static_cast<float>(v))
                                                  : xylem::detail::float_to_bf16(static_cast<float>(v));
      std::memcpy(p, &h, 2);
    }
  }
  return Tensor::from_bytes(bytes.data(), bytes.size(), shape, dtype);
}

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  std::memcpy(s.data(), &v, 8);
  return s;
}

// A file of the given header and data section.
std::string file_of(const std::string& header, const std::string& data = {}) {
  return le64(header.size()) + header + data;
}

TEST(Safetensors, EveryDTypeRoundTrips) {
  const std::uint64_t seed = xylem_test::fresh_seed();
  SCOPED_TRACE(xylem_test::seed_message(seed));
  std::mt19937_64 rng(seed);
  TempDir dir;
  std::map<std::string, Tensor> saved;
  for (const DType dtype : kAll) {
    std::vector<std::int64_t> dims(rng() % 4);
    for (auto& d : dims) d = static_cast<std::int64_t>(rng() % 5 + 1);
    saved["w." + std::string(xylem::name(dtype))] = random_tensor(rng, dtype, dims);
  }
  saved["empty"] = random_tensor(rng, DType::f32, {3, 0});
  saved["empty, never written"] = Tensor(xylem::Layout{0, 2}, DType::bf16);
  saved["scalar"] = random_tensor(rng, DType::i64, {});
  xylem::save_safetensors(dir / "all.safetensors", saved);
  const auto loaded = xylem::load_safetensors(dir / "all.safetensors");
  ASSERT_EQ(loaded.size(), saved.size());
  for (const auto& [name, t] : saved) {
    SCOPED_TRACE(name);
    const Tensor& back = loaded.at(name);
    EXPECT_EQ(back.dtype(), t.dtype());
    EXPECT_EQ(std::vector<std::int64_t>(back.shape().begin(), back.shape().end()),
              std::vector<std::int64_t>(t.shape().begin(), t.shape().end()));
    // An empty tensor never written has nothing to read.
    if (t.numel() > 0) {
      EXPECT_EQ(bytes_of(back), bytes_of(t));
    }
  }
}

TEST(Safetensors, ViewsAreWrittenContiguous) {
  TempDir dir;
  const Tensor m = Tensor::from(std::vector<float>{0, 1, 2, 3, 4, 5}, xylem::Layout{2, 3});
  xylem::save_safetensors(dir / "v.safetensors", {{"t", m.transpose()}, {"s", m.slice(1, 0, 3, 2)}});
  const auto loaded = xylem::load_safetensors(dir / "v.safetensors");
  EXPECT_EQ(loaded.at("t").to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(loaded.at("t").layout(), (xylem::Layout{3, 2}));
  EXPECT_EQ(loaded.at("s").to_vector<float>(), (std::vector<float>{0, 2, 3, 5}));
  EXPECT_EQ(loaded.at("s").layout(), (xylem::Layout{2, 2}));
}

TEST(Safetensors, MetadataRoundTrips) {
  TempDir dir;
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"quote\"back\\slash", "line\nbreak\ttab \x01 caf\xC3\xA9"}, {"", ""}};
  xylem::save_safetensors(dir / "m.safetensors", {{"x", Tensor::from({1.0f})}}, metadata);
  EXPECT_EQ(xylem::load_safetensors_metadata(dir / "m.safetensors"), metadata);
  EXPECT_EQ(xylem::load_safetensors(dir / "m.safetensors").size(), 1u);
}

// Byte for byte what Hugging Face's writer (which PyTorch's save_file
// calls) produces: compact JSON, "__metadata__" first, tensors laid out
// largest element type first then by name, the header padded with spaces
// to 8 bytes.
TEST(Safetensors, BytesMatchTheReferenceWriter) {
  TempDir dir;
  // The reference's own test vector: one f32 tensor, a 64-byte header.
  std::string data;
  for (float f : {0.f, 1.f, 2.f, 3.f, 4.f, 5.f}) data.append(reinterpret_cast<const char*>(&f), 4);
  xylem::save_safetensors(dir / "a.safetensors",
                          {{"attn.0", Tensor::from(std::vector<float>{0, 1, 2, 3, 4, 5}, xylem::Layout{1, 2, 3})}});
  EXPECT_EQ(read_file(dir / "a.safetensors"),
            file_of(R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})", data));

  // No tensors; then metadata alone.
  xylem::save_safetensors(dir / "e.safetensors", {});
  EXPECT_EQ(read_file(dir / "e.safetensors"), file_of("{}      "));
  xylem::save_safetensors(dir / "f.safetensors", {}, {{"framework", "pt"}});
  EXPECT_EQ(read_file(dir / "f.safetensors"), file_of(R"({"__metadata__":{"framework":"pt"}}     )"));

  // Mixed dtypes: i64 before f32 before u8 before bool, whatever the names.
  const std::int64_t seven = 7;
  const float one_two[] = {1.f, 2.f};
  std::string mixed(reinterpret_cast<const char*>(&seven), 8);
  mixed.append(reinterpret_cast<const char*>(one_two), 8);
  mixed += std::string("\x01\x02\x01", 3);
  xylem::save_safetensors(dir / "m.safetensors",
                          {{"a", Tensor::from(std::vector<float>{1, 2}, xylem::Layout{1, 2})},
                           {"b", Tensor::from(std::vector<std::uint8_t>{1, 2})},
                           {"c", Tensor::from(std::vector<std::int64_t>{7})},
                           {"d", Tensor::from({true})}},
                          {{"format", "pt"}});
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"c":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},)"
      R"("a":{"dtype":"F32","shape":[1,2],"data_offsets":[8,16]},"b":{"dtype":"U8","shape":[2],"data_offsets":[16,18]},)"
      R"("d":{"dtype":"BOOL","shape":[1],"data_offsets":[18,19]}})";
  EXPECT_EQ(read_file(dir / "m.safetensors"), file_of(header + std::string((8 - header.size() % 8) % 8, ' '), mixed));
}

// A header of one f32 tensor "w" with the given shape and offsets.
std::string one_tensor(const std::string& shape, const std::string& offsets, const std::string& dtype = "F32") {
  return R"({"w":{"dtype":")" + dtype + R"(","shape":)" + shape + R"(,"data_offsets":)" + offsets + "}}";
}

struct Lie {
  const char* what;
  std::string file;
  ErrorCode code;
  const char* names;  // a part the message must hold, besides the path
};

TEST(Safetensors, LyingFilesRaiseTypedErrors) {
  TempDir dir;
  const std::string eight(8, 'x');
  const Lie lies[] = {
      {"shorter than the length field", "abc", ErrorCode::io, "fewer than the 8"},
      {"header over 100 MB", le64(100'000'001) + "{}", ErrorCode::invalid_argument, "byte 0"},
      {"header length past the end", le64(64) + "{}", ErrorCode::io, "byte 0"},
      {"header length near 2^64", le64(~std::uint64_t{0}), ErrorCode::invalid_argument, "byte 0"},
      {"bad JSON", file_of(R"({"w":{"dtype":"F32",)"), ErrorCode::invalid_argument, "bad JSON at byte"},
      {"not an object", file_of("[1,2]"), ErrorCode::invalid_argument, "at byte 8"},
      {"a float", file_of(one_tensor("[2.0]", "[0,8]"), eight), ErrorCode::invalid_argument, "bad JSON at byte 37"},
      {"a negative dimension", file_of(one_tensor("[-2]", "[0,8]"), eight), ErrorCode::invalid_argument,
       "bad JSON at byte 37"},
      {"text after the value", file_of("{}x"), ErrorCode::invalid_argument, "byte 10"},
      {"offsets out of order", file_of(one_tensor("[2]", "[8,0]"), eight), ErrorCode::invalid_argument,
       "\"w\" (header byte"},
      {"offsets past the data", file_of(one_tensor("[2]", "[0,8]"), "1234"), ErrorCode::io, "tensor \"w\""},
      {"bytes not matching the shape", file_of(one_tensor("[3]", "[0,8]"), eight), ErrorCode::invalid_argument,
       "need 12"},
      {"shape overflow", file_of(one_tensor("[4294967296,4294967296,4294967296]", "[0,8]"), eight),
       ErrorCode::invalid_argument, "overflows"},
      {"bytes past 64 bits", file_of(one_tensor("[2305843009213693952]", "[0,0]", "F64")), ErrorCode::invalid_argument,
       "do not fit in 64 bits"},
      {"dimension past 64 bits", file_of(one_tensor("[18446744073709551616]", "[0,8]"), eight),
       ErrorCode::invalid_argument, "64 bits"},
      {"unknown dtype", file_of(one_tensor("[2]", "[0,8]", "F17"), eight), ErrorCode::invalid_argument, "F17"},
      {"dtype xylem lacks", file_of(one_tensor("[4]", "[0,8]", "I16"), eight), ErrorCode::unsupported, "I16"},
      {"rank over the limit", file_of(one_tensor("[1,1,1,1,1,1,1,1,1]", "[0,4]"), "1234"), ErrorCode::unsupported,
       "rank 9"},
      {"repeated name",
       file_of(
           R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
           "12"),
       ErrorCode::invalid_argument, "\"w\" appears twice"},
      {"overlapping ranges",
       file_of(
           R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})",
           "123"),
       ErrorCode::invalid_argument, "\"b\" (header byte"},
      {"a gap", file_of(one_tensor("[2]", "[4,12]"), "123456789abc"), ErrorCode::invalid_argument, "gap"},
      {"bytes after the last tensor", file_of(one_tensor("[2]", "[0,8]"), "123456789"), ErrorCode::invalid_argument,
       "cover 8 bytes"},
      {"a missing field", file_of(R"({"w":{"dtype":"F32","shape":[0]}})"), ErrorCode::invalid_argument,
       "\"data_offsets\""},
      {"an unknown field", file_of(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[0,0],"x":1}})"),
       ErrorCode::invalid_argument, "unknown field"},
      {"metadata not strings", file_of(R"({"__metadata__":{"a":1}})"), ErrorCode::invalid_argument, "metadata \"a\""},
      {"a control character", file_of("{\"w\x01\":{}}"), ErrorCode::invalid_argument, "byte 11"},
      {"a lone surrogate", file_of(R"({"\udc00":{}})"), ErrorCode::invalid_argument, "surrogate"},
      {"deep nesting", file_of(std::string(100, '[') + std::string(100, ']')), ErrorCode::invalid_argument, "deeper"},
  };
  for (const Lie& lie : lies) {
    SCOPED_TRACE(lie.what);
    const auto path = dir / "lie.safetensors";
    write_file(path, lie.file);
    const std::string message = XY_EXPECT_ERROR(lie.code, (void)xylem::load_safetensors(path));
    EXPECT_TRUE(contains(message, path.string())) << message;
    EXPECT_TRUE(contains(message, lie.names)) << message;
  }
}

TEST(Safetensors, UnreadableFiles) {
  TempDir dir;
  XY_EXPECT_ERROR(ErrorCode::io, (void)xylem::load_safetensors(dir / "absent.safetensors"));
  XY_EXPECT_ERROR(ErrorCode::io, (void)xylem::load_safetensors(dir.path()));
  XY_EXPECT_ERROR(ErrorCode::io, xylem::save_safetensors(dir / "no-such-dir" / "x.safetensors", {}));
}

TEST(Safetensors, FailedSaveLeavesTheOldFile) {
  TempDir dir;
  const auto path = dir / "keep.safetensors";
  xylem::save_safetensors(path, {{"x", Tensor::from({1.0f, 2.0f})}});
  const std::string before = read_file(path);
  // A tensor never written fails as it is read, after the file was begun.
  const Tensor unwritten(xylem::Layout{4}, DType::f32);
  XY_EXPECT_ERROR(ErrorCode::uninitialized_read,
                  xylem::save_safetensors(path, {{"a", Tensor::from({1.0})}, {"b", unwritten}}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::save_safetensors(path, {{"x", Tensor()}}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::save_safetensors(path, {{"__metadata__", Tensor::from({1.0f})}}));
  // Complex tensors have no safetensors dtype xylem writes.
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch,
                  xylem::save_safetensors(path, {{"z", Tensor::from(std::vector<std::complex<float>>{{1, 2}})}}));
  EXPECT_EQ(read_file(path), before);
  // Nothing left behind beside it.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()), 1);
}

}  // namespace
