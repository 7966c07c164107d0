"""Tasks of notebook 8: expected values recomputed on an independent path, wrong and malformed answers rejected."""

import re

import numpy as np
import pytest

import socm_lib
from socm_lib.course import all_tasks, _expected, verdict


def test_tasks_are_registered():
    assert [t.id for t in all_tasks(["nb08"])] == ["nb08.1", "nb08.2"]


def test_task1_median_overlap_of_negations():
    pairs = socm_lib.labelled_pairs()
    neg = pairs[pairs["kind"] == "negation"]
    values = []
    for a, b in zip(neg["text_a"], neg["text_b"]):  # word sets by hand: split on non-word characters
        wa = {w for w in re.split(r"\W+", a.lower()) if w}
        wb = {w for w in re.split(r"\W+", b.lower()) if w}
        values.append(len(wa & wb) / len(wa | wb))
    values.sort()
    k = len(values) // 2
    median = values[k] if len(values) % 2 else (values[k - 1] + values[k]) / 2
    assert _expected("nb08.1") == pytest.approx(median, rel=1e-12)
    assert verdict("nb08.1", median).status == "right"
    assert verdict("nb08.1", sum(values) / len(values)).status == "wrong"  # the mean, which the notebook prints
    assert 0.5 < median < 1  # a negation reuses most words


def test_task2_interval_of_negation_dsigma():
    enc = socm_lib.load_encoder("all-minilm-l6", device="cpu")
    neg = socm_lib.labelled_pairs(["negation"])
    n = len(neg)
    clouds = socm_lib.token_embeddings(enc, list(neg["text_a"]) + list(neg["text_b"]))
    d_sigma = socm_lib.socm_pairs(clouds, np.stack([np.arange(n), np.arange(n) + n], axis=1)).d_sigma
    rng = np.random.default_rng(0)
    reps = [d_sigma[rng.integers(0, n, n)].mean() for _ in range(2000)]  # plain loop, same draws as the library
    ref = np.percentile(reps, [5, 95])
    assert np.allclose(_expected("nb08.2"), ref, rtol=1e-4, atol=1e-6)
    assert verdict("nb08.2", list(ref)).status == "right"
    # the 95 % interval, which the notebook's table prints, is not the answer
    assert verdict("nb08.2", list(np.percentile(reps, [2.5, 97.5]))).status == "wrong"


@pytest.mark.parametrize("task_id", ["nb08.1", "nb08.2"])
def test_wrong_and_malformed_answers(task_id):
    task = next(t for t in all_tasks(["nb08"]) if t.id == task_id)
    assert verdict(task_id, task.wrong_example).status == "wrong"
    bad = "a string" if task.kind == "number" else [1.0, 2.0, 3.0]
    assert verdict(task_id, bad).status == "malformed"
    e = np.atleast_1d(_expected(task_id))
    for answer in (task.wrong_example, bad):
        text = verdict(task_id, answer).line()
        assert not any(f"{x:.4f}" in text for x in e)
    assert verdict(task_id, None).status == "unanswered"
