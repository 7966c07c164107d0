r"""Check the device a run uses against the CPU reference: ``python -m socm_lib gpu-check`` (book, Chapter 6).

Two checks, on whatever device is present, with the offline encoder ``all-minilm-l6`` by default:

1. **Extraction in float16 vs float32** (CUDA only; skipped on a CPU): the same texts through the same
   model, float32 and float16 forward passes; the largest differences of each text's statistics, the
   normalised mean :math:`\mu/\lVert\mu\rVert` (absolute), the concentration ratio
   :math:`c = \operatorname{tr}\Sigma` after normalisation (relative), and the SOCM of every pair (absolute).
2. **SOCM over all pairs on the device vs the CPU default path**: the largest normwise relative
   difference :math:`\max|a-b| / \max|b|` of SOCM, :math:`d_\mu` and :math:`d_\Sigma`. On a CPU-only machine
   the ``backend="torch"`` path (the one a GPU takes) is compared with the default one instead. On a GPU the
   pairs run twice, timed side by side: with the default solver (the batched Jacobi of :mod:`socm_lib.jacobi`
   for matrices larger than 32 x 32, which cuSOLVER does not batch) and with ``torch.linalg.svdvals`` alone.

Each check passes when every difference is at most its threshold (:data:`THRESHOLDS`); the report (JSON)
holds the differences, the thresholds, timings and the machine, and the verdict is PASS or FAIL.
"""

from __future__ import annotations

import datetime
import json
import platform
import time

import numpy as np
import torch

from .checks import as_device, as_int, output_file

#: Largest accepted differences. Float16 keeps about 3 decimal digits; the pair paths all compute in float64.
THRESHOLDS = {
    "float16_mean_max_abs": 1e-2,
    "float16_concentration_ratio_max_rel": 2e-2,
    "float16_socm_max_abs": 1e-2,
    "pairs_max_rel": 1e-6,
}


def _statistics(clouds) -> tuple[np.ndarray, np.ndarray]:
    """Each text's normalised mean (rows) and concentration ratio, in float64."""
    from .stats import cloud_mean, concentration_ratio

    means = np.stack([cloud_mean(torch.as_tensor(X, dtype=torch.float64)).numpy() for X in clouds])
    means /= np.linalg.norm(means, axis=1, keepdims=True)
    return means, np.array([concentration_ratio(X) for X in clouds])


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    """Normwise relative difference ``max|a - b| / max|b|`` (absolute when ``b`` is all zero)."""
    scale = float(np.max(np.abs(b)))
    return float(np.max(np.abs(a - b))) / (scale if scale > 0 else 1.0)


def _timed(fn, device: torch.device):
    """``(fn(), seconds)``, the GPU's queued work finished before and after."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    out = fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return out, round(time.perf_counter() - start, 3)


def _pair_differences(test, ref) -> dict:
    """:func:`_relative` differences of SOCM, d_mu and d_sigma between two :class:`~socm_lib.results.PairResult`."""
    return {f"{k}_max_rel": _relative(getattr(test, k), getattr(ref, k)) for k in ("socm", "d_mu", "d_sigma")}


def gpu_check(encoder: str = "all-minilm-l6", *, n_texts: int = 200, seed: int = 0, device=None) -> dict:
    """Run both checks and return the report (see the module docstring); nothing is written or printed."""
    from .data import corpus, sample_texts
    from .encoders import load_encoder, provenance
    from .extract import token_embeddings
    from .config import config_context
    from .pairs import socm_pairs
    from .nuclear import kernel_report
    from .report import device_report

    pool = corpus()["text"]
    n_texts = as_int(n_texts, "n_texts", minimum=2, maximum=len(pool),
                     advice=f"A pair needs two texts, and the embedded corpus has {len(pool)}.")
    device = as_device(device)
    texts = sample_texts(pool, n_texts, seed)  # every option is checked before the model loads
    enc = load_encoder(encoder, device=device)
    report = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": str(device),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "machine": {"platform": platform.platform(), "report": device_report()},
        "cpu_nuclear_norms": kernel_report(),  # the CPU reference's route: compiled lane kernel or LAPACK
        "encoder": provenance(enc),
        "texts": n_texts,
        "pairs": n_texts * (n_texts - 1) // 2,
        "thresholds": THRESHOLDS,
        "timings_s": {},
        "checks": {},
    }
    times = report["timings_s"]
    clouds32, times["extract_float32"] = _timed(lambda: token_embeddings(enc, texts, progress=False, cache=False),
                                                device)
    ref, times["pairs_cpu_default"] = _timed(lambda: socm_pairs(clouds32, device="cpu", progress=False),
                                             torch.device("cpu"))

    if device.type == "cuda":
        clouds16, times["extract_float16"] = _timed(
            lambda: token_embeddings(enc, texts, half=True, progress=False, cache=False), device)
        (m32, c32), (m16, c16) = _statistics(clouds32), _statistics(clouds16)
        socm16 = socm_pairs(clouds16, device="cpu", progress=False).socm
        diffs = {"mean_max_abs": float(np.max(np.abs(m16 - m32))),
                 "concentration_ratio_max_rel": float(np.max(np.abs(c16 - c32) / c32)),
                 "socm_max_abs": float(np.max(np.abs(socm16 - ref.socm)))}
        report["checks"]["float16_vs_float32"] = {
            **diffs, "pass": all(diffs[k] <= THRESHOLDS[f"float16_{k}"] for k in diffs)}
    else:
        report["checks"]["float16_vs_float32"] = {"skipped": "float16 extraction runs on CUDA only; this is a CPU."}

    if device.type == "cuda":
        test, times["pairs_cuda_default"] = _timed(lambda: socm_pairs(clouds32, device=device, progress=False),
                                                   device)
        with config_context(torch_svd="svdvals"):
            looped, times["pairs_cuda_svdvals"] = _timed(
                lambda: socm_pairs(clouds32, device=device, progress=False), device)
        for name, result, compared in (
                ("pairs_device_vs_cpu", test, "socm_pairs on cuda (batched Jacobi above 32 x 32) vs on the cpu"),
                ("pairs_svdvals_vs_cpu", looped, "socm_pairs on cuda with torch.linalg.svdvals alone vs on the cpu")):
            diffs = _pair_differences(result, ref)
            report["checks"][name] = {"compared": compared, **diffs,
                                      "pass": max(diffs.values()) <= THRESHOLDS["pairs_max_rel"]}
    else:
        test, times["pairs_cpu_torch_backend"] = _timed(
            lambda: socm_pairs(clouds32, device="cpu", backend="torch", progress=False), device)
        diffs = _pair_differences(test, ref)
        report["checks"]["pairs_device_vs_cpu"] = {"compared": "socm_pairs(backend='torch') vs the default, on the cpu",
                                                   **diffs, "pass": max(diffs.values()) <= THRESHOLDS["pairs_max_rel"]}

    ran = [c["pass"] for c in report["checks"].values() if "pass" in c]
    report["verdict"] = "PASS" if ran and all(ran) else ("FAIL" if ran else "NOTHING COMPARED")
    return report


def summary(report: dict) -> str:
    """The lines ``python -m socm_lib gpu-check`` prints: device, each check with its thresholds, verdict."""
    where = (f" ({report['gpu']})" if report["gpu"] else " -- CPU only: no CUDA device on this machine"
             if not torch.cuda.is_available() else " -- the CPU was chosen; pass --device cuda to check the GPU")
    lines = [f"device: {report['device']}{where}",
             f"encoder: {report['encoder']['name']}; {report['texts']} texts, {report['pairs']} pairs",
             f"CPU reference: {report['cpu_nuclear_norms']}"]
    t = THRESHOLDS
    for name, check in report["checks"].items():
        if "skipped" in check:
            lines.append(f"{name}: skipped ({check['skipped']})")
        elif name == "float16_vs_float32":
            lines.append(f"{name}: {'pass' if check['pass'] else 'FAIL'}: normalised means max |diff| "
                         f"{check['mean_max_abs']:.2e} (<= {t['float16_mean_max_abs']:.0e}), "
                         f"concentration ratio max rel {check['concentration_ratio_max_rel']:.2e} "
                         f"(<= {t['float16_concentration_ratio_max_rel']:.0e}), SOCM max |diff| "
                         f"{check['socm_max_abs']:.2e} (<= {t['float16_socm_max_abs']:.0e})")
        else:
            lines.append(f"{name}: {'pass' if check['pass'] else 'FAIL'}: {check['compared']}: max rel diff SOCM "
                         f"{check['socm_max_rel']:.2e}, d_mu {check['d_mu_max_rel']:.2e}, d_sigma "
                         f"{check['d_sigma_max_rel']:.2e} (each <= {t['pairs_max_rel']:.0e})")
    lines.append("timings of one run (s): " + ", ".join(f"{k} {v:.2f}" for k, v in report["timings_s"].items()))
    lines.append(f"verdict: {report['verdict']}")
    return "\n".join(lines)


def main(args) -> int:
    """The ``gpu-check`` command: run, write the JSON report to ``args.out``, print the summary.

    ``--out`` is checked before the model loads (never a file of a local ``--encoder`` folder), and an earlier report
    there is replaced only by a complete one.
    """
    from .encoders import local_folder

    with output_file(args.out, "--out", inputs=[("--encoder", local_folder(args.encoder))]) as f:
        report = gpu_check(args.encoder, n_texts=args.n_texts, seed=args.seed, device=args.device)
        json.dump(report, f, indent=2)
        f.write("\n")
    print(summary(report))
    print(f"report written to {args.out}")
    return 0 if report["verdict"] == "PASS" else 1
