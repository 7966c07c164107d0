"""The engine's compact storage: clouds kept as they came, float64 factors formed per bucket when blocks need them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import socm_lib
from socm_lib import block_runner, factors
from socm_lib.reference import lowrank_pairs


@pytest.fixture(scope="module")
def real_clouds():
    enc = socm_lib.load_encoder("all-minilm-l6", device="cpu")
    texts = socm_lib.sample_texts(list(socm_lib.corpus()["text"]), 40, seed=5)
    return socm_lib.token_embeddings(enc, texts)


def prepared(clouds, **kw):
    return block_runner.prepare_engine(clouds, normalize=True, device="cpu", dtype=torch.float64, backend="auto",
                                       bucket_tolerance=0.05, **kw)


@pytest.fixture
def formed(monkeypatch):
    """The buckets formed (each a cache miss), in order, by every FactorCache while the test runs."""
    seen, form = [], factors.FactorCache.form

    def counted(self, bucket):
        seen.append(bucket.index)
        return form(self, bucket)

    monkeypatch.setattr(factors.FactorCache, "form", counted)
    return seen


def test_prepared_clouds_stay_float32_and_are_not_copied(real_clouds, formed):
    assert all(c.dtype == np.float32 for c in real_clouds)
    e = prepared(real_clouds)
    assert [x.dtype for x in e.prepared.clouds] == [torch.float32] * len(real_clouds)
    assert all(np.shares_memory(x.numpy(), c) for x, c in zip(e.prepared.clouds, real_clouds))
    assert formed == [] and not len(e.cache._cache)  # no float64 bucket before a block asks for it
    data = e.cache(e.buckets[-1])
    A = data.factors
    assert A.dtype == torch.float64 and A.shape == (len(e.buckets[-1].members), e.buckets[-1].rows, 384)
    np.testing.assert_array_equal(data.means, e.means[e.buckets[-1].members])
    assert e.cache(e.buckets[-1]) is data and formed == [e.buckets[-1].index]  # the second request: the cache
    # float64 input stays float64 (no copy); float16 is held exactly as float32
    e64 = prepared([c.astype(np.float64) for c in real_clouds[:3]])
    assert {x.dtype for x in e64.prepared.clouds} == {torch.float64}
    e16 = prepared([torch.from_numpy(c).half() for c in real_clouds[:3]])
    assert {x.dtype for x in e16.prepared.clouds} == {torch.float32}


def test_float32_clouds_agree_with_the_reference_at_1e_12(real_clouds):
    res = socm_lib.socm_pairs(real_clouds, device="cpu", progress=False)
    ref = lowrank_pairs(real_clouds, np.stack([res.i, res.j], axis=1), workers=1)
    for key in ("d_mu", "d_sigma", "socm"):
        np.testing.assert_allclose(getattr(res, key), getattr(ref, key), rtol=1e-12, atol=1e-15, err_msg=key)


@pytest.mark.parametrize("listed", [False, True])
def test_a_small_cache_changes_nothing_but_memory(real_clouds, monkeypatch, listed, formed):
    """Forming buckets again and again (a cache of 64 KiB) gives the numbers of holding every bucket, bit for bit."""
    pairs = np.random.default_rng(1).integers(0, len(real_clouds), size=(700, 2)) if listed else None
    big = socm_lib.socm_pairs(real_clouds, pairs, device="cpu", block_elems=5_000, progress=False)
    assert sorted(formed) == list(range(len(prepared(real_clouds).buckets)))  # a large cache: each bucket once
    formed.clear()
    caches = []
    real_init = factors.FactorCache.__init__

    def small(self, *args, **kw):
        real_init(self, *args, **kw)
        self.capacity = 1 << 16
        caches.append(self)

    monkeypatch.setattr(factors.FactorCache, "__init__", small)
    tiny = socm_lib.socm_pairs(real_clouds, pairs, device="cpu", block_elems=5_000, progress=False)
    f = caches[0]
    held = sum(f._sizeof(data) for data in f._cache.values())
    assert held <= f.capacity or len(f._cache) == 1  # the cache keeps to its size (the latest bucket always stays)
    assert len(formed) > len(set(formed))  # buckets were dropped and formed again
    for key in ("i", "j", "d_mu", "d_sigma", "socm"):
        np.testing.assert_array_equal(getattr(tiny, key), getattr(big, key), err_msg=key)
