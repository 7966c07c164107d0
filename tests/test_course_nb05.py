"""Tasks of notebook 5: expected values equal the notebook's solution path; wrong and malformed answers are caught."""

import math

import numpy as np
import pytest

import socm_lib
from socm_lib.course import _expected, get_task, verdict
from socm_lib.course import nb05

IDS = ("nb05.1", "nb05.2", "nb05.3")


@pytest.fixture(scope="module")
def runs():
    texts = socm_lib.sample_texts(socm_lib.corpus()["text"], nb05.SAMPLE, nb05.SAMPLE_SEED)
    return {name: socm_lib.measure(socm_lib.load_encoder(name), texts, progress=False)
            for name in ("all-minilm-l6", "untrained-minilm-l6")}


def test__expecteds_match_the_solutions(runs):
    assert _expected("nb05.1") == pytest.approx(np.mean(runs["all-minilm-l6"].pairs.d_sigma > 1), abs=1e-12)
    means = {name: float(np.mean(m.pairs.socm)) for name, m in runs.items()}
    assert _expected("nb05.2") == min(means, key=means.get)
    # the closed form 2(n - 1)/(n + 2) > T  <=>  n > (2 + 2T)/(2 - T)
    t = nb05.THRESHOLD
    assert _expected("nb05.3") == math.floor((2 + 2 * t) / (2 - t)) + 1


@pytest.mark.parametrize("task_id", IDS)
def test_wrong_and_malformed_answers(task_id):
    task = get_task(task_id)
    assert verdict(task_id, task.wrong_example).status == "wrong"
    assert verdict(task_id, "a lot" if task.kind != "choice" else "bert").status == "malformed"
    expected = _expected(task_id)
    wrong = verdict(task_id, task.wrong_example)
    shown = f"{expected:.4f}" if isinstance(expected, float) else str(expected)
    assert shown not in wrong.message  # a malformed choice lists the options, which is fine


def test_task_4_rubric_formula_for_no_shared_vector_matches_a_simulation():
    """Task 4's box: with beta = 0 the means' cosine is 1/2 sqrt(min/max) + k/(2 sqrt(n1 n2)), checked by drawing
    the embedding tables (the fifth edition's rubric said min/(2 max): 0.067 for 8 against 60 tokens, where a
    simulation gives about 0.23)."""
    from socm_lib import control

    n1, n2, k, d = 8, 60, 2, 4096
    formula = 0.5 * np.sqrt(n1 / n2) + k / (2 * np.sqrt(n1 * n2))
    assert control.predicted_mean_cosine(n1, n2, k, beta=1e-12) == pytest.approx(formula, rel=1e-6)
    rng = np.random.default_rng(0)
    cosines = []
    for _ in range(20):
        words, positions = rng.standard_normal((200, d)), rng.standard_normal((n2, d))
        # [CLS] = 0 and [SEP] = 1 in both texts; their other ids from disjoint halves of the vocabulary (k = 2)
        ids1 = np.r_[0, rng.choice(np.arange(2, 100), n1 - 2, replace=False), 1]
        ids2 = np.r_[0, rng.choice(np.arange(100, 200), n2 - 2, replace=False), 1]
        means = []
        for ids in (ids1, ids2):
            tokens = words[ids] + positions[: len(ids)]
            tokens /= np.linalg.norm(tokens, axis=1, keepdims=True)  # LayerNorm's equal norms, no shared vector
            means.append(tokens.mean(axis=0))
        cosines.append(means[0] @ means[1] / np.linalg.norm(means[0]) / np.linalg.norm(means[1]))
    assert np.mean(cosines) == pytest.approx(formula, abs=0.02)
    assert abs(np.mean(cosines) - min(n1, n2) / (2 * max(n1, n2))) > 0.1  # the old rubric's value is far off
