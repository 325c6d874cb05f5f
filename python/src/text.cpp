// xylem.data's text corpus and token sampler, and xylem.models'
// TransformerLM: the pieces of a character-level language model.
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <utility>

#include "bindings.hpp"

namespace xylem::python {

void bind_corpus(nb::module_& m) {
  using data::TextCorpus;
  using data::TextPart;
  using data::TokenSampler;
  nb::enum_<TextPart>(m, "TextPart", "Which part of a TextCorpus.")
      .value("train", TextPart::train, "Nine documents in ten.")
      .value("validation", TextPart::validation, "Every tenth document.");
  nb::class_<TextCorpus>(m, "TextCorpus",
                         "Documents as byte tokens: the vocabulary is their sorted distinct bytes, every tenth "
                         "document is validation text, each document is followed by an empty line.")
      .def(
          "__init__",
          [](TextCorpus* self, const std::optional<std::filesystem::path>& directory) {
            new (self) TextCorpus(directory.value_or(std::filesystem::path{}));
          },
          "directory"_a = nb::none(), release_gil(),
          "Every file of `directory` (default /usr/share/games/fortunes, Debian's package fortunes) but *.dat and "
          "*.u8, split at lines of '%'. IOError naming the package when there is no text.")
      .def_static(
          "from_documents", [](const std::vector<std::string>& docs) { return TextCorpus::from_documents(docs); },
          "documents"_a, "A corpus of strings in memory; InvalidArgument when they hold no byte.")
      .def_prop_ro("directory", &TextCorpus::directory, "Where the files were read from.")
      .def_prop_ro("documents", &TextCorpus::documents, "How many documents were read.")
      .def_prop_ro(
          "vocabulary", [](const TextCorpus& c) { return nb::bytes(c.vocabulary().data(), c.vocabulary().size()); },
          "The distinct bytes, ascending: token id i is vocabulary[i].")
      .def_prop_ro("vocab_size", &TextCorpus::vocab_size, "The number of token ids.")
      .def(
          "tokens",
          [](const TextCorpus& c, TextPart part) {
            const std::vector<std::uint8_t>& t = c.tokens(part);
            return Tensor::from(t, Layout{static_cast<std::int64_t>(t.size())});
          },
          "part"_a, "The token ids of one part, a u8 host tensor.")
      .def(
          "encode", [](const TextCorpus& c, nb::bytes text) { return c.encode({text.c_str(), text.size()}); },
          "text"_a, "Token ids of bytes; InvalidArgument for a byte outside the vocabulary.")
      .def(
          "decode",
          [](const TextCorpus& c, const std::vector<std::int64_t>& ids) {
            const std::string text = c.decode(ids);
            return nb::bytes(text.data(), text.size());
          },
          "ids"_a, "The bytes of token ids; InvalidArgument for an id outside the vocabulary.");
  nb::class_<TokenSampler>(m, "TokenSampler",
                           "Windows of context + 1 tokens at seeded uniform offsets of one part of a corpus.")
      .def(nb::init<const TextCorpus&, TextPart, std::int64_t, std::int64_t, std::uint64_t>(), "corpus"_a, "part"_a,
           "batch"_a, "context"_a, "seed"_a = 0, nb::keep_alive<1, 2>(),
           "InvalidArgument for batch or context below 1, or a part not longer than context.")
      .def(
          "next",
          [](TokenSampler& s) {
            data::TokenBatch batch = s.next();
            return std::pair<Tensor, Tensor>(std::move(batch.inputs), std::move(batch.targets));
          },
          release_gil(), "(inputs, targets): i64 host tensors [batch, context], targets the tokens that follow.");
}

void bind_transformer(nb::module_& m) {
  using models::TransformerLM;
  nb::class_<TransformerLM, layers::Layer>(
      m, "TransformerLM",
      "A GPT-style decoder: token and position embeddings, pre-norm blocks of causal multi-head attention and a GELU "
      "MLP, a final LayerNorm and an untied head. tokens [B, T] (T <= context) to logits [B, T, vocab].")
      .def(
          "__init__",
          [](TransformerLM* self, std::int64_t vocab, std::int64_t context, std::int64_t d_model, std::int64_t heads,
             std::int64_t blocks, std::optional<std::int64_t> mlp, DType dtype, std::uint64_t seed,
             std::optional<Backend> b) {
            models::TransformerOptions o{vocab, context, d_model, heads, blocks, mlp.value_or(4 * d_model), dtype};
            new (self) TransformerLM(resolve(b), o, seed);
          },
          "vocab"_a, nb::kw_only(), "context"_a = 64, "d_model"_a = 128, "heads"_a = 4, "layers"_a = 2,
          "mlp"_a = nb::none(), "dtype"_a = DType::f32, "seed"_a = 0, "backend"_a = nb::none(), release_gil(),
          "mlp (the MLP's hidden width) defaults to 4 d_model. InvalidArgument for sizes below 1 or heads not "
          "dividing d_model.")
      .def(
          "generate",
          [](TransformerLM& model, std::vector<std::int64_t> prompt, std::int64_t count, double temperature,
             std::uint64_t seed, std::optional<Backend> b) {
            return model.generate(resolve(b), std::move(prompt), count, temperature, seed);
          },
          "prompt"_a, "count"_a, "temperature"_a = 1.0, "seed"_a = 0, "backend"_a = nb::none(), release_gil(),
          "`count` token ids continuing `prompt`, each drawn from softmax(logits / temperature) (0: the most likely).");
}

}  // namespace xylem::python
