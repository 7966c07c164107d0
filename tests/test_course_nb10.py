"""Tasks of notebook 10: expected values recomputed independently; wrong and malformed answers are recognised."""

import numpy as np
import pytest
import torch

import socm_lib
from socm_lib.course import _expected, get_task, verdict


def test_nb10_1_is_the_leading_term():
    assert _expected("nb10.1") == pytest.approx((768 - 24) * np.sqrt(1e-9) / 2, rel=1e-12)


def test_nb10_2_is_the_float64_shift_of_texts_2_and_3():
    texts = socm_lib.sample_texts(list(socm_lib.corpus()["text"]), 40, seed=0)
    clouds = socm_lib.token_embeddings(socm_lib.load_encoder("all-minilm-l6"), texts, cache=False)

    def shift(i, j):
        X1, X2 = clouds[i], clouds[j]
        return socm_lib.socm(X1, X2).d_sigma - socm_lib.paper_route([X1, X2], dtype=torch.float64,
                                                                    device="cpu").d_sigma[0]

    assert _expected("nb10.2") == pytest.approx(shift(2, 3), rel=1e-9)
    assert 0.004 < shift(2, 3) < 0.01  # exact minus route, d = 384: about (384 - r) sqrt(eps)/2 and a little more
    # the shifts of texts 0 and 1, in both orders, are printed by the notebook: neither is the answer
    assert verdict("nb10.2", shift(0, 1)).status == "wrong"
    assert verdict("nb10.2", shift(1, 0)).status == "wrong"


@pytest.mark.parametrize("task_id", ["nb10.1", "nb10.2"])
def test_wrong_and_malformed_answers(task_id):
    task = get_task(task_id)
    assert verdict(task_id, task.wrong_example).status == "wrong"
    assert verdict(task_id, "a lot").status == "malformed"
    right = verdict(task_id, _expected(task_id))
    assert right.status == "right"
    assert f"{_expected(task_id):.4f}" not in verdict(task_id, task.wrong_example).line()
