"""The engine's compact storage: clouds kept as they came, float64 factors formed per bucket when blocks need them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import socm_lib
from socm_lib import block_plan, block_runner, factors
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
    """The buckets formed whole (each a cache miss), in order, by every FactorCache while the test runs."""
    seen, form = [], factors.FactorCache.form

    def counted(self, bucket, texts=None):
        if texts is None:
            seen.append(bucket.index)
        return form(self, bucket, texts)

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


def torch_factor(x: torch.Tensor, normalize: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """One float64 cloud's ``(m, A)`` op by op in torch, as the engine formed it one cloud at a time before it formed
    clouds of one length together in numpy: the reference that forming must equal bit for bit."""
    top = x.abs().max()
    s = torch.ldexp(torch.ones((), dtype=x.dtype), torch.frexp(top).exponent - 1)
    y = x / s if top > 0 else x
    mu = y.mean(dim=0)
    scale = 1.0 / torch.linalg.vector_norm(mu) if normalize else s
    k = torch.arange(1, y.shape[0], dtype=y.dtype)[:, None]
    C = y - mu
    A = (C.cumsum(dim=0)[:-1] - k * C[1:]) / torch.sqrt(k * (k + 1)) * (scale / np.sqrt(y.shape[0]))
    return mu * scale, torch.linalg.qr(A, mode="r").R if A.shape[0] > A.shape[1] else A


def same_bits(a, b) -> bool:
    a, b = (np.ascontiguousarray(np.asarray(v, dtype=np.float64)) for v in (a, b))
    return a.shape == b.shape and np.array_equal(a.view(np.int64), b.view(np.int64))


def formed_clouds(d: int, counts, rng) -> list[np.ndarray]:
    """Clouds of the given token counts around a shared direction, at scales from 1e-200 to 1e150, some float32."""
    out = []
    for k, n in enumerate(counts):
        x = (0.5 + rng.normal(size=(n, d)) @ np.diag(np.linspace(0.1, 2.0, d))) * 10.0 ** [-200, 0, 150, 3][k % 4]
        out.append(x.astype(np.float32) if k % 3 == 0 and abs(np.log10(np.abs(x).max())) < 30 else x)
    return out


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("d,counts", [(384, [1, 2, 3, 5, 17, 33, 33, 33, 60, 226, 260, 260]), (24, [1, 4, 25, 26, 30, 61, 61])],
                         ids=["d=384, up to 260 tokens", "d=24, long clouds"])
def test_forming_clouds_together_gives_the_one_cloud_torch_factors_bit_for_bit(normalize, d, counts):
    """factor(), prepare()'s means and traces and the cache's padded buckets (whole, or some of their texts) are the
    factors of torch_factor, to the last bit: exact steps, sums in torch.cumsum's order, torch's own square roots
    (not correctly rounded on AVX-512 past 223 tokens), the same torch reductions on the same clouds."""
    clouds = formed_clouds(d, counts, np.random.default_rng(d))
    reference = [torch_factor(torch.from_numpy(c).to(torch.float64), normalize) for c in clouds]
    for c, (m, A) in zip(clouds, reference):
        got_m, got_A = factors.factor(torch.from_numpy(c).to(torch.float64), normalize, "x")
        assert same_bits(got_m, m) and same_bits(got_A, A)
    e = block_runner.prepare_engine(clouds, normalize=normalize, device="cpu", dtype=torch.float64, backend="auto",
                                    bucket_tolerance=0.05)
    assert same_bits(e.means, np.stack([m.numpy() for m, _ in reference]))
    assert same_bits(e.traces, [float((A * A).sum()) for _, A in reference])
    for bucket in e.buckets:
        whole = e.cache.form(bucket)
        for slot, k in enumerate(bucket.members):
            A = reference[k][1].numpy()
            assert same_bits(whole.factors[slot, : len(A)], A) and not whole.factors[slot, len(A) :].any()
        some = bucket.members[::2]
        part = e.cache.form(bucket, some)
        assert same_bits(part.factors, whole.factors[::2]) and same_bits(part.means, whole.means[::2])
        assert same_bits(part.traces, whole.traces[::2]) and np.array_equal(part.members, some)


def test_a_sparse_list_forms_its_own_texts_with_the_numbers_of_whole_buckets(monkeypatch, formed):
    """Few pairs among many texts (as a sampled estimate draws them): every block (pair by pair, or a tile of the few
    pairs of two buckets) forms the factors of its own texts alone, never a whole bucket, at most two texts a pair; the pairs' numbers and a sampled summary are those of the
    whole buckets' path bit for bit, and the pairs agree with the reference at 1e-12."""
    rng = np.random.default_rng(3)
    clouds = [(rng.normal(size=(int(n), 24)) + 0.5).astype(np.float32) for n in rng.integers(1, 40, size=600)]
    pairs = rng.integers(0, len(clouds), size=(150, 2))
    pairs[:3] = [(0, 0), (5, 9), (9, 5)]
    texts_formed, form = [], factors.FactorCache.form

    def counted(self, bucket, texts=None):
        texts_formed.append(len(texts))  # a whole bucket (texts=None) would fail here
        return form(self, bucket, texts)

    monkeypatch.setattr(factors.FactorCache, "form", counted)
    blocks = prepared(clouds).plan(pairs, 5_000)
    assert all(b.own_texts for b in blocks) and {type(b) for b in blocks} == {block_plan.ListedBlock,
                                                                               block_plan.GridBlock}
    own = socm_lib.socm_pairs(clouds, pairs, device="cpu", block_elems=5_000, progress=False)
    assert formed == [] and 0 < sum(texts_formed) <= 2 * len(pairs)
    # the engine of a sampled estimate holds the texts drawn alone: a cache of one tile would serve them best, so
    # here a cache of 16 KiB (many tiles) makes its blocks form their own texts
    monkeypatch.setattr(factors, "FACTOR_CACHE_BYTES", 1 << 14)
    own_summary = socm_lib.socm_summary(clouds, sample_pairs=200, seed=4, block_elems=5_000, progress=False)
    assert formed == []

    monkeypatch.setattr(block_plan, "forms_own_texts", lambda *args: False)
    monkeypatch.setattr(factors.FactorCache, "form", form)
    assert not any(b.own_texts for b in prepared(clouds).plan(pairs, 5_000))
    whole = socm_lib.socm_pairs(clouds, pairs, device="cpu", block_elems=5_000, progress=False)
    whole_summary = socm_lib.socm_summary(clouds, sample_pairs=200, seed=4, block_elems=5_000, progress=False)
    for key in ("i", "j", "d_mu", "d_sigma", "socm"):
        np.testing.assert_array_equal(getattr(own, key), getattr(whole, key), err_msg=key)
    assert own_summary.summary() == whole_summary.summary() and own_summary.pairs == 200
    ref = lowrank_pairs(clouds, pairs, workers=1)
    for key in ("d_mu", "d_sigma", "socm"):  # atol: the round-off of d_sigma = 0 for a text with itself
        np.testing.assert_allclose(getattr(own, key), getattr(ref, key), rtol=1e-12, atol=1e-14, err_msg=key)
