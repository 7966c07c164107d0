"""The command line, ``python -m socm_lib``, run in a subprocess as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import socm_lib
import socm_lib.cli
from socm_lib.viz import fmt

ROOT = Path(__file__).resolve().parent.parent


def cli(*args, timeout=300, offline=True):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "socm_lib", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )


def summary_values(stdout: str) -> dict[str, str]:
    out = {}
    for line in stdout.splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            out[key] = value
    return out


@pytest.fixture(scope="module")
def run_all(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "tmp.csv"
    proc = cli("run", "--encoder", "all-minilm-l6", "--sample", "40", "--device", "cpu", "--out", str(out))
    return proc, out


def test_run_all_pairs_stdout(run_all):
    proc, out = run_all
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "encoder: all-minilm-l6 (contrastive); texts: 40; layer: -1"
    vals = summary_values(proc.stdout)
    assert vals["pairs"] == "780"
    for key in ("mean_socm", "median_socm", "mean_d_mu", "mean_d_sigma", "share_d_sigma_above_1",
                "mean_concentration_ratio"):
        assert key in vals and len(vals[key].split(".")[1]) == 4, key  # fixed 4-decimal printing
    assert lines[-1] == f"wrote 780 rows to {out}"
    frame = pd.read_csv(out)
    assert vals["mean_socm"] == fmt(frame["socm"].mean())
    assert vals["median_socm"] == fmt(frame["socm"].median())
    assert vals["mean_d_sigma"] == fmt(frame["d_sigma"].mean())


def test_run_all_pairs_csv_matches_library(run_all):
    proc, out = run_all
    assert proc.returncode == 0, proc.stderr[-2000:]
    frame = pd.read_csv(out, keep_default_na=False)
    assert list(frame.columns) == ["i", "j", "d_mu", "d_sigma", "socm", "text_i", "text_j"]
    assert len(frame) == 780
    i, j = np.triu_indices(40, k=1)
    np.testing.assert_array_equal(frame["i"], i)
    np.testing.assert_array_equal(frame["j"], j)
    # the texts are the seeded sample of the embedded corpus, indexed as in the CSV
    texts = socm_lib.sample_texts(list(socm_lib.corpus()["text"]), 40, seed=0)
    assert list(frame["text_i"]) == [texts[k] for k in i]
    assert list(frame["text_j"]) == [texts[k] for k in j]
    enc = socm_lib.load_encoder("all-minilm-l6", device="cpu")
    clouds = socm_lib.token_embeddings(enc, texts)
    res = socm_lib.socm_pairs(clouds, device="cpu")
    for col in ("d_mu", "d_sigma", "socm"):
        np.testing.assert_allclose(frame[col], getattr(res, col), rtol=1e-9, atol=1e-12)
    # a few pairs straight from the definitions (numpy, one pair at a time)
    for k in (0, 123, 779):
        X1, X2 = (np.float64(clouds[t]) for t in (i[k], j[k]))
        X1, X2 = X1 / np.linalg.norm(X1.mean(0)), X2 / np.linalg.norm(X2.mean(0))
        A = (X1 - X1.mean(0)) / np.sqrt(len(X1))
        B = (X2 - X2.mean(0)) / np.sqrt(len(X2))
        d_sigma = (np.sum(A * A) + np.sum(B * B) - 2 * np.linalg.svd(A @ B.T, compute_uv=False).sum()) / 4
        d_mu = np.sum((X1.mean(0) - X2.mean(0)) ** 2) / 4
        assert frame["d_sigma"][k] == pytest.approx(d_sigma, rel=1e-9)
        assert frame["socm"][k] == pytest.approx((1 - d_mu) * d_sigma, rel=1e-9)


# The remaining commands run in-process through socm_lib.cli.main (the function behind ``python -m socm_lib``,
# whose return value is the exit status) to save interpreter start-ups; the subprocess tests above and below
# check that the module entry point passes that status on.
def main(capsys, *argv):
    code = socm_lib.cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_run_labelled_pairs(tmp_path, capsys):
    out = tmp_path / "labelled.csv"
    code, stdout, err = main(capsys, "run", "--encoder", "all-minilm-l6", "--pairs", "labelled", "--device", "cpu",
                             "--out", str(out))
    assert code == 0, err[-2000:]
    assert summary_values(stdout)["pairs"] == "360"
    frame = pd.read_csv(out, keep_default_na=False)
    assert len(frame) == 360
    assert list(frame.columns) == ["i", "j", "d_mu", "d_sigma", "socm", "kind", "text_i", "text_j"]
    pairs = socm_lib.labelled_pairs()
    assert list(frame["kind"]) == list(pairs["kind"])
    assert list(frame["text_i"]) == list(pairs["text_a"])
    assert list(frame["text_j"]) == list(pairs["text_b"])
    assert (frame["socm"] >= 0).all() and np.isfinite(frame["socm"]).all()


def test_run_random_pairs(tmp_path, capsys):
    out = tmp_path / "random.csv"
    code, stdout, err = main(capsys, "run", "--encoder", "all-minilm-l6", "--sample", "40", "--pairs", "random:50",
                             "--device", "cpu", "--out", str(out))
    assert code == 0, err[-2000:]
    assert summary_values(stdout)["pairs"] == "50"
    frame = pd.read_csv(out, keep_default_na=False)
    assert len(frame) == 50
    assert (frame["i"] != frame["j"]).all()
    assert frame["i"].between(0, 39).all() and frame["j"].between(0, 39).all()


def test_models_lists_registry(capsys):
    code, stdout, err = main(capsys, "models")
    assert code == 0, err
    lines = stdout.splitlines()
    assert len(lines) == len(socm_lib.REGISTRY)
    for line, (name, spec) in zip(lines, socm_lib.REGISTRY.items()):
        assert line.split()[0] == name
        assert (spec.hf_id or "(offline)") in line
        if spec.paper_socm is not None:
            assert f"paper SOCM {spec.paper_socm:.3f}" in line
    assert "bert" in stdout and "google-bert/bert-base-uncased" in stdout


def test_unknown_encoder_exit_code_2(capsys):
    code, stdout, err = main(capsys, "run", "--encoder", "no-such-encoder", "--sample", "5")
    assert code == 2
    assert err.startswith("error: Unknown encoder 'no-such-encoder'")
    assert stdout == ""


def test_bert_without_network_fails_fast():
    proc = cli("run", "--encoder", "bert", "--sample", "5", timeout=120)
    assert proc.returncode == 2, (proc.stdout, proc.stderr[-2000:])
    err = proc.stderr
    assert "'bert'" in err and "google-bert/bert-base-uncased" in err
    assert "network" in err
    assert "Traceback" not in err


def test_bad_pairs_option_exit_code_2(capsys):
    code, _, err = main(capsys, "run", "--encoder", "all-minilm-l6", "--sample", "5", "--pairs", "some",
                        "--device", "cpu")
    assert code == 2
    assert "Unknown --pairs 'some'" in err
