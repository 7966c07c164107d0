"""Graded assignments (scripts/assignments.py) and the grader (scripts/grade.py): the student copy is the lab's student
edition with points; the key stores the expected values; a solved copy scores full, an unsolved one 0, and so do
submissions that cheat: ask the library for the expected value, replace its grading function, call the practice
check's private recipe, answer with an object that equals everything, patch builtins and numpy, read or write the
key, forge a report, kill the grader. Feedback is the practice check's line. Needs the built book (the student
edition reads it) and bubblewrap (the grader's sandbox); tests/test_grading_isolation.py attacks the sandbox."""

import json
import re
import shutil

import nbformat
import pytest

import grading_kit
from grading_kit import LABS, assignments, grade, key, key_zip, solved, student, tiny
from socm_lib import course


def _scores(record) -> dict:
    return {t["task"]: (t["points"], t["max_points"]) for t in record["tasks"]}


def test_a_solved_copy_scores_full_and_an_unsolved_one_zero(built_assignments, tmp_path):
    """Lab 2 here; lab 1's solved and unsolved copies are graded in tests/test_grading_isolation.py's batch."""
    unsolved = tmp_path / "subs" / "unsolved.ipynb"
    paths = [solved(built_assignments, "nb02", tmp_path / "subs" / "solved.ipynb"), unsolved]
    shutil.copyfile(built_assignments / "nb02" / "student" / "nb02.ipynb", unsolved)
    solved_record, unsolved = grade.grade_all(key(built_assignments, "nb02"), paths, tmp_path / "graded", jobs=2)
    assert solved_record["tasks"] and solved_record["score"] == solved_record["max_score"] > 0, solved_record
    assert all(t["line"] == f"{t['task']}: right." for t in solved_record["tasks"])
    assert unsolved["score"] == 0 and {t["status"] for t in unsolved["tasks"]} == {"unanswered"}, unsolved
    assert set(_scores(unsolved)) == set(_scores(solved_record))


def test_a_solved_copy_of_the_explorer_lab_scores_full(built_assignments, tmp_path):
    """Lab 4 draws the explorer, whose PNG comes from vl-convert's V8: V8 reserves gigabytes of addresses it never
    uses, so under a limit on the address space (RLIMIT_AS) its kernel died (SIGTRAP) and every solved copy scored 0.
    The memory limit bounds writable memory instead."""
    path = solved(built_assignments, "nb04", tmp_path / "subs" / "solved.ipynb")
    record, = grade.grade_all(key(built_assignments, "nb04"), [path], tmp_path / "graded", jobs=1)
    assert record["score"] == record["max_score"] > 0, record


STEAL = """import json, zipfile
def steal(task_id):
    with zipfile.ZipFile({key!r}) as zf:
        return json.loads(zf.read("key.json"))["tasks"][task_id]["expected"]
"""


def test_other_cheats_score_zero(built_assignments, tmp_path):
    key_path = key_zip(built_assignments, "nb01")
    before = key_path.read_bytes()
    steal = STEAL.format(key=str(key_path))
    namespace = {}
    exec(steal, namespace)  # outside the sandbox the theft works: the cheat is real
    assert namespace["steal"]("nb01.1") == pytest.approx(course._expected("nb01.1"))
    cheats = {
        "asks": "import socm_lib.course\nanswer = socm_lib.course.expected_value('nb01.1')",
        "patches": "import socm_lib.course\nsocm_lib.course.grade = lambda *a, **k: True\n"
                   "socm_lib.course.check = lambda *a, **k: print('right')\nanswer = 12345.0",
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
    paths = [tiny(tmp_path / "subs" / f"{name.replace(' ', '-')}.ipynb", code) for name, code in cheats.items()]
    paths.append(tiny(tmp_path / "subs" / "honest.ipynb", "answer = 0.1464"))
    *cheated, honest = grade.grade_all(key(built_assignments, "nb01"), paths, tmp_path / "graded", jobs=2)
    for name, record in zip(cheats, cheated):
        assert record["score"] == 0, (name, record)
    assert key_path.read_bytes() == before, "a submission changed the key"
    assert honest["score"] == 5  # the same path can score


def test_a_submission_that_kills_its_runner_and_its_kernel_scores_zero_and_says_so(built_assignments, tmp_path):
    kills = tiny(tmp_path / "kill.ipynb", "answer = 0.1464",
                 "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)  # the runner: process 1, out of reach",
                 "os.kill(os.getpid(), signal.SIGKILL)  # the kernel itself")
    record = grade.grade(key(built_assignments, "nb01"), kills)
    assert record["score"] == 0 and record["stopped"].startswith("the kernel died in cell 3 (signal SIGKILL"), record
    assert [t["line"] for t in record["tasks"]] == [f"{t}: not graded: {record['stopped']}." for t in ("nb01.1", "nb01.2")]


def test_feedback_is_the_practice_check_line(built_assignments, tmp_path):
    task = course.get_task("nb01.1")
    e = course._expected("nb01.2")
    answers = {"nb01.1": task.wrong_example, "nb01.2": e * 1.004}
    feedback = grading_kit.notebook(tmp_path / "subs" / "feedback.ipynb", f"answer = {answers['nb01.1']!r}",
                                    'check("nb01.1", answer)', f"answer = {answers['nb01.2']!r}", 'check("nb01.2", answer)')
    malformed = grading_kit.notebook(tmp_path / "subs" / "malformed.ipynb", "answer = 'forty-two'", 'check("nb01.1", answer)',
                                     "answer = {1: 2}", 'check("nb01.2", answer)')
    record, bad = grade.grade_all(key(built_assignments, "nb01"), [feedback, malformed], tmp_path / "graded", jobs=2)
    lines = {t["task"]: t["line"] for t in record["tasks"]}
    assert lines == {k: course.verdict(k, v).line() for k, v in answers.items()}
    assert task.hint in lines["nb01.1"] and "close. Give more digits" in lines["nb01.2"]
    assert "AssertionError" not in json.dumps(record)
    assert [t["status"] for t in bad["tasks"]] == ["malformed", "malformed"], bad
    assert [t["line"] for t in bad["tasks"]] == [course.verdict("nb01.1", "forty-two").line(),
                                                 course.verdict("nb01.2", {1: 2}).line()]


@pytest.mark.parametrize("lab", LABS)
def test_the_student_copy_is_the_student_edition_with_points(built_assignments, lab):
    source = nbformat.read(assignments.lab_path(lab), as_version=4)
    copy = student(built_assignments, lab)
    text = "\n".join(c.source for c in copy.cells)
    assert not re.search(r"\{(prf:ref|ref|doc|cite[a-z:]*)\}`|\\dmu|\\dSigma", text), "raw book markup left"
    intro = next(c.source for c in copy.cells if c.source.startswith("## Your turn"))
    assert not re.search(r"hidden|toggle|solution", intro, re.I)
    prose = [c for c in source.cells if c.cell_type == "markdown"]
    assert sum(c.cell_type == "markdown" for c in copy.cells) == len(prose) + 1  # the prose kept, a header added
    listed = assignments.tasks(copy)
    open_tasks = [t for t in listed if not t["id"]]
    assert open_tasks and all("*Graded by hand" in copy.cells[t["statement"]].source for t in open_tasks)
    assert all("*Graded automatically" in copy.cells[t["statement"]].source for t in listed if t["id"])
    assert "What a good answer contains" in text
    assert not [c for c in copy.cells if "solution" in c.metadata.get("tags", [])]
    stored = key(built_assignments, lab)
    assert set(stored["tasks"]) == {t["id"] for t in listed if t["id"]} == {t.id for t in course.all_tasks([lab])}
    for entry in stored["tasks"].values():  # no stored value is written in the student copy
        for x in (entry["expected"] if isinstance(entry["expected"], list) else [entry["expected"]]):
            if isinstance(x, float) and x != 0:
                assert f"{x:.4g}" not in text and f"{x:.3f}" not in text


def test_every_lab_is_an_assignment():
    assert assignments.all_labs() == [f"nb{k:02d}" for k in range(1, 11)]


def test_grading_refuses_where_it_cannot_isolate_and_says_what_is_missing(built_assignments, monkeypatch, tmp_path,
                                                                          capsys):
    submission = tiny(tmp_path / "any.ipynb", "answer = 1.0")
    which = shutil.which
    monkeypatch.setattr(grade.sandbox.shutil, "which", lambda name: None if name == "bwrap" else which(name))
    grade._refusal.cache_clear()
    with pytest.raises(RuntimeError, match=r"lacks `bwrap` \(Debian/Ubuntu package bubblewrap\)"):
        grade.grade(key(built_assignments, "nb01"), submission)
    with pytest.raises(SystemExit) as stopped:
        grade.main(["--key", str(key_zip(built_assignments, "nb01")), "--out", str(tmp_path / "out"), str(submission)])
    assert stopped.value.code == 2 and "bubblewrap" in capsys.readouterr().err and not (tmp_path / "out").exists()
    monkeypatch.setattr(grade.sandbox.shutil, "which", which)  # bwrap there, but its namespaces refused
    monkeypatch.setattr(grade.sandbox, "command", lambda *args, **kwargs: ["bwrap", "--unshare-user", "--userns", "9"])
    grade._refusal.cache_clear()
    with pytest.raises(RuntimeError, match="could not create its sandbox"):
        grade.grade(key(built_assignments, "nb01"), submission)
    grade._refusal.cache_clear()
