"""Graded assignments (scripts/assignments.py) and the grader (scripts/grade.py): the student copy is the lab's student
edition with points; the key stores the expected values; for labs 1 and 2 a solved copy scores full, an unsolved
one 0, and so do submissions that cheat: ask the library for the expected value, replace its grading function,
call the practice check's private recipe, answer with an object that equals everything, patch builtins and numpy,
read the key from disk, kill the grader. Feedback is the practice check's line. Needs the built book (the student
edition reads it) and Linux with Landlock (the grader's sandbox)."""

import json
import re
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from socm_lib import course

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import assignments  # noqa: E402
import grade  # noqa: E402

LABS = ("nb01", "nb02")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("assignments")
    assignments.main(["--out", str(out), *LABS])
    return out


def _zip(built, lab) -> Path:
    return built / lab / "autograder" / f"{lab}-autograder.zip"


def _student(built, lab) -> nbformat.NotebookNode:
    return nbformat.read(built / lab / "student" / f"{lab}.ipynb", as_version=4)


def _solved(built, lab, tmp_path) -> Path:
    with zipfile.ZipFile(_zip(built, lab)) as zf:
        path = tmp_path / f"{lab}-solution.ipynb"
        path.write_bytes(zf.read(path.name))
    return path


def _graded(built, lab, notebook: Path) -> dict:
    return grade.grade(grade.read_key(_zip(built, lab)), notebook)


def _with_task_cells(built, lab, code, tmp_path, name) -> Path:
    """The student copy with every checked task's cell replaced by ``code`` (``{id}`` stands for the task id)."""
    nb = _student(built, lab)
    for task in assignments.tasks(nb):
        if task["id"]:
            cell = nb.cells[task["task"]]
            cell.source = assignments.answered(cell.source, code.format(id=task["id"]))
    path = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


def _scores(record) -> dict:
    return {t["task"]: (t["points"], t["max_points"]) for t in record["tasks"]}


@pytest.mark.parametrize("lab", LABS)
def test_solved_full_unsolved_and_the_two_cheats_zero(built, lab, tmp_path):
    solved = _graded(built, lab, _solved(built, lab, tmp_path))
    assert solved["tasks"] and solved["score"] == solved["max_score"] > 0, solved
    assert all(t["line"] == f"{t['task']}: right." for t in solved["tasks"])
    unsolved = _graded(built, lab, built / lab / "student" / f"{lab}.ipynb")
    assert unsolved["score"] == 0 and {t["status"] for t in unsolved["tasks"]} == {"unanswered"}, unsolved
    asked = _with_task_cells(built, lab, 'import socm_lib.course\nanswer = socm_lib.course.expected_value("{id}")',
                             tmp_path, "asks")
    patched = _with_task_cells(built, lab, "import socm_lib.course\nsocm_lib.course.grade = lambda *a, **k: True\n"
                               "socm_lib.course.check = lambda *a, **k: print('right')\nanswer = 12345.0",
                               tmp_path, "patches")
    for cheat in (asked, patched):
        record = _graded(built, lab, cheat)
        assert record["score"] == 0 and set(_scores(record)) == set(_scores(solved)), record


def _tiny(tmp_path, name, *cells) -> Path:
    """A submission of a few cells, each task's check cell after them (the grader reads `answer` there)."""
    code = [*cells, 'from socm_lib.course import check\ncheck("nb01.1", answer)', 'check("nb01.2", answer)']
    path = tmp_path / f"{name}.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell(c) for c in code]), path)
    return path


STEAL = """import json, zipfile
def steal(task_id):
    with zipfile.ZipFile({key!r}) as zf:
        return json.loads(zf.read("key.json"))["tasks"][task_id]["expected"]
"""


def test_other_cheats_score_zero(built, tmp_path):
    key_path = _zip(built, "nb01")
    before = key_path.read_bytes()
    steal = STEAL.format(key=str(key_path))
    namespace = {}
    exec(steal, namespace)  # outside the sandbox the theft works: the cheat is real
    assert namespace["steal"]("nb01.1") == pytest.approx(course._expected("nb01.1"))
    cheats = {
        "private recipe": "from socm_lib.course import _expected\nanswer = _expected('nb01.1')",
        "equals everything": "class Liar(float):\n    __eq__ = lambda s, o: True\n    __abs__ = lambda s: 0.0\n"
                             "    __sub__ = __rsub__ = lambda s, o: 0.0\n    __lt__ = __le__ = lambda s, o: True\n"
                             "answer = Liar(12345.0)",
        "object": "class Answer:\n    __eq__ = lambda s, o: True\n    __float__ = lambda s: 0.1464\n"
                  "    __abs__ = lambda s: 0.0\n    __array__ = lambda s, *a, **k: __import__('numpy').array(0.1464)\n"
                  "answer = Answer()",
        "patched comparisons": "import builtins, math, numpy as np\nbuiltins.abs = lambda x: 0\nmath.isclose = "
                               "lambda *a, **k: True\nnp.abs = np.absolute = lambda x, *a, **k: 0 * x\n"
                               "np.all = lambda *a, **k: True\nnp.allclose = lambda *a, **k: True\nanswer = 12345.0",
        "reads the key": f"{steal}\nanswer = steal('nb01.1')",
        "writes the key": f"open({str(key_path)!r}, 'wb').write(b'{{}}')\nanswer = 12345.0",
        "forged report": "print('SOCM-ANSWER nb01.1 0.14645')\nanswer = 12345.0",
    }
    key = grade.read_key(key_path)
    for name, code in cheats.items():
        record = grade.grade(key, _tiny(tmp_path, name.replace(" ", "-"), code))
        assert record["score"] == 0, (name, record)
    assert key_path.read_bytes() == before, "a submission changed the key"
    assert grade.grade(key, _tiny(tmp_path, "honest", "answer = 0.1464"))["score"] == 5  # the same path can score


def test_a_submission_that_kills_its_runner_scores_zero_and_says_so(built, tmp_path):
    record = grade.grade(grade.read_key(_zip(built, "nb01")),
                         _tiny(tmp_path, "kill", "answer = 0.1464", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)"))
    assert record["score"] == 0 and "did not run to its end" in record["errors"][0]


def test_feedback_is_the_practice_check_line(built, tmp_path):
    task = course.get_task("nb01.1")
    e = course._expected("nb01.2")
    answers = {"nb01.1": task.wrong_example, "nb01.2": e * 1.004}
    path = tmp_path / "feedback.ipynb"
    cells = [f"answer = {answers['nb01.1']!r}", 'check("nb01.1", answer)', f"answer = {answers['nb01.2']!r}",
             'check("nb01.2", answer)']
    nbformat.write(new_notebook(cells=[new_code_cell(c) for c in cells]), path)
    record = grade.grade(grade.read_key(_zip(built, "nb01")), path)
    lines = {t["task"]: t["line"] for t in record["tasks"]}
    assert lines == {k: course.verdict(k, v).line() for k, v in answers.items()}
    assert task.hint in lines["nb01.1"] and "close. Give more digits" in lines["nb01.2"]
    assert "AssertionError" not in json.dumps(record)
    malformed = tmp_path / "malformed.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell(c) for c in
                                       ["answer = 'forty-two'", 'check("nb01.1", answer)', "answer = {1: 2}",
                                        'check("nb01.2", answer)']]), malformed)
    record = grade.grade(grade.read_key(_zip(built, "nb01")), malformed)
    assert [t["status"] for t in record["tasks"]] == ["malformed", "malformed"], record


@pytest.mark.parametrize("lab", LABS)
def test_the_student_copy_is_the_student_edition_with_points(built, lab):
    source = nbformat.read(assignments.lab_path(lab), as_version=4)
    student = _student(built, lab)
    text = "\n".join(c.source for c in student.cells)
    assert not re.search(r"\{(prf:ref|ref|doc|cite[a-z:]*)\}`|\\dmu|\\dSigma", text), "raw book markup left"
    intro = next(c.source for c in student.cells if c.source.startswith("## Your turn"))
    assert not re.search(r"hidden|toggle|solution", intro, re.I)
    prose = [c for c in source.cells if c.cell_type == "markdown"]
    assert sum(c.cell_type == "markdown" for c in student.cells) == len(prose) + 1  # the prose kept, a header added
    listed = assignments.tasks(student)
    open_tasks = [t for t in listed if not t["id"]]
    assert open_tasks and all("*Graded by hand" in student.cells[t["statement"]].source for t in open_tasks)
    assert all("*Graded automatically" in student.cells[t["statement"]].source for t in listed if t["id"])
    assert "What a good answer contains" in text
    assert not [c for c in student.cells if "solution" in c.metadata.get("tags", [])]
    key = grade.read_key(_zip(built, lab))
    assert set(key["tasks"]) == {t["id"] for t in listed if t["id"]} == {t.id for t in course.all_tasks([lab])}
    for entry in key["tasks"].values():  # no stored value is written in the student copy
        for x in (entry["expected"] if isinstance(entry["expected"], list) else [entry["expected"]]):
            if isinstance(x, float) and x != 0:
                assert f"{x:.4g}" not in text and f"{x:.3f}" not in text


def test_every_lab_is_an_assignment():
    assert assignments.all_labs() == [f"nb{k:02d}" for k in range(1, 11)]


def test_grading_refuses_without_a_sandbox(built, monkeypatch, tmp_path):
    monkeypatch.setattr(grade.sandbox, "abi", lambda: 0)
    with pytest.raises(RuntimeError, match="Landlock"):
        grade.grade(grade.read_key(_zip(built, "nb01")), _tiny(tmp_path, "any", "answer = 1.0"))
