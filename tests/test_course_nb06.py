"""Tasks of notebook 6: expected values equal an independent per-layer computation; bad answers are caught."""

import numpy as np
import pytest

import socm_lib
from socm_lib.course import _expected, get_task, verdict
from socm_lib.course import nb06

IDS = ("nb06.1", "nb06.2")


@pytest.fixture(scope="module")
def mean_concentration():
    texts = socm_lib.sample_texts(socm_lib.corpus()["text"], nb06.SAMPLE, nb06.SAMPLE_SEED)
    clouds = socm_lib.token_embeddings(socm_lib.load_encoder("all-minilm-l6"), texts, layer="all", progress=False)
    return np.array([np.mean([socm_lib.concentration_ratio(X) for X in clouds[l]]) for l in sorted(clouds)])


def test__expecteds_match_a_direct_computation(mean_concentration):
    c = mean_concentration
    assert _expected("nb06.1") == int(np.argmax(c[:-1] - c[1:])) + 1
    assert _expected("nb06.2") == pytest.approx(c[-1] / c[0], rel=1e-6)


@pytest.mark.parametrize("task_id", IDS)
def test_wrong_and_malformed_answers(task_id):
    task = get_task(task_id)
    assert verdict(task_id, task.wrong_example).status == "wrong"
    assert verdict(task_id, "layer one").status == "malformed"
    expected = _expected(task_id)
    line = verdict(task_id, task.wrong_example).line()
    assert (f"{expected:.4f}" if isinstance(expected, float) else f" {expected} ") not in line
