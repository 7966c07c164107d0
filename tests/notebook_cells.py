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


def alt_texts(cell) -> list[str]:
    """The alt texts of a cell's figures: myst-nb's ``mystnb.image.alt`` and the per-output list ``image_alts``
    (:data:`socm_lib.viz.mystnb.ALTS`), as the book shows them."""
    from socm_lib.viz.mystnb import ALTS

    meta = cell.get("metadata", {})
    return [alt for alt in (meta.get("mystnb", {}).get("image", {}).get("alt"), *meta.get(ALTS, [])) if alt]


def ids(paths=NOTEBOOKS) -> list[str]:
    return [p.stem for p in paths]
