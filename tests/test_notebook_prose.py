"""Numbers in the notebooks' prose come from code: a measured or published number in a markdown cell is a glue role.

In each markdown cell, after removing math (``$...$``, ``$$...$$``), code spans and fences, roles such as
``{glue:text}`key``` or ``{cite:t}`key```, and link targets, no decimal number (``0.12``), number in
scientific notation (``1e-9``, ``10^{-9}``) or percentage (``12%``) may be left, unless the cell declares it as a
fixed number (a definition, parameter or threshold, not a measurement) in an HTML comment, invisible in Jupyter
and in the book::

    <!-- fixed numbers: 0.5, 1e-10 -->
"""

from __future__ import annotations

import re

import pytest

from notebook_cells import NOTEBOOKS, ROOT, ids, read

DECLARED = re.compile(r"<!--\s*fixed numbers:(.*?)-->", re.S)
REMOVE = [
    re.compile(r"<!--.*?-->", re.S),                 # HTML comments
    re.compile(r"```.*?```", re.S),                  # fenced blocks (directives included)
    re.compile(r"\$\$.*?\$\$", re.S),                # display math
    re.compile(r"(?<!\\)\$[^$\n]+?(?<!\\)\$"),        # inline math
    re.compile(r"\{[a-z:-]+\}`[^`]*`"),              # roles: {glue:text}`...`, {cite:t}`...`, {doc}`...`
    re.compile(r"`[^`\n]*`"),                        # code spans
    re.compile(r"\]\([^)]*\)"),                      # link targets
    re.compile(r"https?://\S+"),                     # bare URLs
]
NUMBER = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?[eE][-+]?\d+"          # 1e-9, 2.5E+3
    r"|10\^\{?[-−]?\d+\}?"                           # 10^{-9}
    r"|\d+(?:\.\d+)?\s?%"                            # 12%, 0.5 %
    r"|\d*\.\d+)(?![\w])"                            # 0.12, .5
)


def unglued_numbers(markdown: str) -> list[str]:
    """Numbers left in ``markdown`` once math, code, roles and links are removed, minus the declared fixed numbers."""
    declared = {x.strip() for block in DECLARED.findall(markdown) for x in block.split(",") if x.strip()}
    text = markdown
    for pattern in REMOVE:
        text = pattern.sub(" ", text)
    found = [m.group(1).replace(" ", "") for m in NUMBER.finditer(text)]
    return [x for x in found if x not in declared and x.rstrip("%") not in declared]


def test_the_rule_catches_typed_numbers():
    assert unglued_numbers("Mean SOCM is 0.2182 here, 12% of pairs.") == ["0.2182", "12%"]
    assert unglued_numbers("Errors below 1e-9 and $10^{-9}$.") == ["1e-9"]
    assert unglued_numbers("Mean {glue:text}`nb05_mean:.4f`; see `x = 0.5`; $\\dmu = 0.25$.") == []
    assert unglued_numbers("AUC 0.5 means no separation.\n<!-- fixed numbers: 0.5 -->") == []
    assert unglued_numbers("# 1. SOCM by hand, Chapter 3, 1,000 texts") == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids())
def test_markdown_has_no_unglued_numbers(path):
    offenders = []
    for k, cell in enumerate(read(path).cells):
        if cell.cell_type == "markdown":
            offenders += [f"cell {k}: {x}" for x in unglued_numbers(cell.source)]
    assert not offenders, (
        f"{path.name}: numbers typed in markdown (glue them, or declare definitions with "
        f"'<!-- fixed numbers: ... -->'): {offenders}"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids())
def test_no_notebook_forces_offline_mode(path):
    code = "\n".join(c.source for c in read(path).cells if c.cell_type == "code")
    assert "HF_HUB_OFFLINE" not in code, f"{path.name} sets HF_HUB_OFFLINE; the library fails fast on its own."


# -- Precision of glued numbers ------------------------------------------------------------------------------------

BOOK = sorted((ROOT / "book").glob("*.md"))
GLUE = re.compile(r"\{glue(?::text)?\}`(?:\.\./notebooks/([^:`]+)::)?([^:`]+):([^`]+)`")
MAX_FIGURES = 3
#: Glued numbers allowed more than three significant figures, each with its reason.
MORE_FIGURES = {
    # the worked example of Section 1: the reader compares these digits with the ones worked out on paper
    **{f"nb01_{k}": "worked by hand" for k in ("worked_dmu", "worked_dsigma", "worked_socm", "random_socm",
                                                "socm_close_same", "socm_far_same", "dsigma_diff",
                                                "socm_close_diff", "socm_far_diff")},
    # the route's two orders differ in the fourth figure, which is the claim
    "nb10_order_shift_12": "the difference is in the fourth figure",
    "nb10_order_shift_21": "the difference is in the fourth figure",
}


def significant_figures(shown: str) -> int:
    """Significant figures of a formatted number: ``'0.00580'`` has 3, ``'5.969e-03'`` 4, ``'-0.53'`` 2.

    A number shown to the unit (``'113,283'``, no decimal point, no exponent) counts as its coarsest fixed-point
    display: 0 extra figures, whatever its magnitude.
    """
    mantissa = re.split(r"[eE]", shown.lstrip("+-"))[0].replace(",", "")
    if "." not in mantissa and not re.search(r"[eE]", shown):
        return 0
    digits = mantissa.replace(".", "").lstrip("0")
    return len(digits) if digits else 1


def glued_values(path) -> dict[str, str]:
    """``name -> text/plain`` of every value the notebook glues (its committed outputs)."""
    values = {}
    for cell in read(path).cells:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                values[name] = out["data"].get("application/papermill.record/text/plain")
    return values


def glued_in_prose():
    """``(where, notebook, name, format)`` for every glue role in a chapter or in a notebook's markdown."""
    for md in BOOK:
        for m in GLUE.finditer(md.read_text()):
            yield md.name, m.group(1), m.group(2), m.group(3)
    for path in NOTEBOOKS:
        for cell in read(path).cells:
            if cell.cell_type == "markdown":
                for m in GLUE.finditer(cell.source):
                    yield path.name, path.name, m.group(2), m.group(3)


def test_significant_figures_rule():
    assert [significant_figures(s) for s in ("0.00580", "5.969e-03", "-0.53", "11.1", "0.4067", "0.00", "113,283")] == [3, 4, 2, 3, 4, 1, 0]


def test_glued_numbers_show_at_most_three_significant_figures():
    from myst_nb.core.variables import format_plain_text

    values = {p.name: glued_values(p) for p in NOTEBOOKS}
    offenders, checked = [], 0
    for where, notebook, name, fmt in glued_in_prose():
        if fmt[-1] not in "efgEFG%" or name in MORE_FIGURES:
            continue
        shown = format_plain_text(values[notebook][name], fmt)
        checked += 1
        if significant_figures(shown) > MAX_FIGURES:
            offenders.append(f"{where}: {name}:{fmt} shows {shown}")
    assert checked > 100
    assert not offenders, f"glued numbers with more figures than a claim needs: {offenders}"


def test_no_control_characters_in_prose():
    """A ``"\\rho"`` written without a raw string becomes a carriage return and ``ho``; no prose holds one."""
    pages = NOTEBOOKS + sorted((ROOT / "book").glob("*.ipynb"))
    texts = {p.name: "\n".join(c.source for c in read(p).cells) for p in pages}
    texts.update({p.name: p.read_text() for p in BOOK})
    bad = {name: repr(t[max(i - 20, 0):i + 5]) for name, t in texts.items()
           for i in [next((k for k, ch in enumerate(t) if ord(ch) < 32 and ch != "\n"), -1)] if i >= 0}
    assert not bad, f"control characters in prose: {bad}"


# -- Pace: how many glued numbers one sentence holds -------------------------------------------------------------

MAX_GLUED_PER_SENTENCE = 4
#: Abbreviations after which a full stop does not end a sentence.
ABBREVIATIONS = ("e.g.", "i.e.", "cf.", "al.", "vs.", "etc.", "Fig.", "Eq.", "approx.")
FENCE_BLOCK = re.compile(r"^(`{3,}|:{3,}).*?^\1\s*$", re.S | re.M)
ANY_GLUE = re.compile(r"\{glue(?::text)?\}`(?:[^:`]+::)?([^:`]+)(?::([^`]+))?`")


def is_number(text: str | None) -> bool:
    try:
        float(str(text).replace(",", ""))
    except ValueError:
        return False
    return True


def glued_sentences(markdown: str, values: dict | None = None) -> list[tuple[int, str]]:
    """``(glued numbers, sentence)`` for every sentence of running prose, list items and captions included.

    Fenced blocks, tables and display math are not prose. A glued number is a glue role with a number format (not
    ``:s``), or without a format when its glued value (``values``, the notebook's) is a number; in the sentence it
    reads ``<n>``.
    """
    values = values or {}

    def glued(m):
        name, fmt = m.group(1), m.group(2)
        number = not fmt.endswith("s") if fmt else is_number(values.get(name))
        return " <n> " if number else " word "

    text = FENCE_BLOCK.sub("\n\n", markdown)
    text = re.sub(r"\$\$.*?\$\$", "\n\n", text, flags=re.S)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    text = re.sub(r"(?<!\\)\$[^$\n]+?(?<!\\)\$", "x", text)
    text = ANY_GLUE.sub(glued, text)
    text = re.sub(r"\{[a-z:-]+\}`[^`]*`", " ref ", text)
    out = []
    for block in re.split(r"\n\s*\n|\n(?=\s*(?:[-*] |\d+\. |#))", text):
        if block.lstrip().startswith("|"):
            continue
        for abbreviation in ABBREVIATIONS:
            block = block.replace(abbreviation, abbreviation.replace(".", "\0"))
        for sentence in re.split(r"(?<=[.!?])[)*_]*\s+(?=\S)", block):
            sentence = " ".join(sentence.replace("\0", ".").split())
            out.append((sentence.count("<n>"), sentence))
    return out


def test_the_sentence_rule_counts_glued_numbers_per_sentence():
    g = "{glue:text}`../notebooks/nb05_paper_protocol.ipynb::nb05_x:.3f`"
    text = f"One {g}, two {g} and e.g. three {g}. multilingual-e5-small: {g}; {g}; {g}; {g}; {g}.\n\n| {g} | {g} |"
    assert [n for n, _ in glued_sentences(text)] == [3, 5]
    assert [n for n, _ in glued_sentences("A {glue:text}`nb09_state:s` run, $x_1$ and {glue:text}`nb09_n:d`.")] == [1]
    untyped = "{glue:text}`a`, {glue:text}`b`, {glue:text}`c`."
    assert [n for n, _ in glued_sentences(untyped, {"a": "12", "b": "'a machine'", "c": "0.5"})] == [2]


@pytest.mark.parametrize("path", BOOK, ids=lambda p: p.stem)
def test_no_sentence_holds_more_than_four_glued_numbers(path):
    dense = [f"{n}: {s[:100]}..." for n, s in glued_sentences(path.read_text()) if n > MAX_GLUED_PER_SENTENCE]
    assert not dense, (f"{path.name}: sentences with more than {MAX_GLUED_PER_SENTENCE} glued numbers (give each "
                       f"comparison a sentence of its own): {dense}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids())
def test_no_notebook_sentence_holds_more_than_four_glued_numbers(path):
    values = glued_values(path)
    dense = [f"{n}: {s[:100]}..." for cell in read(path).cells if cell.cell_type == "markdown"
             for n, s in glued_sentences(cell.source, values) if n > MAX_GLUED_PER_SENTENCE]
    assert not dense, (f"{path.name}: sentences with more than {MAX_GLUED_PER_SENTENCE} glued numbers (give each "
                       f"comparison a sentence of its own): {dense}")


# -- References and citations that render their own words ----------------------------------------------------------

#: ``{prf:ref}`` and ``{numref}`` render the kind and the number ("Proposition 5", "Exercise 13"), so a kind written
#: before them is doubled ("Proposition Proposition 5"); ``{cite:p}`` renders the authors, so "Hara et al." before it
#: is doubled too ("Hara et al. [Hara et al., 2026]": write ``{cite:t}``).
DOUBLED = re.compile(
    r"\b(?:Propositions?|Theorems?|Lemmas?|Examples?|Definitions?|Corollar(?:y|ies)|Remarks?|Exercises?|Figures?"
    r"|Equations?|Algorithms?)\s+\{(?:prf:ref|numref)\}`[^`]*`"
    r"|\bet al\.?\s*\{cite:p\}`[^`]*`"
)
#: A label of the book (``eg-ch05-crossed``, ``thm-ch04-range``): a role turns it into words in Markdown, but in a code
#: cell a reader sees it raw.
LABEL = re.compile(r"\b(?:eg|ex|example|thm|prop|def|lem|cor|rem|fig|eq|sec)-ch\d\d-[\w-]+")


def doubled_words(markdown: str) -> list[str]:
    return [m.group(0) for m in DOUBLED.finditer(markdown)]


def test_the_rule_catches_doubled_words():
    assert doubled_words("the bound (Proposition {prf:ref}`prop-ch07-regulariser`) and Theorem {prf:ref}`t`") == [
        "Proposition {prf:ref}`prop-ch07-regulariser`", "Theorem {prf:ref}`t`"]
    assert doubled_words("Hara et al. {cite:p}`hara2026socm` computed; see Exercise {numref}`ex-ch04-2`.") == [
        "et al. {cite:p}`hara2026socm`", "Exercise {numref}`ex-ch04-2`"]
    assert doubled_words("{cite:t}`hara2026socm` computed it ({prf:ref}`prop-ch07-regulariser`, {numref}`ex-ch04-2`)") == []


def test_no_reference_repeats_the_words_it_renders():
    pages = [(p.name, c.source) for p in NOTEBOOKS + sorted((ROOT / "book").glob("*.ipynb"))
             for c in read(p).cells if c.cell_type == "markdown"]
    pages += [(p.name, p.read_text()) for p in BOOK]
    found = [f"{name}: {x}" for name, text in pages for x in doubled_words(text)]
    assert not found, f"words a role renders itself, written before it (drop the word, or use {{cite:t}}): {found}"


def test_no_raw_label_in_code():
    assert LABEL.findall("# the crossed clouds of eg-ch05-crossed, and thm-ch04-range") == ["eg-ch05-crossed",
                                                                                           "thm-ch04-range"]
    found = [f"{p.name} cell {k}: {label}" for p in NOTEBOOKS for k, c in enumerate(read(p).cells)
             if c.cell_type == "code" for label in LABEL.findall(c.source)]
    assert not found, f"book labels shown raw in code cells (name the example or theorem in words): {found}"


# -- SOCM has no upper bound ---------------------------------------------------------------------------------------

#: SOCM is non-negative and unbounded above (Chapter 4's constructed pair; pairs above 1 in notebook 5): prose must not
#: call it or its values "bounded" ("bounded by ...", "bounded below" and "unbounded" say something else).
BOUNDED_SOCM = re.compile(
    r"(?<!un)bounded,? (?:and )?skewed|skewed,? (?:and )?(?<!un)bounded(?! (?:by|below|above))"
    r"|\bSOCM(?: values)? (?:is|are) bounded(?! (?:by|below|above))|(?<!un)bounded(?:,? \w+)? SOCM"
)


def test_the_rule_catches_socm_called_bounded():
    bad = ["it does not assume the bounded, skewed SOCM values are normal", "(SOCM is bounded and skewed)",
           "SOCM values are bounded here", "skewed and bounded"]
    good = ["SOCM is non-negative and skewed, with no upper bound", "SOCM is bounded by d_sigma",
            "SOCM is unbounded", "a bounded mean distance", "the covariance part is bounded in an exercise"]
    assert all(BOUNDED_SOCM.search(s) for s in bad) and not any(BOUNDED_SOCM.search(s) for s in good)


def test_socm_is_never_called_bounded():
    pages = [(p.name, "\n".join(c.source for c in read(p).cells if c.cell_type == "markdown")) for p in NOTEBOOKS]
    pages += [(p.name, p.read_text()) for p in BOOK]
    found = [f"{name}: {m.group(0)}" for name, text in pages for m in BOUNDED_SOCM.finditer(text)]
    assert not found, f"SOCM called bounded (it is non-negative, with no upper bound): {found}"


# -- A glued figure agrees with the printed one ----------------------------------------------------------------------


def hides_a_half(value: str, fmt: str) -> bool:
    """True when ``fmt`` shows a whole number and ``value`` is a half (a median of token counts, 28.5): ``.0f`` rounds
    it half to even, to "28", and the prose shows another figure than the cell that prints the value."""
    if not re.fullmatch(r"[^.]*\.0f", fmt) or not is_number(value):
        return False
    return float(str(value).replace(",", "")) % 1 == 0.5


def test_the_rule_catches_a_rounded_half():
    assert hides_a_half("28.5", ".0f") and hides_a_half("55.5", ",.0f")
    assert not hides_a_half("28.5", "g") and not hides_a_half("28.0", ".0f") and not hides_a_half("28.4", ".0f")
    assert not hides_a_half("0.4435", ".3f")  # a value glued at four decimals, shown at three: no half of a count


def test_no_glued_number_rounds_a_tie():
    values = {p.name: glued_values(p) for p in NOTEBOOKS}
    found = [f"{where}: {name}:{fmt} of {values[notebook][name]}" for where, notebook, name, fmt in glued_in_prose()
             if name in values.get(notebook, {}) and hides_a_half(values[notebook][name], fmt)]
    assert not found, f"glued numbers rounded at a tie, unlike the cell that prints them (show the half): {found}"
