"""Graded assignments from the labs, built from the student edition, with their expected values stored.

    python scripts/assignments.py --out _build/assignments            # every lab (needs the built book)
    python scripts/assignments.py --out _build/assignments nb01 nb02  # some

For a lab ``notebooks/nbXX_*.ipynb`` it writes

* ``<out>/<lab>/student/<lab>.ipynb``, to hand out: the lab's student edition (scripts/student_edition.py: macros,
  references and citations resolved, worded for students, solutions and outputs removed; the prose and the open
  tasks kept), each task's statement ending with its points and how it is graded: checked tasks automatically, from
  the ``answer`` of the task cell; open tasks by hand, with the rubric of the teaching page;
* ``<out>/<lab>/autograder/<lab>-autograder.zip``, for the instructor only: ``key.json`` (each checked task's
  expected value, computed here through the library, with its tolerances, hint and points), the solved copy
  ``<lab>-solution.ipynb`` (the student copy with every solution written into its task cell, ``answer = solution``)
  and a README saying how to grade: ``python scripts/grade.py --key <zip> --out <dir> --jobs N <submissions>``.

Nothing the students receive holds an expected value: the key leaves the library's recipes behind, and grading
(scripts/grade.py) reads only the key and the plain answers.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import zipfile
from pathlib import Path

import nbformat
from nbformat.v4 import new_markdown_cell

sys.path.insert(0, str(Path(__file__).resolve().parent))
import editions  # noqa: E402
import student_edition  # noqa: E402
from grade_cells import checks  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
POINTS = {"checked": 5, "open": 10}  # a task with a definite answer; an open task (the teaching page's rubric)
BLANK = re.compile(r"^answer = None\b.*$", re.M)  # the line of a task cell where the student answers
SELF_CHECK = re.compile(r"""^\s*check\(\s*["']nb\d\d\.\d+["']\s*,\s*solution\s*\)\s*$\n?""", re.M)
README = """# Autograder of {lab}

For the instructor only: `key.json` holds the expected values. Grade the collected notebooks from the repository
of the book, in its environment (`make venv`), on Linux with bubblewrap and libseccomp (packages `bubblewrap` and
`libseccomp2`), each submission alone in its sandbox, as many at once as the machine has cores (elsewhere it refuses
to grade and says what is missing); keep `graded/` out of the submissions' folder:

    .venv/bin/python scripts/grade.py --key {zip} --out graded/ --jobs 2 -- submissions/*/{lab}.ipynb

`{solution}` is a solved copy: it scores {total} of {total} points.
"""


def _tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def lab_path(lab: str) -> Path:
    """The notebook of lab ``lab`` (e.g. ``"nb01"`` -> ``notebooks/nb01_socm_by_hand.ipynb``)."""
    found = sorted((ROOT / "notebooks").glob(f"{lab}_*.ipynb"))
    if len(found) != 1:
        raise ValueError(f"Expected one notebook notebooks/{lab}_*.ipynb, found {len(found)}; give a lab such as 'nb01'.")
    return found[0]


def all_labs() -> list[str]:
    """Every lab: the notebooks with a "Your turn" section, as ``nbXX`` names, in order."""
    return [p.name[:4] for p in sorted((ROOT / "notebooks").glob("nb*.ipynb"))
            if any(c.cell_type == "markdown" and c.source.startswith("## Your turn")
                   for c in nbformat.read(p, as_version=4).cells)]


def tasks(nb: nbformat.NotebookNode) -> list[dict]:
    """The lab's tasks in order: the index of each statement and task cell, and the id of its check (None: open)."""
    found = []
    for i, cell in enumerate(nb.cells):
        if "task" in _tags(cell):
            statement = max(k for k in range(i) if nb.cells[k].cell_type == "markdown")
            after = nb.cells[i + 1] if i + 1 < len(nb.cells) else None
            ids = checks(after.source) if after is not None and after.cell_type == "code" else []
            found.append({"statement": statement, "task": i, "id": ids[0] if ids else None})
    if not found:
        raise ValueError("the notebook has no task cell (tag 'task') to build an assignment from")
    return found


def _mark(statement: str, task_id: str | None) -> str:
    if task_id:
        return (f"{statement}\n\n*Graded automatically ({POINTS['checked']} points):* the value of `answer` in the task "
                "cell, judged like the check cell below it.")
    return (f"{statement}\n\n*Graded by hand ({POINTS['open']} points, with the rubric of the teaching page):* "
            "answer in the task cell, and add cells for your code, figures and reasoning.")


def student_copy(lab: str, book: editions.Book) -> nbformat.NotebookNode:
    """The lab's student edition, each task's statement saying its points and how it is graded."""
    path = lab_path(lab)
    nb = student_edition.student_notebook(nbformat.read(path, as_version=4), f"notebooks/{path.stem}", book)
    for task in tasks(nb):
        cell = nb.cells[task["statement"]]
        cell.source = _mark(cell.source, task["id"])
    nb.cells.insert(0, new_markdown_cell(f"**Assignment {lab}.** Work in this notebook and hand it in. Tasks with a "
                                         "check cell are graded from `answer`; open tasks are graded by hand."))
    return nb


def solved_copy(lab: str, student: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student copy with each task's official solution in its task cell, in place of ``answer = None``, followed
    by ``answer = solution``."""
    source = nbformat.read(lab_path(lab), as_version=4)
    solutions = {}
    for i, cell in enumerate(source.cells):
        if "task" in _tags(cell):
            solution = next(c for c in source.cells[i + 1:] if "solution" in _tags(c) or "task" in _tags(c))
            assert "solution" in _tags(solution), f"{lab}: a task without its solution cell"
            solutions[cell.id] = SELF_CHECK.sub("", solution.source).rstrip()
    solved = nbformat.from_dict(json.loads(json.dumps(student)))
    for task in tasks(solved):
        cell = solved.cells[task["task"]]
        cell.source = answered(cell.source, f"{solutions[cell.id]}\nanswer = solution")
    return solved


def answered(task_cell: str, code: str) -> str:
    """A task cell with its ``answer = None`` line replaced by ``code`` (the cell's other lines, e.g. data, kept)."""
    if not BLANK.search(task_cell):
        raise ValueError(f"a task cell without its 'answer = None' line: {task_cell[:80]!r}")
    return BLANK.sub(lambda _: code, task_cell, count=1)


def key(lab: str, student: nbformat.NotebookNode) -> dict:
    """The stored key: each checked task's expected value (computed now, through the library) and how to judge it."""
    from socm_lib.course import get_task, key_entry

    listed = tasks(student)
    return {"lab": lab, "notebook": lab_path(lab).name,
            "tasks": {t["id"]: {**key_entry(get_task(t["id"])), "points": POINTS["checked"]} for t in listed if t["id"]},
            "graded_by_hand": [{"task": f"Task {k}", "points": POINTS["open"]}
                               for k, t in enumerate(listed, start=1) if not t["id"]]}


def build(lab: str, out: Path, book: editions.Book | None = None) -> Path:
    """Write the student copy and the autograder zip of ``lab`` into ``out/<lab>/``; return that folder."""
    folder = out / lab
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "student").mkdir(parents=True)
    (folder / "autograder").mkdir()
    student = student_copy(lab, book or editions.Book())
    nbformat.write(student, folder / "student" / f"{lab}.ipynb")
    stored = key(lab, student)
    names = {"zip": f"{lab}-autograder.zip", "solution": f"{lab}-solution.ipynb"}
    total = sum(t["points"] for t in stored["tasks"].values())
    with zipfile.ZipFile(folder / "autograder" / names["zip"], "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("key.json", json.dumps(stored, indent=1) + "\n")
        zf.writestr(names["solution"], nbformat.writes(solved_copy(lab, student)) + "\n")
        zf.writestr("README.md", README.format(lab=lab, total=total, **names))
    return folder


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "assignments")
    parser.add_argument("labs", nargs="*", help="labs such as nb01 nb02 (default: every lab)")
    args = parser.parse_args(argv)
    book = editions.Book()
    for lab in args.labs or all_labs():
        print("assignment written:", build(lab, args.out.resolve(), book))


if __name__ == "__main__":
    main()
