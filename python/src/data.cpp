// xylem.data: IDX files, Fashion-MNIST, and the batch loader as a Python
// iterable (one pass of a for loop is one epoch).
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "xylem/loader.hpp"

namespace xylem::python {
namespace {

using data::Batch;
using data::BatchLoader;
using data::Split;

void bind_files(nb::module_& m) {
  m.def("read_idx", &data::read_idx, "path"_a, release_gil(),
        "An IDX file (plain or gzip'd) as a host tensor of its dimensions: u8, i32, f32 or f64. IOError for a file "
        "that cannot be read or ends early, Unsupported for signed bytes and 16-bit types, InvalidArgument for a bad "
        "header or bytes after the data.");
  nb::class_<Split>(m, "Split", "Images and labels of one part of a data set, row for row.")
      .def(
          "__init__",
          [](Split* s, Tensor images, Tensor labels) {
            new (s) Split{std::move(images), std::move(labels)};
          },
          "images"_a, "labels"_a, "A split of your own: images [N, ...] and labels [N].")
      .def_rw("images", &Split::images, "[N, ...]; Fashion-MNIST's: f32 [N, 1, 28, 28] in [0, 1].")
      .def_rw("labels", &Split::labels, "[N]; Fashion-MNIST's: i64 class indices 0..9.");
  nb::class_<data::FashionMnist>(m, "FashionMnist",
                                 "Fashion-MNIST (28x28 grey clothing images, 10 classes) from its four IDX files.")
      // None, not an empty path: Python spells an empty path "." (the current folder).
      .def(
          "__init__",
          [](data::FashionMnist* self, const std::optional<std::filesystem::path>& directory) {
            new (self) data::FashionMnist(directory.value_or(std::filesystem::path{}));
          },
          "directory"_a = nb::none(),
          "Finds the files in `directory` when given, else in $XYLEM_DATA_DIR, else in "
          "/usr/share/datasets/fashion-mnist (IOError naming every place looked in when none has them).")
      .def_prop_ro("directory", &data::FashionMnist::directory, "Where the files were found.")
      .def("train", &data::FashionMnist::train, release_gil(), "The 60000 training images and labels.")
      .def("test", &data::FashionMnist::test, release_gil(), "The 10000 test images and labels.");
}

void bind_loader(nb::module_& m) {
  nb::class_<Batch>(m, "Batch", "One batch as host tensors; unpacks as `images, labels = batch`.")
      .def_rw("images", &Batch::images, "[B, ...].")
      .def_rw("labels", &Batch::labels, "[B].")
      .def("__iter__", [](const Batch& b) { return nb::iter(nb::make_tuple(b.images, b.labels)); });
  nb::class_<BatchLoader>(m, "BatchLoader",
                          "Batches of a Split, epoch after epoch, gathered on a host thread while the caller computes. "
                          "Iterating yields one epoch's batches (`for images, labels in loader:`); the next iteration "
                          "is the next epoch (a loop left early resumes mid-epoch).")
      .def(nb::init<const Split&, std::int64_t, bool, std::uint64_t, bool>(), "split"_a, "batch_size"_a,
           "shuffle"_a = true, "seed"_a = 0, "drop_last"_a = false, release_gil(),
           "Shuffled by shuffled_order(n, seed, epoch) when `shuffle`; with drop_last an epoch ends before a final "
           "partial batch. InvalidArgument for batch_size < 1 or an empty split, ShapeMismatch when images and labels "
           "differ in rows.")
      .def(
          "__iter__", [](nb::handle self) { return nb::borrow(self); }, nb::sig("def __iter__(self) -> BatchLoader"),
          "The loader itself: each pass of a for loop runs one epoch.")
      .def(
          "__next__",
          [](BatchLoader& l) {
            std::optional<Batch> batch;
            {
              nb::gil_scoped_release unlocked;
              batch = l.next();
            }
            if (!batch) throw nb::stop_iteration();
            return std::move(*batch);
          },
          "The epoch's next batch; StopIteration ends the epoch.")
      .def("__len__", &BatchLoader::batches_per_epoch, "Batches per epoch.")
      .def_prop_ro("samples", &BatchLoader::samples, "Rows in the split.");
  m.def(
      "shuffled_order", &data::shuffled_order, "n"_a, "seed"_a, "epoch"_a,
      "The order an epoch visits n samples in (a Fisher-Yates shuffle from (seed, epoch)): the same on every machine.");
}

}  // namespace

void bind_data(nb::module_& m) {
  bind_files(m);
  bind_loader(m);
  bind_corpus(m);
}

}  // namespace xylem::python
