"""The benchmark suite runs end to end offline (`python benchmarks/run_all.py --quick`).

Speed is not asserted here (timings belong to the benchmark files, not to tests); what is checked is
that every script finishes, writes well-formed results, and that the figures a quick run can judge
(exactness of socm_pairs against the independent float64 reference, identical extraction values)
hold on its small sizes. The quick run's work is bounded instead of its time: a few dozen texts per
set, one pair per d x d route, two points per scaling sweep.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from socm_lib.viz import benchmarking

ROOT = Path(__file__).resolve().parents[1]
#: A guard against a hang, not a limit on speed: the quick run takes about a minute on an idle 2-core machine.
HANG = 3600


@pytest.fixture(scope="module")
def quick_results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    env = {**os.environ, "TMPDIR": str(tmp)}  # --quick writes under the temporary directory, never over results/
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run_all.py"), "--quick"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=HANG)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    folder = tmp / "socm-book-bench-quick"
    names = (*benchmarking.RESULT_NAMES, "sampling")
    return {name: json.loads((folder / f"{name}.json").read_text()) for name in names}, run.stdout


def test_every_script_writes_a_quick_record(quick_results):
    results, stdout = quick_results
    for name, record in results.items():
        assert record["quick"] is True and record["command"].endswith("--quick"), name
    assert "######## summary" in stdout


def test_quick_metric_run_is_exact_against_the_reference(quick_results):
    metric = quick_results[0]["metric"]
    exact = metric["targets"]["exactness"]
    assert exact["non_finite"] == 0
    assert exact["max_rel_err"] < 1e-9
    for name, ds in metric["datasets"].items():
        assert ds["allpairs"]["pairs_checked"] == ds["allpairs"]["pairs"], name  # every pair checked in a quick run


def test_quick_extraction_matches_sentence_transformers(quick_results):
    values = quick_results[0]["extraction"]["targets"]["values"]
    assert values["max_abs_diff"] <= 1e-5


def test_quick_tables_and_plot_render(quick_results):
    results = quick_results[0]
    assert len(benchmarking.metric_table(results["metric"])) >= 3
    assert len(benchmarking.allpairs_table(results["metric"])) == len(results["metric"]["datasets"])
    assert "summary" in results["scaling"]  # socm_summary streamed at the largest all-pairs point
    assert len(benchmarking.scaling_table(results["scaling"])) == sum(
        len(results["scaling"][s]["points"]) for s in ("texts", "dim")) + 1
    assert benchmarking.plot_scaling(results["scaling"]).axes


def test_quick_sampling_run_reaches_its_targets(quick_results):
    """Every sampled estimate stops at its target half-width (or with every pair drawn), from at least the pilot."""
    sampling = quick_results[0]["sampling"]
    for point in sampling["points"]:
        for target in point["sampled"]:
            for run in target["runs"]:
                assert run["halfwidth"] <= target["target_halfwidth"] or run["pairs"] == point["pairs"], run
                assert run["pairs"] >= min(1000, point["pairs"]) and run["stages"][-1] == run["pairs"]
    assert any(len(run["stages"]) > 1 for p in sampling["points"] for t in p["sampled"] for run in t["runs"])
    assert sampling["coverage"]["intervals"] > 0


def test_quick_work_is_bounded(quick_results):
    """Small sizes, so that the smoke run takes about the same work on any machine, busy or not."""
    results = quick_results[0]
    for name, ds in results["metric"]["datasets"].items():
        assert ds["n_texts"] <= 40, name
        assert all(r["pairs"] == 1 for r in ds["routes"][2:]), name  # one pair per d x d route
    assert all(ds["n_texts"] <= 64 for ds in results["extraction"]["datasets"].values())
    for sweep in ("texts", "dim"):
        assert len(results["scaling"][sweep]["points"]) == 2
        assert all(p["n_texts"] <= 80 for p in results["scaling"][sweep]["points"])
    assert all(p["n_texts"] <= 400 for p in results["sampling"]["points"])
