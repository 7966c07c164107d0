"""The engine's modules meet through public names, and its summary tally is a value that merges in any order and any
grouping to the same figures, bit for bit (what socm_lib.distributed and the engine's threads rely on)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from socm_lib.tally import FIELDS, TallySpec

PACKAGE = Path(__file__).resolve().parent.parent / "socm_lib"
ENGINE = ("config", "results", "factors", "block_plan", "block_math", "memory", "block_runner", "tally", "distributed",
          "pairs", "summary", "nuclear", "jacobi")


@pytest.mark.parametrize("module", ENGINE)
def test_engine_modules_import_no_private_name_of_another(module):
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    private = [(node.module, a.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level
               for a in node.names if a.name.startswith("_")]
    assert not private, f"socm_lib/{module}.py imports private names: {private}"


def blocks(rng, count: int) -> list[tuple]:
    """Engine-consumer arguments of ``count`` blocks: values of many magnitudes (so that float sums depend on their
    order), SOCM values tied across blocks (so that the extreme pairs depend on the tie rule)."""
    out, start = [], 0
    for _ in range(count):
        n = int(rng.integers(1, 40))
        positions = start + rng.permutation(n)
        start += n
        d_mu = rng.uniform(0, 1, n) * 10.0 ** rng.integers(-8, 1, n)
        d_sigma = rng.uniform(0, 1.6, n) * 10.0 ** rng.integers(-6, 1, n)
        socm = np.round(rng.uniform(0, 0.9, n), 2)  # ties
        out.append((positions, positions % 97, positions % 89 + 100, d_mu, d_sigma, socm))
    return out


def spec(fine: bool) -> TallySpec:
    edges = {k: np.linspace(0.0, 1.0, 21) for k in FIELDS}
    return TallySpec(edges, np.linspace(0.0, 1.6, 1 << 12) if fine else None, top_k=7)


def figures(summary) -> dict:
    out = {**summary.summary(), "error": summary.median_socm_error}
    for k, h in summary.histograms.items():
        out[f"hist {k}"] = h.counts.tolist()
    for kept in ("most_collapsed", "least_collapsed"):
        for field in ("i", "j", "d_mu", "d_sigma", "socm"):
            out[f"{kept}.{field}"] = getattr(getattr(summary, kept), field).tolist()
    return out


@pytest.mark.parametrize("fine", [False, True], ids=["exact median", "fine-histogram median"])
def test_tallies_merge_to_the_same_figures_in_any_order_and_grouping(fine):
    rng = np.random.default_rng(4)
    parts = blocks(rng, 60)
    s = spec(fine)
    ordered = s.empty()
    for part in parts:
        ordered.add(*part)
    want = figures(ordered.result())
    naive = set()  # a running float sum of the block sums, as a tally without exact sums would keep
    for seed in range(6):
        r = np.random.default_rng(seed)
        order = r.permutation(len(parts))
        naive.add(sum(float(np.sum(parts[k][3], dtype=np.float64)) for k in order))
        cuts = np.sort(r.choice(np.arange(1, len(parts)), size=int(r.integers(1, 12)), replace=False))
        total = s.empty()
        for group in np.split(order, cuts):  # a worker's task merges its blocks, the caller merges the tasks
            task = s.of_block(*parts[group[0]])
            for k in group[1:]:
                task.merge(s.of_block(*parts[k]))
            total.merge(task)
        assert figures(total.result()) == want, seed
    assert len(naive) > 1  # the data is such that the order of a plain float sum shows in its last bits
