"""The student edition (`make student`, scripts/student_edition.py): every notebook of notebooks/, built from its
plain (Colab) edition, without its solution cells and outputs, reworded for students; the kit's zip, which runs
unzipped outside the repository; and the book's toggle over solution cells (tags `solution` + `hide-input`).
tests/fixtures/lab.ipynb is a small "Your turn" lab: statement, task, solution (with output) and check cells.
Needs the built book (the editions read it)."""

import json
import os
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
KIT = "socm-book-student"
LIGHT = ["nb01_socm_by_hand.ipynb", "nb09_benchmarks.ipynb"]  # seconds to run; nb09 reads benchmarks/results


def _tags(cell):
    return set(cell.get("metadata", {}).get("tags", []))


def _student_edition(notebooks, out):
    """Run the script as `make student` does; return the written notebooks (in the kit's folder) by file name."""
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(out), *map(str, notebooks)], check=True,
                   capture_output=True, text=True)
    return {path.name: nbformat.read(out / KIT / "notebooks" / path.name, as_version=4) for path in notebooks}


@pytest.fixture(scope="module")
def student_notebooks(tmp_path_factory):
    out = tmp_path_factory.mktemp("student")
    return out, _student_edition(NOTEBOOKS, out)


def test_every_notebook_has_a_student_edition_and_the_zip_holds_them_all(student_notebooks):
    out, editions = student_notebooks
    assert len(NOTEBOOKS) >= 9 and sorted(editions) == [p.name for p in NOTEBOOKS]
    with zipfile.ZipFile(out / ZIP_NAME) as zf:
        assert zf.testzip() is None
        names = zf.namelist()
        assert all(n.startswith(f"{KIT}/") for n in names)
        notebooks = sorted(n for n in names if n.endswith(".ipynb"))
        assert notebooks == [f"{KIT}/notebooks/{p.name}" for p in NOTEBOOKS]
        # the zip holds the kit's folder as `make student` writes it, file for file: the student editions, not the
        # originals, and the data files at their paths
        assert sorted(names) == sorted(f"{KIT}/{p.relative_to(out / KIT).as_posix()}"
                                       for p in (out / KIT).rglob("*") if p.is_file())
        assert all(zf.read(name) == (out / name).read_bytes() for name in names)
        for data in ("benchmarks/results/*.json", "notebooks/execution.json"):
            for path in ROOT.glob(data):
                assert zf.read(f"{KIT}/{path.relative_to(ROOT).as_posix()}") == path.read_bytes()
        assert len([n for n in names if re.fullmatch(rf"{KIT}/socm_book-[^/]+-py3-none-any\.whl", n)]) == 1
        readme = zf.read(f"{KIT}/README.md").decode()
        torch = next(l for l in (ROOT / "requirements.txt").read_text().splitlines() if l.startswith("torch=="))
        assert torch in readme and "download.pytorch.org/whl/cpu" in readme and "CUDA" in readme
        pins = zf.read(f"{KIT}/requirements.txt").decode().split()
        assert pins and all(re.fullmatch(r"[\w.-]+==[\w.+-]+", p) for p in pins)
        assert set(pins) <= set((ROOT / "requirements.txt").read_text().split())


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
        kept = [c for c in original.cells if "solution" not in _tags(c)]
        student = editions[path.name].cells
        assert [(c.cell_type, _tags(c)) for c in student] == [(c.cell_type, _tags(c)) for c in kept], path.name
        for mine, theirs in zip(student, kept):  # code as written (the install cell names the commit); Markdown
            if "%pip install" in theirs.source:  # without markup or links as written
                continue
            if mine.cell_type == "code" or not re.search(r"[{}\\]|\]\(|^#+ Your turn|rocket|^\([\w.-]+\)=$", theirs.source, re.M):
                assert mine.source == theirs.source, f"{path.name}: a cell changed: {theirs.source[:60]!r}"
        assert editions[path.name].metadata.kernelspec.name == original.metadata.kernelspec.name


def test_student_notebooks_keep_the_kernel_metadata_ipykernel_reports(student_notebooks):
    """As the editions do (editions.KernelPreprocessor): a cut language_info is filled in by JupyterLab when the
    kernel connects, which marks the notebook modified the moment a student opens it."""
    from ipykernel.ipkernel import IPythonKernel
    from ipykernel.kernelspec import get_kernel_dict

    for name, nb in student_notebooks[1].items():
        assert nb.metadata.language_info == IPythonKernel.language_info, name
        assert nb.metadata.kernelspec.display_name == get_kernel_dict()["display_name"], name


def test_student_editions_read_right_and_speak_to_students(student_notebooks):
    _, editions = student_notebooks
    for name, nb in editions.items():
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                assert not re.search(r"\{[a-z:]+\}`", cell.source), f"{name}: book markup left"
                if re.match(r"#+ Your turn", cell.source):
                    assert not re.search(r"hidden|toggle|solution", cell.source, re.I), f"{name}: {cell.source[:200]}"
                    assert "check cell" in cell.source


def test_the_kit_runs_unzipped_outside_the_repository(student_notebooks, tmp_path):
    """Unzip the kit in a temporary folder, install its wheel into a folder of its own (the environment's other
    packages serve as the pinned ones), and execute the light notebooks where its README says, from `notebooks/` of
    the kit's folder (nb09 reads benchmarks/results/ beside it): no error, no stderr, no path to the repository."""
    out, _ = student_notebooks
    with zipfile.ZipFile(out / ZIP_NAME) as zf:
        zf.extractall(tmp_path)
    kit = tmp_path / KIT
    (wheel,) = kit.glob("*.whl")
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site),
                    str(wheel)], check=True, capture_output=True)
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run([sys.executable, "-c", "import socm_lib; print(socm_lib.__file__)"], cwd=kit, env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).is_relative_to(site), f"socm_lib came from {where}, not from the kit's wheel"
    run = subprocess.run([sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute", "--output-dir",
                          str(tmp_path / "ran"), *(str(kit / "notebooks" / name) for name in LIGHT)],
                         cwd=kit / "notebooks", env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{LIGHT} fail outside the repository:\n{run.stderr[-3000:]}"
    for name in LIGHT:
        ran = nbformat.read(tmp_path / "ran" / name, as_version=4)
        outputs = [o for c in ran.cells if c.cell_type == "code" for o in c.outputs]
        assert outputs and not [o for o in outputs if o.output_type == "error"]
        assert not [o for o in outputs if o.get("name") == "stderr"], f"{name} wrote to stderr"
        assert str(ROOT) not in json.dumps([o for o in outputs if o.output_type == "stream"]), f"{name} read the repository"


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
        assert [n for n in zf.namelist() if n.endswith(".ipynb")] == [f"{KIT}/notebooks/{FIXTURE.name}"]


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
