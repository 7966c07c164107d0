"""SOCM engine (socm_lib.pairs) against the slow references, closed forms and invariances.

The references are the library's two obviously-correct ones (socm_lib.reference, tested on their own in
tests/test_reference.py): the low-rank float64 computation, one pair at a time, which shares no code with
the engine, and the d x d route of socm_lib.bures (exact on full-rank clouds, good to about 1e-7 on
rank-deficient ones).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import socm_lib
from socm_lib.reference import lowrank_pair

RTOL = 1e-10


# ----------------------------------------------------------------------------------------------------------
# Slow references: socm_lib.reference (low rank, float64, one pair at a time) and socm_lib.bures (d x d)
# ----------------------------------------------------------------------------------------------------------
def ref_many(clouds, pairs, normalize=True):
    rows = [lowrank_pair(clouds[i], clouds[j], normalize) for i, j in pairs]
    d_mu, d_sigma, s, tr1, tr2 = (np.array(c) for c in zip(*rows))
    return d_mu, d_sigma, s, np.maximum(tr1, tr2)


def ref_dxd(X1, X2):
    """d_mu, d_sigma by the d x d reference (socm_lib.bures) on the normalised clouds' population covariances."""
    X1n, X2n = socm_lib.normalize_cloud(X1), socm_lib.normalize_cloud(X2)
    m1, m2 = socm_lib.cloud_mean(X1n), socm_lib.cloud_mean(X2n)
    bw2 = socm_lib.bures_wasserstein_sq(socm_lib.cloud_covariance(X1n), socm_lib.cloud_covariance(X2n))
    return float(((m1 - m2) ** 2).sum()) / 4, bw2 / 4


def pop_cov(X):
    """Population (1/n) covariance."""
    C = X - X.mean(axis=0)
    return C.T @ C / len(X)


def random_clouds(rng, lengths, d, spread=0.6):
    """Token clouds with a common-ish direction (nonzero means) and isotropic spread around it."""
    base = rng.normal(size=d)
    return [base + 0.5 * rng.normal(size=d) + spread * rng.normal(size=(n, d)) for n in lengths]


def assert_close(actual, expected, scale, rtol=RTOL):
    """|a - e| <= rtol * max(|e|, scale): relative, with an absolute floor for values near 0."""
    actual, expected = np.asarray(actual, float), np.asarray(expected, float)
    floor = np.maximum(np.abs(expected), scale)
    bad = np.abs(actual - expected) > rtol * floor
    assert not bad.any(), (
        f"{bad.sum()} of {bad.size} entries differ; worst: actual {actual[bad][:3]}, expected {expected[bad][:3]}"
    )


def check_result(res, clouds, pairs, normalize=True, rtol=RTOL):
    d_mu, d_sigma, s, trmax = ref_many(clouds, pairs, normalize)
    np.testing.assert_array_equal(res.i, np.asarray(pairs)[:, 0])
    np.testing.assert_array_equal(res.j, np.asarray(pairs)[:, 1])
    # floors: d_sigma is a difference of traces, so its round-off scales with the traces.
    assert_close(res.d_sigma, d_sigma, scale=1e-2 * trmax + 1e-300, rtol=rtol)
    assert_close(res.d_mu, d_mu, scale=1e-2, rtol=rtol)
    assert_close(res.socm, s, scale=1e-2 * trmax + 1e-300, rtol=rtol)


@pytest.fixture(scope="module")
def ragged():
    rng = np.random.default_rng(1)
    lengths = [1, 2, 3, 3, 4, 7, 8, 9, 12, 13, 20, 21, 22, 35, 40, 2, 9, 1]
    return random_clouds(rng, lengths, d=24)


# ----------------------------------------------------------------------------------------------------------
# 1. Agreement with the per-pair float64 reference
# ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("tolerance,block_elems", [(0.0, 1 << 22), (0.15, 1 << 22), (0.15, 7), (0.5, 1), (100.0, 64)])
def test_all_pairs_match_reference(ragged, normalize, tolerance, block_elems):
    res = socm_lib.socm_pairs(
        ragged, normalize=normalize, bucket_tolerance=tolerance, block_elems=block_elems, device="cpu"
    )
    n = len(ragged)
    expected_pairs = [(i, j) for i in range(n) for j in range(n) if i < j]  # lexicographic i < j
    assert len(res) == n * (n - 1) // 2
    check_result(res, ragged, expected_pairs, normalize)


@pytest.mark.parametrize("normalize", [True, False])
@pytest.mark.parametrize("tolerance,block_elems", [(0.0, 1 << 22), (0.15, 5), (100.0, 1)])
def test_listed_pairs_match_reference(ragged, normalize, tolerance, block_elems):
    rng = np.random.default_rng(2)
    n = len(ragged)
    pairs = rng.integers(0, n, size=(60, 2))
    special = np.array([[3, 9], [9, 3], [3, 9], [5, 5], [0, 0], [17, 0], [0, 17], [14, 1], [1, 14]])
    pairs = np.concatenate([pairs, special])  # repeated, reversed and i == j pairs
    res = socm_lib.socm_pairs(
        ragged, pairs, normalize=normalize, bucket_tolerance=tolerance, block_elems=block_elems, device="cpu"
    )
    assert len(res) == len(pairs)
    check_result(res, ragged, pairs, normalize)
    # i == j gives exactly zero distance; repeated and reversed pairs give the same value
    same = pairs[:, 0] == pairs[:, 1]
    assert np.all(res.d_mu[same] == 0) and np.all(np.abs(res.d_sigma[same]) < 1e-12)
    k = len(pairs) - len(special)
    assert res.d_sigma[k] == res.d_sigma[k + 2]
    for a, b in [(k, k + 1), (k + 5, k + 6), (k + 7, k + 8)]:
        assert res.d_mu[a] == pytest.approx(res.d_mu[b], rel=1e-14, abs=1e-16)
        assert res.d_sigma[a] == pytest.approx(res.d_sigma[b], rel=1e-10, abs=1e-14)


@pytest.mark.parametrize("tolerance,block_elems", [(100.0, 1 << 22), (0.15, 1 << 22), (100.0, 1), (0.15, 300)])
def test_listed_pairs_that_cover_a_grid_take_one_product_per_tile(ragged, tolerance, block_elems, monkeypatch):
    """Every pair of texts 0-8 with texts 9-17 (shuffled, some listed twice, as socm_cross lists them) covers a
    grid: its plan is grid tiles, one matrix product each, down to one pair at block_elems=1, and the result
    agrees with the per-pair reference. A sparse list of the same texts goes pair by pair instead."""
    import torch

    from socm_lib.block_plan import GridBlock, ListedBlock
    from socm_lib.block_runner import prepare_engine

    def plan(pairs, tolerance, block_elems=1 << 22):
        engine = prepare_engine(ragged, normalize=True, device="cpu", dtype=torch.float64, backend="auto",
                                bucket_tolerance=tolerance)
        return engine.plan(pairs, block_elems)

    rng = np.random.default_rng(3)
    grid = np.array([(i, j) for i in range(9) for j in range(9, 18)])
    pairs = rng.permutation(np.concatenate([grid, grid[rng.choice(len(grid), 10)]]))
    res = socm_lib.socm_pairs(ragged, pairs, bucket_tolerance=tolerance, block_elems=block_elems, device="cpu")
    check_result(res, ragged, pairs)
    blocks = plan(pairs, tolerance, block_elems)
    assert all(isinstance(b, GridBlock) for b in blocks), "not every pair went through a grid tile"
    assert sorted(np.concatenate([b.positions for b in blocks])) == list(range(len(pairs)))
    if block_elems == 1:
        assert len(blocks) == len(grid), f"{len(blocks)} tiles for {len(grid)} distinct pairs at block_elems=1"
    sparse = plan(grid[::7], 100.0)
    assert sparse and all(isinstance(b, ListedBlock) for b in sparse), "a sparse list of pairs went through the grid"


def test_threaded_and_single_thread_runs_agree(ragged):
    """Blocks run in torch.get_num_threads() threads; one thread (run inline) must give the same figures."""
    threads = torch.get_num_threads()
    many = socm_lib.socm_pairs(ragged, block_elems=64, device="cpu")
    torch.set_num_threads(1)
    try:
        one = socm_lib.socm_pairs(ragged, block_elems=64, device="cpu")
    finally:
        torch.set_num_threads(threads)
    for field in ("d_mu", "d_sigma", "socm"):
        np.testing.assert_allclose(getattr(one, field), getattr(many, field), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("normalize", [True, False])
def test_nearly_equal_means_keep_relative_accuracy(normalize):
    """d_mu of texts whose means differ by 1e-2 ... 1e-6 (and of a duplicate) is exact in relative terms.

    The all-pairs engine takes d_mu from the Gram matrix of the means, which cancels for nearly equal
    means; those pairs must be recomputed from the difference. The check here has no absolute floor.
    """
    rng = np.random.default_rng(7)
    base = rng.standard_normal((9, 16)) + 3.0
    shifts = [0.0, 0.0, 1e-6, 1e-5, 1e-4, 1e-2]
    clouds = [base + s * rng.standard_normal(16) for s in shifts]  # the same tokens, moved as one
    res = socm_lib.socm_pairs(clouds, normalize=normalize, device="cpu")
    ref = ref_many(clouds, list(zip(res.i, res.j)), normalize)[0]
    assert res.d_mu[0] == 0.0  # the duplicate pair
    nonzero = ref > 0
    assert ref[nonzero].min() < 1e-11  # the test does reach the regime where the Gram formula cancels
    np.testing.assert_allclose(res.d_mu[nonzero], ref[nonzero], rtol=1e-9, atol=0)


def test_single_text_listed_pair_and_error_without_pairs(ragged):
    res = socm_lib.socm_pairs([ragged[5]], [(0, 0)], device="cpu")
    assert res.d_mu[0] == 0 and abs(res.d_sigma[0]) < 1e-12
    with pytest.raises(ValueError, match="no pairs"):
        socm_lib.socm_pairs([ragged[5]], device="cpu")


# ----------------------------------------------------------------------------------------------------------
# 2. Full-rank covariances: exact d x d eigendecomposition reference
# ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("d", [3, 5, 8])
def test_full_rank_matches_eigh_reference(d):
    rng = np.random.default_rng(10 + d)
    # anisotropic, well-conditioned, full-rank clouds (n >> d)
    clouds = []
    for n in (40, 50, 64, 90):
        L = rng.normal(size=(d, d)) * 0.3 + np.eye(d) * 0.4
        clouds.append(rng.normal(size=d) * 0.5 + 2.0 + rng.normal(size=(n, d)) @ L)
    res = socm_lib.socm_pairs(clouds, device="cpu")
    for k, (i, j) in enumerate(zip(res.i, res.j)):
        d_mu, d_sigma = ref_dxd(clouds[i], clouds[j])
        assert res.d_sigma[k] == pytest.approx(d_sigma, rel=RTOL)
        assert res.d_mu[k] == pytest.approx(d_mu, rel=RTOL)
        assert res.socm[k] == pytest.approx((1 - d_mu) * d_sigma, rel=RTOL)


# ----------------------------------------------------------------------------------------------------------
# 3. Rank-deficient clouds at encoder sizes: the library's d x d route (good to ~1e-7 there)
# ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("d", [384, 768])
@pytest.mark.parametrize("n", [1, 2, 5, 30, 80])
def test_rank_deficient_matches_dxd_route(d, n):
    rng = np.random.default_rng(1000 * d + n)
    X, Y = random_clouds(rng, [n, 17], d)
    pairs = [(0, 1)]
    res = socm_lib.socm_pairs([X, Y], pairs, device="cpu")
    S1, S2 = (pop_cov(Z / np.linalg.norm(Z.mean(0))) for Z in (X, Y))
    ref = socm_lib.bures_wasserstein_sq(S1, S2) / 4
    assert res.d_sigma[0] == pytest.approx(ref, rel=1e-6)
    # and the low-rank float64 reference agrees much more tightly
    d_sigma = lowrank_pair(X, Y).d_sigma
    assert res.d_sigma[0] == pytest.approx(d_sigma, rel=RTOL)


# ----------------------------------------------------------------------------------------------------------
# 4. Closed forms (d = 2)
# ----------------------------------------------------------------------------------------------------------
def cross_cloud(mean, s1, s2):
    """Four tokens mean +- s1 e1, mean +- s2 e2: mean exactly `mean`, covariance diag(s1^2/2, s2^2/2)."""
    m = np.asarray(mean, float)
    return np.array([m + [s1, 0], m - [s1, 0], m + [0, s2], m - [0, s2]])


@pytest.mark.parametrize("a,b", [((0.5, 0.1), (0.2, 0.3)), ((1.0, 0.0), (0.0, 1.0)), ((0.04, 0.09), (0.25, 0.01))])
def test_commuting_diagonal_covariances(a, b):
    # unit-norm means, so normalisation leaves the clouds unchanged
    m1, m2 = np.array([0.6, 0.8]), np.array([1.0, 0.0])
    X1 = cross_cloud(m1, np.sqrt(2 * a[0]), np.sqrt(2 * a[1]))
    X2 = cross_cloud(m2, np.sqrt(2 * b[0]), np.sqrt(2 * b[1]))
    bw2 = sum((np.sqrt(x) - np.sqrt(y)) ** 2 for x, y in zip(a, b))
    for normalize in (True, False):
        r = socm_lib.socm(X1, X2, normalize=normalize)
        assert r.d_sigma == pytest.approx(bw2 / 4, rel=1e-12, abs=1e-15)
        assert r.d_mu == pytest.approx(((0.6 - 1.0) ** 2 + 0.8**2) / 4, rel=1e-12)
        assert r.socm == pytest.approx((1 - r.d_mu) * bw2 / 4, rel=1e-12, abs=1e-15)


def test_identical_clouds_give_zero():
    rng = np.random.default_rng(3)
    X = random_clouds(rng, [11], 16)[0]
    r = socm_lib.socm(X, X.copy())
    assert r.d_mu == 0.0
    assert abs(r.d_sigma) < 1e-13 and abs(r.socm) < 1e-13


@pytest.mark.parametrize("normalize", [True, False])
def test_one_token_cloud_gives_other_trace(normalize):
    rng = np.random.default_rng(4)
    one, X = random_clouds(rng, [1, 9], 12)
    Xn = X / np.linalg.norm(X.mean(0)) if normalize else X
    tr2 = np.sum((Xn - Xn.mean(0)) ** 2) / len(Xn)  # tr Sigma_2 by the definition
    r = socm_lib.socm(one, X, normalize=normalize)
    assert r.d_sigma == pytest.approx(tr2 / 4, rel=1e-12)
    r2 = socm_lib.socm(X, one, normalize=normalize)
    assert r2.d_sigma == pytest.approx(tr2 / 4, rel=1e-12)
    # two one-token clouds: no spread at all
    assert socm_lib.socm(one, one[:, ::-1].copy(), normalize=normalize).d_sigma == 0.0


# ----------------------------------------------------------------------------------------------------------
# 5. Properties (a)-(e) of SOCM = (1 - d_mu) d_sigma (Theorem thm-ch04-properties, as Hara et al. list them), on computed results
# ----------------------------------------------------------------------------------------------------------
def test_socm_is_product_and_factors_in_range(ragged):
    res = socm_lib.socm_pairs(ragged, device="cpu")
    np.testing.assert_array_equal(res.socm, (1.0 - res.d_mu) * res.d_sigma)
    # what makes (c) dSOCM/dd_mu = -d_sigma <= 0 and (d) dSOCM/dd_sigma = 1 - d_mu >= 0 hold:
    assert np.all(res.d_sigma >= 0)
    assert np.all(res.d_mu >= 0) and np.all(res.d_mu <= 1 + 1e-15)


def test_property_a_socm_one():
    # same unit mean; a single token vs a cloud with tr Sigma = 4: d_mu = 0, d_sigma = 1, SOCM = 1
    m = np.array([1.0, 0.0, 0.0])
    one = m[None, :]
    X = np.array([m + [0, 2, 0], m - [0, 2, 0]])
    r = socm_lib.socm(one, X)
    assert r.d_mu == 0.0
    assert r.d_sigma == pytest.approx(1.0, rel=1e-14)
    assert r.socm == pytest.approx(1.0, rel=1e-14)
    # moving the mean a little (d_mu > 0) or shrinking the spread (d_sigma < 1) leaves SOCM < 1
    Xs = np.array([m + [0, 1.9, 0], m - [0, 1.9, 0]])
    assert socm_lib.socm(one, Xs).socm < 1
    v = np.array([np.cos(0.1), np.sin(0.1), 0.0])
    Xm = np.array([v + [0, 0, 2], v - [0, 0, 2]])
    r = socm_lib.socm(one, Xm)
    assert r.d_mu > 0 and r.d_sigma == pytest.approx(1.0, rel=1e-14) and r.socm < 1


def test_property_b_socm_zero():
    rng = np.random.default_rng(5)
    d = 8
    C1 = rng.normal(size=(6, d))
    C1 -= C1.mean(0)
    C2 = rng.normal(size=(9, d))
    C2 -= C2.mean(0)
    m = np.zeros(d)
    m[0] = 1.0
    # opposite unit means: d_mu = 1 although the shapes differ, so SOCM = 0
    r = socm_lib.socm(m + C1, -m + C2)
    assert r.d_mu == pytest.approx(1.0, rel=1e-14)
    assert r.d_sigma > 0.1
    assert abs(r.socm) < 1e-14
    # same shape at two different unit means: d_sigma = 0 although d_mu > 0, so SOCM = 0
    m2 = np.zeros(d)
    m2[1] = 1.0
    r = socm_lib.socm(m + C1, m2 + C1)
    assert r.d_mu == pytest.approx(0.5, rel=1e-14)
    assert abs(r.d_sigma) < 1e-13 and abs(r.socm) < 1e-13


def family(thetas, scales, seed=6, d=6):
    """Cloud 1 = e1 + C; cloud 2 = u(theta) + s C (u a unit vector at angle theta from e1).

    Closed forms: d_mu = (1 - cos theta)/2 and d_sigma = (s - 1)^2 tr(Sigma_C)/4 (commuting covariances).
    """
    rng = np.random.default_rng(seed)
    C = rng.normal(size=(7, d)) * 0.3
    C -= C.mean(0)
    e1 = np.eye(d)[0]
    trC = np.sum(C**2) / len(C)
    out = {}
    for t in thetas:
        u = np.cos(t) * np.eye(d)[0] + np.sin(t) * np.eye(d)[1]
        for s in scales:
            out[t, s] = socm_lib.socm(e1 + C, u + s * C, normalize=False)
    return out, trC


def test_properties_c_d_e_on_constructed_family():
    thetas = [0.0, 0.5, 1.0, 2.0, 3.0]
    scales = [1.0, 1.5, 2.0, 3.0, 4.0]
    out, trC = family(thetas, scales)
    for (t, s), r in out.items():  # the closed forms hold, so the family moves one factor at a time
        assert r.d_mu == pytest.approx((1 - np.cos(t)) / 2, rel=1e-12, abs=1e-15)
        assert r.d_sigma == pytest.approx((s - 1) ** 2 * trC / 4, rel=1e-10, abs=1e-13)
    for s in scales[1:]:  # (c): more mean distance at fixed d_sigma > 0 -> lower SOCM
        vals = [out[t, s].socm for t in thetas]
        assert all(a > b for a, b in zip(vals, vals[1:])), vals
    for t in thetas:  # (d): more shape distance at fixed d_mu < 1 -> higher SOCM
        vals = [out[t, s].socm for s in scales]
        assert all(a < b for a, b in zip(vals, vals[1:])), vals
    # (e): the drop in SOCM caused by a larger d_mu is larger when d_sigma is larger
    for (t1, t2), (s1, s2) in itertools.product(zip(thetas, thetas[1:]), zip(scales, scales[1:])):
        lo = out[t2, s1].socm - out[t1, s1].socm
        hi = out[t2, s2].socm - out[t1, s2].socm
        assert hi - lo <= 1e-15, (t1, t2, s1, s2)


# ----------------------------------------------------------------------------------------------------------
# 6. Invariances
# ----------------------------------------------------------------------------------------------------------
def _compare(r1, r2, tol=1e-11):
    np.testing.assert_allclose(r1.d_mu, r2.d_mu, rtol=tol, atol=1e-14)
    np.testing.assert_allclose(r1.d_sigma, r2.d_sigma, rtol=tol, atol=1e-13)
    np.testing.assert_allclose(r1.socm, r2.socm, rtol=tol, atol=1e-13)


def test_token_order_permutation(ragged):
    rng = np.random.default_rng(7)
    permuted = [X[rng.permutation(len(X))] for X in ragged]
    _compare(socm_lib.socm_pairs(ragged, device="cpu"), socm_lib.socm_pairs(permuted, device="cpu"))


def test_pair_swap(ragged):
    res = socm_lib.socm_pairs(ragged, device="cpu")
    swapped = socm_lib.socm_pairs(ragged, np.stack([res.j, res.i], axis=1), device="cpu")
    _compare(res, swapped)


def test_scaling_a_cloud_with_normalize(ragged):
    scaled = [X * c for X, c in zip(ragged, np.geomspace(1e-3, 1e3, len(ragged)))]
    _compare(socm_lib.socm_pairs(ragged, device="cpu"), socm_lib.socm_pairs(scaled, device="cpu"), tol=1e-10)
    # without normalisation a scale does change the result
    a = socm_lib.socm_pairs(ragged, normalize=False, device="cpu")
    b = socm_lib.socm_pairs(scaled, normalize=False, device="cpu")
    assert np.max(np.abs(a.d_sigma - b.d_sigma)) > 1e-3


@pytest.mark.parametrize("normalize", [True, False])
def test_common_rotation(ragged, normalize):
    rng = np.random.default_rng(8)
    Q, _ = np.linalg.qr(rng.normal(size=(24, 24)))
    rotated = [X @ Q for X in ragged]
    _compare(
        socm_lib.socm_pairs(ragged, normalize=normalize, device="cpu"),
        socm_lib.socm_pairs(rotated, normalize=normalize, device="cpu"),
    )


def test_d_mu_is_half_one_minus_raw_cosine(ragged):
    res = socm_lib.socm_pairs(ragged, device="cpu")
    means = [X.mean(axis=0) for X in ragged]
    cos = np.array(
        [means[i] @ means[j] / (np.linalg.norm(means[i]) * np.linalg.norm(means[j])) for i, j in zip(res.i, res.j)]
    )
    np.testing.assert_allclose(res.d_mu, (1 - cos) / 2, rtol=1e-10, atol=1e-14)


# ----------------------------------------------------------------------------------------------------------
# 7. The bound d_sigma <= (c1 + c2)/4 and SOCM > 1
# ----------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real_clouds():
    enc = socm_lib.load_encoder("all-minilm-l6", device="cpu")
    texts = socm_lib.sample_texts(list(socm_lib.corpus()["text"]), 24, seed=3)
    return socm_lib.token_embeddings(enc, texts)


@pytest.mark.parametrize("which", ["random", "real"])
def test_concentration_bound(ragged, real_clouds, which):
    clouds = ragged if which == "random" else real_clouds
    res = socm_lib.socm_pairs(clouds, device="cpu")
    c = np.array([socm_lib.concentration_ratio(X) for X in clouds])
    c_ref = np.array(
        [np.sum((X - X.mean(0)) ** 2) / len(X) / np.sum(X.mean(0) ** 2) for X in (np.float64(Z) for Z in clouds)]
    )
    np.testing.assert_allclose(c, c_ref, rtol=1e-10)
    bound = (c[res.i] + c[res.j]) / 4
    assert np.all(res.d_sigma <= bound * (1 + 1e-12))
    assert np.all(res.socm <= bound * (1 + 1e-12))


def test_real_clouds_match_reference(real_clouds):
    res = socm_lib.socm_pairs(real_clouds, device="cpu")
    pairs = np.stack([res.i, res.j], axis=1)[::7]
    d_mu, d_sigma, s, _ = ref_many(real_clouds, pairs)
    np.testing.assert_allclose(res.d_sigma[::7], d_sigma, rtol=RTOL)
    np.testing.assert_allclose(res.d_mu[::7], d_mu, rtol=RTOL)
    np.testing.assert_allclose(res.socm[::7], s, rtol=RTOL)


def test_socm_above_one_is_possible():
    m = np.array([1.0, 0.0, 0.0])
    X1 = np.array([m + [0, 3, 0], m - [0, 3, 0]])  # Sigma_1 = 9 e2 e2^T, c = 9
    X2 = np.array([m + [0, 0, 3], m - [0, 0, 3]])  # Sigma_2 = 9 e3 e3^T, orthogonal: fidelity 0
    r = socm_lib.socm(X1, X2)
    assert r.d_mu == 0.0
    assert r.d_sigma == pytest.approx(18 / 4, rel=1e-14)
    assert r.d_sigma > 1 and r.socm > 1
    c1, c2 = socm_lib.concentration_ratio(X1), socm_lib.concentration_ratio(X2)
    assert c1 > 2 and c2 > 2
    assert r.d_sigma == pytest.approx((c1 + c2) / 4, rel=1e-14)  # the bound is attained here


# ----------------------------------------------------------------------------------------------------------
# 8. Precision, single pair, torch inputs, explicit device
# ----------------------------------------------------------------------------------------------------------
def test_float32_close_to_float64(ragged, real_clouds):
    for clouds in (ragged, real_clouds):
        r64 = socm_lib.socm_pairs(clouds, device="cpu")
        r32 = socm_lib.socm_pairs(clouds, device="cpu", dtype=torch.float32)
        scale = max(1.0, float(np.max(r64.d_sigma)))
        np.testing.assert_allclose(r32.d_sigma, r64.d_sigma, rtol=1e-5, atol=1e-5 * scale)
        np.testing.assert_allclose(r32.socm, r64.socm, rtol=1e-5, atol=1e-5 * scale)
        np.testing.assert_allclose(r32.d_mu, r64.d_mu, rtol=1e-5, atol=1e-6)


def test_socm_single_pair_equals_socm_pairs_entry(ragged):
    res = socm_lib.socm_pairs(ragged, device="cpu")
    for k in (0, 5, 40, len(res) - 1):
        i, j = int(res.i[k]), int(res.j[k])
        r = socm_lib.socm(ragged[i], ragged[j])
        assert r == res[k] or (
            r.d_mu == pytest.approx(res.d_mu[k], rel=1e-13, abs=1e-16)
            and r.d_sigma == pytest.approx(res.d_sigma[k], rel=1e-12, abs=1e-15)
            and r.socm == pytest.approx(res.socm[k], rel=1e-12, abs=1e-15)
        )
        assert isinstance(r, socm_lib.SOCMResult)


def test_torch_inputs_equal_numpy_inputs(ragged):
    a = socm_lib.socm_pairs(ragged, device="cpu")
    b = socm_lib.socm_pairs([torch.from_numpy(X) for X in ragged], device="cpu")
    c = socm_lib.socm_pairs([torch.from_numpy(X).float() for X in ragged], device=torch.device("cpu"))
    np.testing.assert_array_equal(a.d_sigma, b.d_sigma)
    np.testing.assert_array_equal(a.d_mu, b.d_mu)
    ref32 = socm_lib.socm_pairs([X.astype(np.float32) for X in ragged], device="cpu")
    np.testing.assert_array_equal(c.d_sigma, ref32.d_sigma)
    np.testing.assert_allclose(c.d_sigma, a.d_sigma, rtol=1e-5, atol=1e-6)
    r = socm_lib.socm(torch.from_numpy(ragged[3]), torch.from_numpy(ragged[7]))
    assert r.d_sigma == pytest.approx(socm_lib.socm(ragged[3], ragged[7]).d_sigma, rel=1e-14)


def test_device_none_equals_explicit_cpu(ragged, monkeypatch):
    from socm_lib.checks import as_device

    a = socm_lib.socm_pairs(ragged)
    b = socm_lib.socm_pairs(ragged, device="cpu")
    if torch.cuda.is_available():
        np.testing.assert_allclose(a.d_sigma, b.d_sigma, rtol=1e-9, atol=1e-12)
    else:  # None must have chosen the CPU path itself: the same arithmetic, so the same bits
        np.testing.assert_array_equal(a.d_sigma, b.d_sigma)
    # None picks the GPU exactly when torch reports one
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert as_device(None) == torch.device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert as_device(None) == torch.device("cpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU here: the GPU path of socm_pairs is not tested")
def test_cuda_matches_reference(ragged):
    res = socm_lib.socm_pairs(ragged, device="cuda", block_elems=50)
    pairs = [(i, j) for i in range(len(ragged)) for j in range(i + 1, len(ragged))]
    check_result(res, ragged, pairs)
    listed = np.array([[0, 5], [5, 0], [3, 3], [14, 2]])
    check_result(socm_lib.socm_pairs(ragged, listed, device="cuda"), ragged, listed)
    r32 = socm_lib.socm_pairs(ragged, device="cuda", dtype=torch.float32)
    np.testing.assert_allclose(r32.d_sigma, res.d_sigma, rtol=1e-5, atol=1e-5 * max(1.0, res.d_sigma.max()))


def test_frame_and_summary(ragged):
    res = socm_lib.socm_pairs(ragged, device="cpu")
    df = res.to_frame()
    assert list(df.columns) == ["i", "j", "d_mu", "d_sigma", "socm"]
    assert len(df) == len(res)
    s = res.summary()
    assert s["pairs"] == len(res)
    assert s["mean_socm"] == pytest.approx(float(np.mean(df["socm"])))
    assert s["median_socm"] == pytest.approx(float(np.median(df["socm"])))
    assert s["share_d_sigma_above_1"] == pytest.approx(float(np.mean(df["d_sigma"] > 1)))
