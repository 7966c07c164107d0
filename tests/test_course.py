"""The labs: every notebook ends with a "Your turn" section whose checked tasks accept the official solution.

Structure: a ``## Your turn`` heading, then 2-4 tasks (``### Task k``), each with a task cell (tag ``task``,
``answer = None``), for a task with a definite answer its check cell ``check("nbXX.k", answer)``, then a solution
cell (tags ``solution`` and ``hide-input``) that computes into its own variable ``solution``, never ``answer``, and
checks itself with ``check("nbXX.k", solution)``. So a notebook run from the top answers no task: the committed
output of each task's check says "not answered yet", and that of each solution's check says the official solution
is right (nbval re-executes the notebooks and compares both). For every registered task, a typical wrong answer is
judged wrong, a malformed one malformed, and no verdict ever shows the expected value."""

from __future__ import annotations

import re

import numpy as np
import pytest

from notebook_cells import NOTEBOOKS, ids, read, tags
from socm_lib import course

CHECK = re.compile(r'check\("(nb\d\d\.\d+)",\s*answer\)')
SOLUTION_CHECK = re.compile(r'check\("(nb\d\d\.\d+)",\s*solution\)')
ASSIGNS_ANSWER = re.compile(r"^\s*answer\s*=|\banswer\s*(\[[^]]*\])?\s*[+*/-]?=(?!=)", re.M)
#: The introduction's sentence about the solutions, true in the book (a code toggle) and in the editions (a folded
#: Markdown block); the student edition drops it with the solutions.
WHERE_SOLUTIONS_ARE = ("Each task ends with its solution, its code folded away until you open it; the code computes "
                       "into its own variable, `solution`, so running it never answers a task for you.")
MALFORMED = {"number": "forty-two", "integer": 2.5, "array": "not an array", "choice": "none of these", "set": 42}


def lab_cells(nb):
    """The cells after the ``## Your turn`` heading."""
    start = next((k for k, c in enumerate(nb.cells)
                  if c.cell_type == "markdown" and re.search(r"^## Your turn", c.source, re.M)), None)
    assert start is not None, "no '## Your turn' section"
    return nb.cells[start:]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids())
def test_your_turn_structure(path):
    cells = lab_cells(read(path))
    n_tasks = sum(len(re.findall(r"^### Task", c.source, re.M)) for c in cells if c.cell_type == "markdown")
    assert 2 <= n_tasks <= 4, f"{path.name}: {n_tasks} tasks; a lab has 2 to 4"
    task_cells = [c for c in cells if "task" in tags(c)]
    solutions = [c for c in cells if "solution" in tags(c)]
    assert len(task_cells) == n_tasks and len(solutions) == n_tasks, (
        f"{path.name}: {n_tasks} tasks, {len(task_cells)} task cells, {len(solutions)} solution cells")
    assert all("hide-input" in tags(c) for c in solutions), "solution cells must be hidden behind a toggle"
    assert all(c.cell_type == "code" for c in task_cells + solutions)
    checked = [m for c in cells if c.cell_type == "code" for m in CHECK.findall(c.source)]
    assert checked, f"{path.name}: no task is checked by socm_lib.course.check"
    assert len(set(checked)) == len(checked), f"{path.name}: a task's answer is checked twice: {checked}"
    assert WHERE_SOLUTIONS_ARE in cells[0].source, f"{path.name}: the introduction does not say where the solutions are"
    assert all(t.startswith(path.stem[:4] + ".") for t in checked), f"{path.name}: task ids must start with its name"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids())
def test_each_task_is_task_cell_check_then_solution(path):
    """Task cell, its check (tasks with a definite answer), then the solution, which never assigns ``answer`` and
    checks its own variable ``solution`` against the same task."""
    code = [c for c in lab_cells(read(path)) if c.cell_type == "code"]
    for k, cell in enumerate(code):
        if "solution" not in tags(cell):
            continue
        assert not ASSIGNS_ANSWER.search(cell.source), f"{path.name}: a solution assigns `answer`:\n{cell.source}"
        before = code[k - 1]
        task = before if "task" in tags(before) else code[k - 2]
        assert "task" in tags(task), f"{path.name}: a solution cell does not follow a task cell (and its check)"
        assert task.source.rstrip().splitlines()[-1].startswith("answer = None"), f"{path.name}: {task.source}"
        own = SOLUTION_CHECK.findall(cell.source)
        if before is task:  # an open task: no check
            assert not own, f"{path.name}: an open task's solution checks {own}"
        else:
            assert CHECK.findall(before.source) == own and len(own) == 1, (
                f"{path.name}: the check before a solution ({CHECK.findall(before.source)}) and the solution's own "
                f"check ({own}) must name the same task")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids())
def test_committed_checks_say_unanswered_and_the_solutions_right(path):
    """Run from the top (as committed), no task is answered, and every official solution is right."""
    seen = 0
    for cell in lab_cells(read(path)):
        if cell.cell_type != "code":
            continue
        shown = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
        for task_id in CHECK.findall(cell.source):
            assert course.verdict(task_id, None).line() in shown, f"{path.name}: check of {task_id} shows {shown!r}"
            seen += 1
        for task_id in SOLUTION_CHECK.findall(cell.source):
            assert f"{task_id}: right." in shown, f"{path.name}: the solution of {task_id} shows {shown!r}"
            seen += 1
    assert seen >= 4, f"{path.name}: {seen} checks"


def _tasks():
    """Every task registered for the notebooks (each notebook's module ``socm_lib/course/nbXX.py``)."""
    return course.all_tasks([p.stem[:4] for p in NOTEBOOKS])


@pytest.mark.parametrize("task", _tasks(), ids=lambda t: t.id)
def test_task_rejects_wrong_and_malformed_answers(task):
    assert task.wrong_example is not None, f"{task.id} needs a wrong_example"
    wrong = course.verdict(task.id, task.wrong_example)
    assert wrong.status == "wrong", f"{task.id}: the wrong example was judged {wrong.status}"
    assert course.verdict(task.id, MALFORMED[task.kind]).status == "malformed"
    expected = course._expected(task.id)
    shown = [wrong.line(), course.verdict(task.id, MALFORMED[task.kind]).line()]
    if task.kind in ("number", "array"):
        for x in np.atleast_1d(np.asarray(expected, dtype=float)):
            for digits in (3, 4, 6):
                assert f"{x:.{digits}f}" not in " ".join(shown), f"{task.id}: a verdict shows the expected value"
    elif task.kind in ("choice", "integer"):
        assert str(expected) not in wrong.message


def test_every_check_in_the_notebooks_is_registered():
    for path in NOTEBOOKS:
        for cell in read(path).cells:
            for task_id in CHECK.findall(cell.source) if cell.cell_type == "code" else []:
                assert course.get_task(task_id).id == task_id


def _forms(x: float):
    """The same number as students hold it: Python and numpy scalars, 0-d and one-element arrays and tensors."""
    import torch

    return [x, np.float64(x), np.float32(x), np.array(x), np.array([x]), torch.tensor(x, dtype=torch.float64),
            torch.tensor([x], dtype=torch.float64), torch.tensor(x)]


def test_numbers_in_every_form_are_accepted():
    e = course._expected("nb01.1")
    for answer in _forms(e):
        assert course.verdict("nb01.1", answer).status == "right", type(answer)
    for answer in _forms(course.get_task("nb01.1").wrong_example):
        assert course.verdict("nb01.1", answer).status == "wrong", type(answer)


def test_rounded_answers_meeting_the_stated_precision_are_right():
    assert course.verdict("nb01.1", 0.1464).status == "right"  # four significant digits, worked out on paper
    assert course.verdict("nb01.2", 0.0800).status == "right"
    assert "4 significant digits" in course.get_task("nb01.2").precision


def test_close_answers_are_told_to_give_more_digits():
    e = course._expected("nb01.2")
    v = course.verdict("nb01.2", e * 1.004)  # 0.4 %: outside the tolerance, within about 1 %
    assert v.status == "close" and "more digits" in v.line()
    assert f"{e:.4f}" not in v.line() and f"{e:.3f}" not in v.line()
    assert course.verdict("nb01.2", e * 1.03).status == "wrong"


@pytest.mark.parametrize("bad, status", [("0.1", "malformed"), ([1.0, 2.0], "malformed"), (np.zeros(3), "malformed"),
                                         (True, "malformed"), ({"a": 1}, "malformed"), (None, "unanswered"),
                                         (..., "unanswered")])
def test_form_is_judged_before_anything_is_computed(monkeypatch, bad, status):
    calls = []
    task = course.Task(id="nb99.1", question="a spy", expected=lambda: calls.append(1) or 1.0, rtol=1e-3)
    monkeypatch.setitem(course._TASKS, task.id, task)
    course._expected.cache_clear()
    assert course.verdict(task.id, bad).status == status
    assert calls == []
    course._expected.cache_clear()


def test_expected_value_is_computed_once_and_without_progress_bars(monkeypatch, capsys):
    """The library's bars are off while a check computes, even where the reader asked for bars everywhere
    (socm_lib.config_context(progress=True)), and the process's tqdm is left as it was."""
    import numpy as np
    from tqdm import tqdm

    import socm_lib

    calls, init = [], vars(tqdm)["__init__"]
    clouds = [np.random.default_rng(k).normal(size=(4, 3)) + 1.0 for k in range(3)]

    def expected():
        calls.append(1)
        socm_lib.socm_pairs(clouds)  # progress=None: the setting decides
        return 2.0

    task = course.Task(id="nb99.2", question="a spy", expected=expected, rtol=1e-3)
    monkeypatch.setitem(course._TASKS, task.id, task)
    course._expected.cache_clear()
    with socm_lib.config_context(progress=True):
        socm_lib.socm_pairs(clouds)
        assert "SOCM" in capsys.readouterr().err  # the reader's setting shows a bar outside a check
        for answer in (2.0, 2.01, 3.0, 2.0):
            course.check(task.id, answer)
    assert calls == [1] and vars(tqdm)["__init__"] is init
    out = capsys.readouterr()
    assert "SOCM" not in out.out + out.err
    assert out.out.splitlines() == ["nb99.2: right.", "nb99.2: close. Give more digits. Give 4 significant digits "
                                    "(right within a relative error of 1e-03).", "nb99.2: wrong.", "nb99.2: right."]
    course._expected.cache_clear()


@pytest.mark.parametrize("task", [t for t in _tasks() if t.kind in ("number", "array")], ids=lambda t: t.id)
def test_every_numeric_task_states_its_precision(task):
    nb = read(next(p for p in NOTEBOOKS if p.stem.startswith(task.id[:4])))
    statements = [c.source for c in lab_cells(nb) if c.cell_type == "markdown"]
    assert any(f"*Precision:* {task.precision}" in s for s in statements), f"{task.id}: precision not stated"


#: The checks whose expected value needs token clouds, with the notebook's cells (by id) that the student runs
#: before the check (parameters, imports, the extraction, the solution) and parameters made smaller where the
#: task does not depend on them.
_SHARED = {
    "nb02.2": ("nb02_properties", ["ffe4bb34", "7c926964", "3096cc0d", "f63528c2", "8767b786"], {"N_TEXTS": 6}),
    "nb07.1": ("nb07_downstream", ["124c1137", "8fc085a3", "123d9aad", "a2817d4b"], {"ENCODERS": ["all-minilm-l6"]}),
    "nb07.2": ("nb07_downstream", ["124c1137", "8fc085a3", "123d9aad", "75f90bdd"], {"ENCODERS": ["all-minilm-l6"]}),
    "nb10.2": ("nb10_paper_route", ["04f8f214", "6d287066", "141d2d82", "2f9ea3e1"], {"N_SYNTH": 2}),
}


@pytest.mark.parametrize("task_id", sorted(_SHARED))
def test_a_check_after_its_notebook_runs_no_load_and_no_forward_pass(task_id, monkeypatch, capsys):
    """The task's own computation goes through the library's caches, which the notebook's calls have filled."""
    from socm_lib import encoders, extract
    from socm_lib.course import nb07

    stem, cell_ids, smaller = _SHARED[task_id]
    nb = read(next(p for p in NOTEBOOKS if p.stem == stem))
    cells = {c.get("id"): c.source for c in nb.cells if c.cell_type == "code"}
    namespace = {}
    for k, cell_id in enumerate(cell_ids):
        source = re.sub(r"^check\(.*$", "", cells[cell_id], flags=re.M)  # the solution's own check: judged below
        exec(compile(source, f"{stem}:{cell_id}", "exec"), namespace)
        if k == 0:
            namespace.update(smaller)
    work = {"loads": 0, "extractions": 0}

    def counted(what, real):
        def call(*args, **kwargs):
            work[what] += 1
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(encoders, "_load", counted("loads", encoders._load))
    monkeypatch.setattr(extract, "_extract", counted("extractions", extract._extract))
    course._expected.cache_clear()
    nb07._frame.cache_clear()
    assert course.verdict(task_id, namespace["solution"]).status == "right"
    assert work == {"loads": 0, "extractions": 0}
    if task_id.startswith("nb07"):  # the labelled pairs are costly to extract again; the other tasks show the rest
        course._expected.cache_clear()
        return
    # the same computation with the caches emptied does load and extract: the counters can fail
    course._expected.cache_clear()
    nb07._frame.cache_clear()
    encoders.load_encoder.cache_clear()
    extract.token_embeddings.cache_clear()
    course._expected(task_id)
    assert work["loads"] >= 1 and work["extractions"] >= 1
    course._expected.cache_clear()
    capsys.readouterr()


@pytest.mark.parametrize("task", _tasks(), ids=lambda t: t.id)
def test_a_stored_key_judges_plain_answers_as_the_check_does(task):
    """Grading judges from a stored entry (plain JSON) alone: the same verdict and line as the practice check."""
    import json

    entry = json.loads(json.dumps(course.key_entry(task)))
    expected = course._expected(task.id)
    for answer in (expected, task.wrong_example, MALFORMED[task.kind], None):
        plain = json.loads(json.dumps(course.plain_answer(answer)))  # as the grader reads it back from a kernel
        assert course.judge_entry(task.id, entry, plain) == course.verdict(task.id, answer), answer


def test_the_library_offers_students_no_expected_value():
    assert not hasattr(course, "expected_value") and not hasattr(course, "grade")
    assert not [name for name in dir(course) if "expected" in name.lower() and not name.startswith("_")]
