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

from notebook_cells import NOTEBOOKS, ids, read

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
