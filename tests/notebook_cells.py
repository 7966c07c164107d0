"""Reading the committed notebooks for the structural tests (prose, installs, labs)."""

from __future__ import annotations

from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("nb*.ipynb"))


def read(path: Path):
    return nbformat.read(path, as_version=4)


def tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def ids(paths=NOTEBOOKS) -> list[str]:
    return [p.stem for p in paths]
