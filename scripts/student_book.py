"""Build the student book: the HTML book without any solution, in _build/student-book/html.

    python scripts/student_book.py            (what `make student-book` runs, after `make build-book`'s assets)

The main book's sources are copied to _build/student-book/src, so the normal build's `_config.yml` is never
touched, and the copy holds no solution, so neither do the pages nor the sources they offer for download
(`_sources/`): every ``{solution}`` directive of the chapters, proof exercises included, is cut out of the copied
chapters; the notebooks lose every cell tagged `solution` (`scripts/student_edition.py`'s `SOLUTION_TAG`), their
check cells lose the committed outputs (which say the book's own solution is right), and their "Your turn"
introductions are worded for students, as in the student edition. The other cells keep their committed outputs,
because the chapters glue numbers and figures from them; the handed-out notebooks (`make student`) have none.
The copy's configuration points at the same vendored scripts and names the student edition in its title.
"""

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import yaml
from nbconvert.preprocessors import TagRemovePreprocessor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from student_edition import SOLUTION_TAG, YourTurnPreprocessor  # noqa: E402  (the one definition of each)

ROOT = Path(__file__).resolve().parent.parent
COPIED = ["_toc.yml", "book", "benchmarks/results", "scripts/book_macros.py", "scripts/book_accessibility.py",
          "scripts/book_bibliography.py"]
LEFT_OUT = ["instructor"]  # instructor material (rubrics) never enters the student tree
# a solution directive of a chapter, from its opening fence to the closing fence of the same length
SOLUTION = re.compile(r"^(`{3,}|:{3,})\{solution\}.*?^\1[ \t]*(\n|\Z)", re.M | re.S)
CHECK_CALL = re.compile(r"\bcheck\(")  # a lab's check cell calls socm_lib.course.check


def chapter_without_solutions(text: str) -> str:
    """A chapter's MyST source without its ``{solution}`` directives."""
    return SOLUTION.sub("", text)


def without_solutions(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """`nb` for the student book: without its cells tagged `solution`, its check cells without their committed
    outputs, its "Your turn" introductions worded for students; every other cell as committed."""
    nb, _ = TagRemovePreprocessor(remove_cell_tags={SOLUTION_TAG}).preprocess(nb, {})
    nb, _ = YourTurnPreprocessor().preprocess(nb, {})
    for cell in nb.cells:
        if cell.cell_type == "code" and CHECK_CALL.search(cell.source):
            cell.outputs, cell.execution_count = [], None
    return nb


def student_config(config: dict) -> dict:
    """The main `_config.yml` with its paths made absolute for a copy of the tree."""
    sphinx = config.setdefault("sphinx", {}).setdefault("config", {})
    sphinx["html_static_path"] = [str(ROOT / p) for p in sphinx.get("html_static_path", [])]
    config["title"] = f"{config['title']} (student edition)"
    return config


def write_source(src: Path) -> None:
    """Copy the book's sources to `src`: student configuration, chapters without solutions, student notebooks."""
    if src.exists():
        shutil.rmtree(src)
    for rel in COPIED:
        source, target = ROOT / rel, src / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, target)
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    for chapter in (src / "book").glob("*.md"):
        chapter.write_text(chapter_without_solutions(chapter.read_text(encoding="utf-8")), encoding="utf-8")
    (src / "_config.yml").write_text(yaml.safe_dump(student_config(config), sort_keys=False), encoding="utf-8")
    (src / "notebooks").mkdir()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = without_solutions(nbformat.read(path, as_version=4))
        nbformat.write(nb, src / "notebooks" / path.name)
    for rel in LEFT_OUT:
        assert not (src / rel).exists(), f"{rel} must not be in the student book"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "student-book")
    args = parser.parse_args(argv)
    src, html = args.out / "src", args.out / "html"
    write_source(src)
    subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", str(src), "-W", "-n",
                    "--keep-going"], check=True)
    if html.exists():
        shutil.rmtree(html)
    shutil.move(src / "_build" / "html", html)
    print(f"The student book is built: open {html}/index.html in a browser.")


if __name__ == "__main__":
    main()
