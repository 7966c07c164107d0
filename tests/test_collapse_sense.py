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

"Concentration" has one sense too, and the same pages are checked for it. The concentration ratio
:math:`c = S/\lVert\mu\rVert^2` grows as the tokens spread, so "concentration" alone was read in two opposite senses
("norm variation inflates concentration": the tokens are *less* concentrated; "low concentration explains the low
SOCM": they are *more*). So the quantity is always called the concentration ratio (high or low, rising or falling), and
the bare word names only the phenomenon, as "token concentration" (tokens close to their mean, in the English sense).
And "concentrated" is not defined by a threshold of 2: the range guarantee's condition is
:math:`c_1 + c_2 \le 4` (``thm-ch04-range``; both :math:`c \le 2` is one way to meet it), which two texts at BERT's
ratio (1.63) or the untrained control's meet although their tokens are not concentrated; no sentence that calls texts
concentrated (or not) argues from that threshold or from the guarantee. Nor does a sentence call :math:`c \le 2`, or
a ratio above 2, the guarantee's threshold or condition without the sum :math:`c_1 + c_2` it is really about.

A collapsed pair is read with its condition. A high SOCM says that mean pooling maps two different token clouds to
nearby points only while :math:`d_\Sigma \le 1`: beyond that a large :math:`d_\Sigma` can make SOCM high on its own
(Chapter 3, "Reading SOCM", measures it). So a sentence that reads a high SOCM as close means ("exactly when",
"only when", "signals", "therefore") states :math:`d_\Sigma \le 1` or :math:`c_1 + c_2 \le 4` in its paragraph.
Both rules read every page and every notebook's Markdown.
"""

from __future__ import annotations

import re

import pytest

from notebook_cells import NOTEBOOKS, ROOT, read
from test_notation import prose
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


# -- "Concentration" and "concentrated" -------------------------------------------------------------------------------

#: "concentration" that is neither "concentration ratio" nor "token concentration".
BARE_CONCENTRATION = re.compile(r"(?<!token )\bconcentrations?\b(?![ -]ratios?\b)", re.I)
#: The range guarantee's threshold, or the guarantee itself, in a sentence: not a definition of "concentrated".
RANGE_THRESHOLD = re.compile(
    r"c(?:_\w)?\s*(?:<|>|\\le|\\ge|\\leq|\\geq|≤|≥)\s*2\b|\b(?:exceeds?|below|above|under|than|beyond)\s+2\b"
    r"|\\le\s*4\b|\[0,\s*1\]|\bguarantee", re.I)


def without_code_and_math(text: str) -> str:
    """Prose only: code, roles, math, comments and link targets removed (directives such as theorems kept)."""
    text = re.sub(r"<!--.*?-->", " ", prose(text), flags=re.S)
    text = re.sub(r"^\s*:[\w-]+:.*$", " ", text, flags=re.M)  # directive options (labels, classes)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    text = re.sub(r"(?<!\\)\$[^$\n]+?(?<!\\)\$", " x ", text)
    return re.sub(r"\]\([^)]*\)", "]", text)


def concentration_misuses(text: str) -> list[str]:
    """"concentration" without "ratio" (outside "token concentration"), and "concentrated" tied to the threshold 2."""
    found = []
    for paragraph in paragraphs(without_code_and_math(text)):
        paragraph = re.sub(r'"[^"]{0,40}"|“[^”]{0,40}”', " ", paragraph)  # a word in quotes is mentioned, not used
        for m in BARE_CONCENTRATION.finditer(paragraph):
            found.append(f"'concentration' without 'ratio': ...{paragraph[max(0, m.start() - 50):m.end() + 30]}...")
    for paragraph in paragraphs(re.sub(r"\{[a-z:-]+\}`[^`]*`", " ", prose(text))):
        for sentence in sentences(paragraph):
            if re.search(r"\bconcentrated\b", sentence, re.I) and RANGE_THRESHOLD.search(sentence):
                found.append(f"'concentrated' read from the range guarantee: {sentence[:140]}")
    return found


@pytest.mark.parametrize("text", [
    "Norm variation inflates concentration: at a fixed value of $\\gamma$, $c + 1$ grows.",        # ch08, fifth edition
    "Low concentration is therefore enough to explain the low SOCM of encoders such as GTE-base.",  # ch08, fifth edition
    "They report a final-layer concentration of about 1.63 for BERT.",
    "```{prf:theorem} Small concentration bound\n:label: x\nText.\n```",
    "It supports statements about whether their token clouds are concentrated ($c < 2$) or not.",   # ex-ch09-2
    "Its tokens are not concentrated: the concentration ratio exceeds 2 for a share of the texts.",  # ch09
    "This contrastive encoder is *not* concentrated on these texts: the mean ratio is above 2.",     # nb02
    "SOCM lies in $[0, 1]$ only for concentrated texts.",                                           # nb05
])
def test_the_concentration_rules_catch_the_fifth_editions_uses(text):
    assert concentration_misuses(text)


@pytest.mark.parametrize("text", [
    "Norm variation raises the concentration ratio: at a fixed value of $\\gamma$, $c + 1$ grows.",
    "A small concentration ratio is enough to explain the low SOCM; contrastive training concentrates tokens.",
    "{cite:t}`hara2026socm` explain this by token concentration. See [Chapter 8](../book/ch08_concentration.md).",
    "`socm_lib.concentration_ratio` and the `concentration` column; the concentration-ratio bound.",
    'The fifth edition read "concentration" in two senses.',
    "E5's tokens are concentrated (mean concentration ratio 0.23, far below 1).",
    "Both clouds are concentrated: here $\\dSigma \\le (c_1 + c_2)/4 = 33/320$.",
    "A pair with $c_1 + c_2 > 4$ is not covered by the guarantee, whatever its tokens do.",
])
def test_the_concentration_rules_accept_the_books_senses(text):
    assert concentration_misuses(text) == []




# -- The range guarantee's condition, and the reading of a high SOCM --------------------------------------------------

#: A threshold of 2 on one ratio: "$c \le 2$", "$c_1 > 2$", "a ratio above 2", "both ratios are at most 2".
ONE_RATIO_TWO = re.compile(r"\bc(?:_\w)?\s*(?:<|>|\\le|\\ge|\\leq|\\geq|≤|≥)\s*2\b"
                           r"|\b(?:ratios?|c)\b[^.;]{0,30}?\b(?:above|below|exceeds?|exceeding|at most|over|under|beyond)\s+2\b",
                           re.I)
#: The range guarantee, by name, by its label, or as "the threshold".
GUARANTEE = re.compile(r"\bguarantee|thm-ch04-range|\bthreshold\b", re.I)
#: The guarantee's real condition, on the sum of the two ratios.
RATIO_SUM = re.compile(r"c_1\s*\+\s*c_2\s*(?:\\le|\\leq|≤|>|\\ge|<)\s*4|add up to (?:at most|more than) 4", re.I)
HIGH = re.compile(r"\b(?:high|higher|highest|large|larger|largest)\b", re.I)
NEAR = re.compile(r"\bnearby\b|\bclose together\b|\bmeans? (?:are |is )?close\b|[\"“]similar[\"”]", re.I)
#: Words that read a high SOCM back as close means (the converse of "close means and different clouds give a high SOCM").
CONVERSE = re.compile(r"\bexactly when\b|\bonly when\b|\bsignals?\b|\btherefore\b|\bwhich mean pooling (?:maps|places)\b"
                      r"|\bare those\b|\bmeans that\b|\bindicates?\b", re.I)
#: The condition under which that reading holds.
READING_CONDITION = re.compile(r"\\dSigma\s*\\le\s*1|c_1\s*\+\s*c_2\s*\\le\s*4|range guarantee", re.I)


def range_and_reading_misstatements(text: str) -> list[str]:
    """Sentences that give the range guarantee a threshold on one ratio, or read a high SOCM without its condition."""
    found = []
    for paragraph in paragraphs(re.sub(r"\n(?=\|)", "\n\n", text)):  # each row of a table is a paragraph of its own
        for sentence in sentences(paragraph):
            if ONE_RATIO_TWO.search(sentence) and GUARANTEE.search(sentence) and not RATIO_SUM.search(sentence):
                found.append(f"the range guarantee's condition as one ratio's threshold 2: {sentence[:140]}")
            if (HIGH.search(sentence) and NEAR.search(sentence) and CONVERSE.search(sentence)
                    and not READING_CONDITION.search(paragraph)):
                found.append(f"a high SOCM read as close means without d_Sigma <= 1: {sentence[:140]}")
    return found


@pytest.mark.parametrize("text", [
    "The threshold $c \\le 2$ of the range guarantee, which BERT's final layer meets, is not that line.",   # intro, 6th ed.
    "The threshold $c \\le 2$ of {prf:ref}`thm-ch04-range` is the condition of the range guarantee only.",  # notation
    "A share of 0.48 of the texts has a ratio above 2, the threshold of the range guarantee.",             # nb02
    "A high SOCM therefore signals that mean pooling has mapped two texts with clearly different token geometry to "
    "nearby points.",                                                                                       # ch03
    "SOCM is large exactly when mean pooling says \"similar\" while the token geometry says \"different\".",  # ch05
    "It is large exactly when mean pooling maps two texts with clearly different token geometry to nearby points.",
    "| word | sense |\n|---|---|\n| collapsed pair | a pair with a high SOCM, which mean pooling maps to nearby points "
    "although the clouds differ |\n| concentrated | not the range guarantee's condition $c_1 + c_2 \\le 4$ |",  # notation
    "As long as $\\dSigma \\le 1$, both factors are at most 1.\n\nA high SOCM therefore signals that mean pooling "
    "maps the two texts to nearby points.",                           # the condition in another paragraph
])
def test_the_range_rules_catch_the_sixth_editions_statements(text):
    assert range_and_reading_misstatements(text)


@pytest.mark.parametrize("text", [
    "The range guarantee's condition, $c_1 + c_2 \\le 4$ (met, for instance, when both ratios are at most 2), is "
    "not that line.",
    "A pair whose concentration ratios add up to more than 4, for example two texts with $c > 2$, is not covered by "
    "the guarantee.",
    "While $\\dSigma \\le 1$, a high SOCM therefore signals that mean pooling has mapped two texts to nearby points.",
    "As long as $\\dSigma \\le 1$, the product is large only when both factors are. A high SOCM therefore signals "
    "that mean pooling maps the two texts to nearby points.",
    "SOCM is high when the means are close and the covariances differ, so a high value can come from either factor.",
])
def test_the_range_rules_accept_the_conditioned_statements(text):
    assert range_and_reading_misstatements(text) == []


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_concentration_has_one_sense_and_the_range_guarantee_its_condition(path):
    text = markdown(path)
    wrong = concentration_misuses(text) + range_and_reading_misstatements(text)
    assert not wrong, (f"{path.name}: 'concentration' in two senses, 'concentrated' read from c <= 2, the range "
                       f"guarantee's condition misstated, or a high SOCM read without d_Sigma <= 1: {wrong}")
