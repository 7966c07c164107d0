"""Benchmark the metric: socm_pairs against the d x d routes, for speed and exactness.

    python benchmarks/bench_metric.py            # full run (a few minutes on 2 cores)
    python benchmarks/bench_metric.py --quick    # smoke run (small sizes; targets not evaluated)

On the same token clouds (synthetic clouds with 5 to 60 tokens at d = 384 and 768, and the
real clouds of the first 1,000 texts of the embedded corpus under all-minilm-l6), it times

* ``socm_lib.socm_pairs`` (float64, exact low-rank route) on every pair and on a subsample;
* the paper's route, ``socm_lib.paper_route``: the d x d route of the authors' released code
  (float32 statistics, 1e-9 I added before each square root, ``torch.linalg.eigh`` with eigenvalues
  clamped at 0, batched over pairs), re-implemented in the library;
* the same float32 d x d route without the regulariser (``paper_route(..., eps=0)``);
* the library's float64 d x d reference, ``socm_lib.bures_wasserstein_sq`` (two ``eigh`` per pair);
* ``scipy.linalg.sqrtm`` of the d x d product Sigma1 Sigma2 (float64, the FID formula);
* POT's ``ot.gaussian.bures_wasserstein_distance`` (float64; optional dependency);

and compares every figure with an independent float64 computation: one numpy SVD of
A_i A_j^T per pair, no batching (``socm_lib.reference.lowrank_pairs``). Slow routes run on a subsample
of pairs; socm_pairs is timed on exactly the same pairs in the same run, so the speed ratio
is pair for pair. Every route is timed in its own fresh process, so that none runs in a state that another
route's thread pools and BLAS settings left behind; the paper's route, the targets' denominator, in several
(each process's speed is recorded, and the speed-up is quoted from its fastest to its slowest process). It also
measures the wall time and peak memory of all 499,500 pairs of 1,000 texts, each in a fresh process, and profiles
where that time goes.

Prints tables and writes ``benchmarks/results/metric.json`` (with ``--quick``, a temporary folder instead).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

SEED = 0

#: Route subsample sizes (pairs) per dimension; full and quick runs.
SUBSAMPLE = {
    False: {384: {"paper": 128, "dxd32": 32, "bures": 10, "scipy": 10, "pot": 24},
            768: {"paper": 64, "dxd32": 16, "bures": 4, "scipy": 4, "pot": 8}},
    True: {384: dict.fromkeys(("paper", "dxd32", "bures", "scipy", "pot"), 1),
           768: dict.fromkeys(("paper", "dxd32", "bures", "scipy", "pot"), 1)},
}
#: The baseline's name in the results: the paper's route as the authors' released code computes it.
PAPER_ROUTE = "paper route (released code, float32, 1e-9·I)"

#: (name, source, d, number of texts) per dataset; full and quick runs.
DATASETS = {
    False: [("synthetic d=384", "synthetic", 384, 1000), ("synthetic d=768", "synthetic", 768, 400),
            ("corpus all-minilm-l6", "corpus", 384, 1000)],
    True: [("synthetic d=384", "synthetic", 384, 40), ("synthetic d=768", "synthetic", 768, 20),
           ("corpus all-minilm-l6", "corpus", 384, 40)],
}
PAPER_BATCH = {384: 16, 768: 8}
#: Fresh processes that time the paper's route (the targets' denominator); full and quick runs. Its speed
#: differs from process to process (metric.json records each one's), so it is timed in several.
PAPER_PROCESSES = {False: 5, True: 1}
#: All-pairs runs per dataset (full run): three each, so that every all-pairs time has a median and a spread.
ALLPAIRS_REPEATS = {False: {"synthetic d=384": 3, "synthetic d=768": 3, "corpus all-minilm-l6": 3}, True: None}
#: Timings of the sample of one-call-per-pair SVDs (each a loop over every sampled matrix): ``floor_s`` is their median.
FLOOR_REPEATS = 3
SUB_REPEATS = 3
#: Pairs checked against the reference: every pair (None) or a fixed random sample of this many.
REFERENCE_CHECK = {False: {"synthetic d=384": None, "synthetic d=768": None, "corpus all-minilm-l6": 100_000},
                   True: None}
QUICK_CHECK = 20_000

RATIO_BASIS = (
    "per pair, same clouds, same run: socm_pairs pairs/s over every pair of the texts divided by the route's "
    "pairs/s on a subsample of those pairs (the d x d routes cost the same per pair however many pairs they get); "
    "every route timed in its own fresh process; the paper's route in several, and the median of their pairs/s "
    "is the denominator ('ratio_vs_fastest_process' divides by the fastest of them instead)"
)
SAME_PAIRS_BASIS = (
    "socm_pairs called on exactly the route's subsample (only those texts and pairs) divided by the route's "
    "pairs/s; this includes socm_pairs' fixed cost per call, large next to a few dozen pairs"
)

TARGETS = {
    "exactness": "every figure of socm_pairs within 1e-9 relative of the independent float64 computation",
    "speed_384": "at least 300x the paper's d x d route per pair at d = 384",
    "speed_768": "at least 1,500x the paper's d x d route per pair at d = 768",
    "allpairs": "all 499,500 pairs of 1,000 texts (d = 384, 5 to 60 tokens) in at most 20 s on this CPU",
}


# ----------------------------------------------------------------------------- data
def load_clouds(source: str, d: int, n_texts: int, cache: str | None = None) -> list[np.ndarray]:
    if source == "synthetic":
        return common.synthetic_clouds(n_texts, d, seed=SEED)
    return common.corpus_clouds(n_texts, Path(cache) if cache else None)


def sample_pairs(n_texts: int, k: int, seed: int = SEED) -> np.ndarray:
    """``k`` distinct random pairs ``i < j`` of ``n_texts`` texts (fixed seed)."""
    rng = np.random.default_rng(seed)
    i, j = np.triu_indices(n_texts, k=1)
    pick = rng.choice(len(i), size=min(k, len(i)), replace=False)
    return np.stack([i[pick], j[pick]], axis=1)


# ----------------------------------------------------------------------------- routes
def socm_on_pairs(clouds, pairs) -> np.ndarray:
    """socm_pairs on the texts of ``pairs`` only (as a user with these pairs would call it); (P, 3) array."""
    from socm_lib import socm_pairs

    used, local = np.unique(pairs, return_inverse=True)
    r = socm_pairs([clouds[u] for u in used], local.reshape(pairs.shape), device="cpu", progress=False)
    return np.stack([r.d_mu, r.d_sigma, r.socm], axis=1)


def paper_route_timed(clouds, pairs, batch: int, eps: float = 1e-9) -> tuple[np.ndarray, list[float]]:
    """``socm_lib.paper_route`` on ``pairs``, one call per batch of ``batch`` pairs on only that batch's texts.

    Returns the (P, 3) figures and the seconds of each batch (the texts' statistics included).
    ``eps=0`` gives the same float32 d x d route without the regulariser.
    """
    from socm_lib import paper_route

    out, times = [], []
    for s in range(0, len(pairs), batch):
        chunk = pairs[s : s + batch]
        t = time.perf_counter()
        used, local = np.unique(chunk, return_inverse=True)
        r = paper_route([clouds[u] for u in used], local.reshape(chunk.shape), eps=eps, batch_size=batch,
                        device="cpu", progress=False)
        times.append(time.perf_counter() - t)
        out.append(np.stack([r.d_mu, r.d_sigma, r.socm], axis=1))
    return np.concatenate(out), times


def _cov64(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Float64 normalised mean and population covariance of one cloud (``socm_lib.stats``)."""
    from socm_lib import cloud_covariance, cloud_mean, normalize_cloud

    xn = normalize_cloud(x)
    return cloud_mean(xn).numpy(), cloud_covariance(xn).numpy()


def _one_pair_at_a_time(clouds, pairs, d_sigma_of) -> tuple[np.ndarray, list[float]]:
    """Time a float64 d x d route pair by pair, covariances included; round-off warnings silenced.

    ``d_sigma_of(m1, S1, m2, S2, d_mu)`` returns the route's d_sigma (NaN where it fails).
    """
    out, times = [], []
    for i, j in pairs:
        t = time.perf_counter()
        m1, S1 = _cov64(clouds[i])
        m2, S2 = _cov64(clouds[j])
        d_mu = float((m1 - m2) @ (m1 - m2)) / 4
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d_sigma = d_sigma_of(m1, S1, m2, S2, d_mu)
        times.append(time.perf_counter() - t)
        out.append((d_mu, d_sigma, (1 - d_mu) * d_sigma))
    return np.array(out), times


def bures_route(clouds, pairs) -> tuple[np.ndarray, list[float]]:
    """The library's d x d reference, ``socm_lib.bures_wasserstein_sq`` (float64 eigh), one pair at a time."""
    from socm_lib import bures_wasserstein_sq

    return _one_pair_at_a_time(clouds, pairs, lambda m1, S1, m2, S2, d_mu: bures_wasserstein_sq(S1, S2) / 4)


def scipy_route(clouds, pairs) -> tuple[np.ndarray, list[float]]:
    """FID-style: ``tr sqrtm(Sigma1 Sigma2)`` with scipy (float64), one pair at a time; real part taken."""
    import scipy.linalg

    def d_sigma(m1, S1, m2, S2, d_mu):
        try:
            fid = float(np.trace(scipy.linalg.sqrtm(S1 @ S2)).real)
        except (ValueError, np.linalg.LinAlgError):
            return float("nan")
        return max(np.trace(S1) + np.trace(S2) - 2 * fid, 0.0) / 4 if np.isfinite(fid) else float("nan")

    return _one_pair_at_a_time(clouds, pairs, d_sigma)


def pot_route(clouds, pairs, ot) -> tuple[np.ndarray, list[float]]:
    """POT's ``bures_wasserstein_distance(m1, m2, S1, S2)`` (float64), one pair at a time.

    It returns W_2 of the Gaussian fits (not squared), so ``d_sigma = W^2/4 - d_mu``.
    (POT's batched ``paired=True`` form evaluates a three-matrix einsum without
    contraction order, O(d^4) per pair, so the per-pair call is the fast way to use it.)
    """

    def d_sigma(m1, S1, m2, S2, d_mu):
        W = float(ot.gaussian.bures_wasserstein_distance(m1, m2, S1, S2))
        return max(W * W / 4 - d_mu, 0.0) if np.isfinite(W) else float("nan")

    return _one_pair_at_a_time(clouds, pairs, d_sigma)


def route_worker(route: str, source: str, d: int, n_texts: int, pairs: list, cache: str | None = None) -> dict:
    """In a fresh process: one route on ``pairs`` after a warm-up; its figures and timings.

    ``route`` is ``"socm"`` (socm_pairs on exactly these pairs: median of ``SUB_REPEATS`` calls) or a
    d x d route, ``"paper"``, ``"dxd32"`` (the paper's route without its regulariser), ``"bures"``, ``"scipy"``
    or ``"pot"`` (one pass, timed per batch or per pair).
    """
    clouds = load_clouds(source, d, n_texts, cache)
    pairs = np.asarray(pairs, dtype=np.int64)
    if route == "socm":
        values = socm_on_pairs(clouds, pairs)  # also the warm-up
        timing = common.median_time(lambda: socm_on_pairs(clouds, pairs), repeats=SUB_REPEATS, warmup=0)
        return {"values": values.tolist(), **timing}
    batch = PAPER_BATCH[d] if route in ("paper", "dxd32") else 1
    run = {"paper": lambda p: paper_route_timed(clouds, p, batch),
           "dxd32": lambda p: paper_route_timed(clouds, p, batch, eps=0.0),
           "bures": lambda p: bures_route(clouds, p), "scipy": lambda p: scipy_route(clouds, p),
           "pot": lambda p: pot_route(clouds, p, common.optional("ot"))}[route]
    run(pairs[:batch])  # warm-up
    values, times = run(pairs)
    return {"values": values.tolist(), "times": times, "batch": batch}


# ----------------------------------------------------------------------------- all pairs, isolated
def svd_floor(clouds, n_cores: int, sample: int = 20_000, repeats: int = FLOOR_REPEATS) -> dict:
    """Estimate the time the SVDs of every pair take as one ``numpy.linalg.svd`` call per pair, without padding.

    Each call carries numpy's own per-call overhead besides LAPACK's work, so this is not a lower bound for a
    route that calls LAPACK once per matrix. The compiled lane kernel (``socm_lib.nuclear``), which decomposes
    many matrices at once, takes less. The record's keys still call this estimate the floor.

    For a random sample of pairs, the exact (unpadded) float64 cross-Grams ``A_i A_j^T`` are formed
    first; then only their singular values are timed, one ``numpy.linalg.svd`` call per matrix on one thread,
    ``repeats`` times over the whole sample. The per-pair time of each pass times the number of pairs, divided by
    the cores, is one estimate (``floor_runs_s``); ``floor_s`` is their median.
    """
    from threadpoolctl import threadpool_limits

    from socm_lib.reference import lowrank_factor

    factors = [lowrank_factor(x)[0] for x in clouds]
    n = len(clouds)
    pairs = sample_pairs(n, min(sample, n * (n - 1) // 2), seed=1)
    grams = [factors[i] @ factors[j].T for i, j in pairs]
    per_pair = []
    with threadpool_limits(1):
        np.linalg.svd(grams[0], compute_uv=False)
        for _ in range(repeats):
            t = time.perf_counter()
            for g in grams:
                np.linalg.svd(g, compute_uv=False)
            per_pair.append((time.perf_counter() - t) / len(grams))
    total_pairs = n * (n - 1) // 2
    runs = [p * total_pairs / n_cores for p in per_pair]
    return {"pairs_sampled": int(len(grams)), "us_per_pair_one_core": float(np.median(per_pair)) * 1e6,
            "floor_s": float(np.median(runs)), "floor_runs_s": [round(r, 4) for r in runs], "cores": n_cores}


def allpairs_worker(source: str, d: int, n_texts: int, repeats: int, out: str, cache: str | None = None) -> dict:
    """In a fresh process: time every pair of ``n_texts`` texts ``repeats`` times after a warm-up.

    Records the peak memory of the first run and saves its figures to ``out`` (.npz). Every run is
    profiled: the engine's two heavy steps (the cross-Gram matrix products and the SVDs) are wrapped
    with timers, summed over the threads that run them (a few thousand timer calls, negligible
    against the run). Divided by the number of cores, each sum is that step's share of the wall
    time; the rest ("other") is preparation, bookkeeping and any core left idle. The profile
    reported is that of the median run.
    """
    import threading

    import socm_lib
    from socm_lib import block_math as engine

    clouds = load_clouds(source, d, n_texts, cache)
    cores = torch.get_num_threads()
    spent = {"matmul": 0.0, "svd": 0.0}
    lock = threading.Lock()
    original = {"matmul": engine._matmul_t, "svd": engine._nuclear_norms}

    def timed(key):
        def wrapper(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return original[key](*args, **kwargs)
            finally:
                with lock:
                    spent[key] += time.perf_counter() - t0
        return wrapper

    engine._matmul_t, engine._nuclear_norms = timed("matmul"), timed("svd")
    try:
        socm_lib.socm_pairs(clouds[:80], device="cpu", progress=False)  # warm-up: BLAS, LAPACK, thread pool
        runs, profiles = [], []
        for k in range(repeats):
            spent.update(matmul=0.0, svd=0.0)
            with common.PeakRSS() as mem:
                t = time.perf_counter()
                r = socm_lib.socm_pairs(clouds, device="cpu", progress=False)
                runs.append(time.perf_counter() - t)
            matmul_s, svd_s = spent["matmul"] / cores, spent["svd"] / cores
            profiles.append({"total_s": round(runs[-1], 3), "cores": cores,
                             "matmul_core_s": round(spent["matmul"], 3), "svd_core_s": round(spent["svd"], 3),
                             "matmul_s": round(matmul_s, 3), "svd_s": round(svd_s, 3),
                             "other_s": round(runs[-1] - matmul_s - svd_s, 3)})
            if k == 0:
                np.savez(out, d_mu=r.d_mu, d_sigma=r.d_sigma, socm=r.socm, i=r.i, j=r.j)
                peak, process_peak = mem.peak_mib, mem.process_peak_mib
            del r
    finally:
        engine._matmul_t, engine._nuclear_norms = original["matmul"], original["svd"]
    median_run = int(np.argsort(runs)[len(runs) // 2])
    floor = svd_floor(clouds, n_cores=torch.get_num_threads())
    return {
        "svd_floor": floor,
        "pairs": n_texts * (n_texts - 1) // 2, "runs_s": [round(x, 3) for x in runs],
        "median_s": float(np.median(runs)), "peak_mib": float(peak), "process_peak_mib": float(process_peak),
        "threads": torch.get_num_threads(), "load_average_1min": common.load_average(),
        "profile": profiles[median_run], "profiles": profiles,
    }


# ----------------------------------------------------------------------------- one dataset
def _route_entry(name, pairs, values, per_process, ref, socm_same_pps, socm_all_pps, timing):
    """One route's record: pairs/s is the median over fresh processes of each one's pairs/s."""
    pps = float(np.median(per_process))
    return {
        "route": name, "status": "ok", "pairs": int(len(pairs)), "pairs_per_s": pps,
        "pairs_per_s_per_process": [float(x) for x in per_process], "timing": timing,
        "speed_ratio": socm_all_pps / pps, "speed_ratio_vs_fastest_process": socm_all_pps / max(per_process),
        "socm_pairs_per_s_same_pairs": socm_same_pps, "speed_ratio_same_pairs": socm_same_pps / pps,
        "errors": {k: common.errors(values[:, c], ref[:, c]) for c, k in enumerate(("d_mu", "d_sigma", "socm"))},
    }


def run_dataset(name, source, d, n_texts, quick, workdir: Path, ot) -> dict:
    print(f"\n== {name}: {n_texts} texts, d = {d} ==", flush=True)
    cache = str(workdir / "corpus_clouds.npz") if source == "corpus" else None
    clouds = load_clouds(source, d, n_texts, cache)
    lengths = np.array([len(c) for c in clouds])
    entry = {"source": source, "d": d, "n_texts": n_texts,
             "tokens": {"min": int(lengths.min()), "max": int(lengths.max()), "mean": float(lengths.mean())},
             "routes": []}
    if source == "corpus":
        entry["encoder"] = "all-minilm-l6 (final layer, special tokens kept, CPU)"

    # All pairs, in a fresh process (time, memory, profile).
    out = workdir / f"allpairs_{source}_{d}.npz"
    print("  all pairs (fresh process) ...", flush=True)
    allp = common.run_isolated("bench_metric", "allpairs_worker", source=source, d=d, n_texts=n_texts,
                               repeats=1 if quick else ALLPAIRS_REPEATS[False][name], out=str(out), cache=cache)
    with np.load(out) as z:
        allres = np.stack([z["d_mu"], z["d_sigma"], z["socm"]], axis=1)
        all_ij = np.stack([z["i"], z["j"]], axis=1)
    socm_all_pps = allp["pairs"] / allp["median_s"]

    # Independent reference on every pair (or a fixed random subset in quick mode).
    sample = QUICK_CHECK if quick else REFERENCE_CHECK[False][name]
    check = np.arange(len(all_ij)) if sample is None or sample >= len(all_ij) else np.sort(
        np.random.default_rng(SEED).choice(len(all_ij), size=sample, replace=False))
    print(f"  float64 reference on {len(check):,} pairs ...", flush=True)
    t = time.perf_counter()
    ref_all = common.reference_pairs(clouds, all_ij[check])
    entry["reference_seconds"] = round(time.perf_counter() - t, 1)
    allp["errors"] = {k: common.errors(allres[check, c], ref_all[:, c]) for c, k in enumerate(("d_mu", "d_sigma", "socm"))}
    allp["pairs_checked"] = int(len(check))
    allp["pairs_per_s"] = socm_all_pps
    entry["allpairs"] = allp

    # Subsample of pairs shared by every route (each route takes a prefix of it); each route is
    # timed in its own fresh process, so that no route runs in a state another one left behind.
    sizes = SUBSAMPLE[quick][d]
    sub = sample_pairs(n_texts, max(sizes.values()))
    ref_sub = common.reference_pairs(clouds, sub)

    def in_fresh_process(key, pairs):
        r = common.run_isolated("bench_metric", "route_worker", route=key, source=source, d=d, n_texts=n_texts,
                                pairs=pairs.tolist(), cache=cache)
        return np.array(r["values"], dtype=float), r

    same = {}  # socm_pairs on the pairs a route got, timed once per list of pairs (routes may share one)

    def socm_same(pairs):
        key = pairs.tobytes()
        if key not in same:
            values, r = in_fresh_process("socm", pairs)
            same[key] = values, len(pairs) / r["median_s"], r
        return same[key]

    values, pps, _ = socm_same(sub)
    entry["routes"].append({
        "route": "socm_pairs (all pairs)", "status": "ok", "pairs": allp["pairs"], "pairs_per_s": socm_all_pps,
        "timing": f"median of {len(allp['runs_s'])} runs after a warm-up, fresh process",
        "speed_ratio": 1.0, "socm_pairs_per_s_same_pairs": None, "speed_ratio_same_pairs": None,
        "errors": allp["errors"],
    })
    entry["routes"].append({
        "route": "socm_pairs (subsample)", "status": "ok", "pairs": int(len(sub)), "pairs_per_s": pps,
        "timing": f"median of {SUB_REPEATS} runs after a warm-up, fresh process",
        "speed_ratio": None, "socm_pairs_per_s_same_pairs": pps, "speed_ratio_same_pairs": 1.0,
        "errors": {k: common.errors(values[:, c], ref_sub[:, c]) for c, k in enumerate(("d_mu", "d_sigma", "socm"))},
    })

    def add(route, key, processes=1):
        pairs = sub[: sizes[key]]
        print(f"  {route}: {len(pairs)} pairs ({processes} fresh process{'es' if processes > 1 else ''}) ...",
              flush=True)
        runs = [in_fresh_process(key, pairs) for _ in range(processes)]
        batch = runs[0][1]["batch"]
        counts = np.array([min(batch, len(pairs) - s) for s in range(0, len(pairs), batch)])
        per_process = [float(np.median(counts / np.asarray(r["times"]))) for _, r in runs]
        _, same_pps, _ = socm_same(pairs)
        unit = "single pairs" if batch == 1 else f"batches of {batch} pairs"
        timing = (f"median over {len(counts)} {unit} after a warm-up, "
                  + (f"in each of {processes} fresh processes (median of the processes)" if processes > 1
                     else "in one fresh process"))
        entry["routes"].append(_route_entry(route, pairs, runs[0][0], per_process, ref_sub[: len(pairs)],
                                            same_pps, socm_all_pps, timing))

    add(PAPER_ROUTE, "paper", processes=PAPER_PROCESSES[quick])
    add("d x d float32 eigh, no regulariser", "dxd32")
    add("socm_lib.bures d x d (float64 eigh)", "bures")
    add("scipy sqrtm(S1 S2) (float64)", "scipy")
    if ot is not None:
        add("POT bures_wasserstein_distance (float64)", "pot")
    else:
        entry["routes"].append({"route": "POT bures_wasserstein_distance (float64)", "status":
                                "skipped: POT is not installed (pip install POT)", "pairs": 0})
    return entry


def evaluate_targets(datasets: dict, quick: bool) -> dict:
    def paper(name):
        for r in datasets[name]["routes"]:
            if r["route"].startswith("paper"):
                return r

    max_rel = max(
        r["errors"][k]["max_rel"] for ds in datasets.values() for r in ds["routes"][:2] for k in ("d_mu", "d_sigma", "socm")
    )
    non_finite = sum(r["errors"][k]["non_finite"] for ds in datasets.values() for r in ds["routes"][:2]
                     for k in ("d_mu", "d_sigma", "socm"))
    p384, p768 = paper("synthetic d=384"), paper("synthetic d=768")
    allp = datasets["synthetic d=384"]["allpairs"]
    full = not quick and allp["pairs"] == 499_500
    targets = {
        "exactness": {"target": TARGETS["exactness"], "max_rel_err": max_rel, "non_finite": non_finite,
                      "threshold": 1e-9, "met": bool(max_rel <= 1e-9 and non_finite == 0)},
        "speed_384": {"target": TARGETS["speed_384"], "ratio": p384["speed_ratio"],
                      "ratio_vs_fastest_process": p384["speed_ratio_vs_fastest_process"],
                      "ratio_same_pairs": p384["speed_ratio_same_pairs"], "threshold": 300,
                      "met": bool(p384["speed_ratio"] >= 300), "basis": RATIO_BASIS},
        "speed_768": {"target": TARGETS["speed_768"], "ratio": p768["speed_ratio"],
                      "ratio_vs_fastest_process": p768["speed_ratio_vs_fastest_process"],
                      "ratio_same_pairs": p768["speed_ratio_same_pairs"], "threshold": 1500,
                      "met": bool(p768["speed_ratio"] >= 1500), "basis": RATIO_BASIS},
        "allpairs": {"target": TARGETS["allpairs"], "seconds": allp["median_s"], "pairs": allp["pairs"],
                     "threads": allp["threads"], "threshold": 20, "met": bool(full and allp["median_s"] <= 20)},
    }
    if not full:
        targets["allpairs"]["note"] = "quick run: fewer than 1,000 texts, so this target is not evaluated"
    for t in targets.values():
        t["evaluated"] = not quick
    return targets


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run (targets not evaluated)")
    args, record, t0 = common.start(__file__, parser, argv)
    ot = common.optional("ot")
    record["settings"] = {
        "seed": SEED, "subsample_pairs": SUBSAMPLE[args.quick], "paper_batch": PAPER_BATCH,
        "paper_processes": PAPER_PROCESSES[args.quick],
        "allpairs_repeats": ALLPAIRS_REPEATS[False] if not args.quick else 1, "subsample_repeats": SUB_REPEATS,
        "svd_floor_repeats": FLOOR_REPEATS,
        "reference_pairs_checked": "every pair" if args.quick else {
            k: "every pair" if v is None else f"random sample of {v:,} (seed {SEED})"
            for k, v in REFERENCE_CHECK[False].items()},
        "reference": "float64 numpy, one SVD of A_i A_j^T per pair, no batching (socm_lib.reference.lowrank_pairs)",
        "paper_route": "socm_lib.paper_route: the released code's d x d route (float32, 1e-9 I before each root)",
        "speed_ratio": RATIO_BASIS,
        "speed_ratio_same_pairs": SAME_PAIRS_BASIS,
    }
    datasets = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, source, d, n in DATASETS[args.quick]:
            datasets[name] = run_dataset(name, source, d, n, args.quick, Path(tmp), ot)
    record["datasets"] = datasets
    record["targets"] = evaluate_targets(datasets, args.quick)
    path = common.finish(record, "metric", t0)

    from socm_lib.viz import benchmarking

    common.print_table("Metric: pairs per second, speed ratio and errors against the float64 reference",
                       benchmarking.metric_table(record))
    common.print_table("All pairs (fresh process per dataset)", benchmarking.allpairs_table(record))
    common.print_table("Targets", benchmarking.targets_table(record["targets"]))
    print(f"\nwrote {path} ({record['script_seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
