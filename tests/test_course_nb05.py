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
