"""The notation page lists every symbol of the chapters' mathematics, with every meaning it has.

A symbol is a Latin or Greek letter, a calligraphic or blackboard letter, or one of the book's macros (``\\dSigma``,
``\\BW``, ...). Upright text (``\\mathrm{route}``, ``\\operatorname{rank}``, ``\\text{...}``) is not a symbol, nor are the
layout and operator commands of ``OPERATORS``. The chapters' mathematics is all of it: display and inline, in the
running text, definitions, theorems, proofs, examples, exercises and solutions alike.

The page lists a symbol when it occurs in the first column of one of its tables, or in its opening paragraph, which
declares the indices and the letters that one proof, example or exercise defines for its own use (the *free*
letters). Four checks:

1. every symbol of the chapters' mathematics is on the page;
2. each row defines a different symbol;
3. a row's "first used in" is the first chapter, in reading order, whose mathematics uses the row's symbol, or a
   notebook when no chapter uses it;
4. every second use is declared. Where a chapter introduces a letter ("let $Y$ ...", "put $Z = ...$", "the matrix
   $R = ...$", "with eigenvalues $a_i$"), the letter is free, or is an index, or the chapter is the one that
   introduces it, or its row names that chapter for a second meaning, or the sentence says what the row says (it
   shares a word of the row's meaning, or restates the row's formula). And a singular value decomposition
   $U D V^\\top$ keeps $D$ for its diagonal factor.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from notebook_cells import ROOT, alt_texts

BOOK = ROOT / "book"
CHAPTERS = sorted(BOOK.glob("ch*.md"))
INLINE = re.compile(r"(?<![\\$])\$([^$\n]+?)\$")
UPRIGHT = re.compile(r"\\(?:text|mathrm|operatorname|label|tag|begin|end)\s*\{[^{}]*\}|^:.*$", re.M)
TOKEN = re.compile(r"\\(mathcal|mathbb)\s*\{\s*([A-Za-z])\s*\}|\\([A-Za-z]+)|([A-Za-z])")
#: Layout, accents, operators, relations and function names: not symbols with a meaning of their own.
OPERATORS = {
    "frac", "tfrac", "dfrac", "sqrt", "sum", "int", "inf", "sup", "min", "max", "le", "ge", "leq", "geq", "neq", "ne",
    "in", "top", "times", "cdot", "cdots", "dots", "ldots", "vdots", "langle", "rangle", "lvert", "rvert", "lVert",
    "rVert", "left", "right", "big", "Big", "bigg", "Bigg", "quad", "qquad", "textstyle", "displaystyle", "mathbf",
    "tilde", "hat", "bar", "overline", "circ", "cos", "sin", "log", "det", "dim", "ker", "tr", "norm", "fro", "nuc",
    "to", "mapsto", "iff", "implies", "Leftarrow", "approx", "equiv", "sim", "partial", "nabla", "infty", "pm", "mp",
    "preceq", "succeq", "subseteq", "setminus", "perp", "odot", "ll", "gg", "mid", "lfloor", "rfloor", "lceil",
    "rceil", "binom", "prime", "colon",
}
#: Indices run over tokens, texts, eigenvalues or terms as each formula says (the page's opening paragraph).
INDICES = {"i", "j", "k", "l", "m"}
#: Words too common to tell two meanings apart.
COMMON = {"matrix", "matrices", "vector", "vectors", "number", "numbers", "their", "which", "where", "these", "those",
          "other", "first", "second", "every", "there", "inside", "text", "texts", "token", "tokens", "chapter", "with",
          "that", "this", "from", "have", "each", "then", "when", "into", "than", "they", "also", "only", "such", "both",
          "some", "more", "most", "over", "what", "pair", "pairs", "same", "does", "case", "let", "take", "write", "alone",
          "gives", "given", "above", "below", "since", "hence", "proof", "part"}


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


# -- The chapters' mathematics ---------------------------------------------------------------------------------------

FENCE = re.compile(r"^(`{3,}|:{3,})\s*(\S*)")
MATH = re.compile(r"\$\$(.+?)\$\$|^```\{math\}[^\n]*\n(.*?)^```|(?<![\\$])\$(?!\$)((?:[^$\\]|\\.)+?)\$", re.S | re.M)


def prose(markdown: str) -> str:
    """``markdown`` without code blocks, roles and code spans: what is left is text and mathematics.

    Directive fences (``{prf:proof}``, ``{exercise}``, ``{solution}``, ``{math}``, ...) stay, with their content;
    a fence with a language or none (``python``, ``bash``) is code and goes.
    """
    out, stack = [], []  # stack of open fences: (marker, is_directive)
    for line in markdown.splitlines():
        m = FENCE.match(line)
        in_code = any(not directive for _, directive in stack)
        if m and stack and m.group(1) == stack[-1][0] and not m.group(2):
            stack.pop()
        elif m and not in_code:
            stack.append((m.group(1), m.group(1)[0] == ":" or m.group(2).startswith("{")))
        out.append("" if in_code else line)
    text = re.sub(r"\{[a-z:-]+\}`[^`]*`", " ", "\n".join(out))
    return re.sub(r"`[^`\n]*`", " ", text)


def math_spans(markdown: str):
    """``(start, tex, inline)`` for every piece of mathematics of ``markdown``, in order."""
    for m in MATH.finditer(prose(markdown)):
        inline = m.group(3) is not None
        tex = m.group(1) or m.group(2) or m.group(3)
        if not (inline and "\n\n" in tex):  # a lone dollar sign does not open a paragraph of mathematics
            yield m.start(), tex, inline


def chapter_symbols(paths) -> dict[str, list[str]]:
    """``symbol -> chapters`` (in reading order) for all the mathematics of ``paths``."""
    where: dict[str, list[str]] = {}
    for path in paths:
        for _, tex, _ in math_spans(path.read_text()):
            for s in symbols(tex):
                if path.stem not in where.setdefault(s, []):
                    where[s].append(path.stem)
    return where


# -- The notation page -----------------------------------------------------------------------------------------------

def rows(page: str) -> list[dict]:
    """The page's table rows: ``lead`` (the first formula), ``head`` (the symbols it defines), ``meaning``, ``home``."""
    out = []
    for line in page.splitlines():
        if line.startswith("| $"):
            cells = line.split("|")
            formulas = INLINE.findall(cells[1])
            heads = set().union(*(symbols(re.split(r"=|\\in\b|\(", f)[0]) for f in formulas))
            out.append({"lead": formulas[0], "head": heads, "symbols": set().union(*(symbols(f) for f in formulas)),
                        "meaning": cells[2], "home": re.findall(r"\{doc\}`([^`]+)`", cells[3])})
    return out


def listed_symbols(page: str) -> tuple[set[str], list[str]]:
    """The symbols the notation page lists, and the leading formula's symbol of each of its table rows."""
    opening = page.split("\n## ")[0]
    listed = set().union(*(symbols(m) for m in INLINE.findall(opening)))
    for row in rows(page):
        listed |= row["symbols"]
    return listed, [row["lead"].split("=")[0].strip() for row in rows(page)]


def free_symbols(page: str) -> set[str]:
    """The free letters: those of the opening paragraph's sentence on letters that one proof or exercise defines."""
    opening = " ".join(page.split("\n## ")[0].split())
    sentence = re.search(r"Letters that .*?\.(?= [A-Z]|$)", opening).group(0)
    return set().union(*(symbols(m) for m in INLINE.findall(sentence)))


def unlisted(page: str, paths=CHAPTERS) -> dict[str, list[str]]:
    listed, _ = listed_symbols(page)
    return {s: w for s, w in sorted(chapter_symbols(paths).items()) if s not in listed}


def misdated(page: str, paths=CHAPTERS) -> list[str]:
    """Rows whose "first used in" is not the first chapter that uses their symbol (a notebook if none does)."""
    first = {s: w[0] for s, w in chapter_symbols(paths).items()}
    wrong, seen = [], free_symbols(page)  # a row of an operator (nuclear norm of $M$) introduces no letter
    for row in rows(page):
        heads = row["head"] - seen  # a symbol with two rows (F, F_route) is introduced by the first
        seen |= row["head"]
        if not heads or not row["home"]:
            continue
        used = sorted({first[s] for s in heads if s in first})
        home = Path(row["home"][0]).stem
        expected = used[0] if used else None
        if home.startswith("ch") and home != expected or not home.startswith("ch") and expected:
            wrong.append(f"${row['lead']}$ says {home}, first used in {expected or 'no chapter'}")
    return wrong


# -- Second uses -----------------------------------------------------------------------------------------------------

#: Words that introduce the letter right after them: "let $Y$", "put $Z = ...$", "with eigenvalues $a_i$".
VERB = re.compile(r"\b(?:[Ll]et|[Pp]ut|[Ww]rite|[Dd]efine|[Dd]enote|[Tt]ake|[Ss]et|[Cc]all)\s+(?:\S+\s+){0,2}?$")
NOUN = re.compile(r"(?<!\bof )\b(?:eigenvalues|singular values|entries|matrix|vector|root)\s+$")
HEAD = re.compile(r"^\s*((?:\\[A-Za-z]+|[A-Za-z]))(?:_(?:\{[^{}]*\}|[A-Za-z0-9]|\\[A-Za-z]+))?(?:\^\{?[0-9]\}?)?\s*"
                  r"(=|:=|\\in\b|\\ge\b|\\le\b|,|$)")
SVD = re.compile(r"U\s*(\\[A-Za-z]+|[A-Za-z])(?:\^\{?[^{}\s]*\}?)?\s*V\^\\top")


def sentence_around(text: str, start: int) -> str:
    """The sentence of ``text`` that holds position ``start``, with the sentence before it in the same paragraph."""
    begin = max(text.rfind(". ", 0, start), text.rfind("\n\n", 0, start), 0)
    begin = max(text.rfind(". ", 0, begin), text.rfind("\n\n", 0, begin), 0) if text[begin] == "." else begin
    end = min(k for k in (text.find(". ", start), text.find("\n\n", start), len(text)) if k >= 0)
    return text[begin:end]


def words(text: str) -> set[str]:
    """The stems (first six letters) of the words of four letters or more, math and common words left out."""
    found = re.findall(r"[a-z][a-z-]{3,}", re.sub(r"\$[^$]*\$", " ", text).lower())
    return {w[:6] for w in found if w not in COMMON}


def normalised(tex: str) -> str:
    """A formula with spacing, index subscripts and the head's argument removed: ``X_1 \\in`` reads ``X \\in``."""
    tex = re.sub(r"_\{?[0-9ijk]\}?|\\[,;!]|\s+", "", tex)
    return re.sub(r"^(\\?[A-Za-z]+)\([^()]*\)", r"\1", tex)


def restates(tex: str, lead: str) -> bool:
    """Whether a definition says what the row's formula says (its words, or its ingredients), or gives a value.

    ``c_i = S(X_i)/\\norm{\\mu(X_i)}^2`` restates ``c(X) = S(X) / \\norm{\\mu(X)}^2``; ``\\SOCM = \\dSigma - \\dmu\\,\\dSigma``
    restates ``\\SOCM = (1-\\dmu)\\,\\dSigma`` (same ingredients); ``\\Sigma_i = \\Sigma(\\tilde X_i)`` applies the symbol
    itself; ``d = 2`` and ``n \\ge 1`` give values.
    """
    relation = re.compile(r"=|\\in\b|\\ge\b|\\le\b")
    parts = relation.split(tex, maxsplit=1)
    if len(parts) < 2:
        return False
    head, rest = symbols(parts[0]), symbols(parts[1])
    if not rest or head & rest:
        return True
    lead_parts = relation.split(lead, maxsplit=1)
    return len(lead_parts) == 2 and (normalised(tex).startswith(normalised(lead)) or symbols(lead_parts[1]) == rest)


def definitions(markdown: str):
    """``(symbol, tex, sentence)`` for every letter the text introduces (a verb or noun cue right before it)."""
    text = prose(markdown)
    for start, tex, inline in math_spans(markdown):
        if not inline:
            continue
        before = re.sub(r"\$[^$]*\$", " X ", text[max(0, start - 60):start])
        head = HEAD.match(tex)
        if head and (VERB.search(before) or NOUN.search(before) and (head.group(2) == "=" or "values" in before
                                                                    or "entries" in before)):
            for symbol in symbols(head.group(1)):
                yield symbol, tex, sentence_around(text, start)


def undeclared(page: str, paths=CHAPTERS) -> list[str]:
    """Letters that a chapter introduces with a meaning its row does not declare for that chapter."""
    free = free_symbols(page) | INDICES
    table = rows(page)
    wrong = []
    for path in paths:
        chapter = path.stem
        text = path.read_text()
        for symbol, tex, sentence in definitions(text):
            mine = [row for row in table if symbol in row["head"]]
            if symbol in free or not mine:
                continue  # a free letter, or one that check 1 reports as missing
            if any(f"{chapter}`" in row["meaning"]
                   or words(sentence) & words(row["meaning"]) or restates(tex, row["lead"]) for row in mine):
                continue
            wrong.append(f"{chapter}: ${tex}$ in '{' '.join(sentence.split())[:90]}...'")
        for m in SVD.finditer(" ".join(tex for _, tex, _ in math_spans(text))):
            if m.group(1) not in ("D", "\\Sigma"):
                wrong.append(f"{chapter}: ${m.group(0)}$: a singular value decomposition keeps $D$ for its diagonal")
    return wrong


# -- Tests -----------------------------------------------------------------------------------------------------------

PAGE = (BOOK / "notation.md").read_text()


def test_the_collector_sees_symbols_and_skips_upright_text():
    assert symbols(r"\dSigma = \BW^2(\Sigma_1, \Sigma_2)/4") == {"\\dSigma", "\\BW", "\\Sigma"}
    assert symbols(r"F_{\mathrm{route}} \le \mathcal{U} + \operatorname{rank} G") == {"F", "\\mathcal{U}", "G"}
    assert symbols(r"\sqrt{\frac{a}{b}} \text{ for all } x") == {"a", "b", "x"}


def test_the_collector_reads_proofs_exercises_and_inline_math_but_not_code():
    text = ("Text $a$ and\n$b +\n c$.\n\n````{exercise} E\n:label: ex-ch01-9\nLet $Q$.\n````\n\n"
            "```{prf:proof}\n$$\nH\n$$\n```\n\n```python\nx = '$Z$'\n```\n\nA `$W$` span and {glue:text}`n:$V$`.")
    assert [tex for _, tex, _ in math_spans(text)] == ["a", "b +\n c", "Q", "\nH\n"]


def test_the_check_fails_on_a_page_that_misses_a_symbol():
    chapter = BOOK / "ch07_paper_route.md"
    assert unlisted(PAGE, [chapter]) == {}
    without = "\n".join(line for line in PAGE.splitlines() if not line.startswith("| $H$"))
    assert "H" in unlisted(without, [chapter])


def test_every_symbol_of_the_chapters_mathematics_is_on_the_notation_page():
    missing = unlisted(PAGE)
    assert not missing, f"symbols of the chapters' mathematics missing from book/notation.md: {missing}"


def test_each_row_of_the_notation_page_defines_a_different_symbol():
    _, leads = listed_symbols(PAGE)
    repeated = sorted({s for s in leads if leads.count(s) > 1})
    assert not repeated, f"book/notation.md defines these symbols in more than one row: {repeated}"


def test_the_introduced_in_check_catches_a_wrong_chapter():
    moved = PAGE.replace("| $G = AB^\\top$ | cross-Gram matrix of two texts' centred, scaled tokens ($n_1 \\times n_2$); "
                         "$F(\\Sigma_1,\\Sigma_2) = \\nuc{G}$ | {doc}`ch06_computing`",
                         "| $G = AB^\\top$ | cross-Gram matrix of two texts' centred, scaled tokens ($n_1 \\times n_2$); "
                         "$F(\\Sigma_1,\\Sigma_2) = \\nuc{G}$ | {doc}`ch05_wasserstein`")
    assert moved != PAGE
    assert any(w.startswith("$G = AB^\\top$ says ch05_wasserstein") for w in misdated(moved))


def test_each_row_is_introduced_where_its_symbol_first_appears():
    wrong = misdated(PAGE)
    assert not wrong, f"book/notation.md: rows whose 'first used in' is not where the symbol first appears: {wrong}"


@pytest.mark.parametrize("clash", [
    "For a symmetric positive semidefinite $M$ with eigenvalues $\\mu_i$, the trace is $\\sum_i \\sqrt{\\mu_i}$.",
    "The eigenvalues of $MM^\\top$ are the squared singular values $\\sigma_i^2$ of $M$.",
    "Let $X$ have rows $x_1, \\dots, x_n$ and let $D \\in \\R^{(n-1) \\times d}$ have rows $x_2 - x_1$.",
    "The matrix $P = u u^\\top / \\norm{u}$ is positive semidefinite.",
    "It has a positive semidefinite square root $G = M^{1/2}$.",
    "Let $\\tilde G = U S V^\\top$ be a singular value decomposition.",
])
def test_the_second_use_check_catches_the_clashes_it_was_written_for(clash, tmp_path):
    chapter = tmp_path / "ch09_findings.md"
    chapter.write_text(f"# A chapter\n\n{clash}\n")
    assert undeclared(PAGE, [chapter]), f"not caught: {clash}"


def test_the_second_use_check_accepts_declared_meanings(tmp_path):
    chapter = tmp_path / "ch07_paper_route.md"
    chapter.write_text("# A chapter\n\nLet $s_1 \\ge \\dots \\ge s_r > 0$ be the nonzero singular values of $G$.\n\n"
                       "We write $c_i = S(X_i)/\\norm{\\mu(X_i)}^2$ for the concentration ratio of text $i$.\n\n"
                       "Let $M$ have eigenvalues $a_i$ and put $Z = BR$.\n")
    assert len(list(definitions(chapter.read_text()))) == 5
    assert undeclared(PAGE, [chapter]) == []


def test_every_second_use_of_a_symbol_is_declared():
    wrong = undeclared(PAGE)
    assert not wrong, ("book/notation.md: a chapter gives these symbols a meaning their row does not declare (rename "
                       f"the letter, or declare the second meaning in its row with the chapter): {wrong}")


# -- One name per quantity -------------------------------------------------------------------------------------------
#
# The page gives the distances and the concentration ratio one name each, in bold in their row. That name is the only
# one the prose uses: another name for $\dSigma$ (the fifth edition had three: "covariance distance", "shape
# distance", "second-order distance") fails, and so does any "... distance" written right next to the symbol that is
# not its name. "Shape" misleads besides: $\dSigma$ compares the sizes of two covariances as well as their shapes.

NAMED_SYMBOLS = {"dmu": r"\dmu", "dSigma": r"\dSigma", "c": "c(X)"}
#: Names these quantities had before the sixth edition gave each one: none of them may come back.
RETIRED_NAMES = ("shape distance", "shape part", "shape term", "second-order distance", "first-order distance")
#: The pages whose prose names the quantities: chapters, notebooks' and book pages' Markdown, the instructor's rubrics.
NAMING_PAGES = [*sorted(BOOK.glob("*.md")), *sorted((ROOT / "notebooks").glob("nb*.ipynb")),
                *sorted(BOOK.glob("*.ipynb")), ROOT / "instructor" / "rubrics.md"]


def names_on_page(page: str) -> dict[str, str]:
    """``macro -> name``: the bold name in the row of each of ``\\dmu``, ``\\dSigma`` and ``c(X)``."""
    out = {}
    for line in page.splitlines():
        cells = line.split("|")
        if len(cells) < 3 or not line.startswith("| $"):
            continue
        lead = INLINE.findall(cells[1])[0]
        for key, symbol in NAMED_SYMBOLS.items():
            if lead.replace(" ", "").startswith(symbol.replace(" ", "")):
                bold = re.findall(r"\*\*([^*]+)\*\*", cells[2])
                assert len(bold) == 1, f"the row of ${symbol}$ must give exactly one name in bold, found {bold}"
                out[key] = bold[0]
    return out


#: How the figures' alt texts, plain text, write the two distances: read as the chapters' macros.
ALT_SYMBOLS = {"d_Σ": "$\\dSigma$", "d_μ": "$\\dmu$"}


def page_prose(path: Path) -> str:
    """The prose of a chapter, a notebook's Markdown cells and its figures' alt texts, or the rubrics, with line
    breaks read as spaces."""
    if path.suffix == ".ipynb":
        import nbformat

        cells = nbformat.read(path, as_version=4).cells
        alts = [alt for c in cells for alt in alt_texts(c)]
        for plain, macro in ALT_SYMBOLS.items():
            alts = [alt.replace(plain, macro) for alt in alts]
        text = "\n\n".join([c.source for c in cells if c.cell_type == "markdown"] + alts)
    else:
        text = path.read_text()
    return " ".join(text.split())


def misnamed(text: str, names: dict[str, str]) -> list[str]:
    """Places where ``text`` calls $\\dSigma$ or $\\dmu$ by a retired name, or writes a wrong name next to it."""
    text = re.sub(r'"[^"]{0,40}"|“[^”]{0,40}”', " ", text)  # a name in quotes is mentioned, not used
    found = [f"'{m.group(0)}'" for m in re.finditer("|".join(RETIRED_NAMES), text, re.I)]
    for key in ("dSigma", "dmu"):
        adjective = names[key].split()[-2]  # "covariance" of "covariance distance"
        for m in re.finditer(rf"\$\\{key}\$", text):
            before = re.search(r"([\w–-]+) distances?,?\s*\(?\s*$", text[max(0, m.start() - 60):m.start()])
            after = re.match(r"\)?,?\s*(?:the|its|a|their)\s+([\w–-]+) distances?", text[m.end():m.end() + 60])
            for said in (before, after):
                if said and said.group(1).lower() != adjective:
                    found.append(f"'{said.group(0).strip()}' next to ${m.group(0)[1:-1]}$ (its name: {names[key]})")
    return found


def test_the_page_names_each_distance_once():
    names = names_on_page(PAGE)
    assert set(names) == set(NAMED_SYMBOLS), f"book/notation.md names {sorted(names)}; give each of {list(NAMED_SYMBOLS)} a bold name"
    assert names["dSigma"].endswith(" distance") and names["dmu"].endswith(" distance")
    assert names["c"] == "concentration ratio"


@pytest.mark.parametrize("text", [
    "two tight texts always have a small shape distance",          # ch08, fifth edition
    "its second-order distance is large",                           # the notation page, fifth edition
    "the shape distance $\\dSigma$ exceeds 1",                       # nb05, fifth edition
    "SOCM keeps the shape part $\\dSigma$",                          # nb01, fifth edition
    "the Bures distance $\\dSigma$ of two texts",
    "$\\dSigma$, the spread distance, grows",
])
def test_the_naming_rule_catches_another_name_for_d_sigma(text):
    assert misnamed(text, {"dSigma": "covariance distance", "dmu": "mean distance"})


def test_the_naming_rule_accepts_the_name():
    text = ("the covariance distance $\\dSigma$ and the mean distance $\\dmu$; the Bures–Wasserstein covariance "
            "distance $\\dSigma$; $\\dSigma$, the covariance distance, and the distance of the covariances; it had been "
            "a \"shape distance\"")
    assert misnamed(text, {"dSigma": "covariance distance", "dmu": "mean distance"}) == []


def test_the_naming_rule_reads_the_figures_alt_texts(tmp_path):
    # nb01's decomposition figure said "shape part" in its alt text, where its legend says "covariance part BW²"
    import nbformat

    cell = nbformat.v4.new_code_cell("plot()")
    cell.metadata["mystnb"] = {"image": {"alt": "two bars, the mean part and the shape part of the distance"}}
    other = nbformat.v4.new_code_cell("plot()", metadata={"image_alts": ["the shape distance d_Σ of each pair"]})
    path = tmp_path / "nb.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("Text."), cell, other]), path)
    names = {"dSigma": "covariance distance", "dmu": "mean distance"}
    assert misnamed(page_prose(path), names) == ["'shape part'", "'shape distance'",
                                                 "'shape distance' next to $\\dSigma$ (its name: covariance distance)"]


@pytest.mark.parametrize("path", NAMING_PAGES, ids=lambda p: p.name)
def test_each_distance_has_one_name_everywhere(path):
    wrong = misnamed(page_prose(path), names_on_page(PAGE))
    assert not wrong, f"{path.name}: another name for a quantity the notation page names: {wrong}"
