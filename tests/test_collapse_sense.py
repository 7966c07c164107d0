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


# -- The quantity's name in code: what a cell prints, the columns it names --------------------------------------------
#
# The prose rule above reads Markdown only, but a table column "concentration" or a printed "final-layer concentration
# about 0.10" reads backwards in the same way (0.10 is *strong* token concentration). So the strings and comments of
# every notebook's code cells, and the column names of socm_lib.layers, call the quantity the concentration ratio too
# ("concentration_ratio" as a column, "mean_concentration_ratio" for a mean). A string used as a subscript only reads a
# name given elsewhere (a library dict's key, a column named in another cell), so it is not checked there.

#: "concentration" in code text, "_" counting as a separator, neither followed by "ratio" nor after "token".
CODE_CONCENTRATION = re.compile(
    r"(?<![a-z])(?<!token )(?<!token_)(?<!ch\d\d_)concentrations?(?![a-z])(?![ _-]ratios?(?![a-z]))", re.I)
#: Glue keys (``nb06_...``) are names the chapters cite, not labels.
GLUE_KEY = re.compile(r"nb\d\d\w*")
#: The Python sources of socm_lib whose strings name the profile's columns, or print or plot the ratio.
LIBRARY_SOURCES = ["socm_lib/layers.py", "socm_lib/viz/layers.py", "socm_lib/viz/control.py", "socm_lib/cli.py",
                   "socm_lib/course/nb06.py"]


def code_concentration_misuses(source: str, *, docstrings: bool = True) -> list[str]:
    """Strings (f-string parts included) and comments of Python ``source`` that call the ratio "concentration"."""
    import ast
    import io
    import tokenize

    if source.lstrip().startswith("%%"):  # a cell magic: not Python
        return []
    source = "\n".join(re.sub(r"^(\s*)[%!].*", r"\1pass", line) for line in source.splitlines())  # line magics
    tree = ast.parse(source)
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            skip.update(id(n) for n in ast.walk(node.slice))
        if not docstrings and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skip.add(id(node.value))
    texts = [n.value for n in ast.walk(tree)
             if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip
             and not GLUE_KEY.fullmatch(n.value)]
    texts += [tok.string for tok in tokenize.generate_tokens(io.StringIO(source).readline)
              if tok.type == tokenize.COMMENT]
    return [f"...{s[max(0, m.start() - 50):m.end() + 30]}..." for s in texts for m in CODE_CONCENTRATION.finditer(s)]


def notebook_code_misuses(path) -> list[str]:
    return [f"cell {i} ({cell.get('id', 'no id')}): {found}" for i, cell in enumerate(read(path).cells)
            if cell.cell_type == "code" for found in code_concentration_misuses(cell.source)]


@pytest.mark.parametrize("source", [
    'print(f"{name}: final-layer concentration about {fmt(r.value, 2)} in {paper.CITATION}")',  # nb06, 9th reading
    'print("bound holds (mean SOCM <= mean concentration / 2) in every run: True")',               # nb08
    'rows.append({"encoder": name, "mean_concentration": float(m.concentration.mean())})',         # nb08
    'texts_f = pd.DataFrame({"tokens": n, "concentration": m.concentration})',                     # nb08
    'higher(b, "mean_concentration")',
    'factor = c.shift(1) / c  # by what factor each layer divides the mean concentration',          # nb06
    'PROFILE_COLUMNS = ("layer", "concentration", "avg_cosine")',                                   # socm_lib.layers
    'def f():\n    %time x = 1\n    return "Concentrations"',
])
def test_the_code_rule_catches_the_ratio_called_concentration(source):
    assert code_concentration_misuses(source)


@pytest.mark.parametrize("source", [
    'print(f"{name}: final-layer concentration ratio about {fmt(r.value, 2)}")',
    'rows.append({"mean_concentration_ratio": float(m.concentration.mean()), "mean c": 1})',
    'c = prof.set_index("layer")["concentration"]; d = padding.loc[0, "concentration"]',  # reads a name given elsewhere
    'x = socm_lib.concentration_ratio(X); y = paper.FINAL_LAYER_CONCENTRATION["gte"].value',
    'glue_stat("nb08_conc_tok_first", 1.0, s, "mean concentration-ratio of the bin")  # token concentration',
    'path = "../book/ch08_concentration.md"\n%pip install socm_lib',
])
def test_the_code_rule_accepts_the_ratio_and_token_concentration(source):
    assert code_concentration_misuses(source) == []


@pytest.mark.parametrize("path", [*NOTEBOOKS, *sorted((ROOT / "book").glob("*.ipynb"))], ids=lambda p: p.name)
def test_code_cells_call_the_quantity_the_concentration_ratio(path):
    wrong = notebook_code_misuses(path)
    assert not wrong, (f"{path.name}: a code cell prints or names the concentration ratio as 'concentration' (say "
                       f"'concentration ratio', or 'concentration_ratio' as a column): {wrong}")


def test_the_library_calls_the_quantity_the_concentration_ratio():
    import numpy as np

    from socm_lib import layers

    assert "concentration_ratio" in layers.PROFILE_COLUMNS
    columns = [*layers.PROFILE_COLUMNS, *layers.norm_check([np.arange(12.0).reshape(3, 4) + 1]).columns]
    wrong = [c for c in columns if CODE_CONCENTRATION.search(c)]
    for name in LIBRARY_SOURCES:
        source = (ROOT / name).read_text()
        wrong += [f"{name}: {found}" for found in code_concentration_misuses(source, docstrings=False)]
    assert not wrong, f"socm_lib names or prints the concentration ratio as 'concentration': {wrong}"


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
