#pragma once
/// @file
/// Data sets from files: the IDX format of MNIST and Fashion-MNIST, and
/// Fashion-MNIST itself as training-ready tensors.
#include <filesystem>
#include <string>
#include <vector>

#include "xylem/tensor.hpp"

namespace xylem::data {

/// An IDX file (plain or gzip'd) as a host tensor of its own dimensions:
/// unsigned bytes as u8, 32-bit integers as i32, floats as f32 and doubles
/// as f64 (big-endian in the file). Throws io when the file cannot be read
/// or ends early (naming the byte, counted in the uncompressed data),
/// unsupported for the signed byte and 16-bit types xylem has no dtype for,
/// and invalid_argument for a bad magic number, a rank of 0 or over
/// kMaxRank, dimensions that overflow, or bytes after the data.
[[nodiscard]] Tensor read_idx(const std::filesystem::path& path);

/// Images and labels of one part of a data set.
struct Split {
  Tensor images;  ///< f32 (N, 1, 28, 28), pixels scaled to [0, 1]
  Tensor labels;  ///< i64 (N), class indices 0..9
};

/// Fashion-MNIST (Zalando's 28x28 grey clothing images, 10 classes: 60000
/// for training, 10000 for testing), from its four IDX files, gzip'd or not.
class FashionMnist {
 public:
  /// The directory the Debian package dataset-fashion-mnist installs.
  static constexpr const char* kDebianDirectory = "/usr/share/datasets/fashion-mnist";

  /// Finds the files in `directory` when given, else in $XYLEM_DATA_DIR
  /// when set, else in kDebianDirectory. Throws io naming every place it
  /// looked, the files it wanted and the package to install when none
  /// holds them.
  explicit FashionMnist(const std::filesystem::path& directory = {});

  /// Where the files were found.
  [[nodiscard]] const std::filesystem::path& directory() const noexcept { return directory_; }
  /// The 60000 training images and labels, read now.
  [[nodiscard]] Split train() const;
  /// The 10000 test images and labels, read now.
  [[nodiscard]] Split test() const;

 private:
  std::filesystem::path directory_;
};

}  // namespace xylem::data
