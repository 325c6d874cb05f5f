#pragma once
// The IDX reader's raw result, for read_idx and the data sets built on it.
#include <cstdint>
#include <filesystem>
#include <vector>

#include "xylem/dtype.hpp"

namespace xylem::io {

/// An IDX file's contents: dimensions, element type and the elements in
/// host byte order, row-major.
struct IdxData {
  std::vector<std::int64_t> dims;
  DType dtype = DType::u8;
  std::vector<unsigned char> bytes;
};

/// Reads an IDX file, plain or gzip'd; errors as read_idx (xylem/data.hpp).
[[nodiscard]] IdxData read_idx_data(const std::filesystem::path& path);

/// Bytes before the data of an IDX file of `rank` dimensions: the magic
/// number and one 4-byte size per dimension.
[[nodiscard]] constexpr std::uint64_t idx_data_start(std::size_t rank) noexcept { return 4 + 4 * rank; }

}  // namespace xylem::io
