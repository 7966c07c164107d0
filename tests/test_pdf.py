"""The printed book (`make pdf`, _build/pdf/socm-book.pdf): every page of the table of contents is in it with
its title, its mathematics is typeset (a sample of each chapter's formulas reads as typeset text, with the book's
macros expanded, and no TeX source is left), and its figures are images in the PDF."""

import json
import re
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PDF = ROOT / "_build" / "pdf" / "socm-book.pdf"
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
def _text():
    if not PDF.exists():
        pytest.fail(f"{PDF} is missing: run `make pdf` first")
    return subprocess.run([_tool("pdftotext"), str(PDF), "-"], capture_output=True, text=True, check=True).stdout


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
    for raw in (r"\dmu", r"\dSigma", r"\tr", r"\frac", r"\begin{", "$$", r"\("):
        assert raw not in text, f"TeX source {raw!r} printed instead of typeset"


def test_figures_are_images():
    listing = subprocess.run([_tool("pdfimages"), "-list", str(PDF)], capture_output=True, text=True,
                             check=True).stdout.splitlines()[2:]
    large = [row for row in listing if row.split()[2] == "image" and int(row.split()[3]) >= 200]
    figures = sum(1 for p in (ROOT / "notebooks").glob("nb*.ipynb")
                  for c in json.loads(p.read_text(encoding="utf-8"))["cells"]
                  for o in c.get("outputs", []) if "image/png" in o.get("data", {}))
    figures += sum(page.read_text(encoding="utf-8").count("```{figure}") for page in (ROOT / "book").glob("*.md"))
    assert len(large) >= figures, f"{len(large)} images of 200 px or more in the PDF for {figures} figures"
