"""Tasks of notebook 1: the expected values equal closed forms a reader can check by hand."""

import math

import numpy as np
import pytest

from socm_lib import course
from socm_lib.course import nb01


def test_task1_is_the_cosine_identity():
    m1, m2 = np.array(nb01.RAW_MEAN_1), np.array(nb01.RAW_MEAN_2)
    cos = m1 @ m2 / (np.linalg.norm(m1) * np.linalg.norm(m2))
    assert course._expected("nb01.1") == pytest.approx((1 - cos) / 2, rel=1e-12)
    assert course._expected("nb01.1") == pytest.approx((1 - 1 / math.sqrt(2)) / 2, rel=1e-12)  # cos = 5/sqrt(50)


def test_task2_by_hand():
    # text 1: mean (2, 0), normalised deviations (0, +-1/2) -> Sigma1 = diag(0, 1/4);
    # text 2: mean (2, 2), normalised deviations (+-1/(2 sqrt 2), 0) -> Sigma2 = diag(1/8, 0); supports orthogonal
    d_mu = (1 - 1 / math.sqrt(2)) / 2
    d_sigma = (1 / 4 + 1 / 8) / 4
    assert course._expected("nb01.2") == pytest.approx((1 - d_mu) * d_sigma, rel=1e-12)


@pytest.mark.parametrize("task_id", ["nb01.1", "nb01.2"])
def test_verdicts(task_id):
    task = course.get_task(task_id)
    assert course.verdict(task_id, course._expected(task_id)).status == "right"
    assert course.verdict(task_id, task.wrong_example).status == "wrong"
    assert course.verdict(task_id, "a number").status == "malformed"
    line = course.verdict(task_id, task.wrong_example).line()
    assert f"{course._expected(task_id):.4f}" not in line
