"""Tasks of notebook 4: expected values equal the notebook's solution path; wrong and malformed answers are caught."""

import numpy as np
import pytest
from scipy.stats import spearmanr

from socm_lib.course import _expected, get_task, verdict
from socm_lib.course import nb04
from socm_lib.viz.widgets import compare, source_texts

IDS = ("nb04.1", "nb04.2", "nb04.4")


@pytest.fixture(scope="module")
def comparison():
    # the notebook's solution path: the comparator's own compare() on the widget's text source
    return compare("untrained-minilm-l6", "all-minilm-l6", source_texts("corpus", nb04.SAMPLE, nb04.SAMPLE_SEED))


def test__expecteds_match_the_solutions(comparison):
    assert _expected("nb04.1") == pytest.approx(comparison.mean_socm()["all-minilm-l6"], abs=1e-9)
    rho = spearmanr(comparison.results[0].socm, comparison.results[1].socm).statistic
    assert _expected("nb04.2") == pytest.approx(rho, abs=1e-9)
    assert verdict("nb04.1", comparison.mean_socm()["all-minilm-l6"]).status == "right"


@pytest.mark.parametrize("task_id", IDS)
def test_wrong_and_malformed_answers(task_id):
    task = get_task(task_id)
    assert verdict(task_id, task.wrong_example).status == "wrong"
    assert verdict(task_id, "a lot").status == "malformed"
    assert verdict(task_id, None).status == "unanswered"
    expected = _expected(task_id)
    for answer in (task.wrong_example, "a lot", None):
        line = verdict(task_id, answer).line()
        assert f"{expected:.4f}" not in line and repr(expected) not in line


def test_the_tasks_are_not_trivial():
    assert 0 < _expected("nb04.1") < 2 and np.isfinite(_expected("nb04.2"))
    assert abs(_expected("nb04.2")) < 0.99


def test_the_e5_ratio_matches_the_solution_path():
    # the notebook's solution: the comparator's compare() on the default pair, the same texts
    c = compare("all-minilm-l6", "multilingual-e5-small-4bit", source_texts("corpus", nb04.SAMPLE, nb04.SAMPLE_SEED))
    means = c.mean_socm()
    ratio = means["all-minilm-l6"] / means["multilingual-e5-small-4bit"]
    assert _expected("nb04.4") == pytest.approx(ratio, abs=1e-9)
    assert verdict("nb04.4", ratio).status == "right" and ratio > 2  # E5 collapses far more than all-MiniLM
    assert verdict("nb04.4", 1.008 * ratio).status == "close"  # beyond three significant figures, within about 1 %
    assert verdict("nb04.4", 1.02 * ratio).status == "wrong"
