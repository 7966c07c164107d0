"""Helpers of the grading tests: the assignments they grade and the submissions they write."""

from __future__ import annotations

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
