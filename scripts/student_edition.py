"""Write the student edition of notebooks: solution cells removed, outputs cleared, zipped to hand out.

    python scripts/student_edition.py --out _build/student notebooks/nb*.ipynb     (what `make student` runs)

A "Your turn" lab is a statement (markdown), a task cell (tag `task`), a solution cell (tags `solution` and
`hide-input`: the book shows it behind a toggle) and a check cell calling `socm_lib.course.check`. The student
edition keeps every cell except those tagged `solution`, with no outputs, execution counts or run metadata
(cell tags and the kernel are kept), and `OUT/socm-book-student.zip` holds all of them.
"""

import argparse
import zipfile
from pathlib import Path

import nbformat
from nbconvert.preprocessors import ClearMetadataPreprocessor, ClearOutputPreprocessor, TagRemovePreprocessor

SOLUTION_TAG = "solution"
ZIP_NAME = "socm-book-student.zip"
ZIP_FOLDER = "socm-book-student"
ZIP_DATE = (2026, 1, 1, 0, 0, 0)  # fixed, so the same notebooks always give the same zip


def student_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student edition of `nb` (which is modified in place and returned)."""
    preprocessors = [
        TagRemovePreprocessor(remove_cell_tags={SOLUTION_TAG}),
        ClearOutputPreprocessor(),
        ClearMetadataPreprocessor(preserve_cell_metadata_mask={"tags"},
                                  preserve_nb_metadata_mask={"kernelspec", ("language_info", "name")}),
    ]
    resources = {}
    for preprocessor in preprocessors:  # .preprocess runs them whatever their `enabled` default
        nb, resources = preprocessor.preprocess(nb, resources)
    nbformat.validate(nb)
    return nb


def write_student_edition(notebooks: list[Path], out: Path) -> Path:
    """Write the student edition of each notebook to `out` and zip them; return the zip's path."""
    if not notebooks:
        raise ValueError("no notebooks given: pass the .ipynb files to convert, e.g. notebooks/nb*.ipynb")
    names = [path.name for path in notebooks]
    if len(set(names)) != len(names):
        raise ValueError(f"two notebooks share a file name, which the zip cannot hold: {sorted(names)}")
    out.mkdir(parents=True, exist_ok=True)
    archive = out / ZIP_NAME
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(notebooks):
            nb = student_notebook(nbformat.read(path, as_version=4))
            text = nbformat.writes(nb) + "\n"
            (out / path.name).write_text(text, encoding="utf-8")
            entry = zipfile.ZipInfo(f"{ZIP_FOLDER}/{path.name}", ZIP_DATE)
            entry.external_attr = 0o644 << 16  # rw-r--r-- once unzipped
            zf.writestr(entry, text, compress_type=zipfile.ZIP_DEFLATED)
    return archive


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path, help="notebooks to convert")
    parser.add_argument("--out", type=Path, required=True, help="folder for the student notebooks and the zip")
    args = parser.parse_args(argv)
    archive = write_student_edition(args.notebooks, args.out)
    print(f"{len(args.notebooks)} student notebooks in {args.out}/, zipped in {archive}")


if __name__ == "__main__":
    main()
