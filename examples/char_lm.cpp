// Trains a character-level transformer on Debian's fortune cookies and lets
// it write: the model of `xylem lm` (xylem::models::TransformerLM) in the
// shortest loop that trains it. `xylem lm` adds options, validation, the
// progress line and a loss curve (tools/char_lm.cpp).
//
//   xylem_example_char_lm            on the best backend
//   xylem_example_char_lm opencl:0   on that device
//
// Needs Debian's package fortunes (/usr/share/games/fortunes).
#include <cstdio>
#include <string>

#include <xylem/xylem.hpp>

int main(int argc, char** argv) try {
  const xylem::Backend be = argc > 1 ? xylem::Backend::open(argv[1]) : xylem::Backend::best();
  const xylem::data::TextCorpus corpus;  // every fortune file, as bytes

  xylem::models::TransformerOptions shape;  // 2 blocks of width 128, 4 heads, windows of 64
  shape.vocab = corpus.vocab_size();
  xylem::models::TransformerLM model(be, shape, /*seed=*/1);
  xylem::optim::AdamOptions adam = xylem::optim::AdamW::defaults();
  adam.lr = 3e-3;
  xylem::optim::AdamW optimizer(model, adam);
  xylem::data::TokenSampler batches(corpus, xylem::data::TextPart::train, 32, shape.context, /*seed=*/1);

  for (int step = 0; step <= 300; ++step) {
    const xylem::data::TokenBatch batch = batches.next();  // inputs and next characters, [32, 64]
    const xylem::Tensor logits = model.forward(be, batch.inputs);  // [32, 64, vocab]
    // One prediction per position: [32 * 64, vocab] against [32 * 64].
    const std::int64_t rows = logits.shape()[0] * logits.shape()[1];
    const xylem::layers::Loss loss = xylem::layers::cross_entropy(
        be, logits.reshape({rows, shape.vocab}), batch.targets.reshape({rows}));
    (void)model.backward(be, loss.grad.reshape(logits.shape()));
    optimizer.step(be);
    optimizer.zero_grad();
    if (step % 50 == 0) std::printf("step %3d: loss %.3f\n", step, loss.value.to_vector<float>()[0]);
  }
  const std::string text = corpus.decode(model.generate(be, corpus.encode("\n"), 200, 0.8, /*seed=*/1));
  std::printf("---\n%s\n", text.c_str());
  return 0;
} catch (const xylem::Error& e) {
  std::fprintf(stderr, "char_lm: %s\n", e.what());
  return 2;
}
