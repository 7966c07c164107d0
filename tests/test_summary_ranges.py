"""socm_summary's histogram ranges from a sampled pre-pass: robust to one very spread text, reproducible, numpy's counts."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import socm_lib
from socm_lib import summary as summary_module


@pytest.fixture(scope="module")
def one_wide():
    """150 ordinary clouds (3 to 12 tokens, d = 16) around a shared mean, and one spread 30 times wider."""
    rng = np.random.default_rng(11)
    base = rng.normal(size=16)
    clouds = [base + 0.3 * rng.normal(size=16) + 0.4 * rng.normal(size=(int(n), 16)) for n in rng.integers(3, 13, 150)]
    clouds[70] = base + 12.0 * rng.normal(size=(10, 16))
    return clouds


@pytest.fixture(scope="module")
def full(one_wide):
    return socm_lib.socm_pairs(one_wide, device="cpu", progress=False)


def clipped_numpy_counts(values, edges):
    """numpy.histogram over ``edges``, values outside them counted in the end bins."""
    return np.histogram(np.clip(values, edges[0], edges[-1]), bins=edges)[0]


def test_one_wide_text_no_longer_fills_one_bin(one_wide, full):
    assert len(full) > summary_module.RANGE_SAMPLE_PAIRS  # a true sample, not every pair
    e = socm_lib.block_runner.prepare_engine(one_wide, normalize=True, device="cpu", dtype=torch.float64,
                                             backend="auto", bucket_tolerance=0.05)
    bounds = summary_module._ranges(e.means, e.traces)
    # the situation of the issue: over the worst-case bounds, most pairs share one of 200 bins
    worst = np.histogram(full.d_sigma, bins=200, range=bounds["d_sigma"])[0]
    assert worst.max() / len(full) > 0.4
    s = socm_lib.socm_summary(one_wide, device="cpu", progress=False)
    for key, h in s.histograms.items():
        assert h.counts.sum() == len(full), key
        assert h.counts.max() / len(full) < 0.1, key
        np.testing.assert_array_equal(h.counts, clipped_numpy_counts(getattr(full, key), h.edges), err_msg=key)
    # the wide text's pairs (one in 75) lie beyond the sampled range and are counted in the last bin
    h = s.histograms["d_sigma"]
    wide = (full.i == 70) | (full.j == 70)
    assert np.all(full.d_sigma[wide] > h.edges[-1]) and h.counts[-1] >= wide.sum()
    # the median still comes from the worst-case range: exact here
    assert s.median_socm == np.median(full.socm) and s.median_socm_error == 0.0


def test_ranges_are_the_same_on_every_run_and_thread_count(one_wide):
    threads = torch.get_num_threads()
    runs = []
    try:
        for n in (2, 1, 2):
            torch.set_num_threads(n)
            runs.append(socm_lib.socm_summary(one_wide, device="cpu", progress=False).histograms)
    finally:
        torch.set_num_threads(threads)
    for other in runs[1:]:
        for key in runs[0]:
            np.testing.assert_array_equal(other[key].edges, runs[0][key].edges)
            np.testing.assert_array_equal(other[key].counts, runs[0][key].counts)


def test_listed_pairs_and_given_ranges(one_wide, full):
    pairs = np.random.default_rng(3).integers(0, len(one_wide), size=(6000, 2))
    listed = socm_lib.socm_pairs(one_wide, pairs, device="cpu", progress=False)
    s = socm_lib.socm_summary(one_wide, pairs, device="cpu", progress=False, range={"socm": (0.0, 0.05)})
    np.testing.assert_allclose(s.histograms["socm"].edges[[0, -1]], [0.0, 0.05], rtol=1e-8)  # range= wins
    for key, h in s.histograms.items():
        assert h.counts.sum() == len(pairs)
        assert np.abs(h.counts - clipped_numpy_counts(getattr(listed, key), h.edges)).sum() <= 2  # other blocks
    # few pairs: the pre-pass sees them all, and the range covers every value, as numpy.histogram's default
    few = socm_lib.socm_summary(one_wide[:40], device="cpu", progress=False)
    ref = socm_lib.socm_pairs(one_wide[:40], device="cpu", progress=False)
    for key, h in few.histograms.items():
        v = getattr(ref, key)
        assert h.edges[0] <= v.min() and v.max() <= h.edges[-1]
        np.testing.assert_array_equal(h.counts, np.histogram(v, bins=h.edges)[0])
