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
    first = socm_lib.load_encoder("untrained-minilm-l6", device="cpu")
    socm_lib.load_encoder.cache_clear()  # a second, independent load (not the cached model)
    second = socm_lib.load_encoder("untrained-minilm-l6", device="cpu")
    assert second.model is not first.model
    return first, second


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


# ----------------------------------------------------------------------------------------------- the cache of clouds


class _Passes:
    """Counts the forward passes of a model (a forward hook), to tell a cached answer from a computed one."""

    def __init__(self, model):
        self.count = 0
        self.handle = model.register_forward_hook(self._seen)

    def _seen(self, module, args, output):
        self.count += 1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.remove()


def test_an_identical_call_is_answered_by_the_cache_with_the_computed_arrays(encoder, texts):
    fresh = socm_lib.token_embeddings(encoder, texts, layer=[3, -1], cache=False)  # the slow reference
    with _Passes(encoder.model) as passes:
        first = socm_lib.token_embeddings(encoder, texts, layer=[3, -1], progress=False)
        computed = passes.count
        again = socm_lib.token_embeddings(socm_lib.load_encoder("all-minilm-l6", device="cpu"), texts, layer=-1)
        layer3 = socm_lib.token_embeddings(encoder, texts, layer=3, progress=True)
        assert computed > 0 and passes.count == computed  # both later calls ran no forward pass
    for k in (3, encoder.num_layers):
        assert all(np.array_equal(a, b) for a, b in zip(first[k], fresh[k]))
    assert all(np.array_equal(a, b) for a, b in zip(again, fresh[encoder.num_layers]))
    assert all(np.array_equal(a, b) for a, b in zip(layer3, fresh[3]))


def test_cached_clouds_are_copies_no_caller_can_alter(encoder, texts):
    one = socm_lib.token_embeddings(encoder, texts[:5])
    reference = [c.copy() for c in one]
    one[0][:] = 0.0
    two = socm_lib.token_embeddings(encoder, texts[:5])
    assert all(np.array_equal(a, b) for a, b in zip(two, reference))
    assert two[0] is not one[0] and two[0].flags.writeable


@pytest.mark.parametrize("change", [
    dict(special_tokens=False), dict(batch_size=2), dict(max_length=12), dict(prefix="query: "), dict(layer=2),
    dict(texts="reordered"), dict(texts="one fewer"),
])
def test_different_options_miss(encoder, texts, change):
    base = dict(layer=-1, special_tokens=True, batch_size=64, max_length=None, prefix=None)
    socm_lib.token_embeddings(encoder, texts[:6], **base)
    args = {**base, **{k: v for k, v in change.items() if k != "texts"}}
    asked = {"reordered": texts[:6][::-1], "one fewer": texts[1:6]}.get(change.get("texts"), texts[:6])
    with _Passes(encoder.model) as passes:
        socm_lib.token_embeddings(encoder, asked, **args)
        assert passes.count > 0


def test_two_encoders_never_share_an_entry(encoder, texts, untrained_pair):
    untrained = untrained_pair[0]
    real = socm_lib.token_embeddings(encoder, texts[:4])
    with _Passes(untrained.model) as passes:
        control = socm_lib.token_embeddings(untrained, texts[:4])
        assert passes.count > 0
    assert all(np.max(np.abs(a - b)) > 0.1 for a, b in zip(real, control))
    # two separate loads of the same weights are two encoders as well
    socm_lib.load_encoder.cache_clear()
    other = socm_lib.load_encoder("all-minilm-l6", device="cpu")
    assert other.model is not encoder.model
    with _Passes(other.model) as passes:
        socm_lib.token_embeddings(other, texts[:4])
        assert passes.count > 0


def test_an_in_place_change_of_the_model_misses(texts):
    socm_lib.load_encoder.cache_clear()
    enc = socm_lib.load_encoder("all-minilm-l6", device="cpu")  # a private copy: this test changes its weights
    socm_lib.load_encoder.cache_clear()
    before = socm_lib.token_embeddings(enc, texts[:3])
    with torch.no_grad():
        enc.model.embeddings.word_embeddings.weight.mul_(2.0)  # torch raises the parameter's version counter
    with _Passes(enc.model) as passes:
        after = socm_lib.token_embeddings(enc, texts[:3])
        assert passes.count > 0
    assert all(np.max(np.abs(a - b)) > 1e-3 for a, b in zip(before, after))
    enc.model.train()  # dropout on: the training flag is part of the key
    with _Passes(enc.model) as passes:
        socm_lib.token_embeddings(enc, texts[:3])
        assert passes.count > 0


def test_cache_clear_and_no_cache():
    socm_lib.load_encoder.cache_clear()
    enc = socm_lib.load_encoder("all-minilm-l6", device="cpu")
    texts = ["A first text.", "A second, longer text than the first."]
    socm_lib.token_embeddings(enc, texts)
    with _Passes(enc.model) as passes:
        socm_lib.token_embeddings(enc, texts, cache=False)  # computes, and stores nothing
        socm_lib.token_embeddings.cache_clear()
        assert socm_lib.token_embeddings.cache_info().currsize == 0
        socm_lib.token_embeddings(enc, texts)
        socm_lib.token_embeddings(enc, texts)
        assert passes.count == 2
    info = socm_lib.token_embeddings.cache_info()
    assert (info.hits, info.misses, info.currsize) == (1, 1, 1)


def test_the_truncation_warning_is_repeated_by_a_cached_answer(encoder, texts):
    long = max(texts, key=len)
    for _ in range(2):
        with pytest.warns(UserWarning, match="1 of 1 texts are longer than max_length = 8"):
            socm_lib.token_embeddings(encoder, [long], max_length=8)


def test_entries_of_a_freed_model_are_dropped(texts):
    import gc

    from socm_lib import extract

    socm_lib.load_encoder.cache_clear()
    enc = socm_lib.load_encoder("untrained-minilm-l6", device="cpu")
    socm_lib.load_encoder.cache_clear()
    socm_lib.token_embeddings.cache_clear()
    socm_lib.token_embeddings(enc, texts[:2])
    assert socm_lib.token_embeddings.cache_info().currsize == 1
    del enc
    gc.collect()
    extract._CLOUDS.put("another", (lambda: 1, lambda: 1, [], 0))  # storing drops entries whose model is gone
    assert socm_lib.token_embeddings.cache_info().currsize == 1 and extract._CLOUDS.get("another") is not None


def test_a_result_too_large_to_store_is_computed_every_time(encoder, monkeypatch):
    from socm_lib import extract

    monkeypatch.setattr(extract._CLOUDS, "maxbytes", 1)
    texts = ["Too large for a one-byte cache.", "So is this one."]
    with _Passes(encoder.model) as passes:
        first = socm_lib.token_embeddings(encoder, texts)
        second = socm_lib.token_embeddings(encoder, texts)
        assert passes.count == 2
    assert all(np.array_equal(a, b) for a, b in zip(first, second))
