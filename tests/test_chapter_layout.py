"""Every chapter has the same frame, and its prose comes in paragraphs a reader can take in one go.

* The title is followed by the "Learning goals" box and then the "Run it" box.
* The last two sections are "In brief" and then "Exercises".
* No paragraph of running prose is longer than ``MAX_WORDS`` words (a glued number or a role counts as one word;
  proofs, directives, tables, lists and display math are not running prose).
"""

from __future__ import annotations

import re

import pytest

from notebook_cells import ROOT

CHAPTERS = sorted((ROOT / "book").glob("ch*.md"))
PAGES = CHAPTERS + [ROOT / "book" / "intro.md"]
MAX_WORDS = 170

ADMONITION = re.compile(r"^:::\{admonition\} (.+)$", re.M)
SECTION = re.compile(r"^## (.+)$", re.M)
ROLE = re.compile(r"\{[a-z:-]+\}`[^`]*`")
FENCE = re.compile(r"^(`{3,}|:{3,}).*?^\1\s*$", re.S | re.M)
DISPLAY = re.compile(r"\$\$.*?\$\$", re.S)


def paragraphs(markdown: str) -> list[str]:
    """The paragraphs of running prose: blocks between blank lines, outside fences, directives and display math."""
    text = DISPLAY.sub("\n\n", FENCE.sub("\n\n", markdown))
    out = []
    for block in re.split(r"\n\s*\n", text):
        block = block.strip()
        if not block or block[0] in "#|-*>(<" or re.match(r"\d+\. ", block):
            continue
        out.append(block)
    return out


def words(paragraph: str) -> int:
    return len(ROLE.sub("X", paragraph).split())


def test_the_rules_catch_what_they_should():
    long = " ".join(["word"] * (MAX_WORDS + 1))
    assert [words(p) for p in paragraphs(f"# T\n\n{long}\n\n```{{prf:proof}}\n{long}\n```\n")] == [MAX_WORDS + 1]
    assert words("Mean {glue:text}`nb05_x:.3f` and {cite:t}`hara2026socm`.") == 4
    assert paragraphs("- a list item\n\n| a | table |\n\n$$\nx\n$$\n") == []


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_the_boxes_open_every_chapter_in_one_order(path):
    text = path.read_text()
    boxes = ADMONITION.findall(text)[:2]
    assert boxes == ["Learning goals", "Run it"], f"{path.name}: the first boxes are {boxes}"
    first_section = SECTION.search(text).start()
    assert all(m.start() < first_section for m in list(ADMONITION.finditer(text))[:2]), (
        f"{path.name}: the Learning goals and Run it boxes come before the first section")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_in_brief_then_exercises_close_every_chapter(path):
    sections = SECTION.findall(path.read_text())
    assert sections[-2:] == ["In brief", "Exercises"], f"{path.name}: the last sections are {sections[-2:]}"


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_no_paragraph_is_too_long(path):
    long = [f"{words(p)} words: {p[:80]}..." for p in paragraphs(path.read_text()) if words(p) > MAX_WORDS]
    assert not long, f"{path.name}: paragraphs over {MAX_WORDS} words (break them): {long}"
