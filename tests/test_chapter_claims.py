"""Two habits of precise prose that the sixth edition's examiner found broken, checked on every page of the book.

* **A relative figure says that it is relative.** A glued maximum deviation or error that is relative (its name has
  ``max_dev``, ``rel`` or ``relgap``) is quoted with the word in its own clause: "to 2.1e-10 relative", "a relative
  0.024", "the largest relative error ... is", "in relative terms", or as a percentage. Read as absolute, ch07's
  "the lower bound misses by up to 3.4e-03" would have been about 30 % of the bound.
* **A property is cited to the result that states it.** A sentence that calls $\\dSigma$ or SOCM symmetric in the two
  texts and cites a result by ``{prf:ref}`` cites one whose statement speaks of symmetry (ch07 cited the five
  properties (a)-(e), ``thm-ch04-properties``, for the symmetry that ``thm-ch04-invariances`` states).
  ``PROPERTIES`` maps each such phrase to the word the cited statement must contain; add a phrase when a new
  property is cited this way.
"""

from __future__ import annotations

import re

import pytest

from notebook_cells import ROOT

BOOK_PAGES = sorted((ROOT / "book").glob("*.md"))
ROLE = re.compile(r"\{glue(?::text)?\}`(?:\.\./notebooks/[^:`]+::)?([^:`]+)(?::([^`]*))?`")
RELATIVE_NAME = re.compile(r"max_dev|_rel(?:_|$)|relgap")
#: The clause before a role: the text since the last punctuation that ends a clause.
CLAUSE_START = re.compile(r".*[,;:.()]", re.S)
REF = re.compile(r"\{prf:ref\}`([^`]+)`")
#: A sentence that attributes a property to the two texts' order -> the word the cited statement must contain.
PROPERTIES = {
    re.compile(r"\bsymmetric in the (?:two )?texts\b|\b(?:unchanged|the same) when the (?:two )?texts are swapped\b",
               re.I): "symmetr",
}
DIRECTIVE = re.compile(r"^(`{3,})\{prf:\w+\}([^\n]*)\n:label: (\S+)\n(.*?)^\1\s*$", re.S | re.M)


def unmarked_relative_figures(text: str) -> list[str]:
    """Glue roles of relative deviations whose clause does not say "relative" (nor gives a percentage)."""
    text = " ".join(text.split())
    found = []
    for m in ROLE.finditer(text):
        name, fmt = m.group(1), m.group(2) or ""
        if not RELATIVE_NAME.search(name) or fmt.endswith("%"):
            continue
        before = CLAUSE_START.sub("", ROLE.sub("X", text[max(0, m.start() - 100):m.start()]))
        after = ROLE.sub("X", text[m.end():m.end() + 40])
        if not re.search(r"\brelative\b", before) and not re.match(r"\s*(?:relative\b|in relative terms\b)", after):
            found.append(f"{name} without 'relative': ...{text[max(0, m.start() - 60):m.end() + 30]}...")
    return found


def statements(pages=BOOK_PAGES) -> dict[str, str]:
    """``label -> title and statement`` of every theorem, proposition, lemma and corollary of the book."""
    return {m.group(3): m.group(2) + " " + m.group(4) for p in pages for m in DIRECTIVE.finditer(p.read_text())}


def miscited_properties(text: str, stated: dict[str, str]) -> list[str]:
    """Sentences that attribute a property to results none of whose statements contains it."""
    found = []
    blocks = re.split(r"\n\s*\n|\n(?=\s*(?:[-*#|] |\d+\. ))", text)  # paragraphs, list items, headings, table rows
    for sentence in (s for b in blocks for s in re.split(r"(?<=[.!?])\s+(?=[A-Z{(*`$])", " ".join(b.split()))):
        refs = REF.findall(sentence)
        for phrase, word in PROPERTIES.items():
            if refs and phrase.search(sentence) and not any(re.search(word, stated.get(r, ""), re.I) for r in refs):
                found.append(f"cites {refs} for '{phrase.search(sentence).group(0)}': {sentence[:120]}")
    return found


@pytest.mark.parametrize("text", [
    "while the lower bound $\\mathcal{L}$ misses by up to {glue:text}`../notebooks/nb10.ipynb::nb10_max_dev_lower:.1e`;",
    "off by up to {glue:text}`nb09_scipy_max_rel_err:.1e` in relative terms, and the other by up to "
    "{glue:text}`nb09_paper_max_rel_err:.3f` (a figure).",
])
def test_the_relative_rule_catches_a_bare_relative_figure(text):
    assert unmarked_relative_figures(text)


@pytest.mark.parametrize("text", [
    "matches to {glue:text}`nb10_max_dev_exact:.1e` relative, while it misses by up to {glue:text}`nb10_max_dev_lower:.1e` relative;",
    "the float64 shift exceeds it by a relative {glue:text}`nb10_max_dev_leading:.3f` at most",
    "the largest relative error of `socm_pairs` is {glue:text}`nb09_max_rel_err:.1e`;",
    "the prediction misses by {glue:text}`nb06_equal_norm_relgap_minilm:.0%` on average",
])
def test_the_relative_rule_accepts_a_marked_figure(text):
    assert unmarked_relative_figures(text) == []


@pytest.mark.parametrize("path", BOOK_PAGES, ids=lambda p: p.name)
def test_every_relative_figure_says_so(path):
    wrong = unmarked_relative_figures(path.read_text())
    assert not wrong, f"{path.name}: relative figures quoted without 'relative': {wrong}"


def test_the_citation_rule_catches_the_sixth_editions_reference():
    stated = statements()
    old = "The exact $\\dSigma$ is symmetric in the two texts ({prf:ref}`thm-ch04-properties`), and so is $\\mathcal{L}$."
    assert miscited_properties(old, stated)
    assert miscited_properties(old.replace("properties", "invariances"), stated) == []


@pytest.mark.parametrize("path", BOOK_PAGES, ids=lambda p: p.name)
def test_a_property_is_cited_to_the_result_that_states_it(path):
    wrong = miscited_properties(path.read_text(), statements())
    assert not wrong, f"{path.name}: {wrong}"
