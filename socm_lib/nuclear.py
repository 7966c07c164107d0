r"""Nuclear norms of many small matrices, :math:`\lVert G\rVert_* = \sum_k \sigma_k(G)` (book, Chapter 6).

The exact engine (:mod:`socm_lib.pairs`) needs one nuclear norm per pair of texts, of the small cross matrix
:math:`G = A_i A_j^\top`. A small SVD is a chain of dependent scalar steps, so LAPACK, one matrix per call,
leaves most of a core's vector units idle. The compiled kernel ``socm_lib._lanes`` runs many matrices side
by side instead, one per SIMD lane: Householder bidiagonalisation (Golub and Kahan 1965), then implicit QR
sweeps on the bidiagonal :math:`B` (diagonal :math:`d`, superdiagonal :math:`e`) as LAPACK's ``dbdsqr`` runs
them (Demmel and Kahan 1990), every step applied to all lanes at once. Each matrix is first scaled by a power of
two (exact), so entries near :math:`10^{\pm 160}` neither overflow nor underflow.

Each sweep works on the bottom unreduced block of :math:`B` and chases a bulge from its top to its bottom with
Givens rotations; an :math:`e_k` at most :math:`\epsilon` times the largest entry is negligible and splits the
block there (``dbdsqr``'s test for absolute accuracy, which moves each singular value by at most the round-off
of their sum). The sweep is shifted by the smaller singular value of the block's trailing :math:`2 \times 2`,
which makes the bottom converge fast, except where the *zero shift* is taken: where the shift is negligible
against :math:`d` at the block's top (``dbdsqr``'s test), and where ``dbdsqr``'s estimate of the block's
smallest singular value, :math:`s = \min_k \mu_k` with :math:`\mu_k = |d_k|\,\mu_{k+1}/(\mu_{k+1} + |e_k|)`, is
negligible against the block's largest entry :math:`s_{\max}`. ``dbdsqr``, which aims at relative accuracy,
calls it negligible below about :math:`0.01\,s_{\max}/n`; the kernel, which needs absolute accuracy only, where
a shifted sweep cannot see it at all, :math:`s^2 < \epsilon\, s_{\max}^2` (a shifted sweep is a QR step on
:math:`B^\top B`, where :math:`s^2` is then below round-off); ``dbdsqr``'s bound would cost the engine's
matrices about 15 % more sweeps for digits the sum does not need.

This is what makes a zero (or negligible) diagonal entry converge. If :math:`d_k = 0`, :math:`B^\top B` splits at
:math:`k` but :math:`B` does not, and a shifted sweep, a QR step on :math:`B^\top B` only while that is
unreduced, never carries its shift past row :math:`k`: the bottom of the block stalls. The estimate is then
:math:`0`, and Demmel and Kahan's zero-shift sweep, whose rotation at row :math:`k` starts from
:math:`(d_k c, e_k)`, has cosine :math:`c = 0` from row :math:`k` down: it moves the rows below up by one and
leaves :math:`d = e = 0` in the block's last row, which deflates after one sweep. ``dbdsqr`` has no other step
for a zero diagonal entry; this sweep chases it out (:math:`10^{-300}` in its place leaves entries of that size,
negligible in turn).

A lane that has not converged within its sweep budget is flagged and its matrix goes to LAPACK
(``numpy.linalg.svd``), that matrix only, as do matrices of a size the kernel does not take or whose workspace
cannot be allocated. Both routes are backward stable: their sums agree to round-off, :math:`10^{-12}` relative or
better (``tests/test_nuclear.py``). A matrix with a NaN or an infinite entry is refused on every route.

The kernel is compiled by the package's install (``setup.py``) for AVX-512, AVX2 and the baseline
instruction set; the best one this CPU runs is taken, and all three give the same bits. Where it was not built
every matrix goes to LAPACK, and :func:`kernel_report` says why (disabled at build time, no C compiler, a build
that failed, an extension that does not load, or LAPACK chosen by hand). The setting ``svd_kernel`` of
:func:`socm_lib.config_context` chooses by hand: ``lapack`` forces LAPACK, ``avx512``, ``avx2`` or ``portable`` a
variant, ``auto`` the best; its default comes from the environment variable
:data:`~socm_lib.config.KERNEL_ENV`, read once when the library is imported (:mod:`socm_lib.config`).
"""

from __future__ import annotations

import json
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import numpy as np

from .config import KERNEL_ENV, get_config

#: The file in which the install records why it did not build the kernel (written by ``setup.py``, shipped with
#: the package; pip shows nothing of a failed optional build): ``{"cause": "disabled" | "no compiler" | "failed",
#: "error": the exception, "messages": the end of the compiler's output}``.
BUILD_RECORD = "_lanes_build.json"


def _why_missing(folder: Path, error: ImportError) -> str:
    """Why ``socm_lib._lanes`` did not import from ``folder``: the end of :func:`kernel_report`'s line."""
    built = sorted(p.name for p in folder.glob("_lanes*") if p.name.endswith(tuple(EXTENSION_SUFFIXES)))
    if built:
        return f"built but not loaded: {built[0]}: {error}"
    try:
        record = json.loads((folder / BUILD_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = {}
    cause = record.get("cause")
    if cause == "disabled":
        return "not built: disabled at build time by SOCM_BUILD_KERNEL=0 (reinstall without it to build the kernel)"
    if cause == "no compiler":
        return (f"not built: no C compiler was found at build time ({record.get('error')}); install one (gcc or "
                "clang) and reinstall the library")
    if cause == "failed":
        messages = str(record.get("messages", "")).splitlines()
        reason = next((line.strip() for line in messages if "error" in line.lower()), record.get("error"))
        return f"not built: its build failed ({reason}); the build's messages are in {folder / BUILD_RECORD}"
    return ("not built: this install has no socm_lib._lanes extension (it is built only where a C compiler is "
            "found: install the library from its sources, pip install . in a clone, with one)")


try:
    import socm_lib._lanes as _lanes
except ImportError as _error:  # not built, or built and not loadable: _why_missing says which
    _lanes = None
    _MISSING = _why_missing(Path(__file__).parent, _error)
else:
    _MISSING = None

#: Sweeps allowed per matrix and per column before a lane is flagged (a sweep usually deflates one or two
#: singular values, so about two per column suffice; LAPACK's ``dbdsqr`` allows six).
SWEEPS_PER_COLUMN = 6
#: Values of :func:`kernel_nuclear_norms`'s flags: converged, not converged within the sweep budget, not finite.
CONVERGED, UNCONVERGED, NOT_FINITE = 0, 1, 2


def variants() -> tuple[str, ...]:
    """The kernel variants this CPU can run, best first; empty when the kernel is not built."""
    return tuple(_lanes.variants()) if _lanes is not None else ()


def kernel() -> str | None:
    """The variant :func:`nuclear_norms` uses for float64 input here, or ``None`` for LAPACK: the setting
    ``svd_kernel`` (:func:`socm_lib.config_context`; by default :data:`~socm_lib.config.KERNEL_ENV`)."""
    choice = get_config()["svd_kernel"]
    if choice == "lapack":
        return None
    have = variants()
    if choice == "auto":
        return have[0] if have else None
    if choice not in ("avx512", "avx2", "portable"):  # config_context refuses it: it came from the environment
        raise ValueError(f"{KERNEL_ENV}={choice!r} (read when socm_lib was imported) is not a route: use auto, "
                         "lapack, avx512, avx2 or portable, or choose with socm_lib.config_context(svd_kernel=...).")
    if choice not in have:
        raise ValueError(f"svd_kernel={choice!r} (socm_lib.config_context, by default {KERNEL_ENV}), but this "
                         f"machine runs only {', '.join(have) or 'LAPACK'} (the compiled kernel is "
                         f"{'built' if _lanes is not None else 'not built'}); choose one of those, or 'auto'.")
    return choice


def kernel_report() -> str:
    """One line: which route the nuclear norms take here, and why LAPACK when it is LAPACK."""
    if _lanes is None:
        return f"nuclear norms: LAPACK per matrix (compiled lane kernel {_MISSING})"
    name = kernel()
    if name is None:
        return (f"nuclear norms: LAPACK per matrix (chosen by svd_kernel='lapack'; compiled lane kernel variants "
                f"here: {', '.join(variants())})")
    return f"nuclear norms: compiled lane kernel, {name}"


def _refuse_not_finite(bad: np.ndarray) -> None:
    """ValueError naming the first matrix marked in ``bad`` (shape ``G.shape[:-2]``), if any."""
    if bad.any():
        where = "" if bad.ndim == 0 else (f" (the matrix at index {tuple(int(i) for i in np.argwhere(bad)[0])}, "
                                          f"{int(bad.sum())} such matrices in all)")
        raise ValueError(f"G holds a NaN or an infinite entry{where}: a nuclear norm needs finite entries; find "
                         "where they overflowed or were not set.")


def lapack_nuclear_norms(G: np.ndarray) -> np.ndarray:
    """The reference: ``numpy.linalg.svd`` (LAPACK ``gesdd``) of each matrix of ``G`` ``(..., p, q)``, summed."""
    return np.asarray(np.linalg.svd(G, compute_uv=False).sum(axis=-1), dtype=np.float64)


def _checked_lapack(G: np.ndarray) -> np.ndarray:
    _refuse_not_finite(~np.isfinite(G).all(axis=(-2, -1)))
    return lapack_nuclear_norms(G)


def kernel_nuclear_norms(G: np.ndarray, variant: str, *, max_sweeps: int | None = None
                         ) -> tuple[np.ndarray, np.ndarray]:
    """The lane kernel alone: ``(values, flags)``, float64 and uint8 of shape ``G.shape[:-2]``.

    ``G``: float64 ``(..., p, q)`` with ``p, q >= 1``, any strides (a misaligned or byte-swapped array is first
    copied). ``flags`` is :data:`CONVERGED` where ``values`` holds the nuclear norm, :data:`UNCONVERGED` where the
    sweeps did not converge within ``max_sweeps`` (default :data:`SWEEPS_PER_COLUMN` per column), :data:`NOT_FINITE`
    where the matrix holds a NaN or an infinity; ``values`` is not to be used where ``flags`` is not 0.
    :func:`nuclear_norms` takes the flagged matrices elsewhere; tests count them. Raises ``ValueError`` for a
    side above ``socm_lib._lanes.MAX_SIDE``, ``MemoryError`` where the kernel's workspace cannot be allocated.
    """
    if _lanes is None:
        raise RuntimeError(f"the compiled lane kernel is {_MISSING}")
    G = np.asarray(G)
    if G.ndim < 2 or G.dtype.kind != "f" or G.dtype.itemsize != 8 or 0 in G.shape[-2:]:
        raise ValueError(f"G must be float64 of shape (..., p, q) with p, q >= 1, got {G.dtype} of shape {G.shape}.")
    if not (G.flags.aligned and G.dtype.isnative):
        G = np.array(G, dtype=np.float64, order="C")  # the kernel reads aligned, native doubles
    n = min(G.shape[-2:])
    sweeps = SWEEPS_PER_COLUMN * n if max_sweeps is None else int(max_sweeps)
    if sweeps < 1:
        raise ValueError(f"max_sweeps must be at least 1, got {max_sweeps}.")
    values = np.empty(G.shape[:-2], dtype=np.float64)
    flags = np.zeros(G.shape[:-2], dtype=np.uint8)
    _lanes.nuclear_norms(G, values, flags, min(sweeps, 2**31 - 1), variant)
    return values, flags


def _as_matrices(G) -> np.ndarray:
    """``G`` as a real numpy array of shape ``(..., p, q)`` in a dtype LAPACK takes (see :func:`nuclear_norms`)."""
    try:
        G = np.asarray(G)
    except (TypeError, ValueError, RuntimeError) as exc:  # ragged nesting, a tensor on a GPU
        raise TypeError(f"G must be an array of shape (..., p, q) of real numbers: {exc}") from None
    if G.ndim < 2:
        raise ValueError(f"G must have shape (..., p, q), got shape {G.shape}.")
    if G.dtype.kind == "c":
        raise TypeError("G is complex; nuclear_norms takes real matrices.")
    if G.dtype.kind == "f":
        if G.dtype.itemsize < 4:
            return G.astype(np.float32)
        return G if G.dtype.itemsize <= 8 else G.astype(np.float64)
    if G.dtype.kind in "biu":
        return G.astype(np.float64)
    raise TypeError(f"G has dtype {G.dtype}; pass real numbers (float64 takes the fastest route).")


def nuclear_norms(G: np.ndarray, *, max_sweeps: int | None = None) -> np.ndarray:
    """Nuclear norm of each ``p x q`` matrix of ``G`` (shape ``(..., p, q)``, any strides), as float64 of shape ``G.shape[:-2]``.

    Float64 input goes to the lane kernel (:func:`kernel`, :func:`kernel_nuclear_norms`), the matrices it flags
    as not converged to LAPACK; so do all matrices of a size the kernel does not take or whose workspace cannot be
    allocated. Other real dtypes, and every matrix when the kernel is off, go to :func:`lapack_nuclear_norms`:
    float32 as it is, float16 as float32 (which holds it exactly), integers, booleans and numpy's long double as
    float64. Complex, object and text arrays are refused (``TypeError``); a matrix with a side of 0 has norm 0.
    ``max_sweeps`` bounds the kernel's sweeps per matrix; tests lower it to make lanes fail. A NaN or an infinite
    entry raises ``ValueError`` on every route.
    """
    G = _as_matrices(G)
    name = kernel() if G.dtype.kind == "f" and G.dtype.itemsize == 8 else None
    if name is None or G.size == 0 or max(G.shape[-2:]) > _lanes.MAX_SIDE:
        return _checked_lapack(G)
    try:
        values, flags = kernel_nuclear_norms(G, name, max_sweeps=max_sweeps)
    except MemoryError:  # its workspace (m n doubles per lane) does not fit; LAPACK's blocked SVD may
        return _checked_lapack(G)
    _refuse_not_finite(flags == NOT_FINITE)
    redo = flags == UNCONVERGED
    if redo.any():
        if redo.ndim == 0:  # a single matrix
            return lapack_nuclear_norms(G)
        values[redo] = lapack_nuclear_norms(G[redo])
    return values
