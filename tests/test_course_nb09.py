"""Tasks of notebook 9: expected values read independently from the committed metric.json."""

import json
from pathlib import Path

import pytest

from socm_lib.course import expected_value, get_task, verdict

METRIC = json.loads((Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "metric.json").read_text())


def test_nb09_1_is_the_committed_speed_ratio():
    ds = METRIC["datasets"]["synthetic d=768"]
    paper = [r for r in ds["routes"] if r["route"].startswith("paper")][0]
    assert expected_value("nb09.1") == pytest.approx(paper["speed_ratio"], rel=1e-9)


def test_nb09_2_is_the_svd_share():
    p = METRIC["datasets"]["synthetic d=384"]["allpairs"]["profile"]
    assert expected_value("nb09.2") == pytest.approx(p["svd_s"] / p["total_s"], rel=1e-12)
    assert 0 < expected_value("nb09.2") < 1


@pytest.mark.parametrize("task_id", ["nb09.1", "nb09.2"])
def test_wrong_and_malformed_answers(task_id):
    task = get_task(task_id)
    assert verdict(task_id, expected_value(task_id)).status == "right"
    assert verdict(task_id, task.wrong_example).status == "wrong"
    assert verdict(task_id, [1, 2]).status == "malformed"
    assert f"{expected_value(task_id):.3f}" not in verdict(task_id, task.wrong_example).line()
