"""Bad input gives a TypeError or ValueError with a message that says what is wrong (never a silent NaN)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import socm_lib
from socm_lib import checks


@pytest.fixture(scope="module")
def encoder():
    return socm_lib.load_encoder("all-minilm-l6", device="cpu")


@pytest.fixture(scope="module")
def good():
    rng = np.random.default_rng(0)
    return [1.0 + rng.normal(size=(n, 8)) for n in (3, 5, 4)]


# ----------------------------------------------------------------------------------------------------------
# Texts
# ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["", "   ", "\n\t "])
def test_empty_or_whitespace_text(encoder, bad):
    with pytest.raises(ValueError, match=r"texts\[1\] is empty or whitespace only"):
        socm_lib.token_embeddings(encoder, ["A fine sentence.", bad])


def test_single_string_instead_of_list(encoder):
    with pytest.raises(TypeError, match="single string; pass a list of texts"):
        socm_lib.token_embeddings(encoder, "A fine sentence.")


def test_empty_list_and_non_string(encoder):
    with pytest.raises(ValueError, match="texts is empty"):
        socm_lib.token_embeddings(encoder, [])
    with pytest.raises(TypeError, match=r"texts\[1\] is a int"):
        socm_lib.token_embeddings(encoder, ["fine", 3])


def test_not_an_encoder():
    with pytest.raises(TypeError, match="encoder must come from socm_lib.load_encoder"):
        socm_lib.token_embeddings("all-minilm-l6", ["fine"])


@pytest.mark.parametrize("special_tokens", [True, False])
@pytest.mark.parametrize("text", ["\u0301", "\ue000"], ids=["combining-accent", "private-use"])
def test_text_with_no_tokens_of_its_own(encoder, text, special_tokens):
    # visible characters that this tokenizer maps to nothing: only [CLS] and [SEP] would be left
    assert checks.has_visible_character(text)
    assert encoder.tokenizer(text)["input_ids"] == [encoder.tokenizer.cls_token_id, encoder.tokenizer.sep_token_id]
    # before: with special tokens, a two-token cloud of [CLS] and [SEP] was measured as if it were the text
    with pytest.raises(ValueError, match=r"texts\[1\] .* has no token of its own: the tokenizer maps it to special"):
        socm_lib.token_embeddings(encoder, ["A fine sentence.", text], special_tokens=special_tokens)


def test_truncation_keeps_a_token_of_the_text(encoder):
    # truncation never leaves only [CLS] and [SEP]: max_length must keep one token of the text
    with pytest.raises(ValueError, match=r"outside 3 <= max_length <= 512.*adds 2 special tokens"):
        socm_lib.token_embeddings(encoder, ["A fine sentence."], special_tokens=False, max_length=2)
    with pytest.warns(UserWarning, match="truncated"):
        X = socm_lib.token_embeddings(encoder, ["A fine sentence."], special_tokens=False, max_length=3)[0]
    assert X.shape == (1, 384)


@pytest.mark.parametrize("layer,exc,msg", [
    (7, ValueError, "layer 7 is out of range: this encoder has 6 layers"),
    (-8, ValueError, "layer -8 is out of range"),
    ([0, 9], ValueError, "layer 9 is out of range"),
    (1.5, TypeError, "layer must be an int, a list of ints or 'all'"),
    ("last", TypeError, "layer must be an int"),
    (True, TypeError, "layer must be an int"),
])
def test_bad_layer(encoder, layer, exc, msg):
    with pytest.raises(exc, match=msg):
        socm_lib.token_embeddings(encoder, ["A fine sentence."], layer=layer)


def test_bad_batch_size(encoder):
    with pytest.raises(ValueError, match="batch_size = 0 is outside 1 <= batch_size"):
        socm_lib.token_embeddings(encoder, ["A fine sentence."], batch_size=0)


# ----------------------------------------------------------------------------------------------------------
# Encoders
# ----------------------------------------------------------------------------------------------------------
def test_unknown_encoder():
    with pytest.raises(ValueError, match="Unknown encoder 'no-such-model'"):
        socm_lib.load_encoder("no-such-model")


def test_remote_code_needs_consent():
    with pytest.raises(ValueError, match="trust_remote_code=True"):
        socm_lib.load_encoder("nomic-embed")


@pytest.mark.parametrize("bad", ["", "  ", None, 3])
def test_bad_encoder_name(bad):
    with pytest.raises(TypeError, match="name_or_path must be a non-empty string"):
        socm_lib.load_encoder(bad)


def test_bad_encoder_dtype():
    with pytest.raises(ValueError, match="dtype='float8' is not supported here"):
        socm_lib.load_encoder("all-minilm-l6", dtype="float8")


# ----------------------------------------------------------------------------------------------------------
# Clouds
# ----------------------------------------------------------------------------------------------------------
def test_one_token_cloud_is_valid(good):
    one = np.array([[1.0, 2.0, 0.5, 0, 0, 0, 0, 1.0]])
    r = socm_lib.socm(one, good[0])
    X = good[0] / np.linalg.norm(good[0].mean(0))
    assert r.d_sigma == pytest.approx(np.sum((X - X.mean(0)) ** 2) / len(X) / 4, rel=1e-12)  # documented value
    assert socm_lib.concentration_ratio(one) == 0.0
    assert np.all(socm_lib.cloud_covariance(one).numpy() == 0)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_nan_or_inf_in_cloud(good, value):
    bad = good[1].copy()
    bad[2, 4] = value
    with pytest.raises(ValueError, match=r"clouds\[1\] contains NaN or inf \(first at token 2\)"):
        socm_lib.socm_pairs([good[0], bad, good[2]])
    with pytest.raises(ValueError, match="NaN or inf"):
        socm_lib.socm(good[0], torch.from_numpy(bad))
    with pytest.raises(ValueError, match="NaN or inf"):
        socm_lib.concentration_ratio(bad)


def test_clouds_of_different_d(good):
    with pytest.raises(ValueError, match=r"clouds\[1\] has d = 9 but clouds\[0\] has d = 8"):
        socm_lib.socm_pairs([good[0], np.ones((3, 9)), good[2]])


def test_one_dimensional_arrays(good):
    with pytest.raises(ValueError, match=r"must be 2-D .* reshape it to \(1, d\)"):
        socm_lib.socm_pairs([good[0], np.ones(8)])
    with pytest.raises(ValueError, match="must be 2-D"):
        socm_lib.cloud_mean(np.ones(8))


def test_three_dimensional_array_as_clouds(good):
    stacked = np.stack([good[1][:3], good[0]])
    with pytest.raises(TypeError, match=r"single ndarray of shape \(2, 3, 8\); pass a list"):
        socm_lib.socm_pairs(stacked)
    with pytest.raises(TypeError, match="single Tensor"):
        socm_lib.socm_pairs(torch.from_numpy(stacked))
    with pytest.raises(ValueError, match=r"must be 2-D .* list of \(n_i, d\) arrays"):
        socm_lib.socm_pairs([stacked, good[0]])


def test_empty_and_complex_and_string_clouds(good):
    with pytest.raises(ValueError, match="clouds is empty"):
        socm_lib.socm_pairs([])
    with pytest.raises(ValueError, match="at least one token"):
        socm_lib.socm_pairs([good[0], np.ones((0, 8))])
    with pytest.raises(TypeError, match="complex"):
        socm_lib.socm_pairs([good[0], good[1].astype(complex)])
    with pytest.raises(TypeError, match="dtype <U"):
        socm_lib.socm_pairs([good[0], np.array([["a"] * 8])])
    with pytest.raises(TypeError, match="must be a list"):
        socm_lib.socm_pairs("clouds")


def test_zero_norm_mean(good):
    zero_mean = np.array([[1.0, 2, 0, 0, 0, 0, 0, 0], [-1.0, -2, 0, 0, 0, 0, 0, 0]])
    with pytest.raises(ValueError, match=r"clouds\[1\] has a zero mean vector.*normalize=False"):
        socm_lib.socm_pairs([good[0], zero_mean])
    with pytest.raises(ValueError, match="zero mean vector"):
        socm_lib.concentration_ratio(zero_mean)
    # fine without normalisation: a pure spread comparison
    r = socm_lib.socm(good[0], zero_mean, normalize=False)
    assert np.isfinite(r.d_sigma) and np.isfinite(r.d_mu)
    assert r.d_mu == pytest.approx(np.sum(good[0].mean(0) ** 2) / 4, rel=1e-12)
    # zero-norm token: cosine undefined
    with pytest.raises(ValueError, match="zero-norm token"):
        socm_lib.avg_intra_cosine(np.vstack([good[0], np.zeros((1, 8))]))


@pytest.mark.parametrize("pairs,exc,msg", [
    ([(0, 3)], ValueError, r"indices outside \[0, 2\] \(there are 3 clouds\)"),
    ([(-1, 0)], ValueError, "indices outside"),
    ([(0, 1, 2)], ValueError, r"pairs has shape \(1, 3\); expected \(P, 2\)"),
    ([0, 1], ValueError, r"expected \(P, 2\)"),
    ([(0.0, 1.0)], TypeError, "pairs has dtype float64; indices must be integers"),
    ([], ValueError, "pairs is empty"),
    ([(0, 1), (2,)], TypeError, "pairs must be a sequence of"),
])
def test_bad_pairs(good, pairs, exc, msg):
    with pytest.raises(exc, match=msg):
        socm_lib.socm_pairs(good, pairs)


def test_socm_with_list_instead_of_array(good):
    with pytest.raises(TypeError, match=r"X1 is a list; pass a numpy array or torch tensor"):
        socm_lib.socm(good[0].tolist(), good[1])


def test_bad_dtype_for_engine(good):
    with pytest.raises(ValueError, match="dtype=torch.float16 is not supported here; use one of 'float32', 'float64'"):
        socm_lib.socm_pairs(good, dtype=torch.float16)


def test_bad_covariances():
    with pytest.raises(ValueError, match="must be square"):
        socm_lib.bures_wasserstein_sq(np.ones((3, 2)), np.eye(3))
    with pytest.raises(ValueError, match="S1 is \\(3, 3\\) but S2 is \\(2, 2\\)"):
        socm_lib.bures_wasserstein_sq(np.eye(3), np.eye(2))
    with pytest.raises(ValueError, match="NaN or inf"):
        socm_lib.bures_wasserstein_sq(np.full((2, 2), np.nan), np.eye(2))
    with pytest.raises(TypeError, match="numpy array or torch tensor"):
        socm_lib.psd_sqrt([[1.0, 0.0], [0.0, 1.0]])
