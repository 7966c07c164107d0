"""Every chapter has the same frame, and its prose comes in paragraphs a reader can take in one go.

* The title is followed by the "Learning goals" box and then the "Run it" box.
* The last two sections are "In brief" and then "Exercises".
* No paragraph of running prose is longer than ``MAX_WORDS`` words (a glued number or a role counts as one word;
  proofs, directives, tables, lists and display math are not running prose).
* Every label names the chapter it is defined in: ``thm-ch08-...`` lives in ``ch08_*.md``, ``nb10-...`` in ``nb10_*.ipynb``,
  so a reference says where its target is, and renumbered chapters cannot leave stale labels behind.
"""

from __future__ import annotations

import re

import pytest

from notebook_cells import NOTEBOOKS, ROOT, read

CHAPTERS = sorted((ROOT / "book").glob("ch*.md"))
PAGES = CHAPTERS + [ROOT / "book" / "intro.md"]
MAX_WORDS = 170

ADMONITION = re.compile(r"^:::\{admonition\} (.+)$", re.M)
SECTION = re.compile(r"^## (.+)$", re.M)
ROLE = re.compile(r"\{[a-z:-]+\}`[^`]*`")
FENCE = re.compile(r"^(`{3,}|:{3,}).*?^\1\s*$", re.S | re.M)
DISPLAY = re.compile(r"\$\$.*?\$\$", re.S)
#: A label's definition: a directive option (``:label:``, ``:name:``), a MyST target ``(label)=`` or a numbered
#: display equation ``$$ (label)``.
LABEL = re.compile(r"^:label:\s*(\S+)|^:name:\s*(\S+)|^\((\S+)\)=\s*$|^\$\$\s*\((\S+)\)\s*$", re.M)


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


def labels(markdown: str) -> list[str]:
    """Every label that ``markdown`` defines."""
    return [next(g for g in m.groups() if g) for m in LABEL.finditer(markdown)]


def misplaced(labels_here: list[str], prefix: str) -> list[str]:
    """The labels that do not carry ``prefix`` (``ch08`` or ``nb10``) as their chapter or notebook part."""
    own = re.compile(rf"^(?:[a-z]+-)?{prefix}(?:-|$)")
    return [label for label in labels_here if not own.match(label)]


def test_the_label_rule_sees_every_kind_of_definition():
    text = ":label: thm-ch07-x\n(fig-ch08-y)=\n:name: fig-ch08-z\n$$ (eq-ch08-w)\n"
    assert labels(text) == ["thm-ch07-x", "fig-ch08-y", "fig-ch08-z", "eq-ch08-w"]
    assert misplaced(labels(text), "ch08") == ["thm-ch07-x"]
    assert misplaced(["nb10-derivation", "nb1-x", "sec-nb10-y"], "nb10") == ["nb1-x"]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_label_names_its_own_chapter(path):
    chapter = path.name.split("_")[0]
    wrong = misplaced(labels(path.read_text()), chapter)
    assert not wrong, f"{path.name}: labels that name another chapter (rename them and every reference): {wrong}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_label_names_its_own_notebook(path):
    text = "\n".join(c.source for c in read(path).cells if c.cell_type == "markdown")
    wrong = misplaced(labels(text), path.name.split("_")[0])
    assert not wrong, f"{path.name}: labels that name another notebook: {wrong}"
