#pragma once
/// @file
/// Text for character-level language models: a corpus of documents read as
/// bytes, its vocabulary, a deterministic split into training and
/// validation text, and batches of token windows drawn from a seeded
/// generator. The default corpus is Debian's fortune cookies (the package
/// `fortunes`): plain text files of sayings separated by lines of "%".
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "xylem/creation.hpp"
#include "xylem/tensor.hpp"

namespace xylem::data {

/// Which part of a corpus.
enum class TextPart {
  train,      ///< nine documents in ten
  validation  ///< every tenth document
};

/// Inputs and next-token targets: both i64 [batch, context], on the host;
/// targets[i, t] = inputs[i, t + 1] inside one window of the text.
struct TokenBatch {
  Tensor inputs;   ///< token ids
  Tensor targets;  ///< the id that follows each input
};

/// A corpus of byte tokens. The vocabulary is the sorted distinct bytes of
/// every document (so token ids depend only on the text, not on the order
/// it was read in); each document is followed by an empty line. Document k
/// (counted over all files, in file-name order) is validation text when
/// k % 10 == 9, training text otherwise: a fixed split that samples every
/// file.
class TextCorpus {
 public:
  /// Where Debian's package `fortunes` puts its files.
  static constexpr const char* kDebianDirectory = "/usr/share/games/fortunes";

  /// Reads every regular file of `directory` (kDebianDirectory when empty)
  /// but the strfile indexes (*.dat, *.u8), in name order, splitting each at
  /// lines of "%". Throws io naming the directory and the package to install
  /// when it does not exist or holds no documents, or when a file cannot be
  /// read.
  explicit TextCorpus(const std::filesystem::path& directory = {});

  /// A corpus of documents in memory (the same vocabulary and split rules);
  /// invalid_argument when they hold no byte.
  [[nodiscard]] static TextCorpus from_documents(std::span<const std::string> documents);

  /// Where the files were read from (empty for from_documents).
  [[nodiscard]] const std::filesystem::path& directory() const noexcept { return directory_; }
  /// How many documents were read.
  [[nodiscard]] std::int64_t documents() const noexcept { return documents_; }
  /// The distinct bytes, ascending: token id i is byte vocabulary()[i].
  [[nodiscard]] const std::string& vocabulary() const noexcept { return vocabulary_; }
  /// The number of token ids.
  [[nodiscard]] std::int64_t vocab_size() const noexcept { return static_cast<std::int64_t>(vocabulary_.size()); }
  /// The tokens of one part.
  [[nodiscard]] const std::vector<std::uint8_t>& tokens(TextPart part) const noexcept {
    return part == TextPart::train ? train_ : validation_;
  }
  /// Token ids of `text`; a byte outside the vocabulary raises invalid_argument.
  [[nodiscard]] std::vector<std::int64_t> encode(std::string_view text) const;
  /// The text of token ids; an id outside [0, vocab_size()) raises invalid_argument.
  [[nodiscard]] std::string decode(std::span<const std::int64_t> ids) const;

 private:
  explicit TextCorpus(std::span<const std::string> documents) { build(documents); }
  void build(std::span<const std::string> documents);

  std::filesystem::path directory_;
  std::int64_t documents_ = 0;
  std::string vocabulary_;
  std::vector<std::uint8_t> train_, validation_;
};

/// Windows of `context` + 1 tokens at uniformly drawn offsets of one part
/// of a corpus, `batch` windows a call. The offsets come from xylem's
/// counter-based Generator, so a seed gives the same batches everywhere.
class TokenSampler {
 public:
  /// batch and context of at least 1, and a part longer than context
  /// (invalid_argument otherwise). The sampler reads the corpus
  /// where it is: the corpus must outlive it and stay in place.
  TokenSampler(const TextCorpus& corpus, TextPart part, std::int64_t batch, std::int64_t context,
               std::uint64_t seed);
  /// The next batch.
  [[nodiscard]] TokenBatch next();

 private:
  const std::vector<std::uint8_t>* tokens_;
  std::int64_t batch_, context_;
  Generator gen_;
};

}  // namespace xylem::data
