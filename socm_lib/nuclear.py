r"""Nuclear norms of many small matrices, :math:`\lVert G\rVert_* = \sum_k \sigma_k(G)` (book, Chapter 6).

The exact engine (:mod:`socm_lib.pairs`) needs one nuclear norm per pair of texts, of the small cross matrix
:math:`G = A_i A_j^\top`. A small SVD is a chain of dependent scalar steps, so LAPACK, one matrix per call,
leaves most of a core's vector units idle. The compiled kernel ``socm_lib._lanes`` runs many matrices side
by side instead, one per SIMD lane: Householder bidiagonalisation (Golub and Kahan 1965), then implicit-shift
QR sweeps on the bidiagonal (Demmel and Kahan 1990, as in LAPACK's ``dbdsqr``), every step applied to all
lanes at once. Each matrix is first scaled by a power of two (exact), so entries near :math:`10^{\pm 160}`
neither overflow nor underflow. A lane that has not converged within its sweep budget is flagged and its
matrix goes to LAPACK (``numpy.linalg.svd``), that matrix only. Both routes are backward stable: their sums
agree to round-off, :math:`10^{-12}` relative or better (``tests/test_nuclear.py``).

The kernel is compiled by the package's install (``setup.py``) for AVX-512, AVX2 and the baseline
instruction set; the best one this CPU runs is taken. Where it was not built (no compiler) every matrix goes
to LAPACK, as :func:`kernel_report` says. The environment variable :data:`KERNEL_ENV` chooses by hand:
``lapack`` forces LAPACK, ``avx512``, ``avx2`` or ``portable`` a variant, ``auto`` (or unset) the best.
"""

from __future__ import annotations

import os
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import numpy as np

try:
    from . import _lanes
except ImportError as error:  # not built: no compiler at install time, or an install without it
    _built = [p.name for p in Path(__file__).parent.glob("_lanes*") if p.name.endswith(tuple(EXTENSION_SUFFIXES))]
    _lanes = None
    _MISSING = (f"built but not loaded: {_built[0]}: {error}" if _built else
                "not built: this install has no socm_lib._lanes extension (it is built only where a C compiler is "
                "found: install the library from its sources, pip install . in a clone, with one)")
else:
    _MISSING = None

#: Environment variable choosing the route: ``auto`` (default), ``lapack``, or a variant of :func:`variants`.
KERNEL_ENV = "SOCM_SVD_KERNEL"
#: Sweeps allowed per matrix and per column before a lane is flagged (a sweep usually deflates one or two
#: singular values, so about two per column suffice; LAPACK's ``dbdsqr`` allows six).
SWEEPS_PER_COLUMN = 6


def variants() -> tuple[str, ...]:
    """The kernel variants this CPU can run, best first; empty when the kernel is not built."""
    return tuple(_lanes.variants()) if _lanes is not None else ()


def kernel() -> str | None:
    """The variant :func:`nuclear_norms` uses for float64 input now, or ``None`` for LAPACK (see :data:`KERNEL_ENV`)."""
    choice = os.environ.get(KERNEL_ENV, "auto").strip().lower() or "auto"
    if choice == "lapack":
        return None
    have = variants()
    if choice == "auto":
        return have[0] if have else None
    if choice not in ("avx512", "avx2", "portable"):
        raise ValueError(f"{KERNEL_ENV}={choice!r} is not a route: use auto, lapack, avx512, avx2 or portable.")
    if choice not in have:
        raise ValueError(f"{KERNEL_ENV}={choice!r}, but this machine runs only {', '.join(have) or 'LAPACK'} "
                         f"(the compiled kernel is {'built' if _lanes is not None else 'not built'}); "
                         "unset it or choose one of those.")
    return choice


def kernel_report() -> str:
    """One line: which route the nuclear norms take here, and why LAPACK when it is LAPACK."""
    if _lanes is None:
        return f"nuclear norms: LAPACK per matrix (compiled lane kernel {_MISSING})"
    name = kernel()
    if name is None:
        return f"nuclear norms: LAPACK per matrix ({KERNEL_ENV}=lapack; kernel variants here: {', '.join(variants())})"
    return f"nuclear norms: compiled lane kernel, {name}"


def lapack_nuclear_norms(G: np.ndarray) -> np.ndarray:
    """The reference: ``numpy.linalg.svd`` (LAPACK ``gesdd``) of each matrix of ``G`` ``(..., p, q)``, summed."""
    return np.linalg.svd(G, compute_uv=False).sum(axis=-1).astype(np.float64)


def nuclear_norms(G: np.ndarray, *, max_sweeps: int | None = None) -> np.ndarray:
    """Nuclear norm of each ``p x q`` matrix of ``G`` (shape ``(..., p, q)``, any strides), as float64 of shape ``G.shape[:-2]``.

    Float64 input goes to the lane kernel (:func:`kernel`), matrices it flags to LAPACK; other dtypes, and every
    matrix when the kernel is off, to :func:`lapack_nuclear_norms`. ``max_sweeps`` (default
    :data:`SWEEPS_PER_COLUMN` per column) bounds the kernel's sweeps per matrix; tests lower it to make lanes fail.
    """
    G = np.asarray(G)
    if G.ndim < 2:
        raise ValueError(f"G must have shape (..., p, q), got shape {G.shape}.")
    name = kernel() if G.dtype == np.float64 else None
    batch, (p, q) = G.shape[:-2], G.shape[-2:]
    if name is None or G.size == 0:
        return lapack_nuclear_norms(G)
    if max_sweeps is None:
        max_sweeps = SWEEPS_PER_COLUMN * min(p, q)
    out = np.empty(batch, dtype=np.float64)
    failed = np.zeros(batch, dtype=np.uint8)
    if _lanes.nuclear_norms(G, out, failed, int(max_sweeps), name):
        where = np.nonzero(failed)
        out[where] = lapack_nuclear_norms(G[where])
    return out
