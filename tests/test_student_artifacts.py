"""No solution in anything handed to students: the student book's pages and the sources its download buttons
offer (`make student-book`), the student notebooks and the kit's zip (`make student`), the student PDF
(`make student-pdf`). The solution text is read from the book's sources (tests/solution_text.py). Each search is
also run on the reader's counterpart (the book, its sources, the notebooks, the reader's PDF), where every piece
of that text must be found: so the search can fail, and the reader's editions keep their solutions."""

import json
import subprocess
import zipfile
from functools import lru_cache
from pathlib import Path

import pytest
from solution_text import ROOT, html_text, solution_texts, squeezed

BUILD = ROOT / "_build"
KIT = BUILD / "student" / "socm-book-student.zip"
MAKE = {"student-book": "make student-book", "student": "make student", "pdf": "make pdf and make student-pdf"}


def _need(path: Path, target: str) -> Path:
    if not path.exists():
        pytest.fail(f"{path} is missing: run `{MAKE[target]}` first")
    return path


def _notebook_text(raw: str) -> str:
    """Every cell's source and every output's text of a notebook's JSON."""
    nb = json.loads(raw)
    parts = []
    for cell in nb["cells"]:
        parts.append("".join(cell["source"]))
        for output in cell.get("outputs", []):
            parts.append("".join(output.get("text", "")))
            parts += ["".join(v) if isinstance(v, list) else str(v) for v in output.get("data", {}).values()]
    return "\n".join(parts)


def _files_text(paths) -> str:
    """The text of built files: a page's text, a notebook's cells and outputs, any other file as it is."""
    texts = []
    for path in paths:
        raw = path.read_text(encoding="utf-8")
        texts.append(html_text(raw) if path.suffix == ".html" else _notebook_text(raw) if path.suffix == ".ipynb"
                     else raw)
    return "\n".join(texts)


def _html(root: Path) -> str:
    return _files_text(sorted(p for p in _need(root, "student-book").rglob("*.html") if "_sources" not in p.parts))


def _sources(root: Path) -> str:
    return _files_text(sorted(p for p in (_need(root, "student-book") / "_sources").rglob("*") if p.is_file()))


def _notebooks(folder: Path, target: str) -> str:
    return _files_text(sorted(_need(folder, target).glob("nb*.ipynb")))


def _kit() -> str:
    texts = []
    with zipfile.ZipFile(_need(KIT, "student")) as zf:
        for name in zf.namelist():
            if name.endswith((".ipynb", ".md", ".txt", ".json", ".py")):
                raw = zf.read(name).decode("utf-8")
                texts.append(_notebook_text(raw) if name.endswith(".ipynb") else raw)
    return "\n".join(texts)


def _pdf(name: str) -> str:
    return subprocess.run(["pdftotext", "-raw", str(_need(BUILD / "pdf" / name, "pdf")), "-"], capture_output=True,
                          text=True, check=True).stdout


# artifact: (its text for students, the text of its counterpart for readers, which solutions that one holds);
# the kit's counterpart is the notebooks'
ARTIFACTS = {
    "student-book pages": (lambda: _html(BUILD / "student-book" / "html"), lambda: _html(BUILD / "html"), "all"),
    "student-book sources": (lambda: _sources(BUILD / "student-book" / "html"), lambda: _sources(BUILD / "html"),
                             "all"),
    "student notebooks": (lambda: _notebooks(BUILD / "student" / "socm-book-student" / "notebooks", "student"),
                          lambda: _notebooks(ROOT / "notebooks", "student"), "notebooks"),
    "kit zip": (_kit, None, None),
    "student PDF": (lambda: _pdf("socm-book-student.pdf"), lambda: _pdf("socm-book.pdf"), "all"),
}


@lru_cache
def _squeezed(name: str, student: bool) -> str:
    read = ARTIFACTS[name][0 if student else 1]
    return squeezed(read())


@pytest.mark.parametrize("source", ["chapters", "notebooks"])
def test_solution_text_is_read(source):
    texts = solution_texts(source)
    assert len(texts) >= 60, f"only {len(texts)} pieces of solution text found in the {source}"


@pytest.mark.parametrize("name", ARTIFACTS)
def test_no_solution_for_students(name):
    text = _squeezed(name, student=True)
    leaked = [s for s in solution_texts() if s in text]
    assert not leaked, f"{name}: {len(leaked)} pieces of solution text, e.g. {leaked[:3]}"


@pytest.mark.parametrize("name", [name for name, (_, reader, _) in ARTIFACTS.items() if reader])
def test_solutions_for_readers(name):
    text = _squeezed(name, student=False)
    missing = [s for s in solution_texts(ARTIFACTS[name][2]) if s not in text]
    assert not missing, f"{name} for readers: {len(missing)} pieces of solution text not found, e.g. {missing[:3]}"
