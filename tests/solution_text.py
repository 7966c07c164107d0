"""The book's solution text, read from its sources, for the tests that look for it in what is built from them.

A chapter's solutions are its ``{solution}`` directives; a notebook's are its cells tagged `solution`. Only text
that appears nowhere else in the sources is solution text: a phrase of a solution that an exercise repeats, or a
code line that a task cell shares, tells nothing. Text is compared squeezed (`squeezed`): without whitespace and
with typographic apostrophes read as "'", so that line breaks of a printed page or of highlighted code do not
matter.
"""

from __future__ import annotations

import re
from functools import lru_cache
from html import unescape
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "book").glob("ch*.md"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("nb*.ipynb"))
SOLUTION_TAG = "solution"
DIRECTIVE = re.compile(r"^(`{3,})\{(exercise|solution)\}[^\n]*\n(.*?)^\1\s*$", re.M | re.S)
MIN_CODE = 20  # characters (whitespace not counted) of a solution's code line taken as solution text


def squeezed(text: str) -> str:
    """`text` without whitespace, with typographic apostrophes and MathJax's primes read as "'"."""
    return re.sub(r"\s+", "", text).replace("\u2019", "'").replace("\u2032", "'")


def html_text(html: str) -> str:
    """A page's text with tags, scripts and whitespace runs removed."""
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def plain_phrases(body: str) -> list[str]:
    """The runs of plain words (no maths, no roles, no directive options) in a MyST body, as they read in HTML."""
    body = re.sub(r"^:\w+:.*$", "", body, flags=re.M)
    return re.findall(r"[A-Za-z][A-Za-z ,;]{24,}[A-Za-z]", re.sub(r"\$[^$]*\$|\{[^}]*\}`[^`]*`", "|", body))


def chapter_blocks(chapter: Path) -> list[tuple[str, str]]:
    """The (kind, body) of every exercise and solution directive of `chapter`."""
    return [(kind, body) for _, kind, body in DIRECTIVE.findall(chapter.read_text(encoding="utf-8"))]


def _tags(cell) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def _notebook_cells():
    for path in NOTEBOOKS:
        yield from nbformat.read(path, as_version=4).cells


@lru_cache
def solution_texts(source: str = "all") -> tuple[str, ...]:
    """The book's solution text (squeezed) from `source`: "chapters" (the plain phrases of the chapters'
    solutions), "notebooks" (the plain phrases of the notebooks' markdown solution cells and the code lines of
    their solution code cells) or "all"."""
    if source not in ("chapters", "notebooks", "all"):
        raise ValueError(f"source must be 'chapters', 'notebooks' or 'all', not {source!r}")
    found = {"chapters": [], "notebooks": []}
    elsewhere = []
    for chapter in CHAPTERS:
        text = chapter.read_text(encoding="utf-8")
        for kind, body in chapter_blocks(chapter):
            if kind == "solution":
                found["chapters"] += plain_phrases(body)
                text = text.replace(body, "")
        elsewhere.append(text)
    for cell in _notebook_cells():
        if SOLUTION_TAG not in _tags(cell):
            elsewhere.append(cell.source)
        elif cell.cell_type == "markdown":
            found["notebooks"] += plain_phrases(cell.source)
        else:
            found["notebooks"] += [line for line in cell.source.splitlines() if len(squeezed(line)) >= MIN_CODE]
    rest = squeezed("\n".join(elsewhere))
    texts = found["chapters"] + found["notebooks"] if source == "all" else found[source]
    return tuple(dict.fromkeys(s for s in map(squeezed, texts) if s not in rest))
