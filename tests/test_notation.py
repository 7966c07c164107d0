"""The notation page lists every symbol of the chapters' display mathematics.

A symbol is a Latin or Greek letter, a calligraphic or blackboard letter, or one of the book's macros (``\\dSigma``,
``\\BW``, ...). The page lists it when it occurs in the first column of one of its tables, or in its opening
paragraph, which declares the indices and the letters that one proof or exercise defines for its own use. Upright
text (``\\mathrm{route}``, ``\\operatorname{rank}``, ``\\text{...}``) is not a symbol, nor are the layout and operator
commands of ``OPERATORS``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from notebook_cells import ROOT

BOOK = ROOT / "book"
CHAPTERS = sorted(BOOK.glob("ch*.md"))
DISPLAY = re.compile(r"\$\$(.*?)\$\$|```\{math\}(.*?)```", re.S)
INLINE = re.compile(r"(?<![\\$])\$([^$\n]+?)\$")
UPRIGHT = re.compile(r"\\(?:text|mathrm|operatorname|label|tag|begin|end)\s*\{[^{}]*\}|^:.*$", re.M)
TOKEN = re.compile(r"\\(mathcal|mathbb)\s*\{\s*([A-Za-z])\s*\}|\\([A-Za-z]+)|([A-Za-z])")
#: Layout, accents, operators and function names: not symbols with a meaning of their own.
OPERATORS = {
    "frac", "tfrac", "dfrac", "sqrt", "sum", "int", "inf", "sup", "min", "max", "le", "ge", "leq", "geq", "neq", "in",
    "top", "times", "cdot", "cdots", "dots", "ldots", "vdots", "langle", "rangle", "lvert", "rvert", "lVert", "rVert",
    "left", "right", "big", "Big", "bigg", "Bigg", "quad", "qquad", "textstyle", "displaystyle", "mathbf", "tilde",
    "hat", "bar", "overline", "circ", "cos", "log", "det", "tr", "norm", "fro", "nuc", "to", "mapsto", "iff",
    "implies", "approx", "equiv", "partial", "nabla", "infty", "pm", "mp", "preceq", "succeq", "subseteq", "setminus",
    "mid", "lfloor", "rfloor", "lceil", "rceil", "binom", "prime", "colon",
}


def symbols(tex: str) -> set[str]:
    """The symbols of a piece of TeX: ``'x'``, ``'\\\\Sigma'``, ``'\\\\mathcal{L}'``, ..."""
    found = set()
    for m in TOKEN.finditer(UPRIGHT.sub(" ", tex)):
        if m.group(1):
            found.add(f"\\{m.group(1)}{{{m.group(2)}}}")
        elif m.group(3):
            if m.group(3) not in OPERATORS:
                found.add("\\" + m.group(3))
        else:
            found.add(m.group(4))
    return found


def chapter_symbols(paths) -> dict[str, set[str]]:
    """``symbol -> chapters`` for the display mathematics of ``paths``."""
    where: dict[str, set[str]] = {}
    for path in paths:
        for m in DISPLAY.finditer(path.read_text()):
            for s in symbols(m.group(1) or m.group(2)):
                where.setdefault(s, set()).add(path.name)
    return where


def listed_symbols(page: str) -> tuple[set[str], list[str]]:
    """The symbols the notation page lists, and the leading symbol of each of its table rows."""
    opening = page.split("\n## ")[0]
    listed = set().union(*(symbols(m) for m in INLINE.findall(opening)))
    leads = []
    for line in page.splitlines():
        if line.startswith("| $"):
            first = line.split("|")[1]
            found = [symbols(m) for m in INLINE.findall(first)]
            listed |= set().union(*found)
            leads.append(INLINE.findall(first)[0].split("=")[0].strip())
    return listed, leads


def unlisted(page: str, paths=CHAPTERS) -> dict[str, list[str]]:
    listed, _ = listed_symbols(page)
    return {s: sorted(w) for s, w in sorted(chapter_symbols(paths).items()) if s not in listed}


def test_the_collector_sees_symbols_and_skips_upright_text():
    assert symbols(r"\dSigma = \BW^2(\Sigma_1, \Sigma_2)/4") == {"\\dSigma", "\\BW", "\\Sigma"}
    assert symbols(r"F_{\mathrm{route}} \le \mathcal{U} + \operatorname{rank} G") == {"F", "\\mathcal{U}", "G"}
    assert symbols(r"\sqrt{\frac{a}{b}} \text{ for all } x") == {"a", "b", "x"}


def test_the_check_fails_on_a_page_that_misses_a_symbol():
    chapter = BOOK / "ch07_paper_route.md"
    page = (BOOK / "notation.md").read_text()
    assert unlisted(page, [chapter]) == {}
    without = "\n".join(line for line in page.splitlines() if not line.startswith("| $H$"))
    assert "H" in unlisted(without, [chapter])


def test_every_symbol_of_the_chapters_display_math_is_on_the_notation_page():
    missing = unlisted((BOOK / "notation.md").read_text())
    assert not missing, f"symbols of the chapters' display math missing from book/notation.md: {missing}"


def test_each_row_of_the_notation_page_defines_a_different_symbol():
    _, leads = listed_symbols((BOOK / "notation.md").read_text())
    repeated = sorted({s for s in leads if leads.count(s) > 1})
    assert not repeated, f"book/notation.md defines these symbols in more than one row: {repeated}"
