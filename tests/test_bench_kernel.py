"""The committed lane-kernel benchmark (benchmarks/results/kernel.json): which kernel ran, and every figure and
verdict follows from the recorded runs."""

from pathlib import Path

import numpy as np
import pytest

from socm_lib.viz import benchmarking

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"


@pytest.fixture(scope="module")
def kernel():
    return benchmarking.load_results(RESULTS, names=("kernel",))["kernel"]


def test_the_kernel_that_ran_is_recorded(kernel):
    assert kernel["command"] == "python benchmarks/bench_kernel.py" and not kernel["quick"]
    ran = kernel["kernel"]
    assert ran["variant"] in ran["variants_here"] and ran["variant"] in ran["report"]


def test_ratios_are_medians_of_the_recorded_rounds(kernel):
    """Each ratio is the median of at least three rounds' ratios, each LAPACK's time over the kernel's in the same
    round, so that the book quotes it with its fastest and slowest round (sixth edition: no single-run ratio)."""
    for name, e in kernel["end_to_end"].items():
        medians = {r: float(np.median(runs)) for r, runs in e["runs_s"].items()}
        assert medians == pytest.approx(e["median_s"], rel=1e-12), name
        rounds = [a / b for a, b in zip(e["runs_s"]["lapack"], e["runs_s"]["kernel"], strict=True)]
        assert len(rounds) >= 3, f"{name}: {len(rounds)} rounds"
        assert e["ratio_runs"] == pytest.approx(rounds, rel=1e-12), name
        assert e["ratio"] == pytest.approx(float(np.median(rounds)), rel=1e-12), name
    for kind, m in kernel["matrices"].items():
        runs = m["runs_us_per_matrix"]
        assert {r: float(np.median(x)) for r, x in runs.items()} == pytest.approx(m["us_per_matrix"], rel=1e-9), kind
        rounds = [a / b for a, b in zip(runs["lapack"], runs["kernel"], strict=True)]
        assert len(rounds) >= 3 and m["ratio_runs"] == pytest.approx(rounds, rel=1e-9), kind
        assert m["ratio"] == pytest.approx(float(np.median(rounds)), rel=1e-9), kind


def test_verdicts_follow_from_the_figures(kernel):
    t = kernel["targets"]
    worst = max(m["max_rel_diff"] for m in kernel["matrices"].values())
    assert t["exactness"]["max_rel_err"] == worst
    assert t["exactness"]["met"] == (worst <= t["exactness"]["threshold"])
    assert all(m["zero_matrices_equal"] for m in kernel["matrices"].values())
    speed = t["speedup_384"]
    assert speed["ratio"] == kernel["end_to_end"]["socm_pairs d=384"]["ratio"]
    assert speed["ratio_runs"] == kernel["end_to_end"]["socm_pairs d=384"]["ratio_runs"]
    assert speed["met"] == (speed["ratio"] >= speed["threshold"])
    peak = t["peak_memory"]
    assert peak["met"] == (peak["kernel_mib"] <= 1.05 * peak["lapack_mib"] + 4)
    for name, e in kernel["end_to_end"].items():
        if "d_sigma_max_rel_diff" in e:
            assert e["d_sigma_max_rel_diff"] <= 1e-12, name
    assert len(benchmarking.targets_table(t)) == len(t)
