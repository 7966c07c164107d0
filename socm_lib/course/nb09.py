r"""Tasks of notebook 9 (benchmarks): read the committed benchmark results (``benchmarks/results/metric.json``)."""

from __future__ import annotations

import sys
from pathlib import Path

from . import Task, register

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def results_folder() -> Path | None:
    """The first ``benchmarks/results`` holding ``metric.json``: the repository's, then one in the working folder or
    any folder above it (the student kit's, from its ``notebooks/`` or elsewhere inside the kit), then the one beside
    the environment the library is installed in (the kit's ``.venv``). None if there is none."""
    here = Path.cwd().resolve()
    candidates = [RESULTS, *(folder / "benchmarks" / "results" for folder in (here, *here.parents)),
                  Path(sys.prefix).resolve().parent / "benchmarks" / "results"]
    return next((folder for folder in candidates if (folder / "metric.json").is_file()), None)


def _metric() -> dict:
    from ..report import load_results

    folder = results_folder()
    if folder is None and "google.colab" not in sys.modules:  # only Colab, without the files, reads them online
        raise FileNotFoundError("benchmarks/results/metric.json was found neither in the repository nor in this "
                                "folder or any above it: run the notebook from the kit's notebooks/ folder.")
    return load_results(folder, names=("metric",), download=folder is None)["metric"]


def _paper_route(ds: dict) -> dict:
    return next(r for r in ds["routes"] if r["route"].startswith("paper") and r.get("status", "ok") == "ok")


def _ratio_768() -> float:
    """socm_pairs' pairs/s over every pair divided by the paper route's pairs/s, synthetic d = 768."""
    ds = _metric()["datasets"]["synthetic d=768"]
    return ds["allpairs"]["pairs_per_s"] / _paper_route(ds)["pairs_per_s"]


def _svd_share_384() -> float:
    """Share of the all-pairs wall time (synthetic d = 384, median run) that the cores spent in the SVDs."""
    profile = _metric()["datasets"]["synthetic d=384"]["allpairs"]["profile"]
    return profile["svd_s"] / profile["total_s"]


register(
    Task(
        id="nb09.1",
        question="From the committed results, how many times faster per pair is socm_pairs than the paper's route "
                 "at d = 768 (synthetic clouds)?",
        expected=_ratio_768,
        rtol=1e-3,
        atol=0.0,
        hint="Divide socm_pairs' pairs per second over all pairs (datasets['synthetic d=768']['allpairs']) by the "
             "paper route's pairs per second on its subsample.",
        wrong_example=1.0,
    ),
    Task(
        id="nb09.2",
        question="What share of the wall time of all pairs (synthetic d = 384, median run) went to the SVDs? "
                 "(a number between 0 and 1; the tables round the seconds too coarsely for four digits: read svd_s "
                 "and total_s from datasets['synthetic d=384']['allpairs']['profile'])",
        expected=_svd_share_384,
        rtol=1e-3,
        atol=1e-4,
        hint="The profile's svd_s is already divided by the number of cores; divide it by the profile's total_s "
             "(the unrounded seconds, not the tables' two decimals).",
        wrong_example=0.0,
    ),
)
