"""The library as careful at its edges as at its core (issue 42): files written atomically in UTF-8 whatever the
locale, statistics that refuse NaN and impossible inputs, helpers that never return impossible numbers, the torch
Jacobi route exact at every float64 scale, extraction edge cases and one Unicode form for comparing texts. Each test
here failed before the change it guards (the explorer's files are tested in tests/test_explorer.py)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import socm_lib
from socm_lib import checks, cli, control, data, downstream, jacobi, nuclear, q4, reference
from socm_lib.authors_route import regulariser_excess
from socm_lib.block_plan import all_pairs, condensed_pairs
from socm_lib.results import PairResult

ROOT = Path(__file__).resolve().parent.parent
NFC, NFD = "Le café de Zoë.", unicodedata.normalize("NFD", "Le café de Zoë.")


# ------------------------------------------------------------------ files: UTF-8 whatever the locale, errors that
# name the file asked for


def test_the_cli_writes_accented_texts_under_an_ascii_locale(tmp_path):
    """LC_ALL=C with UTF-8 mode off (Python turns it on by itself for the C locale): the locale's encoding is ASCII,
    and the CSV was written with it, so the run died after computing every pair."""
    texts = tmp_path / "textes.txt"
    texts.write_text(f"{NFC}\nUne crème brûlée à Noël.\nNaïve façade, déjà vu.\n", encoding="utf-8")
    out = tmp_path / "out.csv"
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    probe = subprocess.run([sys.executable, "-c", "import locale; print(locale.getpreferredencoding(False))"],
                           env=env, capture_output=True, text=True)
    assert probe.stdout.strip().lower() in ("ansi_x3.4-1968", "ascii", "us-ascii")  # the locale really is ASCII
    proc = subprocess.run([sys.executable, "-m", "socm_lib", "run", "--encoder", "untrained-minilm-l6", "--texts",
                           str(texts), "--device", "cpu", "--out", str(out)],
                          cwd=tmp_path, env=env, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-2000:]
    frame = pd.read_csv(out, encoding="utf-8")
    assert len(frame) == 3 and NFC in set(frame["text_i"]) | set(frame["text_j"])


def test_a_failed_write_names_the_file_asked_for_not_its_hidden_temporary(tmp_path, monkeypatch):
    target = tmp_path / "report.csv"
    target.write_text("earlier\n", encoding="utf-8")
    real_open = os.open

    def full_disk(path, *args, **kwargs):
        if str(path).endswith(".part"):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(checks.os, "open", full_disk)
    with pytest.raises(OSError) as caught:
        with checks.output_file(target, "--out") as handle:
            handle.write("new\n")
    message = str(caught.value)
    assert f"--out {target}: could not be written (No space left on device)" in message
    assert ".part" not in message and "the earlier file there is unchanged" in message
    assert target.read_text(encoding="utf-8") == "earlier\n"


# ------------------------------------------------------------------ statistics: NaN, lengths, types, seeds, groups


@pytest.mark.parametrize("call", [
    lambda: downstream.separation([np.nan, np.nan], [1, 2]),
    lambda: downstream.cliffs_delta([np.nan, 5], [1, 2]),
    lambda: downstream.spearman([1.0, np.nan, 3.0], [1, 2, 3]),
    lambda: downstream.spearman([1.0, 2.0, np.inf], [1, 2, 3]),
    lambda: downstream.bootstrap_ci([1.0, 2.0, np.inf]),
], ids=["separation", "cliffs_delta", "spearman NaN", "spearman inf", "bootstrap inf"])
def test_statistics_refuse_nan_and_inf_instead_of_plausible_numbers(call):
    with pytest.raises(ValueError, match=r"holds NaN or inf \(first at position \d"):
        call()


def test_spearman_p_has_its_limit_at_a_perfect_rank_correlation_and_refuses_impossible_rho():
    assert downstream.spearman_p_from_rho(1.0, 10) == 0.0 and downstream.spearman_p_from_rho(-1.0, 10) == 0.0
    assert 0 < downstream.spearman_p_from_rho(1 - 1e-12, 10) < 1e-30  # continuous at the limit
    assert downstream.spearman_p_from_rho(0.5, 10) == pytest.approx(0.1411, abs=1e-4)
    for rho, n, exc, message in [(1.5, 10, ValueError, r"rho = 1.5 is outside -1.0 <= rho <= 1.0"),
                                 (np.nan, 10, ValueError, "rho = nan"),
                                 (0.5, 2, ValueError, r"n = 2 is outside 3 <= n"),
                                 ("0.5", 10, TypeError, "rho must be a number"),
                                 (0.5, 10.0, TypeError, "n must be an integer")]:
        with pytest.raises(exc, match=message):
            downstream.spearman_p_from_rho(rho, n)


@pytest.mark.parametrize("call, exc, message", [
    (lambda: downstream.spearman([1, 2, 3], [1, 2]), ValueError, "y holds 2 value"),
    (lambda: downstream.spearman([1, 2, 3, 4], [1, 2, 3]), ValueError, "x has 4 values but y has 3"),
    (lambda: downstream.spearman([1, 1, 1], [1, 2, 3]), ValueError, "x is constant"),
    (lambda: downstream.spearman_ci([1, 2, 3], [1, 2]), ValueError, "x has 3 values but y has 2"),
    (lambda: downstream.separation(["a", "b"], [1, 2]), TypeError, "a has dtype <U1, not numbers"),
    (lambda: downstream.cliffs_delta([1, 2], "12"), TypeError, "b must be a list or 1-D array of numbers"),
    (lambda: downstream.cliffs_delta([1, 2], [[1, 2]]), ValueError, r"b has shape \(1, 2\); pass a 1-D sample"),
    (lambda: downstream.separation([1, 2j], [1, 2]), TypeError, "a holds complex numbers"),
    (lambda: downstream.separation(np.array([1, None], dtype=object), [1]), TypeError, "a holds None"),
    (lambda: downstream.bootstrap_ci([1, 2, 3], seed=-1), ValueError, "seed = -1 is outside 0 <= seed"),
    (lambda: downstream.bootstrap_ci([1, 2, 3], seed=1.5), TypeError, "seed must be an integer"),
    (lambda: downstream.bootstrap_ci([1, 2, 3], level="0.95"), TypeError, "level must be a number"),
    (lambda: downstream.bootstrap_ci([1, 2, 3], stat="mean"), TypeError, "stat must be a function"),
    (lambda: downstream.bootstrap_ci([1, 2, 3], stat=len), TypeError, "stat='len' could not be applied"),
    (lambda: downstream.bootstrap_diff_ci([1, 2], [1]), ValueError, "b holds 1 value"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_statistics_check_lengths_types_and_seeds_at_the_door(call, exc, message):
    with pytest.raises(exc, match=message):
        call()


FRAME = pd.DataFrame({"kind": ["a", "b", "b", "c", "c"], "socm": [0.1, 0.2, 0.3, 0.4, 0.5],
                      "d_mu": [0.1] * 5, "d_sigma": [0.2] * 5})


@pytest.mark.parametrize("call, exc, message", [
    (lambda: downstream.kind_ci_table(FRAME, "kind"), ValueError,
     r"frame\['socm'\] where kind == 'a' holds 1 value\(s\); at least 2"),
    (lambda: downstream.kind_ci_table(FRAME, "nope"), ValueError, r"frame has no column\(s\) \['nope'\]"),
    (lambda: downstream.kind_ci_table(FRAME, "kind", ["b"], columns=("cosine",)), ValueError,
     r"no column\(s\) \['cosine'\]"),
    (lambda: downstream.kind_ci_table(FRAME.to_dict(), "kind"), TypeError, "frame must be a pandas DataFrame"),
    (lambda: downstream.kind_contrasts(FRAME, "kind", [("b", "zzz")]), ValueError,
     r"frame\['kind'\] has no row 'zzz'"),
    (lambda: downstream.kind_contrasts(FRAME, "kind", [("b", "c")], seed=-3), ValueError, "seed = -3"),
    (lambda: downstream.kind_contrasts(FRAME, "kind", "bc"), TypeError, r"list of \(kind_a, kind_b\) pairs"),
], ids=["one-pair group", "missing by", "missing column", "not a frame", "unknown kind", "seed", "contrasts"])
def test_per_kind_tables_name_the_group_or_column_at_fault(call, exc, message):
    with pytest.raises(exc, match=message):
        call()


def test_per_kind_tables_still_compute_on_good_input():
    table = downstream.kind_ci_table(FRAME, "kind", ["b", "c"], n_resamples=200)
    assert table["pairs"].tolist() == [2, 2] and table["mean_socm"].tolist() == pytest.approx([0.25, 0.45])
    contrast = downstream.kind_contrasts(FRAME, "kind", [("c", "b")], n_resamples=200)
    assert contrast.loc[0, "diff"] == pytest.approx(0.2) and contrast.loc[0, "cliffs_delta"] == 1.0


# ------------------------------------------------------------------ helpers that returned impossible numbers


def test_condensed_pairs_refuses_positions_outside_the_pairs():
    for positions, exc, message in [([10, 11, 100], ValueError, "holds 100, outside 0 <= k < 10"),
                                    ([-1], ValueError, "holds -1, outside 0 <= k < 10"),
                                    ([3.7], TypeError, "dtype float64; pass integer positions"),
                                    ([[1, 2]], ValueError, r"shape \(1, 2\)")]:
        with pytest.raises(exc, match=message):
            condensed_pairs(positions, 5)
    every = np.arange(4950)
    np.testing.assert_array_equal(condensed_pairs(every, 100), all_pairs(100))  # the reference: every pair in order
    np.testing.assert_array_equal(condensed_pairs(np.array([], dtype=np.int64), 5), np.zeros((0, 2), np.int64))


def test_bures_refuses_complex_object_and_empty_matrices_and_holds_at_every_scale():
    S = np.array([[2.0, 0.5], [0.5, 1.0]])
    with pytest.raises(TypeError, match="S1 is complex"):
        socm_lib.bures_wasserstein_sq(S * (1 + 1j), S)  # the imaginary part was dropped: 0.0
    with pytest.raises(TypeError, match="S has dtype object"):
        socm_lib.psd_sqrt(S.astype(object))
    with pytest.raises(ValueError, match=r"S is an empty \(0, 0\) matrix"):
        socm_lib.psd_sqrt(np.zeros((0, 0)))
    T = np.array([[1.0, -0.3], [-0.3, 0.5]])
    value = socm_lib.bures_wasserstein_sq(S, T)
    for c in (1e-300, 1e-200, 1e200, 1e300):  # homogeneous of degree 1; R S2 R overflowed or vanished
        assert socm_lib.bures_wasserstein_sq(S * c, T * c) / c == pytest.approx(value, rel=1e-12)
    with pytest.raises(ValueError, match="exceeds the largest float64"):
        socm_lib.gaussian_w2_sq([1e200, 0.0], S, [0.0, 0.0], S)


def test_regulariser_excess_refuses_a_centred_cloud():
    rng = np.random.default_rng(0)
    x1, x2 = rng.normal(size=(6, 8)), rng.normal(size=(5, 8)) + 1.0
    with pytest.raises(ValueError, match="x1 has a mean whose norm is .* of its tokens' RMS norm"):
        regulariser_excess(x1 - x1.mean(axis=0), x2)  # its "exact" was 1e7, outside its own bounds
    with pytest.raises(ValueError, match="eps = -1.0"):
        regulariser_excess(x1 + 1.0, x2, eps=-1.0)
    e = regulariser_excess(x1 + 1.0, x2)
    assert e.lower <= e.exact <= e.upper
    with pytest.raises(ValueError, match="X1 has a mean whose norm"):
        reference.lowrank_pair(x1 - x1.mean(axis=0), x2)


def test_spread_of_a_huge_cloud_is_refused_not_an_overflow_traceback():
    with pytest.raises(ValueError, match="spread larger than the largest float64"):
        socm_lib.spread(np.array([[1e200, 0.0], [3e200, 1.0]]))  # OverflowError from float ** 2


@pytest.mark.parametrize("call, message", [
    (lambda: control.predicted_mean_cosine(2, 2, k=40), r"k = 40.0 shared occurrences exceed sqrt\(q1 q2\)"),
    (lambda: control.predicted_concentration(10, 3), r"q = sum of squared token counts must lie between"),
    (lambda: control.predicted_concentration(10, 101), r"between the length n and n\^2"),
    (lambda: control.predicted_concentration(np.inf), "n must hold finite whole numbers"),
    (lambda: control.predicted_mean_cosine(5, 5, k=-1), "k must hold finite whole numbers >= 0"),
    (lambda: control.shares(np.nan), "sigma_type = nan"),
    (lambda: control.predicted_concentration(5, beta=np.nan), "beta = nan"),
], ids=["k > sqrt(q1 q2)", "q < n", "q > n^2", "n inf", "k < 0", "shares nan", "beta nan"])
def test_the_controls_predictions_refuse_impossible_counts(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_controls_predicted_cosine_stays_a_cosine_for_every_possible_count():
    rng = np.random.default_rng(3)
    for _ in range(200):
        m1, m2 = rng.integers(0, 4, 6), rng.integers(0, 4, 6)  # occurrences of 6 token ids in each text
        m1[0] += 1
        m2[0] += 1
        n1, n2, q1, q2, k = m1.sum(), m2.sum(), m1 @ m1, m2 @ m2, m1 @ m2
        cos = control.predicted_mean_cosine(n1, n2, k, q1, q2)
        assert -1 <= cos <= 1 + 1e-12
        assert control.predicted_concentration(n1, q1) >= 0


def test_measured_statistics_refuse_what_concentration_ratio_refuses():
    X = np.random.default_rng(1).normal(size=(5, 4))
    with pytest.raises(ValueError, match="clouds\\[0\\] contains NaN"):
        control.measured_statistics([np.full((3, 4), np.nan)])
    with pytest.raises(ValueError, match="a mean whose norm"):
        control.measured_statistics([X - X.mean(axis=0)])
    got = control.measured_statistics([X + 1.0, X * 2 + 3.0])
    assert got["concentration"][0] == pytest.approx(socm_lib.concentration_ratio(X + 1.0))
    assert got["cosine"][0, 0] == pytest.approx(1.0)


def test_summary_range_must_be_a_pair_of_numbers():
    clouds = [np.random.default_rng(k).normal(size=(5, 4)) + 1 for k in range(4)]
    for given in ("05", b"05", (0.0,), (0.0, "1"), (True, 1.0)):
        with pytest.raises(TypeError, match=r"range\['socm'\] must be a pair \(low, high\) of numbers"):
            socm_lib.socm_summary(clouds, range={"socm": given})  # "05" was read as edges 0 ... 5


def test_q4_compare_refuses_empty_results_and_what_is_not_one():
    empty = PairResult(i=np.zeros(0, int), j=np.zeros(0, int), d_mu=np.zeros(0), d_sigma=np.zeros(0),
                       socm=np.zeros(0))
    with pytest.raises(ValueError, match="reference holds no pairs"):
        q4.compare(empty, empty)
    one = PairResult(i=np.zeros(1, int), j=np.ones(1, int), d_mu=np.full(1, 0.1), d_sigma=np.full(1, 0.2),
                     socm=np.full(1, 0.18))
    with pytest.raises(TypeError, match="other must be a PairResult"):
        q4.compare(one, {"socm": []})
    out = q4.compare(one, one)
    assert out["shift_socm"] == 0.0 and np.isnan(out["spearman_socm"])


def test_labelled_frame_with_no_kind_names_the_argument_passed():
    with pytest.raises(ValueError, match="kinds is empty, which would select no pair"):
        downstream.labelled_frame("untrained-minilm-l6", kinds=[])  # it named texts_a, never passed
    with pytest.raises(TypeError, match="kinds must hold kind names"):
        data.labelled_pairs([["negation"]])


# ------------------------------------------------------------------ the torch Jacobi route and the nuclear norms


@pytest.mark.parametrize("top", [1e-310, 4e-320, 2.2250738585072014e-308, 1.5e308, 1.7e308, 1e300])
def test_jacobi_is_exact_at_every_float64_scale(top):
    """The largest entry subnormal or near the largest float64: torch.ldexp by 2^±1029 overflowed, giving NaN."""
    rng = np.random.default_rng(7)
    G = np.ldexp(np.round(rng.uniform(-1, 1, size=(2, 9, 11)) * 2**10), -20)  # 10 bits: exact among subnormals
    G[:, 0, 0] = 1.0  # the largest entry of every matrix, and singular values that stay below 1.1 top
    G = G * top
    want = np.linalg.svd(G, compute_uv=False)
    got = np.sort(jacobi.batched_svdvals(torch.from_numpy(G)).numpy(), axis=1)[:, ::-1]
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-13 * want[:, :1].max())


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.longdouble, np.int32, np.bool_])
def test_nuclear_norms_take_every_real_dtype(dtype):
    G = np.random.default_rng(2).uniform(0, 4, size=(3, 4, 5)).round().astype(dtype)
    want = np.linalg.svd(G.astype(np.float64), compute_uv=False).sum(axis=-1)
    tol = 1e-3 if dtype is np.float16 else 1e-6
    np.testing.assert_allclose(nuclear.nuclear_norms(G), want, rtol=tol)


@pytest.mark.parametrize("G, exc, message", [
    (np.ones((2, 3, 3), dtype=object), TypeError, "G has dtype object; pass real numbers"),
    (np.ones((2, 3, 3), dtype=complex), TypeError, "G is complex"),
    (np.array([["a", "b"], ["c", "d"]]), TypeError, "G has dtype <U1"),
    (np.ones(3), ValueError, r"G must have shape \(\.\.\., p, q\)"),
])
def test_nuclear_norms_refuse_what_is_no_real_matrix(G, exc, message):
    with pytest.raises(exc, match=message):
        nuclear.nuclear_norms(G)


def test_nuclear_norms_of_empty_batches_and_sides():
    assert nuclear.nuclear_norms(np.ones((0, 3, 3))).shape == (0,)
    np.testing.assert_array_equal(nuclear.nuclear_norms(np.ones((2, 0, 3))), [0.0, 0.0])


# ------------------------------------------------------------------ extraction


@pytest.fixture(scope="module")
def untrained():
    return socm_lib.load_encoder("untrained-minilm-l6", device="cpu")


def test_a_text_of_special_token_strings_has_no_token_of_its_own(untrained):
    for special_tokens in (False, True):  # with False its three special-token embeddings were kept as its own
        with pytest.raises(ValueError, match=r"texts\[0\] \('\[CLS\]\[SEP\]\[PAD\]'\) has no token of its own"):
            socm_lib.token_embeddings(untrained, ["[CLS][SEP][PAD]", "hello"], special_tokens=special_tokens)
    inner, plain = socm_lib.token_embeddings(untrained, ["hello [SEP] world", "hello world"], special_tokens=False)
    assert inner.shape == plain.shape == (2, 384)  # the [SEP] written inside the text is dropped too


def test_a_prefix_that_leaves_a_text_no_token_is_refused(untrained):
    with pytest.raises(ValueError, match=r"max_length = 10 is outside 23 <= max_length <= 512.*the prefix takes 20"):
        socm_lib.token_embeddings(untrained, ["the first text", "another one"], prefix="passage: " * 10,
                                  max_length=10)  # both texts got the same cloud: the prefix's
    with pytest.raises(ValueError, match="takes 600 tokens: with the 2 special tokens that leaves no token"):
        socm_lib.token_embeddings(untrained, ["the first text"], prefix="passage: " * 300)


# ------------------------------------------------------------------ one Unicode form for comparing texts


def test_texts_are_compared_in_one_unicode_form():
    assert NFC != NFD and checks.text_form(NFC) == checks.text_form(NFD)
    assert checks.text_form("a\u00a0b  c ") == "a b c"
    assert checks.distinct_texts([NFC, "x", NFD, "a\u00a0b", "a b"]) == [NFC, "x", "a\u00a0b"]
    drawn = data.sample_texts([NFC, NFD, "other"], 2, seed=0)  # the same text twice was two candidates
    assert sorted(checks.text_form(t) for t in drawn) == sorted([checks.text_form(NFC), "other"])
    with pytest.raises(ValueError, match="There are 2 distinct texts"):
        data.sample_texts([NFC, NFD, "other"], 3)


def test_the_cli_drops_a_text_given_twice_in_two_spellings(tmp_path, capsys):
    texts = tmp_path / "t.txt"
    texts.write_text(f"{NFC}\n{NFD}\nOther.\n", encoding="utf-8")
    args = cli.argparse.Namespace(pairs="all", texts=str(texts), sample=None, seed=0)
    got, pairs, _ = cli._inputs(args)
    assert len(got) == 2 and pairs is None
    assert "1 repeated text(s) dropped" in capsys.readouterr().err


# ------------------------------------------------------------------ the CLI's errors


def test_the_cli_refuses_a_random_draw_larger_than_memory(tmp_path, capsys):
    texts = tmp_path / "many.txt"
    texts.write_text("\n".join(f"t{k}" for k in range(894_500)), encoding="utf-8")  # 4.0e11 pairs
    code = cli.main(["run", "--texts", str(texts), "--sample", "0", "--pairs", "random:400000000000"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: --pairs random:400000000000 would need about ")
    assert "Traceback" not in err and len(err.splitlines()) == 1
