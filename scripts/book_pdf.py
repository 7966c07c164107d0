"""Print the built book (_build/html) to one PDF: _build/pdf/socm-book.pdf.

    python scripts/book_pdf.py            (what `make pdf` runs after `make build-book`)
    python scripts/book_pdf.py --html _build/student-book/html --out _build/pdf/socm-book-student.pdf
                                          (what `make student-pdf` runs: the student book, without solutions)

Each page of the table of contents, in its order, is opened from disk by Debian's headless Chromium with every
host name unresolvable (the book's vendored MathJax typesets the mathematics, the book's macros included,
before the page is printed: `--virtual-time-budget` lets its scripts finish) and printed with the theme's print
style sheet (no sidebars) and the book's own, book/_static/print.css (the page's margins; code and outputs
wrapped, tables and display equations fitted to the page, hidden code cells printed with their code);
poppler's `pdfunite` joins the pages. Figures are the pages' own images.
"""

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND",
         "--virtual-time-budget=20000", "--run-all-compositor-stages-before-draw", "--no-pdf-header-footer"]


def toc_pages(toc_path: Path = ROOT / "_toc.yml") -> list[str]:
    """The book's pages in reading order (root, then every part's chapters), as paths without suffix."""
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8"))
    return [toc["root"]] + [entry["file"] for part in toc.get("parts", []) for entry in part["chapters"]]


def _tool(name: str, package: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        raise FileNotFoundError(f"{name} is needed to print the book: apt-get install {package}")
    return exe


def print_book(html: Path, out: Path) -> Path:
    """Print every page of the book built in `html` and join them into `out`; return `out`."""
    chromium = shutil.which("chromium-browser") or _tool("chromium", "chromium")
    pdfunite = _tool("pdfunite", "poppler-utils")
    pages = [html / f"{page}.html" for page in toc_pages()]
    missing = [str(p) for p in pages if not p.exists()]
    if missing:
        raise FileNotFoundError(f"pages not built: {missing}; run `make build-book` first")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        printed = []
        for i, page in enumerate(pages):
            pdf = Path(tmp) / f"{i:03d}.pdf"
            subprocess.run([chromium, *FLAGS, f"--user-data-dir={tmp}/profile", f"--print-to-pdf={pdf}",
                            page.resolve().as_uri()], check=True, capture_output=True, timeout=180)
            if not pdf.exists():
                raise RuntimeError(f"chromium printed nothing for {page}")
            printed.append(str(pdf))
        subprocess.run([pdfunite, *printed, str(out)], check=True)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "pdf" / "socm-book.pdf")
    args = parser.parse_args(argv)
    print(f"The book is printed: {print_book(args.html, args.out)}")


if __name__ == "__main__":
    main()
