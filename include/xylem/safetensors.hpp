#pragma once
/// @file
/// Tensors to and from safetensors files, the format PyTorch and Hugging
/// Face use for model weights: an 8-byte little-endian header length, a JSON
/// header naming each tensor's dtype, shape and byte range, then the data,
/// row-major and little-endian.
#include <filesystem>
#include <map>
#include <string>

#include "xylem/tensor.hpp"

namespace xylem {

/// Writes `tensors` (each read from wherever its latest data is; views are
/// written contiguous) and `metadata` to `path`, as Hugging Face's
/// safetensors writes them: tensors laid out by element size, largest
/// first, then by name, and the header padded with spaces to 8 bytes.
/// Atomic: the file is written beside `path` and renamed over it, so a
/// failed save leaves an existing file as it was. Throws invalid_argument
/// for an empty handle or the reserved name "__metadata__", io when the
/// file cannot be written, and whatever reading a tensor raises.
void save_safetensors(const std::filesystem::path& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// The tensors of a safetensors file, as host tensors. Throws io when the
/// file cannot be read or is shorter than its header says (its header or a
/// tensor's bytes past the end), unsupported for a dtype xylem lacks (I16,
/// U16, F8_E4M3...) or a rank over kMaxRank, and invalid_argument for any
/// other content that does not hold together (a header over 100 MB, bad
/// JSON, an unknown dtype, a shape over kMaxNumel elements, byte ranges out
/// of order, overlapping, leaving gaps or not matching the shape, repeated
/// names); each message names the file and the byte offset or the tensor.
[[nodiscard]] std::map<std::string, Tensor> load_safetensors(const std::filesystem::path& path);

/// The "__metadata__" strings of a safetensors file (empty when it has
/// none), checked as load_safetensors checks the header.
[[nodiscard]] std::map<std::string, std::string> load_safetensors_metadata(const std::filesystem::path& path);

}  // namespace xylem
