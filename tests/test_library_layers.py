"""The library's layers: the core imports no presentation code, and the paper's numbers live in one module."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from socm_lib import paper

PACKAGE = Path(__file__).resolve().parent.parent / "socm_lib"
CORE = ("checks", "stats", "bures", "pairs", "summary", "reference", "authors_route", "paper")
#: Every module of the package outside ``socm_lib/viz`` (the CLI, the GPU check and the course included).
OUTSIDE_VIZ = sorted(str(p.relative_to(PACKAGE).with_suffix("")) for p in PACKAGE.rglob("*.py")
                     if p.relative_to(PACKAGE).parts[0] != "viz")


def test_import_socm_lib_loads_no_plotting_or_widgets():
    code = ("import sys, socm_lib, socm_lib.viz; "
            "print(sorted(m for m in ('matplotlib', 'ipywidgets') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _imported_modules(path: Path) -> set[str]:
    """Every module a file imports, as absolute dotted names (relative imports resolved)."""
    tree = ast.parse(path.read_text())
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            mod = f"{base}.{node.module}" if node.level and node.module else (node.module or base)
            names.add(mod)
            names |= {f"{mod}.{a.name}" for a in node.names}
    return names


def test_every_module_outside_viz_is_checked():
    assert {"cli", "gpu_check", "report", "course/nb09", "course/__init__"} <= set(OUTSIDE_VIZ)
    assert len(OUTSIDE_VIZ) == sum(1 for p in PACKAGE.rglob("*.py")) - sum(1 for p in (PACKAGE / "viz").rglob("*.py"))


@pytest.mark.parametrize("module", OUTSIDE_VIZ)
def test_lower_layers_import_no_presentation(module):
    imported = _imported_modules(PACKAGE / f"{module}.py")
    bad = {m for m in imported if m.split(".")[0] in ("matplotlib", "ipywidgets") or m.startswith("socm_lib.viz")}
    assert not bad, f"socm_lib/{module}.py imports presentation code: {sorted(bad)}"


@pytest.mark.parametrize("module", CORE)
def test_core_imports_no_models_or_analysis(module):
    imported = _imported_modules(PACKAGE / f"{module}.py")
    upper = ("encoders", "extract", "data", "protocol", "layers", "downstream", "control", "e5_4bit", "q4", "cli", "course")
    bad = {m for m in imported if m.startswith("socm_lib.") and m.split(".")[1] in upper}
    assert not bad, f"socm_lib/{module}.py imports from a higher layer: {sorted(bad)}"


def _published_values() -> set[str]:
    tables = (paper.WIKIPEDIA_SOCM, paper.MSMARCO_PASSAGES_SOCM, paper.MSMARCO_HARD_NEGATIVES_SOCM,
              paper.FIGURE1["socm"])
    values = {repr(r.value) for table in tables for r in table.values()}
    return values | {repr(x) for rho_p in paper.MTEB_SPEARMAN.values() for x in rho_p}


def test_paper_numbers_are_typed_only_in_socm_lib_paper():
    values = _published_values()
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "paper.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, float) and repr(node.value) in values:
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.value}")
    assert not offenders, f"published numbers typed outside socm_lib/paper.py: {offenders}"


def test_registry_reads_paper_numbers():
    from socm_lib import REGISTRY

    for name, reported in paper.WIKIPEDIA_SOCM.items():
        assert REGISTRY[name].paper_socm == reported.value
    assert REGISTRY["all-minilm-l6"].paper_socm is None
    assert all(r.where for r in paper.WIKIPEDIA_SOCM.values())
