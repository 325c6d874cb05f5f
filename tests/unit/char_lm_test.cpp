// The character language model: the corpus reader (vocabulary, split,
// windows, a missing corpus), TransformerLM's gradients against central
// differences, and `xylem lm`'s training on each framework (the loss falls;
// the same seed gives the same curve, on one framework and across them).
// The training tests skip, saying so, without Debian's package fortunes.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "char_lm.hpp"
#include "common/on_framework.hpp"
#include "common/support.hpp"
#include "unit/files.hpp"
#include "xylem/xylem.hpp"

namespace {

using namespace xylem;
using data::TextCorpus;
using data::TextPart;
using xylem_test::contains;

std::vector<std::string> ten_documents() {
  std::vector<std::string> docs;
  for (int k = 0; k < 10; ++k) docs.push_back(std::string(1, static_cast<char>('a' + k)) + "b\n");
  return docs;
}

TEST(TextCorpus, VocabularySplitAndCodes) {
  const std::vector<std::string> docs = ten_documents();
  const TextCorpus corpus = TextCorpus::from_documents(docs);
  EXPECT_EQ(corpus.vocabulary(), "\nabcdefghij");  // sorted distinct bytes
  EXPECT_EQ(corpus.documents(), 10);
  // Nine training documents of "xb\n\n", the tenth ("jb\n\n") for validation.
  EXPECT_EQ(corpus.tokens(TextPart::train).size(), 36u);
  const std::vector<std::int64_t> validation(corpus.tokens(TextPart::validation).begin(),
                                             corpus.tokens(TextPart::validation).end());
  EXPECT_EQ(corpus.decode(validation), "jb\n\n");
  EXPECT_EQ(corpus.decode(corpus.encode("abba\n")), "abba\n");
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)corpus.encode("z"));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)corpus.decode(std::vector<std::int64_t>{11}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)TextCorpus::from_documents(std::vector<std::string>{}));
}

TEST(TextCorpus, FortuneFilesInADirectory) {
  xylem_test::TempDir dir;
  std::ofstream(dir.path() / "b") << "second\n%\nthird\n";
  std::ofstream(dir.path() / "a") << "first\n%\n";
  std::ofstream(dir.path() / "a.dat") << "\x01\x02 binary index";
  const TextCorpus corpus(dir.path());
  EXPECT_EQ(corpus.documents(), 3);
  const auto& train = corpus.tokens(TextPart::train);
  EXPECT_EQ(corpus.decode(std::vector<std::int64_t>(train.begin(), train.end())), "first\n\nsecond\n\nthird\n\n");
  EXPECT_FALSE(contains(corpus.vocabulary(), "\x01"));  // the index was not read
}

TEST(TextCorpus, MissingCorpusIsAnIoError) {
  xylem_test::TempDir dir;
  const std::string empty = XY_EXPECT_ERROR(ErrorCode::io, TextCorpus{dir.path()});
  EXPECT_TRUE(contains(empty, dir.path().string())) << empty;
  EXPECT_TRUE(contains(empty, "apt-get install fortunes")) << empty;
  const std::string absent = XY_EXPECT_ERROR(ErrorCode::io, TextCorpus{dir.path() / "absent"});
  EXPECT_TRUE(contains(absent, "not a directory")) << absent;
  std::ostringstream out;
  cli::LmOptions options;
  options.data = dir.path() / "absent";
  XY_EXPECT_ERROR(ErrorCode::io, (void)cli::train_char_lm(options, out, false));
}

TEST(TokenSampler, WindowsAndTheirNextTokens) {
  const std::vector<std::string> docs = ten_documents();
  const TextCorpus corpus = TextCorpus::from_documents(docs);
  const auto& text = corpus.tokens(TextPart::train);
  data::TokenSampler a(corpus, TextPart::train, 6, 5, 3), b(corpus, TextPart::train, 6, 5, 3);
  for (int round = 0; round < 3; ++round) {
    const data::TokenBatch x = a.next(), y = b.next();
    const std::vector<std::int64_t> in = x.inputs.to_vector<std::int64_t>(), target = x.targets.to_vector<std::int64_t>();
    EXPECT_EQ(in, y.inputs.to_vector<std::int64_t>());  // the same seed, the same windows
    ASSERT_EQ(x.inputs.layout().dims_string(), Layout({6, 5}).dims_string());
    for (std::size_t row = 0; row < 6; ++row) {
      // Each row is a window of the text, and the targets are shifted by one.
      bool found = false;
      for (std::size_t start = 0; start + 6 <= text.size() && !found; ++start) {
        found = true;
        for (std::size_t t = 0; t < 5; ++t)
          found = found && text[start + t] == in[row * 5 + t] && text[start + t + 1] == target[row * 5 + t];
      }
      EXPECT_TRUE(found) << "row " << row;
    }
  }
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, data::TokenSampler(corpus, TextPart::validation, 1, 4, 0));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, data::TokenSampler(corpus, TextPart::train, 0, 4, 0));
}

// sum(logits * r) for a fixed random r: its gradient with respect to the
// logits is r, so backward(r) gives every parameter's gradient.
double weighted_sum(const Backend& be, models::TransformerLM& model, const Tensor& tokens, const std::vector<double>& r) {
  const std::vector<double> logits = model.forward(be, tokens).to_vector<double>();
  double s = 0;
  for (std::size_t k = 0; k < r.size(); ++k) s += logits[k] * r[k];
  return s;
}

TEST(TransformerLM, GradientsMatchCentralDifferences) {
  const Backend be = Backend::native();
  // vocab 7, context 5, d_model 8, heads 2, layers 2, mlp 12
  models::TransformerOptions o{7, 5, 8, 2, 2, 12, f64};
  models::TransformerLM model(be, o, 11);
  const Tensor tokens = Tensor::from(std::vector<std::int64_t>{1, 4, 6, 0, 2, 2, 5, 3}, Layout{2, 4});
  Generator gen(5);
  const Tensor r = uniform(be, Layout{2, 4, 7}, f64, gen, -1, 1);
  const std::vector<double> rv = r.to_vector<double>();
  (void)model.forward(be, tokens);
  (void)model.backward(be, r);
  const auto params = model.parameters();
  ASSERT_EQ(params.size(), 2u + 2u * 12u + 4u);
  EXPECT_EQ(params[0]->name, "tok_emb.weight");
  EXPECT_EQ(params[4]->name, "blocks.0.0.1.in_proj_weight");
  EXPECT_EQ(params.back()->name, "head.bias");
  for (layers::Parameter* p : params) {
    ASSERT_TRUE(p->grad.defined()) << p->name;
    const std::vector<double> grad = p->grad.to_vector<double>();
    std::vector<double> value = p->value.to_vector<double>();
    const Tensor original = p->value;
    for (std::size_t k : {std::size_t{0}, value.size() / 2, value.size() - 1}) {
      const double h = 1e-5, v = value[k];
      value[k] = v + h;
      p->value = Tensor::from(value, original.layout());
      const double up = weighted_sum(be, model, tokens, rv);
      value[k] = v - h;
      p->value = Tensor::from(value, original.layout());
      const double down = weighted_sum(be, model, tokens, rv);
      value[k] = v;
      p->value = original;
      EXPECT_NEAR(grad[k], (up - down) / (2 * h), 1e-6 + 1e-5 * std::abs(grad[k])) << p->name << "[" << k << "]";
    }
  }
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)model.forward(be, Tensor::from(std::vector<std::int64_t>(12, 0),
                                                                                  Layout{2, 6})));
  o.heads = 3;
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, models::TransformerLM(be, o, 1));
}

// A model small enough for a two-core CI: tens of steps in seconds.
cli::LmOptions tiny(const std::string& backend, std::int64_t steps) {
  cli::LmOptions o;
  o.backend = backend;
  o.steps = steps;
  o.seed = 3;
  o.batch = 8;
  o.context = 16;
  o.d_model = 32;
  o.heads = 2;
  o.layers = 2;
  o.lr = 1e-2;
  o.eval_every = 0;
  o.eval_batches = 2;
  o.sample = 24;
  return o;
}

class CharLm : public xylem_test::OnFramework {
 protected:
  void SetUp() override {
    std::error_code ec;
    if (!std::filesystem::is_directory(TextCorpus::kDebianDirectory, ec)) {
      std::cout << "[  SKIPPED ] " << GetParam() << ": Debian's fortunes are not installed (apt-get install fortunes)"
                << std::endl;
      GTEST_SKIP() << "no fortunes";
    }
    OnFramework::SetUp();
  }

  cli::LmResult run(std::int64_t steps, const std::string& backend = {}) {
    std::ostringstream out;
    cli::LmResult r = cli::train_char_lm(tiny(backend.empty() ? be.id() : backend, steps), out, false);
    log = out.str();
    return r;
  }
  std::string log;
};

double mean_of_last(const std::vector<double>& v, std::size_t n) {
  double s = 0;
  for (std::size_t k = v.size() - n; k < v.size(); ++k) s += v[k];
  return s / static_cast<double>(n);
}

TEST_P(CharLm, LossFalls) {
  const cli::LmResult r = run(50);
  ASSERT_EQ(r.losses.size(), 50u);
  for (double loss : r.losses) ASSERT_TRUE(std::isfinite(loss)) << log;
  // Near log(vocabulary) at the start; the character frequencies alone
  // take it well below that.
  EXPECT_GT(r.losses.front(), 3.5) << log;
  EXPECT_LT(mean_of_last(r.losses, 5), r.losses.front() - 0.8) << log;
  ASSERT_EQ(r.validation.size(), 2u);
  EXPECT_LT(r.validation.back().second, r.validation.front().second - 0.5) << log;
  EXPECT_EQ(r.sample.size(), 24u);
  EXPECT_TRUE(contains(log, "tokens/s")) << log;
  std::cout << GetParam() << ": loss " << r.losses.front() << " -> " << r.losses.back() << ", validation "
            << r.validation.front().second << " -> " << r.validation.back().second << ", " << r.tokens_per_second
            << " tokens/s" << std::endl;
}

TEST_P(CharLm, TheSameSeedGivesTheSameCurve) {
  const cli::LmResult a = run(20), b = run(20);
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (std::size_t s = 0; s < a.losses.size(); ++s) EXPECT_NEAR(a.losses[s], b.losses[s], 1e-5) << "step " << s;
  EXPECT_EQ(a.sample, b.sample);
  if (GetParam() == "native") return;
  // Across frameworks only rounding differs: the curves stay close.
  const cli::LmResult host = run(20, "native");
  for (std::size_t s = 0; s < a.losses.size(); ++s) EXPECT_NEAR(a.losses[s], host.losses[s], 2e-2) << "step " << s;
}

INSTANTIATE_TEST_SUITE_P(Frameworks, CharLm, ::testing::Values("native", "opencl", "cuda"),
                         [](const auto& p) { return p.param; });

}  // namespace
