"""The printed book (`make pdf`, _build/pdf/socm-book.pdf): every page of the table of contents is in it with
its title, its mathematics is typeset (a sample of each chapter's formulas reads as typeset text, with the book's
macros expanded, and no TeX source is left, the bibliography's included), its figures are images in the PDF, and
it prints whole: no word runs past the right margin set by the print style sheet, the teaching page's sessions
table keeps every column, and no hidden code cell prints its toggle instead of its code."""

import json
import re
import shutil
import subprocess
import sys
from functools import lru_cache
from html import unescape
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PDF = ROOT / "_build" / "pdf" / "socm-book.pdf"
STUDENT_PDF = ROOT / "_build" / "pdf" / "socm-book-student.pdf"  # `make student-pdf`: printed the same way
PRINTED = pytest.mark.parametrize("pdf", [PDF, STUDENT_PDF], ids=["book", "student"])
PRINT_CSS = ROOT / "book" / "_static" / "print.css"
TEACHING = ROOT / "book" / "teaching.ipynb"
sys.path.insert(0, str(ROOT / "scripts"))
from book_pdf import toc_pages  # noqa: E402

# How MathJax's typeset symbols read in the PDF's text: a formula made only of these is sampled.
SYMBOLS = {r"\mu": "μ", r"\Sigma": "Σ", r"\sigma": "σ", r"\lambda": "λ", r"\times": "×", r"\le": "≤",
           r"\ge": "≥", r"\in": "∈", r"\cos": "cos", r"\tr": "tr", r"\SOCM": "SOCM", r"\BW": "BW",
           r"\dmu": "dμ", r"\dSigma": "dΣ", r"\R": "R", r"\Wtwo": "W2", r"\cdot": "⋅", r"\top": "⊤"}
FORMULA = re.compile(r"(?<![$\\])\$([^$\n]{3,40})\$(?!\$)")
SAMPLE = 4  # formulas checked per chapter


def _tool(name):
    exe = shutil.which(name)
    if exe is None:
        pytest.fail(f"{name} is missing: apt-get install poppler-utils")
    return exe


@lru_cache
def _text(pdf=PDF):
    if not pdf.exists():
        pytest.fail(f"{pdf} is missing: run `make pdf` (and `make student-pdf`) first")
    return subprocess.run([_tool("pdftotext"), str(pdf), "-"], capture_output=True, text=True, check=True).stdout


def _squeezed(text):
    """`text` without whitespace, with typographic apostrophes and MathJax's primes read as "'"."""
    return re.sub(r"\s+", "", text).replace("\u2019", "'").replace("\u2032", "'")


def _title(page):
    path = ROOT / page
    if path.with_suffix(".md").exists():
        source = path.with_suffix(".md").read_text(encoding="utf-8")
    else:
        cells = json.loads(path.with_suffix(".ipynb").read_text(encoding="utf-8"))["cells"]
        source = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return re.search(r"^# (.+)$", source, re.M).group(1).strip()


def as_typeset(tex):
    """The text pdftotext reads from MathJax's rendering of `tex`, or None if `tex` uses other commands or a
    prime (MathJax draws it as a superscript that pdftotext does not read back) or a subscript inside a superscript
    (drawn on a third baseline, which pdftotext reads out of order: "R^{n_1 \\times d}" comes back as "Rn×d ... 1")."""
    if re.search(r"\^\{[^}]*_", tex):
        return None
    out = re.sub(r"\\[A-Za-z]+", lambda m: SYMBOLS.get(m.group(0), "\0"), tex)
    if "\0" in out or "'" in out or re.search(r"[\\^_{}&]", out.replace("_", "").replace("^", "").replace("{", "").replace("}", "")):
        return None
    return _squeezed(out.replace("_", "").replace("^", "").replace("{", "").replace("}", "").replace("-", "−"))


@pytest.mark.parametrize("page", toc_pages(), ids=lambda p: Path(p).stem)
def test_page_title(page):
    assert _squeezed(_title(page)) in _squeezed(_text()), f"{page}: title {_title(page)!r} not in the PDF"


@pytest.mark.parametrize("chapter", sorted((ROOT / "book").glob("ch*.md")), ids=lambda p: p.stem)
def test_chapter_formulas(chapter):
    formulas = [f for f in FORMULA.findall(chapter.read_text(encoding="utf-8")) if as_typeset(f)]
    macro_formulas = [f for f in formulas if re.search(r"\\(tr|dmu|dSigma|SOCM|BW|R)\b", f)]
    sample = sorted(set(macro_formulas), key=macro_formulas.index)[:SAMPLE // 2]
    sample += [f for f in dict.fromkeys(formulas) if f not in sample][:SAMPLE - len(sample)]
    assert len(sample) >= 2, f"{chapter.name}: too few formulas to sample"
    text = _squeezed(_text())
    for tex in sample:
        assert as_typeset(tex) in text, f"{chapter.name}: ${tex}$ is not typeset in the PDF"


def test_no_tex_source_left():
    text = _text()
    for raw in (r"\dmu", r"\dSigma", r"\tr", r"\frac", r"\begin{", "$$", r"\(", r"\texttt", r"\url", "$L^2$"):
        assert raw not in text, f"TeX source {raw!r} printed instead of typeset"


def _margin_pt():
    """The page margin of the print style sheet (`@page { margin: ... }`), in points."""
    size, unit = re.search(r"@page\s*\{\s*margin:\s*([\d.]+)(mm|cm|in|pt)\s*;", PRINT_CSS.read_text()).groups()
    return float(size) * {"mm": 72 / 25.4, "cm": 72 / 2.54, "in": 72.0, "pt": 1.0}[unit]


def _words(pdf):
    """(page number, page width, word, box (xMin, yMin, xMax, yMax)) of every word of `pdf`, in points."""
    _text(pdf)  # fails with a clear message if the PDF is missing
    listing = subprocess.run([_tool("pdftotext"), "-bbox", str(pdf), "-"], capture_output=True, text=True,
                             check=True).stdout
    page = width = 0
    for line in listing.splitlines():
        if m := re.search(r'<page width="([\d.]+)"', line):
            page, width = page + 1, float(m.group(1))
        elif m := re.search(r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*)</word>',
                            line):
            yield page, width, unescape(m.group(5)), tuple(float(v) for v in m.groups()[:4])


@PRINTED
def test_no_text_past_the_right_margin(pdf):
    margin = _margin_pt()
    past = [(page, word, round(box[2] - (width - margin), 1)) for page, width, word, box in _words(pdf)
            if box[2] > width - margin + 1.5]  # a point and a half for the rounding of glyph boxes
    pages = sorted({page for page, _, _ in past})
    assert not past, f"{len(past)} words past the right margin on pages {pages}, e.g. (page, word, points) {past[:5]}"


def _sessions_table_headers():
    """The column headers of the teaching page's sessions table (its first markdown table)."""
    cells = json.loads(TEACHING.read_text(encoding="utf-8"))["cells"]
    tables = [line for c in cells if c["cell_type"] == "markdown" for line in "".join(c["source"]).splitlines()
              if line.startswith("| session |")]
    assert tables, "the sessions table of the teaching page is not found (check the test)"
    return [h.strip() for h in tables[0].strip("|").split("|")]


def _cell_read(words, header):
    """Whether the words of `header` are printed as one table cell: in order, each word after the previous one on
    its line or at the start of the next line of the same column."""
    wanted = header.split()
    for start, (first, box0) in enumerate(words):
        if first != wanted[0]:
            continue
        prev, found = box0, 1
        for word, box in words[start + 1:]:
            if found == len(wanted):
                break
            same_line = abs(box[1] - prev[1]) < 2 and 0 <= box[0] - prev[2] < 10
            next_line = 0 < box[1] - prev[3] < 12 and abs(box[0] - box0[0]) < 2
            if word == wanted[found] and (same_line or next_line):
                prev, found = box, found + 1
        if found == len(wanted):
            return True
    return False


@PRINTED
def test_teaching_table_keeps_every_column(pdf):
    """Every column header of the sessions table is printed whole, all of them on one page."""
    headers = [h.replace("...", "\u2026") for h in _sessions_table_headers()]
    assert len(headers) >= 6
    pages = {}
    for page, _, word, box in _words(pdf):
        pages.setdefault(page, []).append((word.replace("\u2019", "'"), box))
    best = max(pages.values(), key=lambda words: sum(_cell_read(words, h) for h in headers))
    missing = [h for h in headers if not _cell_read(best, h)]
    assert not missing, f"columns of the teaching page's sessions table not in the PDF: {missing}"


@PRINTED
def test_no_toggle_without_its_code(pdf):
    """A hidden code cell prints its code, not the screen's "Show code cell source" toggle."""
    assert "Show code cell" not in _text(pdf)


def test_figures_are_images():
    listing = subprocess.run([_tool("pdfimages"), "-list", str(PDF)], capture_output=True, text=True,
                             check=True).stdout.splitlines()[2:]
    large = [row for row in listing if row.split()[2] == "image" and int(row.split()[3]) >= 200]
    figures = sum(1 for p in (ROOT / "notebooks").glob("nb*.ipynb")  # a Vega-Lite chart is drawn, not its PNG
                  for c in json.loads(p.read_text(encoding="utf-8"))["cells"]
                  for o in c.get("outputs", []) if "image/png" in o.get("data", {})
                  and "application/vnd.vegalite.v5+json" not in o["data"])
    figures += sum(page.read_text(encoding="utf-8").count("```{figure}") for page in (ROOT / "book").glob("*.md"))
    assert len(large) >= figures, f"{len(large)} images of 200 px or more in the PDF for {figures} figures"
