"""The autograder (otter-grader): every lab becomes an assignment with one question per checked task and no solution
in the student copy; those of labs 1 and 2 are graded here, a solved copy full and an unsolved one 0."""

import json
import os
import re
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


@pytest.fixture(scope="module")
def every_lab(tmp_path_factory):
    out = tmp_path_factory.mktemp("every-lab")
    assignments.main(["--out", str(out)])  # no labs named: every lab
    return out


def test_every_lab_is_an_assignment(every_lab):
    labs = assignments.all_labs()
    assert labs == [f"nb{k:02d}" for k in range(1, 11)]
    assert sorted(p.name for p in every_lab.iterdir()) == labs


@pytest.mark.parametrize("lab", [f"nb{k:02d}" for k in range(1, 11)])
def test_one_question_per_checked_task_and_no_solution_for_students(every_lab, lab):
    import nbformat

    from socm_lib.course import all_tasks

    source = nbformat.read(assignments.lab_path(lab), as_version=4)
    checked = {m.group(1) for c in source.cells if c.cell_type == "code" for m in assignments.CHECK.finditer(c.source)}
    assert checked and checked <= {t.id for t in all_tasks([lab])}
    master = (every_lab / lab / "master" / f"{lab}.ipynb").read_text()
    assert {q.replace("_", ".") for q in re.findall(r"name: (nb\d\d_\d+)", master)} == checked
    student = (every_lab / lab / "student" / f"{lab}.ipynb").read_text()
    assert "BEGIN SOLUTION" not in student
    solutions = [c.source for c in source.cells if "solution" in c.get("metadata", {}).get("tags", [])]
    lines = {ln.strip() for s in solutions for ln in s.splitlines() if len(ln.strip()) > 25 and not ln.strip().startswith("#")}
    assert lines, f"{lab}: no solution line long enough to look for"
    leaked = [ln for ln in lines if ln in student]
    assert not leaked, f"{lab}: solution lines in the student copy: {leaked}"


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
