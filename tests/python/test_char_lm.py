"""xylem.data.TextCorpus and TokenSampler, and xylem.models.TransformerLM:
the vocabulary and split of a corpus in memory, windows and their next
tokens, and a tiny model whose loss falls in a few AdamW steps."""
import numpy as np
import pytest

import xylem

data = xylem.data


def ten_documents():
    return [chr(ord("a") + k) + "b\n" for k in range(10)]


def test_corpus_vocabulary_split_and_codes():
    corpus = data.TextCorpus.from_documents(ten_documents())
    assert corpus.vocabulary == b"\nabcdefghij"
    assert corpus.documents == 10 and corpus.vocab_size == 11
    assert corpus.tokens(data.TextPart.train).shape == (36,)
    valid = corpus.tokens(data.TextPart.validation).numpy().astype(np.int64).tolist()
    assert corpus.decode(valid) == b"jb\n\n"
    assert corpus.decode(corpus.encode(b"abba\n")) == b"abba\n"
    with pytest.raises(xylem.InvalidArgument):
        corpus.encode(b"z")


def test_missing_corpus_is_an_io_error(tmp_path):
    with pytest.raises(xylem.IOError, match="apt-get install fortunes"):
        data.TextCorpus(tmp_path)


def test_sampler_targets_follow_inputs():
    corpus = data.TextCorpus.from_documents(ten_documents())
    text = corpus.tokens(data.TextPart.train).numpy().astype(np.int64)
    inputs, targets = data.TokenSampler(corpus, data.TextPart.train, 4, 5, seed=2).next()
    again, _ = data.TokenSampler(corpus, data.TextPart.train, 4, 5, seed=2).next()
    x, y = inputs.numpy(), targets.numpy()
    assert x.shape == (4, 5) and (x == again.numpy()).all()
    windows = {tuple(text[s:s + 6]) for s in range(len(text) - 5)}
    for row in range(4):
        assert tuple(x[row]) + (y[row, -1],) in windows
        assert (x[row, 1:] == y[row, :-1]).all()


def test_transformer_loss_falls(backend):
    corpus = data.TextCorpus.from_documents(ten_documents() * 5)
    model = xylem.models.TransformerLM(corpus.vocab_size, context=8, d_model=16, heads=2, layers=2, seed=1,
                                       backend=backend)
    assert model.parameters()[0].name == "tok_emb.weight"
    opt = xylem.optim.AdamW(model, lr=1e-2)
    sampler = data.TokenSampler(corpus, data.TextPart.train, 8, 8, seed=1)
    losses = []
    for _ in range(30):
        inputs, targets = sampler.next()
        logits = model(xylem.contiguous(inputs, backend=backend))
        assert logits.shape == (8, 8, corpus.vocab_size)
        loss, grad = xylem.losses.cross_entropy(logits.reshape(64, corpus.vocab_size), targets.reshape(64))
        model.backward(grad.reshape(8, 8, corpus.vocab_size))
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    assert np.mean(losses[-5:]) < losses[0] - 0.5
    text = model.generate(corpus.encode(b"a"), 10, temperature=0.0, backend=backend)
    assert len(text) == 10 and all(0 <= t < corpus.vocab_size for t in text)
