"""The student edition (`make student`, scripts/student_edition.py): every notebook of notebooks/ without its
solution cells and outputs, zipped; and the book's toggle over solution cells (tags `solution` + `hide-input`).
tests/fixtures/lab.ipynb is a small "Your turn" lab: statement, task, solution (with output) and check cells."""

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "student_edition.py"
FIXTURE = ROOT / "tests" / "fixtures" / "lab.ipynb"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("nb*.ipynb"))
ZIP_NAME = "socm-book-student.zip"


def _tags(cell):
    return set(cell.get("metadata", {}).get("tags", []))


def _student_edition(notebooks, out):
    """Run the script as `make student` does; return the written notebooks by file name."""
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(out), *map(str, notebooks)], check=True,
                   capture_output=True, text=True)
    return {path.name: nbformat.read(out / path.name, as_version=4) for path in notebooks}


@pytest.fixture(scope="module")
def student_notebooks(tmp_path_factory):
    out = tmp_path_factory.mktemp("student")
    return out, _student_edition(NOTEBOOKS, out)


def test_every_notebook_has_a_student_edition_and_the_zip_holds_them_all(student_notebooks):
    out, editions = student_notebooks
    assert len(NOTEBOOKS) >= 9 and sorted(editions) == [p.name for p in NOTEBOOKS]
    with zipfile.ZipFile(out / ZIP_NAME) as zf:
        assert zf.testzip() is None
        names = sorted(Path(n).name for n in zf.namelist())
        assert names == [p.name for p in NOTEBOOKS]
        for name in zf.namelist():  # the zip holds the student editions, not the originals
            assert zf.read(name).decode("utf-8") == (out / Path(name).name).read_text(encoding="utf-8")


def test_student_editions_have_no_solution_and_no_output(student_notebooks):
    _, editions = student_notebooks
    for name, nb in editions.items():
        nbformat.validate(nb)
        assert not [c for c in nb.cells if "solution" in _tags(c)], f"{name}: a solution cell is left"
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, f"{name}: outputs left"
                assert "execution" not in cell.metadata, f"{name}: run metadata left"
        assert "widgets" not in nb.metadata, f"{name}: embedded widget state left"


def test_student_editions_keep_every_other_cell_in_order(student_notebooks):
    _, editions = student_notebooks
    for path in NOTEBOOKS:
        original = nbformat.read(path, as_version=4)
        kept = [(c.cell_type, c.source, _tags(c)) for c in original.cells if "solution" not in _tags(c)]
        student = [(c.cell_type, c.source, _tags(c)) for c in editions[path.name].cells]
        assert student == kept, f"{path.name}: the student edition lost or changed a non-solution cell"
        assert editions[path.name].metadata.kernelspec == original.metadata.kernelspec


def test_on_a_lab_the_solution_goes_and_the_task_and_check_stay(tmp_path):
    original = nbformat.read(FIXTURE, as_version=4)
    assert any(c.outputs for c in original.cells if c.cell_type == "code")  # the fixture has outputs to clear
    student = _student_edition([FIXTURE], tmp_path)[FIXTURE.name]
    assert not any("solution" in _tags(c) for c in student.cells)
    assert not any("1 + 1" in c.source for c in student.cells), "the solution's code is still there"
    assert len(student.cells) == len(original.cells) - 1
    task = next(c for c in student.cells if "task" in _tags(c))
    check = next(c for c in student.cells if 'check("nb01.1", answer)' in c.source)
    assert student.cells.index(task) < student.cells.index(check)
    assert all(c.outputs == [] for c in student.cells if c.cell_type == "code")
    with zipfile.ZipFile(tmp_path / ZIP_NAME) as zf:
        assert [Path(n).name for n in zf.namelist()] == [FIXTURE.name]


def test_no_notebook_is_refused(tmp_path):
    result = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path)], capture_output=True, text=True)
    assert result.returncode != 0


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_solution_cells_are_tagged_to_hide_their_input_in_the_book(path):
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if "solution" in _tags(cell):
            assert "hide-input" in _tags(cell), f"{path.name}: a solution cell without the hide-input tag"


def test_myst_nb_hides_a_solution_input_behind_a_toggle(tmp_path):
    """Render the fixture with myst-nb (the book's notebook renderer, no execution): the solution's code is
    inside a collapsed <details> toggle, the task's is not."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "index.ipynb").write_bytes(FIXTURE.read_bytes())
    (src / "conf.py").write_text('extensions = ["myst_nb"]\nnb_execution_mode = "off"\n')
    build = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", str(src), str(tmp_path / "html")],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    html = (tmp_path / "html" / "index.html").read_text(encoding="utf-8")
    cells = re.split(r'(?=<div class="cell )', html)
    solution = next(c for c in cells if c.startswith('<div class="cell tag_solution'))
    task = next(c for c in cells if c.startswith('<div class="cell tag_task'))
    toggle = re.search(r'<details class="[^"]*\bhide above-input\b[^"]*">(.*?)</details>', solution, re.S)
    assert toggle, "the solution cell's input is not behind a toggle"
    assert '<span class="mi">1</span> <span class="o">+</span> <span class="mi">1</span>' in toggle.group(1)
    assert "<details" not in task
