#pragma once
// The safetensors header: its dtype names, parsing and checking the JSON
// against the data section it describes, and writing it. File reading and
// writing are safetensors.cpp's; this part works on bytes alone, so the
// fuzzer drives it directly.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "xylem/dtype.hpp"

namespace xylem::io {

/// The largest header the format allows (as Hugging Face's reader does).
inline constexpr std::uint64_t kMaxSafetensorsHeader = 100'000'000;

/// One tensor of a header: where its bytes are in the data section.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  ///< byte offsets in the data section, end exclusive
  std::uint64_t end = 0;
  std::uint64_t header_byte = 0;  ///< where its "data_offsets" stand in the file (for messages)
};

/// A checked header: entries in data order, and the "__metadata__" strings.
struct SafetensorsHeader {
  std::vector<SafetensorsEntry> tensors;
  std::map<std::string, std::string> metadata;
};

/// Parses and checks `json` (the header bytes, which start at byte 8 of the
/// file) against a data section of `data_bytes`: every dtype known and held
/// by xylem, every shape in range, the byte ranges tiling the data section
/// exactly, each the size its shape and dtype say. Errors begin with
/// `source` and name the byte or the tensor (see load_safetensors).
[[nodiscard]] SafetensorsHeader parse_safetensors_header(std::string_view json, std::uint64_t data_bytes,
                                                         const std::string& source);

/// The safetensors name of a dtype: "F32", "BOOL"...
[[nodiscard]] std::string_view safetensors_dtype_name(DType dtype) noexcept;

/// Where a dtype goes in the data section: Hugging Face's writer lays the
/// tensors out by this rank, highest first, then by name, which keeps each
/// one aligned to its element size.
[[nodiscard]] int safetensors_layout_rank(DType dtype) noexcept;

/// The header text for `tensors` (in data order, offsets filled in) and
/// `metadata` (omitted when empty), compact and padded with spaces to a
/// multiple of 8 bytes, as Hugging Face's writer makes it.
[[nodiscard]] std::string format_safetensors_header(const std::vector<SafetensorsEntry>& tensors,
                                                    const std::map<std::string, std::string>& metadata);

}  // namespace xylem::io
