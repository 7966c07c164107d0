"""Helpers of the grading tests: the assignments they grade, the submissions they write and the processes they look
for.

Lean submissions (:func:`lean`, :func:`solved_cells`) hold only answers and check cells, with numbers written out or
computed with numpy and no import of the library: graded against :func:`lean_key` (the key scripts/assignments.py
stores, computed here without the built book), each run takes seconds."""

from __future__ import annotations

import json
import os
import sys
import zipfile
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import assignments  # noqa: E402
import grade  # noqa: E402

LABS = ("nb01", "nb02", "nb04")  # the lightest labs (notebooks/grading.json), and the explorer's (V8)


def build(out: Path) -> Path:
    assignments.main(["--out", str(out), *LABS])
    return out


def key_zip(built: Path, lab: str) -> Path:
    return built / lab / "autograder" / f"{lab}-autograder.zip"


def key(built: Path, lab: str) -> dict:
    return grade.read_key(key_zip(built, lab))


def student(built: Path, lab: str) -> nbformat.NotebookNode:
    return nbformat.read(built / lab / "student" / f"{lab}.ipynb", as_version=4)


def solved(built: Path, lab: str, path: Path) -> Path:
    """The assignment's solved copy, written to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(key_zip(built, lab)) as zf:
        path.write_bytes(zf.read(f"{lab}-solution.ipynb"))
    return path


def tiny(path: Path, *cells: str) -> Path:
    """A submission to lab 1 of a few cells, each task's check cell after them (the grader reads `answer` there)."""
    code = [*cells, 'from socm_lib.course import check\ncheck("nb01.1", answer)', 'check("nb01.2", answer)']
    return notebook(path, *code)


def notebook(path: Path, *cells: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=[new_code_cell(c) for c in cells]), path)
    return path


def lean_key(lab: str = "nb01") -> dict:
    """The key of ``lab`` as scripts/assignments.py stores it, computed through the library (no built book)."""
    from socm_lib.course import all_tasks, key_entry

    return {"lab": lab, "tasks": {t.id: {**key_entry(t), "points": assignments.POINTS["checked"]}
                                  for t in all_tasks([lab])}, "graded_by_hand": []}


def expected(task_id: str) -> float:
    from socm_lib import course

    return float(course._expected(task_id))


def solved_cells() -> list[str]:
    """Lab 1 answered right, in four cells: each answer, then its check."""
    return [f"answer = {expected('nb01.1')!r}", 'check("nb01.1", answer)', f"answer = {expected('nb01.2')!r}",
            'check("nb01.2", answer)']


def lean(path: Path, *cells: str) -> Path:
    """A lean submission to lab 1: ``cells``, then each task's check (the grader reads ``answer`` there)."""
    return notebook(path, *cells, 'check("nb01.1", answer)', 'check("nb01.2", answer)')


def write_key(path: Path, lab: str = "nb01") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(lean_key(lab)), encoding="utf-8")
    return path


def sandboxed(marker: str = "") -> list[str]:
    """The processes of the machine that a graded run started: a sandbox's uid (as root), the runner or the kit on
    their command line, or ``marker`` there."""
    found = []
    boxes = range(grade.sandbox.SANDBOX_UID, grade.sandbox.SANDBOX_UID + 2 * grade.sandbox.POOL)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            uids = [int(x) for x in Path(f"/proc/{pid}/status").read_text().split("\nUid:")[1].split()[:3]]
        except (OSError, IndexError):
            continue
        if (marker and marker in command) or "/grader/grade_runner.py" in command or " /kit/" in command or (
                os.geteuid() == 0 and any(u in boxes for u in uids)):
            found.append(f"{pid} (uids {uids}): {command[:120]}")
    return found
