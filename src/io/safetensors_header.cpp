#include "io/safetensors_header.hpp"

#include <algorithm>

#include "io/json.hpp"
#include "xylem/error.hpp"
#include "xylem/layout.hpp"

namespace xylem::io {

namespace {

// The dtypes xylem holds, by safetensors name. `rank` is the dtype's place
// in Hugging Face's Dtype enum, whose order its writer lays tensors out by
// (larger elements later in the enum).
struct DTypeRow {
  std::string_view name;
  DType dtype;
  int rank;
};
constexpr DTypeRow kDTypes[] = {
    {"BOOL", DType::boolean, 0}, {"U8", DType::u8, 1},    {"F16", DType::f16, 7},  {"BF16", DType::bf16, 8},
    {"I32", DType::i32, 9},      {"F32", DType::f32, 11}, {"F64", DType::f64, 12}, {"I64", DType::i64, 13},
};
// The complex dtypes have none: the format's C64 came late and not to every
// reader, and it has no 128-bit complex (save_safetensors refuses both).
static_assert(std::size(kDTypes) == kRealDTypeCount, "every real xylem dtype has a safetensors name");

// Names the format defines that xylem has no dtype for: refused as
// unsupported (a valid file xylem cannot hold), not as a lying one.
constexpr std::string_view kForeignDTypes[] = {"I8",      "I16",     "U16", "U32",     "U64",     "F8_E5M2",
                                               "F8_E4M3", "F8_E8M0", "F4",  "F6_E2M3", "F6_E3M2", "C64"};

// "F64 F32 ...": the names xylem holds, for messages.
std::string held_names() {
  std::string out;
  for (const DTypeRow& row : kDTypes) {
    if (!out.empty()) out += ' ';
    out += row.name;
  }
  return out;
}

class HeaderChecker {
 public:
  HeaderChecker(std::uint64_t data_bytes, const std::string& source) : data_bytes_(data_bytes), source_(source) {}

  SafetensorsHeader check(const Json& root) {
    if (root.kind != Json::Kind::object)
      fail_at(root, std::string("the header is ") + json_kind_name(root.kind) + ", not an object");
    SafetensorsHeader header;
    for (const auto& [key, value] : root.members) {
      if (key == "__metadata__")
        header.metadata = metadata(value);
      else
        header.tensors.push_back(entry(key, value));
    }
    tile(header.tensors);
    return header;
  }

 private:
  [[noreturn]] void fail_at(const Json& at, const std::string& what,
                            ErrorCode code = ErrorCode::invalid_argument) const {
    throw Error(code, source_ + ": at byte " + std::to_string(at.offset) + ": " + what);
  }
  [[noreturn]] void fail_tensor(const std::string& name, const Json& at, const std::string& what,
                                ErrorCode code = ErrorCode::invalid_argument) const {
    fail_tensor(name, at.offset, what, code);
  }
  [[noreturn]] void fail_tensor(const std::string& name, std::size_t byte, const std::string& what,
                                ErrorCode code = ErrorCode::invalid_argument) const {
    throw Error(code,
                source_ + ": tensor " + json_quote(name) + " (header byte " + std::to_string(byte) + "): " + what);
  }

  std::map<std::string, std::string> metadata(const Json& value) const {
    if (value.kind != Json::Kind::object) fail_at(value, "\"__metadata__\" is not an object of strings");
    std::map<std::string, std::string> out;
    for (const auto& [key, item] : value.members) {
      if (item.kind != Json::Kind::string) fail_at(item, "metadata " + json_quote(key) + " is not a string");
      out.emplace(key, item.text);
    }
    return out;
  }

  DType dtype(const std::string& name, const Json& value) const {
    if (value.kind != Json::Kind::string) fail_tensor(name, value, "\"dtype\" is not a string");
    for (const DTypeRow& row : kDTypes)
      if (row.name == value.text) return row.dtype;
    if (std::find(std::begin(kForeignDTypes), std::end(kForeignDTypes), value.text) != std::end(kForeignDTypes))
      fail_tensor(name, value, "dtype " + value.text + " has no xylem dtype (xylem holds " + held_names() + ")",
                  ErrorCode::unsupported);
    fail_tensor(name, value, "unknown dtype " + json_quote(value.text));
  }

  std::vector<std::int64_t> shape(const std::string& name, const Json& value) const {
    if (value.kind != Json::Kind::array) fail_tensor(name, value, "\"shape\" is not an array");
    if (value.items.size() > std::size_t(kMaxRank))
      fail_tensor(name, value,
                  "rank " + std::to_string(value.items.size()) + " is over xylem's " + std::to_string(kMaxRank),
                  ErrorCode::unsupported);
    std::vector<std::int64_t> dims;
    // As Layout counts: the non-zero dimensions' product may not pass kMaxNumel.
    std::uint64_t product = 1;
    for (const Json& d : value.items) {
      if (d.kind != Json::Kind::integer) fail_tensor(name, d, "a dimension is not a non-negative integer");
      if (d.integer != 0) {
        if (d.integer > std::uint64_t(kMaxNumel) || product > std::uint64_t(kMaxNumel) / d.integer)
          fail_tensor(name, value, "shape overflows: more than 2^62 elements");
        product *= d.integer;
      }
      dims.push_back(static_cast<std::int64_t>(d.integer));
    }
    return dims;
  }

  SafetensorsEntry entry(const std::string& name, const Json& value) const {
    if (value.kind != Json::Kind::object) fail_tensor(name, value, "its entry is not an object");
    const Json* fields[3] = {};
    constexpr std::string_view kFields[3] = {"dtype", "shape", "data_offsets"};
    for (const auto& [key, field] : value.members) {
      const auto* known = std::find(std::begin(kFields), std::end(kFields), key);
      if (known == std::end(kFields)) fail_tensor(name, field, "unknown field " + json_quote(key));
      fields[known - std::begin(kFields)] = &field;
    }
    for (int k = 0; k < 3; ++k)
      if (!fields[k]) fail_tensor(name, value, "no \"" + std::string(kFields[k]) + "\"");

    SafetensorsEntry e;
    e.name = name;
    e.dtype = dtype(name, *fields[0]);
    e.shape = shape(name, *fields[1]);
    const Json& offsets = *fields[2];
    if (offsets.kind != Json::Kind::array || offsets.items.size() != 2 ||
        offsets.items[0].kind != Json::Kind::integer || offsets.items[1].kind != Json::Kind::integer)
      fail_tensor(name, offsets, "\"data_offsets\" is not a pair of integers");
    e.begin = offsets.items[0].integer;
    e.end = offsets.items[1].integer;
    if (e.end < e.begin)
      fail_tensor(name, offsets,
                  "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "] are out of order");
    // Past the end is what a file cut short looks like (a partial download):
    // an io error, as for any other truncated file.
    if (e.end > data_bytes_)
      fail_tensor(name, offsets,
                  "truncated: data_offsets end " + std::to_string(e.end) +
                      " is past the end of the data section, which holds " + std::to_string(data_bytes_) + " bytes",
                  ErrorCode::io);
    std::int64_t numel = 1;
    for (const std::int64_t d : e.shape) numel *= d;  // at most kMaxNumel: shape() checked
    std::int64_t bytes = 0;
    if (__builtin_mul_overflow(numel, static_cast<std::int64_t>(size_of(e.dtype)), &bytes))
      fail_tensor(name, *fields[1], "shape overflows: its bytes do not fit in 64 bits");
    const auto expected = static_cast<std::uint64_t>(bytes);
    if (e.end - e.begin != expected)
      fail_tensor(name, offsets,
                  std::to_string(e.end - e.begin) + " bytes, but its shape and dtype " +
                      std::string(safetensors_dtype_name(e.dtype)) + " need " + std::to_string(expected));
    e.header_byte = offsets.offset;
    return e;
  }

  // The ranges must cover the data section exactly, each starting where
  // the one before ended (Hugging Face's reader asks the same).
  void tile(std::vector<SafetensorsEntry>& tensors) const {
    std::sort(tensors.begin(), tensors.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
      return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
    });
    std::uint64_t next = 0;
    for (const SafetensorsEntry& e : tensors) {
      if (e.begin < next)
        fail_tensor(e.name, e.header_byte,
                    "data_offsets begin " + std::to_string(e.begin) +
                        " overlaps another tensor's bytes, which end at " + std::to_string(next));
      if (e.begin > next)
        fail_tensor(e.name, e.header_byte,
                    "data_offsets begin " + std::to_string(e.begin) + " leaves a gap: bytes " + std::to_string(next) +
                        " to " + std::to_string(e.begin) + " of the data section belong to no tensor");
      next = e.end;
    }
    if (next != data_bytes_)
      throw Error(ErrorCode::invalid_argument, source_ + ": the tensors cover " + std::to_string(next) +
                                                   " bytes of the data section, which holds " +
                                                   std::to_string(data_bytes_));
  }

  std::uint64_t data_bytes_;
  const std::string& source_;
};

}  // namespace

SafetensorsHeader parse_safetensors_header(std::string_view json, std::uint64_t data_bytes, const std::string& source) {
  // The header starts at byte 8 of the file: offsets in messages are the file's.
  const Json root = parse_json(json, source, 8);
  return HeaderChecker(data_bytes, source).check(root);
}

std::string_view safetensors_dtype_name(DType dtype) noexcept {
  for (const DTypeRow& row : kDTypes)
    if (row.dtype == dtype) return row.name;
  return "?";
}

int safetensors_layout_rank(DType dtype) noexcept {
  for (const DTypeRow& row : kDTypes)
    if (row.dtype == dtype) return row.rank;
  return 0;
}

std::string format_safetensors_header(const std::vector<SafetensorsEntry>& tensors,
                                      const std::map<std::string, std::string>& metadata) {
  std::string out = "{";
  const auto member = [&](std::string_view key) {
    if (out.size() > 1) out += ',';
    out += json_quote(key);
    out += ':';
  };
  if (!metadata.empty()) {
    member("__metadata__");
    out += '{';
    for (const auto& [key, value] : metadata) {
      if (out.back() != '{') out += ',';
      out += json_quote(key);
      out += ':';
      out += json_quote(value);
    }
    out += '}';
  }
  for (const SafetensorsEntry& e : tensors) {
    member(e.name);
    out += "{\"dtype\":\"";
    out += safetensors_dtype_name(e.dtype);
    out += "\",\"shape\":[";
    for (std::size_t k = 0; k < e.shape.size(); ++k) {
      if (k) out += ',';
      out += std::to_string(e.shape[k]);
    }
    out += "],\"data_offsets\":[";
    out += std::to_string(e.begin);
    out += ',';
    out += std::to_string(e.end);
    out += "]}";
  }
  out += '}';
  out.append((8 - out.size() % 8) % 8, ' ');
  return out;
}

}  // namespace xylem::io
