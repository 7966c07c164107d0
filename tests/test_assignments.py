"""The autograder (otter-grader): assignments built from labs 1 and 2 grade a solved copy full and an unsolved one 0."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import assignments  # noqa: E402

LABS = ("nb01", "nb02")


def _grade(zip_path: Path, notebook: Path, out: Path) -> dict:
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    otter = Path(sys.executable).with_name("otter")
    subprocess.run([str(otter), "run", "-a", str(zip_path), "-o", str(out), str(notebook)],
                   check=True, env=env, capture_output=True, cwd=notebook.parent)
    tests = json.loads((out / "results.json").read_text())["tests"]
    graded = [t for t in tests if t.get("max_score")]
    return {t["name"]: (t["score"], t["max_score"]) for t in graded}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("assignments")
    assignments.main(["--out", str(out), *LABS])
    return out


@pytest.mark.parametrize("lab", LABS)
def test_solved_full_unsolved_zero(built, lab, tmp_path):
    folder = built / lab
    (zip_path,) = (folder / "autograder").glob("*.zip")
    solved = _grade(zip_path, folder / "autograder" / f"{lab}.ipynb", tmp_path / "solved")
    unsolved = _grade(zip_path, folder / "student" / f"{lab}.ipynb", tmp_path / "unsolved")
    assert solved and set(solved) == set(unsolved)  # one graded question per checked task
    assert all(score == points > 0 for score, points in solved.values()), solved
    assert all(score == 0 for score, _ in unsolved.values()), unsolved


def test_student_copy_holds_no_solution(built):
    for lab in LABS:
        text = (built / lab / "student" / f"{lab}.ipynb").read_text()
        assert "BEGIN SOLUTION" not in text and "(1 - cos_ab) / 2" not in text


def test_grade_is_the_check_verdict():
    from socm_lib.course import expected_value, get_task, grade

    task = get_task("nb01.1")
    assert grade("nb01.1", expected_value("nb01.1")) is True
    assert grade("nb01.1", task.wrong_example) is False
    assert grade("nb01.1", None) is False and grade("nb01.1", "0.15") is False
