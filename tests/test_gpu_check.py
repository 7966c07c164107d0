"""``python -m socm_lib gpu-check`` on a CPU-only machine: float16 skipped, pair paths compared, JSON report."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from socm_lib import gpu_check as gc

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def report():
    return gc.gpu_check("untrained-minilm-l6", n_texts=12, device="cpu")


def test_cpu_report_says_cpu_only_and_skips_float16(report):
    assert report["device"] == "cpu" and report["gpu"] is None and report["pairs"] == 66
    assert "skipped" in report["checks"]["float16_vs_float32"]
    assert report["encoder"]["name"] == "untrained-minilm-l6" and report["thresholds"] == gc.THRESHOLDS
    text = gc.summary(report)
    assert "CPU only" in text and "float16_vs_float32: skipped" in text and f"verdict: {report['verdict']}" in text
    assert report["timings_s"]["extract_float32"] > 0 and report["timings_s"]["pairs_cpu_default"] > 0


def test_pair_paths_are_compared_when_the_torch_backend_exists(report):
    import inspect

    from socm_lib import socm_pairs

    check = report["checks"]["pairs_device_vs_cpu"]
    if "backend" in inspect.signature(socm_pairs).parameters:
        assert check["pass"] and check["socm_max_rel"] <= gc.THRESHOLDS["pairs_max_rel"]
        assert report["verdict"] == "PASS"
    else:
        assert "no backend= parameter" in check["skipped"] and report["verdict"] == "NOTHING COMPARED"


def test_differences_can_fail():
    a = np.array([0.5, 0.25, 0.0])
    assert gc._relative(a, a) == 0.0
    assert gc._relative(a + np.array([0, 1e-3, 0]), a) == pytest.approx(2e-3)
    assert gc._relative(np.ones(2), np.zeros(2)) == 1.0


def test_statistics_of_float16_clouds_differ_measurably():
    """The float16 statistics check sees a float16 rounding of the clouds (what autocast does to activations)."""
    rng = np.random.default_rng(0)
    clouds = [rng.normal(size=(n, 16)).astype(np.float32) + 3 for n in (5, 9)]
    m32, c32 = gc._statistics(clouds)
    m16, c16 = gc._statistics([c.astype(np.float16).astype(np.float32) for c in clouds])
    assert np.allclose(np.linalg.norm(m32, axis=1), 1)
    assert 0 < np.max(np.abs(m16 - m32)) < gc.THRESHOLDS["float16_mean_max_abs"]
    assert 0 < np.max(np.abs(c16 - c32) / c32) < gc.THRESHOLDS["float16_concentration_ratio_max_rel"]


def test_cli_writes_the_json_report(tmp_path):
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = tmp_path / "check.json"
    run = subprocess.run([sys.executable, "-m", "socm_lib", "gpu-check", "--n-texts", "10", "--out", str(out)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    report = json.loads(out.read_text())
    assert report["encoder"]["name"] == "all-minilm-l6" and report["texts"] == 10
    assert f"verdict: {report['verdict']}" in run.stdout
    assert report["verdict"] == "PASS", report  # the device agrees with the CPU reference (on a CPU: with itself)
    assert run.returncode == 0
    if torch.cuda.is_available():  # the default device is the GPU: its float16 check runs
        assert report["device"].startswith("cuda") and "CPU only" not in run.stdout
        assert "pass" in report["checks"]["float16_vs_float32"]
    else:
        assert report["device"] == "cpu" and "CPU only" in run.stdout
