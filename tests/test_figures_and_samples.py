"""Every figure with its sample, every time with its spread (the sixth edition's rules for glued numbers).

The fifth edition quoted the mean SOCM of all-MiniLM-L6-v2 as 0.4435, 0.419, 0.416 and 0.432 in four notebooks
without saying that they were measured on 120, 1,000, 200 and 300 texts, gave one encoder's mean concentration ratio
as 2.10 in a table and 2.08 in the prose below it, and set a single run's 8.46 s beside another run's 5.3 s. The rules,
read from the committed notebooks (their glued values, which ``make notebooks`` rewrites) and from the prose of every
chapter and of every notebook's Markdown:

1. A glued value that the prose quotes as a mean, median, average or share of a sample (a glue role right after one
   of those words, or a name that says so) is glued with :func:`socm_lib.viz.glued.glue_stat`, which records its
   sample next to it.
2. Every paragraph, list item or table (with the paragraph that introduces it) that quotes such a value names the
   sample's size with its unit: a glued or written number equal to it, followed by the unit ("200 corpus texts",
   "7,140 pairs"); for the pairs of a set of texts, the set's size names it too ("all pairs of 1,000 texts").
3. Two glued values of one quantity on one sample agree to their printed digits.
4. A glued time in seconds or microseconds is glued with :func:`socm_lib.viz.glued.glue_timing`, and the sentence
   that quotes it quotes its fastest and slowest run too, or says that it is a single run.
"""

from __future__ import annotations

import ast
import re

import pytest

from notebook_cells import NOTEBOOKS, read
from test_notebook_prose import BOOK, glued_values

from socm_lib.viz import glued

ROLE = re.compile(r"\{glue(?::text)?\}`(?:\.\./notebooks/([^:`]+)::)?([^:`]+)(?::([^`]*))?`")
#: A statistic's word right before its glue role (no other role or sentence end in between).
STAT_WORD = re.compile(r"\b(?:(?:mean|average|averages|median)(?![- ](?:pooled|pooling|squared|distance|line))"
                       r"|averaged|share)\b[^{}.;:]{0,60}$", re.I)
#: Names of glued values that are statistics of a sample whatever the prose around them says.
STAT_NAME = re.compile(r"(?:^|_)(?:mean|median|share|avg)(?:_|$)")
#: Names of glued times.
TIME_NAME = re.compile(r"_(?:seconds|us)(?:_|$)")
SINGLE_RUN = re.compile(r"\b(?:one|a single|single)\s+(?:run|timing|measurement)\b", re.I)
#: Glued values that look like statistics by name or place but describe no sample of this book, with the reason.
NOT_SAMPLES = {
    "paper": "a value quoted from the paper, whose sample the chapter describes",
    "load_start": "the machine's load average, a state of the machine, not a sample",
    "printed": "a value the paper prints",
    "top_share": "the share of one matrix's nuclear norm in its largest singular value",
    "beta_drawn": "the common share of the one drawn model's embedding tables",
    "rho": "a rank correlation, not a mean or a share",
    "nb10_shift_": "the leading term evaluated at the median text length: a formula's value, not a mean",
    "allowed_us": "a budget derived from a target, not a measurement",
    "threshold": "a target's threshold",
}


# -- reading ----------------------------------------------------------------------------------------------------------

def notebook_values() -> dict[str, dict[str, str]]:
    """``notebook file name -> {glued name: text/plain}`` for every notebook of the book."""
    return {p.name: glued_values(p) for p in NOTEBOOKS}


def sample_of(values: dict[str, str], name: str) -> dict | None:
    """The sample record :func:`glue_stat` glued next to ``name``, or ``None``."""
    text = values.get(name + glued.SAMPLE_SUFFIX)
    return None if text is None else ast.literal_eval(text)


def number(text) -> float | None:
    try:
        return float(str(text).replace(",", ""))
    except ValueError:
        return None


def prose_pages() -> list[tuple[str, str | None, str]]:
    """``(page, notebook of its unqualified glue roles, markdown)`` for every chapter and every notebook's Markdown."""
    pages = [(p.name, None, p.read_text()) for p in BOOK]
    for p in NOTEBOOKS:
        text = "\n\n".join(c.source for c in read(p).cells if c.cell_type == "markdown")
        pages.append((p.name, p.name, text))
    return pages


def blocks(markdown: str) -> list[str]:
    """Paragraphs and list items; a table comes with the paragraph before it (its caption or lead-in)."""
    markdown = re.sub(r"<!--.*?-->", " ", markdown, flags=re.S)
    parts = [b for b in re.split(r"\n\s*\n|\n(?=\s*(?:[-*] |\d+\. ))", markdown) if b.strip()]
    out = []
    for part in parts:
        if part.lstrip().startswith("|") and out:
            out[-1] += "\n" + part
        else:
            out.append(part)
    return out


def sentences(block: str) -> list[str]:
    return re.split(r"(?<=[.!?])[)*_]*\s+(?=[A-Z{(*`$])", " ".join(block.split()))


def roles(text: str, default: str | None):
    """``(notebook, name, format, match)`` for every glue role of ``text``."""
    for m in ROLE.finditer(text):
        yield m.group(1) or default, m.group(2), m.group(3) or "", m


# -- rule 1: statistics carry their sample ----------------------------------------------------------------------------

def exempt(name: str) -> bool:
    """Values the rules leave alone: those of ``NOT_SAMPLES``, extremes (``max``, ``min``) and a time's companions."""
    return (any(word in name for word in NOT_SAMPLES) or bool(re.search(r"(?:^|_)(?:max|min)(?:_|$)", name))
            or name.endswith("_runs"))


def quoted_as_statistic(text: str, m) -> bool:
    before = ROLE.sub("{X}", text[max(0, m.start() - 80):m.start()])
    return bool(STAT_WORD.search(before))


def unrecorded_statistics(pages, values) -> list[str]:
    """Glue roles the prose reads as statistics of a sample whose value is glued without its sample."""
    found = []
    for page, default, text in pages:
        for notebook, name, _, m in roles(text, default):
            if notebook not in values or name not in values[notebook] or exempt(name) or TIME_NAME.search(name):
                continue
            if re.fullmatch(r"-?\d+|'.*'|\".*\"", str(values[notebook][name])):
                continue  # a count (such as the sample size right after "the mean over") or a word
            if (STAT_NAME.search(name) or quoted_as_statistic(text, m)) and sample_of(values[notebook], name) is None:
                found.append(f"{page}: {name} (glue it with glue_stat)")
    return sorted(set(found))


# -- rule 2: where a statistic appears, its sample size appears ---------------------------------------------------------

def unit_after(text: str, unit: str) -> bool:
    """Whether ``text`` (what follows a number) names ``unit`` within three words: "corpus texts", "pairs of"."""
    stem = unit[:-1] if unit.endswith("s") else unit
    return bool(re.match(rf"\W*(?:[\w-]+\W+){{0,3}}?{re.escape(stem)}s?\b", text, re.I))


def names_size(block: str, default: str | None, values, n: int, unit: str) -> bool:
    """Whether ``block`` names ``n`` followed by ``unit``, as a glued value or as a written number."""
    block = " ".join(block.split())
    plain = ROLE.sub(lambda m: " N ", block)
    for notebook, name, _, m in roles(block, default):
        if number(values.get(notebook, {}).get(name)) == n and unit_after(ROLE.sub(" N ", block[m.end():m.end() + 160]), unit):
            return True
    for m in re.finditer(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(?![\w.,]\d)", plain):
        if number(m.group(1)) == n and unit_after(plain[m.end():m.end() + 80], unit):
            return True
    return False


def unnamed_samples(pages, values) -> list[str]:
    found = []
    for page, default, text in pages:
        for block in blocks(text):
            for notebook, name, _, _ in roles(block, default):
                record = sample_of(values.get(notebook, {}), name)
                if record is None:
                    continue
                sizes = [(record["n"], record["unit"])] + ([tuple(record["within"])] if "within" in record else [])
                if not any(names_size(block, default, values, n, unit) for n, unit in sizes):
                    said = " or ".join(f"{n:,} {unit}" for n, unit in sizes)
                    found.append(f"{page}: {name} ({record['quantity']}) without its sample, {said}: "
                                 f"{' '.join(block.split())[:110]}...")
    return found


# -- rule 3: one quantity on one sample, one figure -----------------------------------------------------------------

def printed(value: str, fmt: str) -> str:
    from myst_nb.core.variables import format_plain_text

    return format_plain_text(value, fmt) if fmt else value


def last_digit(shown: str, fmt: str) -> float:
    """The value of one unit in the last printed digit of ``shown`` (in the value's own units)."""
    mantissa, _, exponent = shown.rstrip("%").replace(",", "").strip().lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    unit = 10.0 ** (int(exponent or 0) - decimals)
    return unit / 100 if fmt.endswith("%") else unit


def disagreements(pages, values) -> list[str]:
    shown: dict[tuple[str, str], list] = {}
    for _, default, text in pages:
        for notebook, name, fmt, _ in roles(text, default):
            record = sample_of(values.get(notebook, {}), name)
            if record is not None:
                shown.setdefault((record["quantity"], record["of"]), []).append(
                    (notebook, name, float(values[notebook][name]), last_digit(printed(values[notebook][name], fmt), fmt)))
    found = []
    for (quantity, of), figures in shown.items():
        for a in figures:
            for b in figures:
                if abs(a[2] - b[2]) >= max(a[3], b[3]):
                    found.append(f"{quantity} on {of}: {a[1]} = {a[2]} but {b[1]} = {b[2]}")
    return sorted(set(found))


# -- rule 4: times with their spread ------------------------------------------------------------------------------------

def bare_timings(pages, values) -> list[str]:
    found = []
    for page, default, text in pages:
        for block in blocks(text):
            for sentence in sentences(block):
                named = {name for _, name, _, _ in roles(sentence, default)}
                for notebook, name, _, _ in roles(sentence, default):
                    vals = values.get(notebook, {})
                    if not TIME_NAME.search(name) or exempt(name) or name not in vals:
                        continue
                    runs = number(vals.get(name + "_runs"))
                    if runs is None:
                        found.append(f"{page}: {name} is not glued with glue_timing (no runs, no spread)")
                    elif runs == 1 and not SINGLE_RUN.search(sentence):
                        found.append(f"{page}: {name} is a single run, and the sentence does not say so: {sentence[:100]}")
                    elif runs > 1 and not {name + "_min", name + "_max"} <= named:
                        found.append(f"{page}: {name} without its fastest and slowest run: {sentence[:100]}")
    return sorted(set(found))


# -- the rules fail on the faults they guard against ------------------------------------------------------------------

FAKE = {
    "nb.ipynb": {
        "nb_n_texts": "120", "nb_n_pairs": "7140", "nb_mean_socm": "0.4435", "nb_plain": "0.4435",
        "nb_mean_socm__sample": repr(glued.Sample(7140, "pairs", "all pairs of 120 corpus texts (seed 0)",
                                                  within=(120, "texts")).record("mean SOCM, all-minilm-l6, final layer")),
        "nb_conc": "2.0823", "nb_conc__sample": repr(glued.corpus_texts(200, 0).record("mean concentration ratio")),
        "nb_conc_again": "2.1", "nb_conc_again__sample": repr(glued.corpus_texts(200, 0).record("mean concentration ratio")),
        "nb_seconds": "5.289", "nb_seconds_min": "5.2", "nb_seconds_max": "5.4", "nb_seconds_runs": "3",
        "nb_one_seconds": "8.46", "nb_one_seconds_runs": "1", "nb_bare_seconds": "8.46",
    }
}


def page(text: str):
    return [("page.md", "nb.ipynb", text)]


@pytest.mark.parametrize("text", [
    "all-minilm-l6 has an average SOCM of {glue:text}`nb_plain:.3f`.",   # a statistic glued without its sample
    "The share of pairs is {glue:text}`nb_plain:.2f`.",
])
def test_rule_1_catches_a_statistic_without_its_sample(text):
    assert unrecorded_statistics(page(text), FAKE)


@pytest.mark.parametrize("text", [
    "`all-minilm-l6` has an average SOCM of {glue:text}`nb_mean_socm:.3f`.",               # nb04, fifth edition
    "The mean SOCM is {glue:text}`nb_mean_socm:.3f` on {glue:text}`nb_n_texts` encoders.",  # a size, the wrong unit
    "On 200 corpus texts, the mean SOCM is {glue:text}`nb_mean_socm:.3f`.",               # the wrong size
])
def test_rule_2_catches_a_statistic_without_its_sample_size(text):
    assert unnamed_samples(page(text), FAKE)


@pytest.mark.parametrize("text", [
    "On {glue:text}`nb_n_pairs:,` pairs of {glue:text}`nb_n_texts` corpus texts, the mean SOCM is {glue:text}`nb_mean_socm:.3f`.",
    "Over all pairs of the same 120 corpus texts, all-minilm-l6 averages {glue:text}`nb_mean_socm:.3f`.",
    "| encoder | mean SOCM |\n|---|---|\n| a | {glue:text}`nb_mean_socm:.3f` |",
])
def test_rule_2_accepts_a_named_sample(text):
    if text.startswith("|"):
        text = "The table gives the averages over the 7,140 pairs.\n\n" + text
    assert unnamed_samples(page(text), FAKE) == []


def test_rule_3_catches_two_figures_of_one_quantity_on_one_sample():
    text = "On 200 texts the ratio is {glue:text}`nb_conc:.2f` and {glue:text}`nb_conc_again:.2f` texts."
    assert disagreements(page(text), FAKE)
    assert disagreements(page("On 200 texts: {glue:text}`nb_conc:.1f`, {glue:text}`nb_conc_again:.1f`."), FAKE) == []


@pytest.mark.parametrize("text", [
    "All pairs took {glue:text}`nb_seconds:.1f` s.",                               # ch06, fifth edition
    "All pairs took {glue:text}`nb_one_seconds:.2f` s.",                            # a single run, unsaid
    "All pairs took {glue:text}`nb_bare_seconds:.2f` s (from 5.2 to 5.4 s).",      # glued without its runs
])
def test_rule_4_catches_a_time_without_its_spread(text):
    assert bare_timings(page(text), FAKE)


@pytest.mark.parametrize("text", [
    "All pairs took {glue:text}`nb_seconds:.1f` s (from {glue:text}`nb_seconds_min:.1f` to {glue:text}`nb_seconds_max:.1f` s).",
    "The largest point took {glue:text}`nb_one_seconds:.0f` s in a single run.",
])
def test_rule_4_accepts_a_time_with_its_spread(text):
    assert bare_timings(page(text), FAKE) == []


def test_glue_stat_and_glue_timing_glue_the_records(monkeypatch):
    out = {}
    monkeypatch.setattr(glued, "_glue", lambda name, value: out.__setitem__(name, value))
    texts = glued.corpus_texts(200, 0)
    glued.glue_stat("x", 0.5, glued.all_pairs(texts), "mean SOCM")
    glued.glue_timing("t", [5.3, 5.1, 5.9], scale=2.0)
    assert out == {"x": 0.5, "x__sample": {"n": 19900, "unit": "pairs", "of": "all pairs of 200 corpus texts (seed 0)",
                                            "quantity": "mean SOCM", "within": [200, "texts"]},
                   "t": 10.6, "t_min": 10.2, "t_max": 11.8, "t_runs": 3}
    with pytest.raises(TypeError, match="Sample"):
        glued.glue_stat("x", 0.5, 200, "mean SOCM")
    with pytest.raises(ValueError, match="runs_s"):
        glued.glue_timing("t", [])
    with pytest.raises(ValueError, match="whole number"):
        glued.Sample(0, "texts", "nothing")


# -- the book ----------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def book():
    return prose_pages(), notebook_values()


RULES = {
    "statistics carry their sample": (unrecorded_statistics, "glue these with socm_lib.viz.glued.glue_stat"),
    "samples are named": (unnamed_samples, "name the sample's size where the figure appears"),
    "one figure per quantity and sample": (disagreements, "two figures for one quantity on one sample disagree past "
                                                          "their printed digits"),
    "times come with their spread": (bare_timings, "quote each time as the median with its fastest and slowest run, "
                                                   "or say that it is one run"),
}


@pytest.mark.parametrize("rule", RULES)
def test_the_book_keeps_the_rule(book, rule):
    check, advice = RULES[rule]
    found = check(*book)
    assert not found, f"{advice}: {found}"
