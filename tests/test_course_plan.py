"""The student working time of the labs (socm_lib.course.plan): the teaching page's rule computed, against a count by
hand; every task's heading names the category the plan gives it; the sessions table takes its lab times from the
plan, and its tasks are the plan's."""

import json
import re

import pytest

from notebook_cells import NOTEBOOKS, ROOT, ids, read
from socm_lib.course import plan

PAGE = ROOT / "book" / "teaching.ipynb"
#: "### Task 2: title (needs thought)" or "### Task 3 (open): title"; the category opens the parentheses.
HEADING = re.compile(r"^### Task (\d+)(?: \(([^)]*)\))?:[^\n]*?(?:\(([^)]*)\))?\s*$", re.M)


def headings(path) -> dict[int, str | None]:
    """Task number -> the category its heading names (None if it names none)."""
    found = {}
    for cell in read(path).cells:
        if cell.cell_type == "markdown":
            for m in HEADING.finditer(cell.source):
                label = m.group(2) or m.group(3) or ""
                category = next((c for c in plan.TASK_MINUTES if label == c or label.startswith(c + ",")), None)
                found[int(m.group(1))] = category
    return found


def test_headings_are_read_in_both_forms():
    text = "### Task 1: count (quick)\n\n### Task 2: a ratio\n\n### Task 3 (open): cut\n\n### Task 4: net (open, needs a network)"
    found = {}
    for m in HEADING.finditer(text):
        found[int(m.group(1))] = m.group(2) or m.group(3)
    assert found == {1: "quick", 2: None, 3: "open", 4: "open, needs a network"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids())
def test_every_task_heading_names_the_category_of_the_plan(path):
    """The rule a teacher reproduces the lab times from: each task says whether it is quick, needs thought or is
    open, and the plan's times use the same categories."""
    found = headings(path)
    expected = dict(enumerate(plan.LAB_TASKS[path.stem[:4]], start=1))
    assert found == expected, (f"{path.stem}: task headings name {found}, the plan (socm_lib.course.plan.LAB_TASKS) "
                               f"{expected}; write the category in parentheses at the end of each heading")


def _notebook(tmp_path, cells):
    path = tmp_path / "nb01_x.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": kind, "source": source} for kind, source in cells]}))
    return path


def test_lab_minutes_by_hand(tmp_path):
    words = lambda n: " ".join(["word"] * n)
    path = _notebook(tmp_path, [
        ("markdown", "# 1. Title\n\n" + words(98)),                 # 3 + 98 = 101 words of introduction
        ("code", words(500)),                                       # code is not prose
        ("markdown", "## First part\n\n" + words(297)),             # 3 + 297 = 300
        ("markdown", "## Second part\n\n" + words(57)),             # 3 + 57 = 60
        ("markdown", "## Your turn\n\n" + words(1000)),             # tasks: not reading time
    ])
    assert plan.reading_words(path) == 461
    assert plan.reading_words(path, stop="Second") == 401
    assert plan.reading_words(path, start="First", stop="Second") == 300
    assert plan.reading_words(path, start="Second") == 60
    # 461 words at 60 a minute: 7.7 min, rounded up to 10
    assert plan.WORDS_PER_MINUTE == 60 and plan.ROUND_TO == 5
    assert plan.reading_minutes(path) == 10 and plan.reading_minutes(path, start="Second") == 5
    # nb01: quick, needs thought, open
    assert plan.lab_minutes(path) == 10 + 5 + 15 + 30
    assert plan.lab_minutes(path, (1, 3), start="First", stop="Second") == 5 + 5 + 30
    with pytest.raises(ValueError, match="no section whose title starts with 'Third'"):
        plan.reading_words(path, start="Third")
    with pytest.raises(ValueError, match="tasks \\[4\\] do not exist"):
        plan.lab_minutes(path, (4,))


def test_durations_as_the_page_writes_them():
    assert [plan.duration(m) for m in (5, 45, 60, 65, 180, 145)] == [
        "5 min", "45 min", "1 h", "1 h 5 min", "3 h", "2 h 25 min"]


def test_sessions_add_up_their_labs():
    folder = ROOT / "notebooks"
    for session, parts in plan.SESSIONS.items():
        total = sum(plan.reading_minutes(next(folder.glob(f"{p.lab}_*.ipynb")), p.start, p.stop)
                    + sum(plan.TASK_MINUTES[plan.LAB_TASKS[p.lab][k - 1]] for k in p.tasks) for p in parts)
        assert plan.session_minutes(session, folder) == total
    with pytest.raises(ValueError, match="session must be one of"):
        plan.session_minutes(9, folder)


def _tasks_named(cell: str) -> dict[str, set[int]]:
    """Lab -> task numbers that a cell of the sessions table names: "Tasks 1–3", "Tasks 1, 2 and 4", "Task 3" after
    a notebook's link, or "Tasks ... of each" for every notebook of the cell; a task the cell sends elsewhere ("(Task 3
    needs a network: Colab)") is not one of its tasks."""
    cell = re.sub(r"\(Task \d needs [^)]*\)", "", cell)
    parts = re.split(r"\{doc\}`\.\./notebooks/(nb\d\d)_\w+`", cell)
    labs, named = parts[1::2], {}
    for lab, text in zip(labs, parts[2::2]):
        for numbers, each in re.findall(r"Tasks? (\d(?:–\d)?(?:, \d)*(?: and \d)?)( of each)?", text):
            low, _, high = numbers.partition("–")
            tasks = set(range(int(low), int(high) + 1)) if high else {int(n) for n in re.findall(r"\d", numbers)}
            for target in labs if each else [lab]:
                named.setdefault(target, set()).update(tasks)
    return named


def test_the_table_cells_are_read():
    cell = "{doc}`../notebooks/nb04_comparator` (Tasks 1, 2 and 4), then {doc}`../notebooks/nb05_paper_protocol` (Tasks 1–3)"
    assert _tasks_named(cell) == {"nb04": {1, 2, 4}, "nb05": {1, 2, 3}}
    cell = "{doc}`../notebooks/nb09_benchmarks` and {doc}`../notebooks/nb10_paper_route`: speed; Tasks 1–3 of each"
    assert _tasks_named(cell) == {"nb09": {1, 2, 3}, "nb10": {1, 2, 3}}
    assert _tasks_named("{doc}`../notebooks/nb06_layers`: Tasks 1 and 2 (Task 3 needs a network: Colab)") == {
        "nb06": {1, 2}}


def test_the_sessions_table_takes_its_lab_times_and_tasks_from_the_plan():
    cells = json.loads(PAGE.read_text(encoding="utf-8"))["cells"]
    source = "\n".join("".join(c["source"]) for c in cells)
    table = source.split("## Sessions", 1)[1].split("## How long", 1)[0]
    rows = {int(m.group(1)): m.group(0) for m in re.finditer(r"^\| (\d)\. .*$", table, re.M)}
    link = r"\{doc\}`\.\./notebooks/(nb\d\d)_\w+`"
    for session, parts in plan.SESSIONS.items():
        row = rows[session]
        assert f"lab {{glue:text}}`teach_lab_{session}`;" in row, f"session {session}: its lab time is not the plan's"
        assert {p.lab: set(p.tasks) for p in parts} == _tasks_named(row.split(" | ")[2]), (
            f"session {session}: the table names other labs or tasks than socm_lib.course.plan.SESSIONS")
    assert not re.search(r"\blab \d", table), "a lab time typed in the sessions table"
    glued = {o["metadata"]["scrapbook"]["name"]: o["data"] for c in cells if c["cell_type"] == "code"
             for o in c.get("outputs", []) if "scrapbook" in o.get("metadata", {})}
    for session in plan.SESSIONS:
        shown = next(iter(glued[f"teach_lab_{session}"].values()))
        assert shown == repr(plan.duration(plan.session_minutes(session, ROOT / "notebooks"))), (
            f"session {session}: the page glues {shown}, not the plan's lab time")


def test_the_committed_plan_record_is_the_plan_of_the_committed_labs():
    """notebooks/course_plan.json, which the teaching page and its editions read, is what the rule gives today: a
    lab whose prose or tasks changed without re-executing the notebooks (scripts/run_notebooks.py) fails here."""
    committed = json.loads((ROOT / "notebooks" / "course_plan.json").read_text(encoding="utf-8"))
    assert committed == plan.record(ROOT / "notebooks")
