"""The library's layers: every module has one layer in ``socm_lib.LAYERS``, every import points down or sideways,
no import chain is a cycle, the core imports no presentation code, and the paper's numbers live in one module."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from socm_lib import LAYERS, paper

PACKAGE = Path(__file__).resolve().parent.parent / "socm_lib"
#: Every module of the package outside ``socm_lib/viz`` (the CLI, the GPU check and the course included).
OUTSIDE_VIZ = sorted(str(p.relative_to(PACKAGE).with_suffix("")) for p in PACKAGE.rglob("*.py")
                     if p.relative_to(PACKAGE).parts[0] != "viz")


def test_import_socm_lib_loads_no_plotting_or_widgets():
    code = ("import sys, socm_lib, socm_lib.viz; "
            "print(sorted(m for m in ('matplotlib', 'ipywidgets') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _is_submodule(folder: Path, name: str) -> bool:
    """Whether ``folder`` holds a module ``name``: a ``.py`` file, a subpackage or a compiled extension."""
    return (folder / f"{name}.py").is_file() or (folder / name).is_dir() or any(folder.glob(f"{name}.*.so"))


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
            folder = PACKAGE.parent.joinpath(*mod.split("."))
            if node.module or not all(_is_submodule(folder, a.name) for a in node.names):
                names.add(mod)  # ``from . import name`` of submodules only does not run into the package's front
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


#: Every module of the package, ``viz`` and ``course`` included, as its path without ``.py`` (``course/nb09``).
MODULES = sorted(str(p.relative_to(PACKAGE).with_suffix("")) for p in PACKAGE.rglob("*.py"))


def _layer(module: str) -> int:
    """The layer ``socm_lib.LAYERS`` gives a module (a subpackage's modules share the subpackage's entry)."""
    return LAYERS[module.split("/")[0]]


def _module_of(dotted: str) -> str | None:
    """The package module a dotted import name refers to (``socm_lib.course`` -> ``course/__init__``), if any."""
    if dotted != "socm_lib" and not dotted.startswith("socm_lib."):
        return None
    rel = Path(*dotted.split(".")[1:])
    for candidate in (rel.with_suffix(".py") if rel.parts else None, rel / "__init__.py"):
        if candidate is not None and (PACKAGE / candidate).is_file():
            return str(candidate.with_suffix(""))
    return None


def _import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Each module's imports of other package modules, wherever in the file they are (a function's too)."""
    return {m: {t for t in map(_module_of, _imported_modules(package / f"{m}.py")) if t and t != m} for m in MODULES}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (a list of modules, the first repeated at the end), or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m):
        state[m] = 1
        path.append(m)
        for t in sorted(graph.get(m, ())):
            if state.get(t) == 1:
                return path[path.index(t):] + [t]
            if t not in state and (found := visit(t)):
                return found
        state[m] = 2
        path.pop()
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_layer_table_covers_every_module_and_names_only_modules():
    assert all(m.split("/")[0] in LAYERS for m in MODULES), [m for m in MODULES if m.split("/")[0] not in LAYERS]
    tops = {m.split("/")[0] for m in MODULES}
    assert set(LAYERS) == tops, f"entries without a module: {sorted(set(LAYERS) - tops)}"
    assert {"memo", "report", "q4", "e5_4bit", "gpu_check", "cli"} <= set(LAYERS)


@pytest.mark.parametrize("module", MODULES)
def test_every_import_points_down_or_sideways(module):
    up = {t for t in _import_graph()[module] if _layer(t) > _layer(module)}
    assert not up, f"socm_lib/{module}.py (layer {_layer(module)}) imports from higher layers: " + ", ".join(
        f"{t} (layer {_layer(t)})" for t in sorted(up))


def test_no_import_cycle():
    cycle = _cycle(_import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_cycles():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_model_unavailable_error_is_importable_from_where_users_import_it():
    from socm_lib import ModelUnavailableError
    from socm_lib.encoders import ModelUnavailableError as from_encoders

    assert from_encoders is ModelUnavailableError and issubclass(ModelUnavailableError, OSError)


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


def _public_without_docstring() -> list[str]:
    """Every public function, class, method and property of the package (``course`` aside) that has no docstring."""
    import importlib
    import inspect

    missing = []
    for module in MODULES:
        if module.startswith("course") or module.endswith("__main__"):
            continue
        name = "socm_lib" + "".join(f".{part}" for part in module.split("/") if part != "__init__")
        mod = importlib.import_module(name)
        for attr, obj in vars(mod).items():
            if attr.startswith("_") or getattr(obj, "__module__", None) != name:
                continue
            if inspect.isfunction(obj) or inspect.isclass(obj):
                members = vars(obj).items() if inspect.isclass(obj) else ()
                missing += [f"{name}.{attr}"] if not (obj.__doc__ or "").strip() else []
                missing += [f"{name}.{attr}.{m}" for m, f in members if not m.startswith("_")
                            and (inspect.isfunction(f) or isinstance(f, property)) and not (f.__doc__ or "").strip()]
    return missing


def test_every_public_name_has_a_docstring():
    assert _public_without_docstring() == []
