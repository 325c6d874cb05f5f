#include <cstdlib>
#include <string>

#include "io/idx.hpp"
#include "xylem/data.hpp"
#include "xylem/error.hpp"

namespace xylem::data {

namespace {

constexpr const char* kFiles[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                                  "t10k-labels-idx1-ubyte"};
constexpr int kClasses = 10;
constexpr std::int64_t kSide = 28;

// The file `stem` in `dir`, gzip'd (as Debian and the original site ship
// it) or unpacked; empty when neither is there.
std::filesystem::path find_file(const std::filesystem::path& dir, const std::string& stem) {
  std::error_code ec;
  for (const std::string& name : {stem + ".gz", stem})
    if (std::filesystem::is_regular_file(dir / name, ec)) return dir / name;
  return {};
}

bool holds_all(const std::filesystem::path& dir) {
  for (const char* stem : kFiles)
    if (find_file(dir, stem).empty()) return false;
  return true;
}

[[noreturn]] void refuse(const std::filesystem::path& file, const std::string& what) {
  throw Error(ErrorCode::invalid_argument, "FashionMnist: " + file.string() + ": " + what);
}

Split read_split(const std::filesystem::path& dir, const char* images_stem, const char* labels_stem) {
  const std::filesystem::path images_path = find_file(dir, images_stem);
  const std::filesystem::path labels_path = find_file(dir, labels_stem);
  if (images_path.empty() || labels_path.empty())
    throw Error(ErrorCode::io,
                "FashionMnist: " + dir.string() + " no longer holds " + images_stem + " and " + labels_stem);
  const io::IdxData images = io::read_idx_data(images_path);
  const io::IdxData labels = io::read_idx_data(labels_path);
  if (images.dtype != DType::u8 || images.dims.size() != 3 || images.dims[1] != kSide || images.dims[2] != kSide)
    refuse(images_path, "not unsigned-byte images of shape (N, 28, 28)");
  if (labels.dtype != DType::u8 || labels.dims.size() != 1)
    refuse(labels_path, "not unsigned-byte labels of shape (N)");
  const std::int64_t n = images.dims[0];
  if (labels.dims[0] != n)
    refuse(labels_path, std::to_string(labels.dims[0]) + " labels for " + std::to_string(n) + " images");

  std::vector<std::int64_t> classes(labels.bytes.size());
  for (std::size_t k = 0; k < classes.size(); ++k) {
    if (labels.bytes[k] >= kClasses)
      refuse(labels_path, "label " + std::to_string(labels.bytes[k]) + " at byte " +
                              std::to_string(io::idx_data_start(1) + k) + " of the uncompressed data is not in 0..9");
    classes[k] = labels.bytes[k];
  }
  std::vector<float> pixels(images.bytes.size());
  for (std::size_t k = 0; k < pixels.size(); ++k) pixels[k] = static_cast<float>(images.bytes[k]) / 255.0f;
  return Split{Tensor::from(pixels, Layout{n, 1, kSide, kSide}), Tensor::from(classes, Layout{n})};
}

}  // namespace

FashionMnist::FashionMnist(const std::filesystem::path& directory) {
  // An explicit choice is the only place looked: falling back past a
  // mistyped directory would hide the mistake.
  std::string where;
  if (!directory.empty()) {
    directory_ = directory;
    where = directory.string() + " (the directory given)";
  } else if (const char* env = std::getenv("XYLEM_DATA_DIR"); env != nullptr && *env != '\0') {
    directory_ = env;
    where = directory_.string() + " ($XYLEM_DATA_DIR)";
  } else {
    directory_ = kDebianDirectory;
    where = directory_.string() + " (where Debian's dataset-fashion-mnist puts it)";
  }
  if (holds_all(directory_)) return;
  std::string wanted;
  for (const char* stem : kFiles) wanted += std::string(wanted.empty() ? "" : ", ") + stem + "[.gz]";
  throw Error(ErrorCode::io, "FashionMnist: the data set is not in " + where + ": looked for " + wanted +
                                 ". Install it with `apt-get install dataset-fashion-mnist` (Debian, Ubuntu), or "
                                 "put the four files in a directory and pass it or set XYLEM_DATA_DIR");
}

Split FashionMnist::train() const { return read_split(directory_, kFiles[0], kFiles[1]); }
Split FashionMnist::test() const { return read_split(directory_, kFiles[2], kFiles[3]); }

}  // namespace xylem::data
