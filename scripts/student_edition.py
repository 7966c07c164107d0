"""Write the student edition of notebooks and the kit that runs on its own: `socm-book-student.zip`.

    python scripts/student_edition.py --out _build/student notebooks/nb*.ipynb     (what `make student` runs)

A "Your turn" lab is a statement (markdown), a task cell (tag `task`), a solution cell (tags `solution` and
`hide-input`: the book shows it behind a toggle) and a check cell calling `socm_lib.course.check`. The student
edition is built from the plain (Colab) edition of scripts/editions.py, by the same preprocessors (glue values,
links, citations and macros resolved, so it reads right in Jupyter), followed by three more: the introduction
of each "Your turn" section is reworded for students (no "hidden solutions"), the cells tagged `solution` are
removed, and so are outputs, execution counts and run metadata (cell tags and the kernel are kept).

`OUT/socm-book-student/` is the kit, laid out as students get it, and `OUT/socm-book-student.zip` the same folder
zipped to hand out; it works anywhere: a README with pinned install steps, `requirements.txt` (the pins of the
library's and the notebooks' packages, taken from the repository's requirements.txt), the library as a wheel, the
student notebooks in `notebooks/` and every file they read at the same relative paths as in the repository
(editions.DATA_FILES: `benchmarks/results/` beside `notebooks/`). Students work in that folder, as its README says:
`jupyter lab notebooks/`.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

import nbformat
from nbconvert.preprocessors import (ClearMetadataPreprocessor, ClearOutputPreprocessor, Preprocessor,
                                     TagRemovePreprocessor)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import editions  # noqa: E402  (scripts/editions.py, beside this file)

SOLUTION_TAG = "solution"
ZIP_NAME = "socm-book-student.zip"
ZIP_FOLDER = "socm-book-student"
ZIP_DATE = (2026, 1, 1, 0, 0, 0)  # fixed, so the same notebooks always give the same zip
YOUR_TURN = re.compile(r"^#+ Your turn\b")
TEACHER_WORDING = re.compile(r"hidden|toggle|solution", re.I)
STUDENT_INTRO = ("Write your answer in the task cell and run it, then run the check cell below it: it says "
                 "whether your answer is right, without printing the expected value.")


def reword_for_students(source: str) -> str:
    """A "Your turn" introduction without the sentences meant for the book's readers (hidden solutions,
    toggles), and with the instruction a student needs if none is left."""
    heading, _, rest = source.partition("\n\n")
    paragraphs = rest.split("\n\n") if rest else []
    if paragraphs and not paragraphs[0].startswith("#"):
        sentences = re.split(r"(?<=[.!?])\s+", paragraphs[0].strip())
        kept = " ".join(s for s in sentences if not TEACHER_WORDING.search(s))
        paragraphs[0] = kept
    if not any("check cell" in p for p in paragraphs):
        paragraphs.insert(1 if paragraphs and paragraphs[0] and not paragraphs[0].startswith("#") else 0,
                          STUDENT_INTRO)
    return "\n\n".join([heading, *(p for p in paragraphs if p)])


class YourTurnPreprocessor(Preprocessor):
    """Reword the introduction of every "Your turn" section for students."""

    def preprocess(self, nb, resources):
        for cell in nb.cells:
            if cell.cell_type == "markdown" and YOUR_TURN.match(cell.source):
                cell.source = reword_for_students(cell.source)
        return nb, resources


def _remove_solutions():
    return TagRemovePreprocessor(remove_cell_tags={SOLUTION_TAG})


def _clear_metadata():
    """Run metadata cleared; the cells' tags and the kernel metadata of editions.KernelPreprocessor kept whole (a cut
    language_info is filled in by JupyterLab when the kernel connects, which marks the notebook modified)."""
    return ClearMetadataPreprocessor(preserve_cell_metadata_mask={"tags"},
                                     preserve_nb_metadata_mask={"kernelspec", "language_info"})


# the plain edition's preprocessors (no Colab badge: it would open the edition with solutions), then the student's
STUDENT = [p for p in editions.PLAIN if p is not editions.ColabBadgePreprocessor] + [
    YourTurnPreprocessor, _remove_solutions, ClearOutputPreprocessor, _clear_metadata]


def student_notebook(nb: nbformat.NotebookNode, docname: str, book: editions.Book | None = None):
    """The student edition of `nb`, the book page `docname` (modified in place and returned)."""
    return editions.run_preprocessors(nb, STUDENT, {"book": book or editions.Book(), "docname": docname})


def _docname(path: Path) -> str:
    try:
        return path.resolve().relative_to(editions.ROOT).with_suffix("").as_posix()
    except ValueError:
        raise ValueError(f"{path} is not a notebook of the book (under {editions.ROOT})") from None


def build_wheel(dest: Path, kernel_env: dict[str, str] | None = None) -> Path:
    """Build the library's wheel into `dest`, offline (no build isolation) and from a copy of its sources, so
    the repository gets no build/ or egg-info folders; return the wheel's path. The copy leaves out setup.py,
    which builds the compiled kernel, so the kit's wheel is pure. With `kernel_env`, setup.py is copied too and
    runs with those environment variables (the tests of the kernel's build records use this)."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp)
        for name in ("pyproject.toml", "README.md") + (("setup.py",) if kernel_env is not None else ()):
            shutil.copyfile(editions.ROOT / name, src / name)
        shutil.copytree(editions.ROOT / "socm_lib", src / "socm_lib",
                        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd", "_lanes_build.json"))
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                        "-w", str(dest), str(src)], check=True, capture_output=True,
                       env={**os.environ, **(kernel_env or {})})
    (wheel,) = dest.glob("socm_book-*.whl")
    return wheel


def pinned_requirements() -> list[str]:
    """The pins (from the repository's requirements.txt) of every package the library and its `notebooks`
    extra need, by name as pyproject.toml lists them."""
    project = tomllib.loads((editions.ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = [re.split(r"[<>=!~ \[]", d, 1)[0].lower() for d in
              project["dependencies"] + project["optional-dependencies"]["notebooks"]]
    pins = {}
    for line in (editions.ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        if "==" in line and not line.lstrip().startswith("#"):
            pins[line.split("==")[0].strip().lower()] = line.strip()
    missing = [name for name in wanted if name not in pins]
    if missing:
        raise ValueError(f"requirements.txt pins none of {missing}: pin them there")
    return [pins[name] for name in dict.fromkeys(wanted)] + ["ipykernel==" + pins["ipykernel"].split("==")[1]]


README = """# The socm-book student kit

Notebooks of the book *Second-order collapse by mean pooling*, with the "Your turn" tasks to solve, and the
book's library (`socm_lib`) as a wheel. Everything runs offline on a CPU.

## Install (once)

Python 3.10 or newer. In this folder:

    python -m venv .venv
    . .venv/bin/activate            # on Windows: .venv\\Scripts\\activate
    pip install --index-url https://download.pytorch.org/whl/cpu torch=={torch}
    pip install -r requirements.txt {wheel}
    pip install jupyterlab

Install torch first, from PyTorch's CPU index, as above: an unpinned `pip install torch` on Linux pulls a
multi-GB CUDA build. `requirements.txt` pins the versions the book's outputs were made with. The wheel is pure
Python: the library's small SVDs run on LAPACK one matrix at a time, which gives the same numbers as the compiled
kernel of an install from the book's repository, more slowly.

## Work

    jupyter lab notebooks/

in this folder (the one that holds this README). Open a notebook, run it from the top; in each "Your turn" section
write your answer in the task cell, then run the check cell below it. The notebooks read `benchmarks/results/` and
`notebooks/*.json` from this folder: keep the layout as it is, `notebooks/` beside `benchmarks/`.
"""


def write_kit(notebooks: list[Path], kit: Path) -> list[Path]:
    """Write the kit's folder `kit` (emptied first): README, requirements, the wheel, the data files and the student
    edition of each notebook in `notebooks/`; return the files written."""
    if not notebooks:
        raise ValueError("no notebooks given: pass the .ipynb files to convert, e.g. notebooks/nb*.ipynb")
    names = [path.name for path in notebooks]
    if len(set(names)) != len(names):
        raise ValueError(f"two notebooks share a file name, which the kit cannot hold: {sorted(names)}")
    shutil.rmtree(kit, ignore_errors=True)
    (kit / "notebooks").mkdir(parents=True)
    wheel = build_wheel(kit)
    pins = pinned_requirements()
    torch = next(p for p in pins if p.startswith("torch=="))
    (kit / "README.md").write_text(README.format(torch=torch.split("==")[1], wheel=wheel.name), encoding="utf-8")
    (kit / "requirements.txt").write_text("\n".join(p for p in pins if p != torch) + "\n", encoding="utf-8")
    editions.copy_data_files(editions.ROOT, kit)
    book = editions.Book()
    for path in sorted(notebooks):
        nb = student_notebook(nbformat.read(path, as_version=4), _docname(path), book)
        (kit / "notebooks" / path.name).write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
    return sorted(p for p in kit.rglob("*") if p.is_file())


def write_student_edition(notebooks: list[Path], out: Path) -> Path:
    """Write the kit to `out`/socm-book-student/ and zip that folder to `out`/socm-book-student.zip; return the zip's
    path."""
    kit = out / ZIP_FOLDER
    files = write_kit(notebooks, kit)
    archive = out / ZIP_NAME
    with zipfile.ZipFile(archive, "w") as zf:
        for path in files:
            entry = zipfile.ZipInfo(f"{ZIP_FOLDER}/{path.relative_to(kit).as_posix()}", ZIP_DATE)
            entry.external_attr = 0o644 << 16  # rw-r--r-- once unzipped
            zf.writestr(entry, path.read_bytes(), compress_type=zipfile.ZIP_DEFLATED)
    return archive


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path, help="notebooks to convert")
    parser.add_argument("--out", type=Path, required=True, help="folder for the student notebooks and the zip")
    args = parser.parse_args(argv)
    archive = write_student_edition(args.notebooks, args.out)
    print(f"{len(args.notebooks)} student notebooks in the kit {args.out / ZIP_FOLDER}/notebooks/, zipped in {archive}")


if __name__ == "__main__":
    main()
