"""The untrained control's predictions (socm_lib.control) against a direct simulation of BERT's initialisation."""

from collections import Counter

import numpy as np
import pytest
import torch

from socm_lib import control


def layer_norm(E):
    """LayerNorm with gain 1 and bias 0 (its state at initialisation), eps as in BERT."""
    C = E - E.mean(axis=-1, keepdims=True)
    return C / np.sqrt((C**2).mean(axis=-1, keepdims=True) + 1e-12)


def simulate(texts_ids, d=384, vocab=5000, max_pos=128, sigma=(0.02, 0.02, 0.02), seed=0):
    """Embedding-layer clouds x_j = LayerNorm(s + w_{t_j} + p_j) drawn from the initialisation scheme."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0, sigma[0], d)
    W = rng.normal(0, sigma[1], (vocab, d))
    P = rng.normal(0, sigma[2], (max_pos, d))
    return [layer_norm(s + W[ids] + P[: len(ids)]) for ids in texts_ids]


def random_texts(rng, count, lo=5, hi=40, vocab=5000):
    """Token id lists: [CLS]=1 ... [SEP]=2 around random ids, some of them repeated (a small common pool)."""
    out = []
    for _ in range(count):
        n = int(rng.integers(lo, hi))
        body = np.where(rng.random(n - 2) < 0.15, rng.integers(3, 10, n - 2), rng.integers(10, vocab, n - 2))
        out.append(np.concatenate([[1], body, [2]]).astype(int))
    return out


def test_closed_forms_for_equal_shares():
    n = np.arange(2, 200)
    assert np.allclose(control.predicted_concentration(n), 2 * (n - 1) / (n + 2))
    k = 2
    assert np.allclose(control.predicted_mean_cosine(n, n, k), (n**2 + n + k) / (n**2 + 2 * n))
    assert np.all(np.diff(control.predicted_concentration(n)) > 0)
    assert np.all(control.predicted_concentration(n) < 2)
    assert control.shares() == pytest.approx((1 / 3, 1 / 2))
    assert control.shares(0.02, 0.04, 0.02) == pytest.approx((1 / 6, 0.8))


def test_limits():
    # one token: its own mean, no spread; a single text with itself: cosine 1
    assert control.predicted_concentration(1) == pytest.approx(0.0)
    assert control.predicted_mean_cosine(7, 7, k=7) == pytest.approx(1.0)
    # no common component: c = n - 1 (orthogonal unit tokens), cosine only from shared positions/ids
    assert control.predicted_concentration(10, beta=1e-12) == pytest.approx(9.0)


def test_prediction_matches_simulation_per_text_and_pair():
    rng = np.random.default_rng(1)
    ids = random_texts(rng, 120)
    clouds = simulate(ids)
    meas = control.measured_statistics(clouds)
    st = control.count_statistics([Counter(x.tolist()) for x in ids])
    pred_c = control.predicted_concentration(st["n"], st["q"])
    n, q, k = st["n"], st["q"], st["k"]
    pred_cos = control.predicted_mean_cosine(n[:, None], n[None, :], k, q[:, None], q[None, :])
    # per text: within a few per cent (fluctuations of order 1/sqrt(d)); on average much closer
    rel = np.abs(meas["concentration"] - pred_c) / pred_c
    assert rel.mean() < 0.03 and rel.max() < 0.15
    iu = np.triu_indices(len(ids), 1)
    gap = meas["cosine"][iu] - pred_cos[iu]
    assert abs(gap.mean()) < 0.01 and np.abs(gap).max() < 0.06
    # and the prediction is informative: it explains the spread of the measured values over lengths
    assert np.corrcoef(meas["concentration"], pred_c)[0, 1] > 0.9


def test_unequal_standard_deviations():
    rng = np.random.default_rng(2)
    ids = random_texts(rng, 80)
    sig = (0.03, 0.02, 0.01)
    beta, alpha = control.shares(*sig)
    meas = control.measured_statistics(simulate(ids, sigma=sig, seed=3))
    st = control.count_statistics([Counter(x.tolist()) for x in ids])
    pred = control.predicted_concentration(st["n"], st["q"], beta=beta, alpha=alpha)
    assert np.mean(np.abs(meas["concentration"] - pred) / pred) < 0.04
    wrong = control.predicted_concentration(st["n"], st["q"])  # the equal-share formula must not fit as well
    assert np.mean(np.abs(meas["concentration"] - wrong) / wrong) > 0.2


def test_measured_statistics_against_stats():
    from socm_lib import concentration_ratio

    rng = np.random.default_rng(0)
    clouds = [rng.normal(size=(n, 16)) + 1.0 for n in (3, 5, 8)]
    m = control.measured_statistics(clouds)
    assert np.allclose(m["concentration"], [concentration_ratio(X) for X in clouds])
    a, b = clouds[0].mean(0), clouds[2].mean(0)
    assert m["cosine"][0, 2] == pytest.approx(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    assert list(m["n"]) == [3, 5, 8]


def test_embedding_shares_of_a_bert_type_model():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    model = BertModel(BertConfig(vocab_size=3000, hidden_size=384, num_hidden_layers=1, num_attention_heads=4,
                                 intermediate_size=64, max_position_embeddings=512))
    beta, alpha = control.embedding_shares(model)
    # a single 384-d type vector: its squared norm fluctuates by about sqrt(2/384), i.e. 7 per cent
    assert beta == pytest.approx(1 / 3, rel=0.2)
    assert alpha == pytest.approx(1 / 2, rel=0.05)
    with pytest.raises(ValueError, match="BERT-type"):
        control.embedding_shares(torch.nn.Linear(2, 2))


def test_bad_input():
    with pytest.raises(ValueError, match="whole numbers"):
        control.predicted_concentration(0)
    with pytest.raises(ValueError, match="beta"):
        control.predicted_concentration(5, beta=0)
    with pytest.raises(ValueError, match="clouds is empty"):
        control.measured_statistics([])
    with pytest.raises(ValueError, match="empty"):
        control.count_statistics([])
