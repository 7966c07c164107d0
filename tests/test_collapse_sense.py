""""Collapse" has one sense in the book, the one Chapter 3 defines.

A pair is collapsed when mean pooling maps two texts with different token geometry to nearby points (high SOCM); an
encoder collapses more or less as its average SOCM is higher or lower, so the encoder with the lowest average SOCM is
the one that collapses *least*. Token concentration (tokens close to their mean) is another thing, which keeps SOCM
low, and is called concentration. The checks, on every chapter and on the Markdown of every notebook and book page:

* a paragraph that names the offline encoder with the lowest average SOCM (read from the committed output of
  notebook 5, not typed here) never says that it collapses, unless the same sentence says "less" or "least" or speaks
  of collapsed pairs;
* no token, cloud or embedding "collapses" and none is "collapsed": that is concentration;
* another author's notion of collapse (length-induced collapse) appears only with its citation;
* no encoder is called "strongly contrastive": nothing in the book measures how contrastive an encoder is.
"""

from __future__ import annotations

import re

import pytest

from notebook_cells import NOTEBOOKS, ROOT, read
from test_notebook_prose import glued_values

#: Every page of the book, every notebook, and the README that introduces the encoders.
PAGES = [ROOT / "README.md", *sorted((ROOT / "book").glob("*.md")), *sorted((ROOT / "book").glob("*.ipynb")),
         *NOTEBOOKS]
#: How the prose names each offline encoder whose corpus average notebook 5 glues as ``nb05_mean_socm_<key>_corpus``.
NAMES = {
    "minilm": ("all-MiniLM-L6-v2", "all-minilm-l6"),
    "e5_4bit": ("multilingual-e5-small", "E5"),
    "untrained": ("untrained control", "untrained-minilm-l6"),
}
COLLAPSE = re.compile(r"\bcollaps\w*", re.I)
#: Names of the measure and of other authors' notions: not a statement that something collapses.
TERMS = re.compile(r"second-order collapse|collapse measure|length(?:-induced)? collapse", re.I)
OTHER_NOTION = re.compile(r"length(?:-induced)? collapse", re.I)
CONCENTRATION_AS_COLLAPSE = re.compile(r"collapsed\s+(?:token|cloud|embedding)s?\b|\b(?:token|cloud|embedding)s?\s+collaps", re.I)
#: A sentence about collapsed pairs speaks of pairs, whichever encoder its paragraph names.
ABOUT_PAIRS = re.compile(r"\bpairs?\W+(?:\w+\W+){0,3}collaps|collaps\w*\W+(?:\w+\W+){0,2}pairs?\b", re.I)


def lowest_socm_encoder() -> str:
    """The key (``e5_4bit``, ...) of the offline encoder with the lowest average SOCM on the corpus, from notebook 5."""
    values = glued_values(ROOT / "notebooks" / "nb05_paper_protocol.ipynb")
    means = {m.group(1): float(v) for k, v in values.items() if (m := re.fullmatch(r"nb05_mean_socm_(\w+)_corpus", k))}
    assert set(means) == set(NAMES), f"notebook 5 measures {sorted(means)}; name them in NAMES"
    return min(means, key=means.get)


def markdown(path) -> str:
    if path.suffix == ".md":
        return path.read_text()
    return "\n\n".join(c.source for c in read(path).cells if c.cell_type == "markdown")


def paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n|\n(?=\s*[-*] )", text) if p.strip()]


def sentences(paragraph: str) -> list[str]:
    return re.split(r"(?<=[.!?])[)*]*\s+(?=\S)", paragraph)


def misuses(text: str, lowest: str) -> list[str]:
    """Sentences of ``text`` that use "collapse" outside the book's sense, each with the rule it breaks."""
    names = NAMES[lowest]
    found = []
    for paragraph in paragraphs(text):
        about_lowest = any(re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", paragraph) for n in names)
        for sentence in sentences(paragraph):
            said = COLLAPSE.findall(TERMS.sub(" ", sentence))
            if about_lowest and said and not re.search(r"\bless\b|\bleast\b", sentence) and not ABOUT_PAIRS.search(sentence):
                found.append(f"calls {names[0]}, the encoder with the lowest SOCM, collapsing: {sentence[:120]}")
            if CONCENTRATION_AS_COLLAPSE.search(sentence):
                found.append(f"calls concentrated tokens collapse: {sentence[:120]}")
            if OTHER_NOTION.search(sentence) and "zhou2025length" not in sentence:
                found.append(f"another author's collapse without its citation: {sentence[:120]}")
            if re.search(r"strongly contrastive", sentence, re.I):
                found.append(f"'strongly contrastive' (nothing measures it): {sentence[:120]}")
    return found


def test_the_lowest_encoder_is_read_from_notebook_5():
    assert lowest_socm_encoder() in NAMES


@pytest.mark.parametrize("text", [
    "The third offline encoder shows the collapse itself. multilingual-e5-small averages 0.065.",
    "- **multilingual-e5-small collapses.** With its 4-bit weights, E5 has a mean SOCM of 0.065.",
    "For multilingual-e5-small every kind is low, as its collapsed clouds predict.",
    "The tokens of E5 collapse onto their mean.",
    "SOCM and length-induced collapse are related.",
    "The strongly contrastive multilingual-e5-small.",
])
def test_the_rules_catch_collapse_in_another_sense(text):
    assert misuses(text, "e5_4bit")


@pytest.mark.parametrize("text", [
    "The third offline encoder collapses least. multilingual-e5-small averages 0.065.",
    "How much less does E5 collapse than all-MiniLM-L6-v2?",
    "A pair is *collapsed* when the means are close and the shapes differ; E5's clouds are concentrated.",
    "The second-order collapse measure of E5 is low.",
    "What {cite:t}`zhou2025length` call length-induced collapse is another thing.",
])
def test_the_rules_accept_the_books_sense(text):
    assert misuses(text, "e5_4bit") == []


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_collapse_is_used_in_the_books_sense_only(path):
    wrong = misuses(markdown(path), lowest_socm_encoder())
    assert not wrong, f"{path.name}: 'collapse' outside the sense of Chapter 3: {wrong}"
