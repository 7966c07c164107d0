"""Tasks of notebook 2: the changing transformation and the range bound of a real pair, recomputed another way."""

import numpy as np
import pytest

import socm_lib
from socm_lib import course
from socm_lib.course import nb02


def test_task1_only_translation_changes_socm():
    assert course._expected("nb02.1") == "translate both"
    # the reason: translating both texts moves the two normalised means by different amounts
    X1 = np.array([[1.0, 0.0], [3.0, 0.0]])
    X2 = np.array([[0.0, 1.0], [0.0, 2.0]])
    assert abs(socm_lib.socm(X1 + 1, X2 + 1).socm - socm_lib.socm(X1, X2).socm) > 1e-3


def test_task2_matches_the_notebook_route():
    # the notebook's solution: concentration ratios of the two clouds, from the float32 extraction
    encoder = socm_lib.load_encoder("all-minilm-l6")
    clouds = socm_lib.token_embeddings(encoder, list(nb02.PAIR))
    c = [float(np.sum((X - X.mean(0)) ** 2) / len(X) / np.sum(X.mean(0) ** 2)) for X in (x.astype(np.float64) for x in clouds)]
    assert course._expected("nb02.2") == pytest.approx(sum(c) / 4, rel=1e-6)
    # the point of the pair: one text alone has c > 2, yet the guarantee d_sigma <= 1 (c1 + c2 <= 4) covers the pair
    assert max(c) > 2 and course._expected("nb02.2") <= 1


@pytest.mark.parametrize("task_id, malformed", [("nb02.1", "none of these"), ("nb02.2", "two")])
def test_verdicts(task_id, malformed):
    task = course.get_task(task_id)
    assert course.verdict(task_id, course._expected(task_id)).status == "right"
    assert course.verdict(task_id, task.wrong_example).status == "wrong"
    assert course.verdict(task_id, malformed).status == "malformed"
    assert str(course._expected(task_id))[:6] not in course.verdict(task_id, task.wrong_example).line()
