// TextCorpus and TokenSampler: fortune files to byte tokens, and seeded
// windows of them.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "io/file.hpp"
#include "xylem/backend.hpp"
#include "xylem/corpus.hpp"
#include "xylem/error.hpp"

namespace xylem::data {

namespace {

// strfile's indexes beside each text file: binary, not text.
bool is_index(const std::filesystem::path& file) {
  const std::string ext = file.extension().string();
  return ext == ".dat" || ext == ".u8";
}

std::string read_all(const std::filesystem::path& file) {
  const io::InputFile in(file, "TextCorpus: " + file.string());
  std::string bytes(static_cast<std::size_t>(in.size()), '\0');
  if (!bytes.empty()) in.read_at(0, bytes.data(), bytes.size());
  return bytes;
}

// The documents of a fortune file: the text between lines of "%", those
// with nothing but line ends left out.
void split_fortunes(const std::string& text, std::vector<std::string>& out) {
  std::string current;
  std::size_t start = 0;
  auto flush = [&] {
    if (current.find_first_not_of("\r\n") != std::string::npos) out.push_back(current);
    current.clear();
  };
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    end = end == std::string::npos ? text.size() : end + 1;
    const std::string_view line(text.data() + start, end - start);
    if (line == "%\n" || line == "%" || line == "%\r\n")
      flush();
    else
      current.append(line);
    start = end;
  }
  flush();
}

[[noreturn]] void missing(const std::filesystem::path& dir, const std::string& why) {
  throw Error(ErrorCode::io, "TextCorpus: " + dir.string() + " " + why +
                                 ". Install Debian's package with `apt-get install fortunes`, or pass a directory "
                                 "of text files separated by lines of \"%\"");
}

}  // namespace

TextCorpus::TextCorpus(const std::filesystem::path& directory)
    : directory_(directory.empty() ? std::filesystem::path(kDebianDirectory) : directory) {
  std::error_code ec;
  if (!std::filesystem::is_directory(directory_, ec)) missing(directory_, "is not a directory");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory_, ec))
    if (entry.is_regular_file(ec) && !is_index(entry.path())) files.push_back(entry.path());
  if (ec) missing(directory_, "cannot be listed (" + ec.message() + ")");
  std::sort(files.begin(), files.end());
  std::vector<std::string> docs;
  for (const auto& file : files) split_fortunes(read_all(file), docs);
  if (docs.empty()) missing(directory_, "holds no text");
  build(docs);
}

TextCorpus TextCorpus::from_documents(std::span<const std::string> documents) { return TextCorpus(documents); }

void TextCorpus::build(std::span<const std::string> documents) {
  std::array<bool, 256> seen{};
  for (const std::string& doc : documents)
    for (const char c : doc) seen[static_cast<unsigned char>(c)] = true;
  seen['\n'] = true;  // the separator after each document
  std::array<std::uint8_t, 256> id{};
  for (int byte = 0; byte < 256; ++byte) {
    if (!seen[static_cast<std::size_t>(byte)]) continue;
    id[static_cast<std::size_t>(byte)] = static_cast<std::uint8_t>(vocabulary_.size());
    vocabulary_.push_back(static_cast<char>(byte));
  }
  for (std::size_t k = 0; k < documents.size(); ++k) {
    std::vector<std::uint8_t>& part = k % 10 == 9 ? validation_ : train_;
    for (const char c : documents[k]) part.push_back(id[static_cast<unsigned char>(c)]);
    part.push_back(id['\n']);
  }
  documents_ = static_cast<std::int64_t>(documents.size());
  if (train_.size() + validation_.size() == documents.size())
    throw Error(ErrorCode::invalid_argument, "TextCorpus: the documents hold no text");
}

std::vector<std::int64_t> TextCorpus::encode(std::string_view text) const {
  std::vector<std::int64_t> ids;
  ids.reserve(text.size());
  for (const char c : text) {
    const std::size_t at = vocabulary_.find(c);
    if (at == std::string::npos)
      throw Error(ErrorCode::invalid_argument,
                  "TextCorpus::encode: byte " + std::to_string(static_cast<unsigned char>(c)) +
                      " is not in the corpus's vocabulary");
    ids.push_back(static_cast<std::int64_t>(at));
  }
  return ids;
}

std::string TextCorpus::decode(std::span<const std::int64_t> ids) const {
  std::string text;
  text.reserve(ids.size());
  for (const std::int64_t id : ids) {
    if (id < 0 || id >= vocab_size())
      throw Error(ErrorCode::invalid_argument, "TextCorpus::decode: token " + std::to_string(id) +
                                                   " is outside [0, " + std::to_string(vocab_size()) + ")");
    text.push_back(vocabulary_[static_cast<std::size_t>(id)]);
  }
  return text;
}

TokenSampler::TokenSampler(const TextCorpus& corpus, TextPart part, std::int64_t batch, std::int64_t context,
                           std::uint64_t seed)
    : tokens_(&corpus.tokens(part)), batch_(batch), context_(context), gen_(seed) {
  if (batch < 1 || context < 1)
    throw Error(ErrorCode::invalid_argument, "TokenSampler: batch " + std::to_string(batch) + " and context " +
                                                 std::to_string(context) + " must be at least 1");
  if (static_cast<std::int64_t>(tokens_->size()) <= context)
    throw Error(ErrorCode::invalid_argument,
                "TokenSampler: the " + std::string(part == TextPart::train ? "training" : "validation") +
                    " text has " + std::to_string(tokens_->size()) + " tokens, not more than the context " +
                    std::to_string(context));
}

TokenBatch TokenSampler::next() {
  // Offsets from the counter-based generator on the host: the same on every
  // machine, unlike the standard library's distributions.
  const std::vector<double> u = uniform(Backend::native(), Layout{batch_}, f64, gen_).to_vector<double>();
  const auto starts = static_cast<double>(static_cast<std::int64_t>(tokens_->size()) - context_);
  std::vector<std::int64_t> inputs(static_cast<std::size_t>(batch_ * context_)), targets(inputs.size());
  for (std::int64_t i = 0; i < batch_; ++i) {
    const auto start = std::min(static_cast<std::int64_t>(std::floor(u[static_cast<std::size_t>(i)] * starts)),
                                static_cast<std::int64_t>(starts) - 1);
    for (std::int64_t t = 0; t < context_; ++t) {
      const auto at = static_cast<std::size_t>(i * context_ + t);
      inputs[at] = (*tokens_)[static_cast<std::size_t>(start + t)];
      targets[at] = (*tokens_)[static_cast<std::size_t>(start + t + 1)];
    }
  }
  return {Tensor::from(inputs, Layout{batch_, context_}), Tensor::from(targets, Layout{batch_, context_})};
}

}  // namespace xylem::data
