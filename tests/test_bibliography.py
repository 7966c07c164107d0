"""The bibliography is in the order its page claims, and the introduction lists every result quoted without proof.

* ``book/bibliography.md`` says the works are "in alphabetical order of the first author". The order is the one of
  the pybtex style that ``_config.yml`` selects (``bibtex_default_style``; sphinxcontrib-bibtex sorts with it): the
  cited entries, sorted by that style, have their first authors' surnames, as a reader sees them (LaTeX decoded,
  accents and case ignored), in alphabetical order. pybtex's ``plain`` style, which the sixth edition used, sorts on
  the LaTeX source and put Hájek after Horn and the four authors written in braces after Zhou.
* The introduction's "A few standard results are quoted without proof" lists the sources of those results. Every
  reference that a chapter or a notebook cites is in that list, or is declared in ``NOT_QUOTED_RESULTS`` below as a
  source of another kind, with the reason. A new theorem quoted from a new source then cannot miss the list, as
  Hoeffding, Hájek, Cochran, Chow–Robbins, Sedransk–Meyer, Wilson and the bootstrap did in the sixth edition.
"""

from __future__ import annotations

import re
import sys

import pytest
import yaml
from pybtex.database import parse_file
from pybtex.plugin import find_plugin

from notebook_cells import NOTEBOOKS, ROOT, read

sys.path.insert(0, str(ROOT / "scripts"))
import book_bibliography  # noqa: E402  (the local Sphinx extension that registers the book's style)

BOOK = ROOT / "book"
CITE = re.compile(r"\{cite:[a-z]+\}`([^`]+)`")
#: Cited references that are not the source of a result the book quotes without proof, and what they are instead.
NOT_QUOTED_RESULTS = {
    "hara2026socm": "the source paper, whose findings are quoted as such",
    "hara2026code": "the paper's released code",
    "bhatia2019bures": "a survey of proofs of identities the book proves itself (chapters 5 and 6)",
    "dowson1982frechet": "the Gaussian W2 formula, which chapter 5 proves",
    "olkin1982distance": "the Gaussian W2 formula, which chapter 5 proves",
    "givens1984class": "the Gaussian W2 formula, which chapter 5 proves",
    "gelbrich1990formula": "the Gelbrich bound, which an exercise of chapter 5 proves",
    "takatsu2011wasserstein": "further reading on the geometry of Gaussian measures",
    "harvey2023procrustes": "related work (shape metrics as Bures distances)",
    "demmel1990accurate": "the LAPACK algorithm that the kernel re-implements and is tested against",
    "heusel2017fid": "the FID formula, a d x d route the book measures",
    "seitzer2020fid": "software (pytorch-fid)",
    "mathiasen2020fastfid": "software (FastFID), whose shortcut the book measures",
    "flamary2021pot": "software (POT), used as a test oracle",
    "pytorch2024svd": "software documentation",
    "nvidia2024cusolver": "software documentation",
    "dask2026distributed": "software documentation",
    "cliff1993dominance": "Cliff's delta, an effect size that chapter 9 defines where it uses it",
    "zhang2020bertscore": "a model or method the book names",
    "khattab2020colbert": "a model or method the book names",
    "gao2021simcse": "a model the book names",
    "li2023gte": "a model the book names",
    "wang2022e5": "a model the book names",
    "reimers2019sbert": "a model the book names",
    "devlin2019bert": "a model the book names",
    "wang2020minilm": "a model the book names",
    "song2020mpnet": "a model the book names",
    "nussbaum2024nomic": "a model the book names",
    "muennighoff2023mteb": "a benchmark",
    "enevoldsen2025mmteb": "a benchmark",
    "bajaj2016msmarco": "a data set",
    "cer2017stsb": "a data set",
    "ethayarajh2019contextual": "an empirical finding quoted as such",
    "ba2016layernorm": "the definition of a layer the book describes",
    "yoda2024gausscse": "related work (sentences as Gaussians)",
    "zhou2025length": "related work (length-induced collapse)",
    "wang2026generated": "related work",
    "konior2026riemannian": "related work",
}


def cited(text: str) -> set[str]:
    return {key.strip() for m in CITE.finditer(text) for key in m.group(1).split(",")}


def inventory(intro: str) -> set[str]:
    """The references cited in the introduction's list of results quoted without proof (its paragraph and list)."""
    start = intro.index("quoted without proof")
    end = re.compile(r"\n\n(?![-\s])").search(intro, intro.index("\n\n", start) + 2)
    return cited(intro[start:end.start() if end else len(intro)])


def cited_elsewhere() -> dict[str, list[str]]:
    """``key -> pages`` for every reference cited by a chapter or a notebook's Markdown."""
    where: dict[str, list[str]] = {}
    pages = [(p.name, p.read_text()) for p in sorted(BOOK.glob("ch*.md"))]
    pages += [(p.name, "\n".join(c.source for c in read(p).cells if c.cell_type == "markdown")) for p in NOTEBOOKS]
    for name, text in pages:
        for key in cited(text):
            where.setdefault(key, []).append(name)
    return where


def unlisted(intro: str) -> dict[str, list[str]]:
    listed = inventory(intro)
    return {k: v for k, v in sorted(cited_elsewhere().items()) if k not in listed and k not in NOT_QUOTED_RESULTS}


def test_the_inventory_rule_fails_on_the_sixth_editions_introduction():
    intro = (BOOK / "intro.md").read_text()
    old = re.sub(r"\n- from sampling theory and statistics.*?(?=\n\n)", "", intro, flags=re.S)
    assert old != intro
    assert {"hoeffding1948ustatistics", "hajek1960limiting", "cochran1977sampling"} <= set(unlisted(old))


def test_every_quoted_result_is_in_the_introductions_inventory():
    missing = unlisted((BOOK / "intro.md").read_text())
    assert not missing, ("references cited where a result is quoted without proof, but neither in intro.md's list "
                         f"'A few standard results are quoted without proof' nor in NOT_QUOTED_RESULTS: {missing}")


def test_every_declared_reference_is_cited():
    stale = sorted(set(NOT_QUOTED_RESULTS) - set(cited_elsewhere()))
    assert not stale, f"NOT_QUOTED_RESULTS declares references that no chapter or notebook cites: {stale}"


# -- The order of the bibliography -----------------------------------------------------------------------------------

def first_author(entry) -> str:
    """The first author's surname as the page shows it, accents and case folded: ``'H{\\'a}jek'`` gives ``hajek``."""
    person = entry.persons["author"][0]
    return book_bibliography.folded(" ".join(str(p) for p in person.rich_prelast_names + person.rich_last_names))


def sorted_by(style_name: str) -> list[str]:
    """The first authors of the cited entries, in the order of the pybtex style ``style_name``."""
    book_bibliography.register()
    keys = set(cited_elsewhere()) | cited((BOOK / "intro.md").read_text()) | cited((BOOK / "notation.md").read_text())
    bibliography = parse_file(str(BOOK / "references.bib"))
    style = find_plugin("pybtex.style.formatting", style_name)()
    return [first_author(e) for e in style.sort([bibliography.entries[k] for k in sorted(keys)])]


def out_of_order(names: list[str]) -> list[str]:
    return [f"{a} before {b}" for a, b in zip(names, names[1:]) if a > b]


def test_the_order_rule_fails_on_pybtex_plain():
    wrong = out_of_order(sorted_by("plain"))
    assert "horn before hajek" in wrong and any(w.startswith("zhou before") for w in wrong)


def test_the_bibliography_is_in_alphabetical_order_of_the_first_author():
    assert "alphabetical order of the first author" in (BOOK / "bibliography.md").read_text()
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]
    assert config["local_extensions"]["book_bibliography"] == "scripts/"  # the extension that registers the style
    wrong = out_of_order(sorted_by(config["config"]["bibtex_default_style"]))
    assert not wrong, f"the bibliography style of _config.yml does not sort by first author: {wrong}"


@pytest.mark.parametrize("latex, folded", [("H{\\'a}jek", "hajek"), ("{NVIDIA Corporation}", "nvidia corporation"),
                                           ("{tohoku-nlp}", "tohoku-nlp"), ("Lo{\\\"\\i}c", "loic")])
def test_names_are_compared_as_a_reader_sees_them(latex, folded):
    from pybtex.database import Person

    assert book_bibliography.folded(" ".join(str(p) for p in Person(latex).rich_last_names)) == folded
