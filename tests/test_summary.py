"""socm_summary (streamed, bounded memory) against socm_pairs(...).summary() and the full result arrays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import socm_lib
import socm_lib.cli
from socm_lib import block_runner, memory
from socm_lib import summary as summary_module
from socm_lib.viz import fmt, summary_lines


@pytest.fixture(scope="module")
def clouds():
    """90 texts of 1 to 40 tokens; a third spread widely (concentration above 2, so some d_sigma > 1)."""
    rng = np.random.default_rng(7)
    d = 20
    base = rng.normal(size=d)
    out = []
    for k, n in enumerate(rng.integers(1, 41, 90)):
        spread = 2.0 if k % 3 == 0 else 0.5
        out.append(base + 0.8 * rng.normal(size=d) + spread * rng.normal(size=(n, d)))
    return out


@pytest.fixture(scope="module")
def full(clouds):
    return socm_lib.socm_pairs(clouds, device="cpu")


def check_against(s, full, top_k, same_route=True):
    """``s`` against the full arrays. ``same_route``: the summary ran the very blocks ``full`` did, so its
    extreme pairs are bit-identical and come in argsort's order; otherwise (other blocks, another backend)
    values agree to round-off and the order only up to near-ties."""
    ref = full.summary()
    got = s.summary()
    assert list(got) == list(ref)
    assert got["pairs"] == ref["pairs"] == len(full)
    for key in ("mean_socm", "mean_d_mu", "mean_d_sigma", "share_d_sigma_above_1"):
        assert got[key] == pytest.approx(ref[key], rel=1e-12, abs=1e-15), key
    assert abs(got["median_socm"] - ref["median_socm"]) <= s.median_socm_error + 1e-12
    for key, h in s.histograms.items():
        assert h.counts.sum() == len(full)
        assert np.abs(h.counts - np.histogram(getattr(full, key), bins=h.edges)[0]).sum() <= (0 if same_route else 2)
    for kept, order in ((s.most_collapsed, np.argsort(-full.socm, kind="stable")[:top_k]),
                        (s.least_collapsed, np.argsort(full.socm, kind="stable")[:top_k])):
        assert len(kept) == top_k
        if same_route:
            for col in ("i", "j", "d_mu", "d_sigma", "socm"):
                np.testing.assert_array_equal(getattr(kept, col), getattr(full, col)[order])
        else:
            np.testing.assert_allclose(kept.socm, full.socm[order], rtol=1e-12, atol=1e-15)
            lookup = {(i, j): v for i, j, v in zip(full.i, full.j, full.socm)}
            np.testing.assert_allclose([lookup[p] for p in zip(kept.i, kept.j)], kept.socm, rtol=1e-12, atol=1e-15)


def test_summary_matches_the_full_result(clouds, full):
    assert len(full) == 4005 and full.summary()["share_d_sigma_above_1"] > 0
    # small blocks: many consumer calls, the top-k lists merged across blocks
    s = socm_lib.socm_summary(clouds, device="cpu", top_k=25, exact_median_limit=0, block_elems=20_000)
    assert 0 < s.median_socm_error < 1e-5
    check_against(s, socm_lib.socm_pairs(clouds, device="cpu", block_elems=20_000), 25)
    check_against(s, full, 25, same_route=False)  # other blocks: round-off differs


def test_exact_median_below_the_limit(clouds, full):
    s = socm_lib.socm_summary(clouds, device="cpu", top_k=3)
    assert s.median_socm_error == 0.0
    assert s.median_socm == full.summary()["median_socm"]
    check_against(s, full, 3)


def test_listed_pairs_with_repeats_and_torch_backend(clouds):
    rng = np.random.default_rng(8)
    pairs = rng.integers(0, len(clouds), size=(3000, 2))
    pairs[:20] = pairs[20:40]  # repeated pairs
    full = socm_lib.socm_pairs(clouds, pairs, device="cpu")
    s = socm_lib.socm_summary(clouds, pairs, device="cpu", backend="torch", top_k=10, exact_median_limit=100,
                              bins=37)
    check_against(s, full, 10, same_route=False)


def test_without_normalisation_socm_can_be_negative(clouds):
    full = socm_lib.socm_pairs(clouds[:50], device="cpu", normalize=False)
    assert full.socm.min() < 0
    s = socm_lib.socm_summary(clouds[:50], device="cpu", normalize=False, exact_median_limit=0)
    check_against(s, full, 10)


def test_pairs_handed_out_in_order(clouds, full):
    chunks = []
    s = socm_lib.socm_summary(clouds, device="cpu", chunk_pairs=700, on_pairs=lambda start, c: chunks.append((start, c)))
    starts = [start for start, _ in chunks]
    assert starts == list(np.cumsum([0] + [len(c) for _, c in chunks[:-1]]))
    assert len(chunks) > 4 and all(len(c) <= 700 for _, c in chunks)  # rows of 89 pairs or fewer fit
    for col in ("i", "j", "d_mu", "d_sigma", "socm"):
        joined = np.concatenate([getattr(c, col) for _, c in chunks])
        if col in ("i", "j"):
            np.testing.assert_array_equal(joined, getattr(full, col))
        else:
            np.testing.assert_allclose(joined, getattr(full, col), rtol=1e-10, atol=1e-14)
    check_against(s, full, 10, same_route=False)  # chunks go through the listed-pairs blocks


def test_lexicographic_chunks_cover_all_pairs():
    for n, size in [(2, 1), (7, 1), (7, 5), (30, 100), (30, 10**6)]:
        joined = np.concatenate([c for _, c in summary_module._chunks_in_order(n, None, size)])
        np.testing.assert_array_equal(joined, socm_lib.all_pairs(n))


def test_bad_options(clouds):
    with pytest.raises(ValueError, match="bins = 0 is outside 1 <= bins"):
        socm_lib.socm_summary(clouds[:5], bins=0)
    with pytest.raises(TypeError, match="on_pairs must be a function"):
        socm_lib.socm_summary(clouds[:5], on_pairs="out.csv")
    with pytest.raises(ValueError, match="There are no pairs"):
        socm_lib.socm_summary(clouds[:1])


def test_socm_pairs_refuses_what_does_not_fit(clouds, monkeypatch):
    n = len(clouds) * (len(clouds) - 1) // 2
    monkeypatch.setattr(memory, "available_memory", lambda: 10_000_000)  # 10 MB free
    with pytest.raises(MemoryError, match=r"4,005 pairs .*socm_summary.*pairs=\(P, 2\)") as info:
        socm_lib.socm_pairs(clouds, device="cpu")
    assert isinstance(info.value, ValueError)  # also a ValueError, so the CLI reports it as an error
    # the streamed summary needs no per-pair memory
    assert socm_lib.socm_summary(clouds, device="cpu", block_elems=20_000).pairs == n
    # and enough memory lets it through
    monkeypatch.setattr(memory, "available_memory", lambda: 10**12)
    assert len(socm_lib.socm_pairs(clouds, device="cpu")) == n


def test_memory_estimate_grows_with_the_pairs(clouds):
    e = block_runner.prepare_engine(clouds, normalize=True, device="cpu", dtype=torch.float64,
                                    backend="auto", bucket_tolerance=0.05).footprint()
    small, big = memory.memory_estimate(1000, e, 1 << 22), memory.memory_estimate(200_000_000, e, 1 << 22)
    assert big - small == (200_000_000 - 1000) * memory.BYTES_PER_PAIR
    assert big > 16e9  # all pairs of 20,000 texts: 16 GB



@pytest.mark.skipif(not Path("/proc/meminfo").exists(), reason="reads Linux's /proc/meminfo")
def test_available_memory_is_at_most_what_the_host_reports():
    with open("/proc/meminfo") as f:
        host = int(next(line for line in f if line.startswith("MemAvailable:")).split()[1]) * 1024
    free = memory.available_memory()
    assert free is not None and 0 < free <= 1.05 * host  # a container's limit can only lower it (5%: other work)


def test_cli_summary_path_matches_socm_pairs(capsys):
    code = socm_lib.cli.main(["run", "--encoder", "all-minilm-l6", "--sample", "30", "--device", "cpu"])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "encoder: all-minilm-l6 (contrastive); texts: 30; layer: -1"
    assert not any(line.startswith("wrote") for line in lines)
    values = dict(line.split(": ", 1) for line in lines[1:])
    texts = socm_lib.sample_texts(list(socm_lib.corpus()["text"]), 30, seed=0)
    clouds = socm_lib.token_embeddings(socm_lib.load_encoder("all-minilm-l6", device="cpu"), texts)
    ref = socm_lib.socm_pairs(clouds, device="cpu").summary()
    ref["mean_concentration_ratio"] = float(np.mean([socm_lib.concentration_ratio(c) for c in clouds]))
    assert list(values) == list(ref)
    assert values == {k: summary_lines({k: v})[0].split(": ", 1)[1] for k, v in ref.items()}


def test_cli_writes_the_csv_chunk_by_chunk(tmp_path, capsys, monkeypatch):
    import functools

    import pandas as pd

    chunks = []

    def small_chunks(*args, on_pairs=None, **kwargs):
        def spy(start, chunk):
            chunks.append(len(chunk))
            on_pairs(start, chunk)
        return socm_lib.socm_summary(*args, on_pairs=spy if on_pairs else None, chunk_pairs=97, **kwargs)

    monkeypatch.setattr(socm_lib.cli, "socm_summary", functools.wraps(socm_lib.socm_summary)(small_chunks))
    out = tmp_path / "pairs.csv"
    code = socm_lib.cli.main(["run", "--encoder", "all-minilm-l6", "--sample", "25", "--device", "cpu",
                              "--out", str(out)])
    stdout = capsys.readouterr().out
    assert code == 0
    assert len(chunks) > 3 and sum(chunks) == 300
    frame = pd.read_csv(out, keep_default_na=False)  # one header, then every chunk's rows
    assert list(frame.columns) == ["i", "j", "d_mu", "d_sigma", "socm", "text_i", "text_j"]
    np.testing.assert_array_equal(frame[["i", "j"]].to_numpy(), socm_lib.all_pairs(25))
    texts = socm_lib.sample_texts(list(socm_lib.corpus()["text"]), 25, seed=0)
    assert list(frame["text_j"]) == [texts[j] for j in frame["j"]]
    clouds = socm_lib.token_embeddings(socm_lib.load_encoder("all-minilm-l6", device="cpu"), texts)
    ref = socm_lib.socm_pairs(clouds, device="cpu")
    np.testing.assert_allclose(frame["socm"], ref.socm, rtol=1e-9, atol=1e-12)
    assert stdout.splitlines()[-1] == f"wrote 300 rows to {out}"
    assert f"median_socm: {fmt(np.median(ref.socm))}" in stdout
