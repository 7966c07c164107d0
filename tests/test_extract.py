"""Token extraction (socm_lib.extract) against sentence-transformers and direct transformers calls."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import socm_lib
from socm_lib.encoders import packaged_minilm_path


@pytest.fixture(scope="module")
def encoder():
    return socm_lib.load_encoder("all-minilm-l6", device="cpu")


@pytest.fixture(scope="module")
def st_model():
    st = pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
    return st.SentenceTransformer(str(packaged_minilm_path()), device="cpu")


@pytest.fixture(scope="module")
def texts():
    corpus = socm_lib.corpus()
    # 40 texts of varied length: every 27th text of the corpus sorted by length (shortest to longest)
    by_len = corpus.assign(n=corpus["text"].str.len()).sort_values(["n", "id"], kind="stable")
    picked = list(by_len["text"].iloc[:: len(by_len) // 40][:40])
    assert len(picked) == 40
    return picked


@pytest.fixture(scope="module")
def clouds(encoder, texts):
    return socm_lib.token_embeddings(encoder, texts)


def test_shape_and_dtype(encoder, texts, clouds):
    assert len(clouds) == len(texts)
    for t, X in zip(texts, clouds):
        assert isinstance(X, np.ndarray) and X.dtype == np.float32
        assert X.shape == (len(encoder.tokenizer(t)["input_ids"]), 384)
    lengths = {X.shape[0] for X in clouds}
    assert len(lengths) > 10  # the texts really are of varied length


def test_matches_sentence_transformers_token_embeddings(st_model, texts, clouds):
    ref = st_model.encode(texts, output_value="token_embeddings", batch_size=16)
    for X, R in zip(clouds, ref):
        R = R.cpu().numpy() if isinstance(R, torch.Tensor) else np.asarray(R)
        assert X.shape == R.shape
        np.testing.assert_allclose(X, R, atol=1e-5, rtol=0)


def test_mean_matches_mean_pooled_embedding(st_model, texts, clouds):
    st = pytest.importorskip("sentence_transformers")
    pooled = st.SentenceTransformer(modules=[st_model[0], st_model[1]], device="cpu")  # no Normalize module
    ref = pooled.encode(texts, convert_to_numpy=True, batch_size=16)
    means = np.stack([X.mean(axis=0) for X in clouds])
    np.testing.assert_allclose(means, ref, atol=1e-5, rtol=0)
    # the full model's output is the unit-normalised mean
    full = st_model.encode(texts[:5], convert_to_numpy=True)
    np.testing.assert_allclose(full, means[:5] / np.linalg.norm(means[:5], axis=1, keepdims=True), atol=1e-5)


def test_text_alone_equals_text_in_batch_of_long_texts(encoder, texts):
    short = texts[3]
    longs = sorted(texts, key=len)[-6:]
    alone = socm_lib.token_embeddings(encoder, [short])[0]
    batched = socm_lib.token_embeddings(encoder, longs + [short] + longs[:2], batch_size=64)[len(longs)]
    assert alone.shape == batched.shape
    np.testing.assert_allclose(alone, batched, atol=1e-5, rtol=0)
    small_batches = socm_lib.token_embeddings(encoder, longs + [short], batch_size=2)[-1]
    np.testing.assert_allclose(alone, small_batches, atol=1e-5, rtol=0)


@pytest.fixture(scope="module")
def direct_hidden(encoder, texts):
    """hidden_states of one text by a direct transformers call (no padding: a batch of one)."""
    text = texts[20]
    with torch.inference_mode():
        out = encoder.model(**encoder.tokenizer([text], return_tensors="pt"), output_hidden_states=True)
    return text, [h[0].numpy() for h in out.hidden_states], out.last_hidden_state[0].numpy()


def test_layers_match_direct_hidden_states(encoder, direct_hidden):
    text, hidden, last = direct_hidden
    L = encoder.num_layers
    assert L == 6 and len(hidden) == L + 1
    np.testing.assert_allclose(hidden[-1], last, atol=1e-6)
    for layer, idx in [(0, 0), (3, 3), (L, L), (-1, L), (-2, L - 1), (-(L + 1), 0)]:
        X = socm_lib.token_embeddings(encoder, [text], layer=layer)[0]
        np.testing.assert_allclose(X, hidden[idx], atol=1e-5, rtol=0, err_msg=f"layer={layer}")
    default = socm_lib.token_embeddings(encoder, [text])[0]
    np.testing.assert_allclose(default, last, atol=1e-5, rtol=0)


def test_layer_all_and_list(encoder, direct_hidden):
    text, hidden, _ = direct_hidden
    allh = socm_lib.token_embeddings(encoder, [text, "A second, different text."], layer="all")
    assert isinstance(allh, dict) and sorted(allh) == list(range(encoder.num_layers + 1))
    for k, clouds in allh.items():
        assert len(clouds) == 2
        np.testing.assert_allclose(clouds[0], hidden[k], atol=1e-5, rtol=0)
    some = socm_lib.token_embeddings(encoder, [text], layer=[0, 2, -1])
    assert sorted(some) == [0, 2, encoder.num_layers]
    for k in (0, 2, encoder.num_layers):
        np.testing.assert_allclose(some[k][0], hidden[k], atol=1e-5, rtol=0)
    # different layers really differ
    assert np.max(np.abs(hidden[0] - hidden[-1])) > 0.1


def test_special_tokens_false_drops_cls_and_sep(encoder, texts, clouds):
    inner = socm_lib.token_embeddings(encoder, texts, special_tokens=False)
    tok = encoder.tokenizer
    for t, X, Y in zip(texts, clouds, inner):
        ids = tok(t)["input_ids"]
        assert ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id
        assert Y.shape[0] == X.shape[0] - 2
        np.testing.assert_allclose(Y, X[1:-1], atol=1e-6, rtol=0)


def test_output_order_equals_input_order(encoder, texts, clouds):
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(texts))[:20]
    shuffled = socm_lib.token_embeddings(encoder, [texts[k] for k in perm], batch_size=8)
    for pos, k in enumerate(perm):
        assert shuffled[pos].shape == clouds[k].shape
        np.testing.assert_allclose(shuffled[pos], clouds[k], atol=1e-5, rtol=0)


def test_max_length_truncates(encoder, texts):
    long = max(texts, key=len)
    X = socm_lib.token_embeddings(encoder, [long], max_length=8)[0]
    assert X.shape == (8, 384)


@pytest.fixture(scope="module")
def untrained_pair():
    return socm_lib.load_encoder("untrained-minilm-l6", device="cpu"), socm_lib.load_encoder(
        "untrained-minilm-l6", device="cpu"
    )


def test_untrained_control_is_deterministic_and_differs(untrained_pair, encoder, texts, clouds):
    u1, u2 = untrained_pair
    assert u1.kind == "control" and encoder.kind == "contrastive"
    for p1, p2 in zip(u1.model.parameters(), u2.model.parameters()):
        assert torch.equal(p1, p2)
    sample = texts[::8]
    a = socm_lib.token_embeddings(u1, sample)
    b = socm_lib.token_embeddings(u2, sample)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    real = clouds[::8]
    for x, r in zip(a, real):
        assert x.shape == r.shape  # same tokenizer
        assert np.max(np.abs(x - r)) > 0.1
    # the weights differ from the real encoder's
    w_u = dict(u1.model.named_parameters())
    w_r = dict(encoder.model.named_parameters())
    name = "encoder.layer.0.attention.self.query.weight"
    assert not torch.allclose(w_u[name], w_r[name])
