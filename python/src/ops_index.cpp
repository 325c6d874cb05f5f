// Indexing and shaping (xylem/index.hpp, xylem/shaping.hpp): index_select,
// gather, scatter, scatter_add, one_hot, concatenate, stack, split, chunk,
// pad, permute and transpose at the top level; nn.embedding and its
// gradient; layers.Embedding.
#include <nanobind/stl/vector.h>

#include "bindings.hpp"

namespace xylem::python {
namespace {

void bind_indexing(nb::module_& m) {
  m.def(
      "index_select",
      [](const Tensor& x, int axis, const Tensor& index, std::optional<Backend> b) {
        return index_select(resolve(b), x, axis, index);
      },
      "x"_a, "axis"_a, "index"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "x's slices at `index` (i32 or i64, rank 1) along `axis`, as torch.index_select. An index outside "
      "[0, dim) (negative too) raises IndexOutOfRange.");
  m.def(
      "gather",
      [](const Tensor& x, int axis, const Tensor& index, std::optional<Backend> b) {
        return gather(resolve(b), x, axis, index);
      },
      "x"_a, "axis"_a, "index"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "y[p] = x[p with p[axis] = index[p]], as torch.gather: y has index's shape.");
  m.def(
      "scatter",
      [](const Tensor& x, int axis, const Tensor& index, const Tensor& src, std::optional<Backend> b) {
        return scatter(resolve(b), x, axis, index, src);
      },
      "x"_a, "axis"_a, "index"_a, "src"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "A copy of x with src[p] written at p with p[axis] = index[p], as torch.scatter; of a position named "
      "twice the last index along axis wins.");
  m.def(
      "scatter_add",
      [](const Tensor& x, int axis, const Tensor& index, const Tensor& src, std::optional<Backend> b) {
        return scatter_add(resolve(b), x, axis, index, src);
      },
      "x"_a, "axis"_a, "index"_a, "src"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "As scatter, adding every src[p] into its position (float dtypes), as torch.scatter_add.");
  m.def(
      "one_hot",
      [](const Tensor& indices, std::int64_t classes, DType dtype, std::optional<Backend> b) {
        return one_hot(resolve(b), indices, classes, dtype);
      },
      "indices"_a, "classes"_a, "dtype"_a = DType::i64, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "indices' shape plus an axis of `classes`: 1 at each index, 0 elsewhere.");
}

void bind_shaping(nb::module_& m) {
  m.def(
      "concatenate",
      [](const std::vector<Tensor>& tensors, int axis, std::optional<Backend> b) {
        return concatenate(resolve(b), tensors, axis);
      },
      "tensors"_a, "axis"_a = 0, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "The tensors joined along an existing axis (as numpy.concatenate).");
  m.def(
      "stack",
      [](const std::vector<Tensor>& tensors, int axis, std::optional<Backend> b) {
        return stack(resolve(b), tensors, axis);
      },
      "tensors"_a, "axis"_a = 0, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "The tensors (one shape) joined along a new axis (as numpy.stack).");
  m.def(
      "split",
      [](const Tensor& x, const std::vector<std::int64_t>& sizes, int axis) { return split(x, sizes, axis); },
      "x"_a, "sizes"_a, "axis"_a = 0, release_gil(),
      "Views of x along axis of the given sizes, which add up to its dim (as torch.split with a list).");
  m.def(
      "chunk", [](const Tensor& x, std::int64_t count, int axis) { return chunk(x, count, axis); }, "x"_a,
      "count"_a, "axis"_a = 0, release_gil(), "`count` views of x along axis, as torch.chunk.");
  m.def(
      "pad",
      [](const Tensor& x, const std::vector<std::int64_t>& pads, double value, std::optional<Backend> b) {
        return pad(resolve(b), x, pads, value);
      },
      "x"_a, "pads"_a, "value"_a = 0.0, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "x padded with `value`; pads are (before, after) pairs from the last axis backwards, as "
      "torch.nn.functional.pad (negative ones crop).");
  m.def(
      "permute",
      [](const Tensor& x, const std::vector<int>& order, std::optional<Backend> b) {
        return permute(resolve(b), x, order);
      },
      "x"_a, "order"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "x's axes reordered (result axis i is x's order[i]), as a new contiguous tensor.");
  m.def(
      "transpose",
      [](const Tensor& x, int axis0, int axis1, std::optional<Backend> b) {
        return transpose(resolve(b), x, axis0, axis1);
      },
      "x"_a, "axis0"_a = 0, "axis1"_a = 1, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "x with two axes swapped, as a new contiguous tensor.");
}

void bind_embedding(nb::module_& nn, nb::module_& layers_module) {
  nn.def(
      "embedding",
      [](const Tensor& weight, const Tensor& indices, std::optional<Backend> b) {
        return nn::embedding(resolve(b), weight, indices);
      },
      "weight"_a, "indices"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "Rows of weight [V, D] at `indices` (i32 or i64, any shape): indices' shape plus D.");
  nn.def(
      "embedding_backward",
      [](const Tensor& dy, const Tensor& indices, std::int64_t num_embeddings, std::optional<std::int64_t> padding_idx,
         std::optional<Backend> b) { return nn::embedding_backward(resolve(b), dy, indices, num_embeddings, padding_idx); },
      "dy"_a, "indices"_a, "num_embeddings"_a, "padding_idx"_a = nb::none(), nb::kw_only(), "backend"_a = nb::none(),
      release_gil(),
      "The gradient of embedding for weight: [num_embeddings, D], dy's rows summed into the rows their indices "
      "name; the row padding_idx gets none.");
  using layers::Embedding;
  nb::class_<Embedding, layers::Layer>(layers_module, "Embedding",
                                       "A lookup table: integer indices to rows of weight [num_embeddings, dim].")
      .def(
          "__init__",
          [](Embedding* self, std::int64_t num, std::int64_t dim, std::optional<std::int64_t> padding_idx, DType dtype,
             Generator* gen, std::optional<Backend> b) {
            const auto g = generator_or_default(gen);
            new (self) Embedding(resolve(b), *g, num, dim, padding_idx, {dtype, layers::Init::kaiming_uniform});
          },
          "num_embeddings"_a, "embedding_dim"_a, "padding_idx"_a = nb::none(), nb::kw_only(), "dtype"_a = DType::f32,
          "generator"_a = nb::none(), "backend"_a = nb::none(), release_gil(),
          "weight drawn from N(0, 1) (the row padding_idx set to 0) from `generator` (the default one when None).")
      .def_prop_ro(
          "weight", [](Embedding& l) { return &l.weight; }, nb::rv_policy::reference_internal,
          "[num_embeddings, dim].");
}

}  // namespace

void bind_index(nb::module_& m) {
  bind_indexing(m);
  bind_shaping(m);
  nb::module_ nn = nb::borrow<nb::module_>(m.attr("nn"));
  nb::module_ layers_module = nb::borrow<nb::module_>(m.attr("layers"));
  bind_embedding(nn, layers_module);
}

}  // namespace xylem::python
