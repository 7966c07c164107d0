"""Tasks of notebook 7: expected values recomputed on an independent path, wrong and malformed answers rejected."""

import numpy as np
import pytest
from scipy import stats

import socm_lib
from socm_lib.course import all_tasks, _expected, verdict


@pytest.fixture(scope="module")
def frame():
    """The labelled pairs under all-MiniLM-L6-v2, scored with socm_pairs directly (not through labelled_frame)."""
    enc = socm_lib.load_encoder("all-minilm-l6", device="cpu")
    pairs = socm_lib.labelled_pairs()
    n = len(pairs)
    clouds = socm_lib.token_embeddings(enc, list(pairs["text_a"]) + list(pairs["text_b"]))
    res = socm_lib.socm_pairs(clouds, np.stack([np.arange(n), np.arange(n) + n], axis=1))
    means = np.stack([c.astype(np.float64).mean(axis=0) for c in clouds])
    unit = means / np.linalg.norm(means, axis=1, keepdims=True)
    return pairs.assign(socm=res.socm, cosine=(unit[:n] * unit[n:]).sum(axis=1))


def test_tasks_are_registered():
    assert [t.id for t in all_tasks(["nb07"])] == ["nb07.1", "nb07.2"]


def test_task1_rho_of_socm_with_cosine(frame):
    rho = stats.spearmanr(frame["socm"], frame["cosine"]).statistic
    assert _expected("nb07.1") == pytest.approx(rho, abs=1e-4)
    assert verdict("nb07.1", rho).status == "right"
    assert -1 < rho < 0  # pairs with close means have small shape distances here too


def test_task2_ratio_without_special_tokens(frame):
    enc = socm_lib.load_encoder("all-minilm-l6", device="cpu")
    pairs = socm_lib.labelled_pairs()
    n = len(pairs)
    clouds = socm_lib.token_embeddings(enc, list(pairs["text_a"]) + list(pairs["text_b"]), special_tokens=False)
    res = socm_lib.socm_pairs(clouds, np.stack([np.arange(n), np.arange(n) + n], axis=1))
    ratio = float(np.mean(res.socm) / frame["socm"].mean())
    assert _expected("nb07.2") == pytest.approx(ratio, rel=1e-4)
    assert abs(ratio - 1) > 0.01  # the answer changes when the special tokens are dropped: 1 (no work) is wrong
    assert verdict("nb07.2", ratio).status == "right"
    assert verdict("nb07.2", 1.0).status == "wrong"


def test_task1_two_decimals_are_right(frame):
    rho = stats.spearmanr(frame["socm"], frame["cosine"]).statistic
    assert verdict("nb07.1", round(rho, 2)).status == "right"


@pytest.mark.parametrize("task_id", ["nb07.1", "nb07.2"])
def test_wrong_and_malformed_answers(task_id):
    task = next(t for t in all_tasks(["nb07"]) if t.id == task_id)
    assert verdict(task_id, task.wrong_example).status == "wrong"
    bad = "not a number"
    v = verdict(task_id, bad)
    assert v.status == "malformed"
    e = _expected(task_id)
    # a malformed choice lists every option (the expected one among them), so only the other verdicts are checked
    for answer in (task.wrong_example, bad):
        text = verdict(task_id, answer).line()
        assert f"{e:.4f}" not in text and f"{e:.2f}" not in text
    assert verdict(task_id, None).status == "unanswered"
