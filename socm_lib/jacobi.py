r"""Singular values of many small matrices at once, in batched torch operations (book, Chapter 6).

``torch.linalg.svdvals`` on CUDA hands a batch to cuSOLVER's batched Jacobi solver only when both sides
of the matrices are at most 32; larger ones go to the solver one call per matrix. :func:`batched_svdvals`
stays batched for every size: a one-sided (Hestenes) Jacobi SVD whose every step is a handful of tensor
operations on all matrices of the batch at once, on whatever device the batch lives.

**The algorithm.** Let :math:`W \in \mathbb R^{n\times m}` hold the rows to orthogonalise (the matrix, or
its transpose, so that :math:`n = \min(p, q) \le m`). For two rows :math:`x, y` with
:math:`\alpha = x\cdot x`, :math:`\beta = y\cdot y`, :math:`\gamma = x\cdot y`, the plane rotation

.. math::

    x \leftarrow c\,x - s\,y,\quad y \leftarrow s\,x + c\,y,\qquad
    \zeta = \frac{\beta - \alpha}{2\gamma},\quad t = \frac{\operatorname{sign}\zeta}{|\zeta| + \sqrt{1+\zeta^2}},
    \quad c = \frac{1}{\sqrt{1+t^2}},\quad s = c\,t,

makes them orthogonal (Rutishauser's choice of the smaller angle). Rotations are orthogonal, so
:math:`W W^\top`'s eigenvalues, the squared singular values, never change; once every pair of rows is
orthogonal to working precision the singular values are the row norms. One *sweep* visits every pair
once, in the round-robin order of a chess tournament: ``n/2`` disjoint pairs per step (rotated together,
across the whole batch), ``n - 1`` steps (an odd ``n`` gets one zero row, which nothing rotates).
A pair is rotated only while :math:`|\gamma| > \tau\sqrt{\alpha\beta}` with :math:`\tau = m\,\varepsilon`
(:math:`\varepsilon` the dtype's machine epsilon) and :math:`|\gamma| > m\,\varepsilon^2\,\|W\|_F^2`, the
round-off level of an inner product of the matrix (rotations keep :math:`\|W\|_F`). The second test matters
for a rank-deficient matrix: rows it drives to zero end at round-off level, and the relative test alone would
rotate those noise rows against each other forever; skipping them moves a singular value by at most about
:math:`\sqrt{m}\,\varepsilon\,\|W\|_F`. A matrix has converged after a sweep that rotated nothing, and converged
matrices leave the batch. One-sided Jacobi computes singular values to high
relative accuracy (Demmel and Veselić, 1992) and converges quadratically once the rows are nearly
orthogonal, typically in 6 to 10 sweeps. A matrix still rotating after :data:`MAX_SWEEPS` sweeps is
handed, alone with the others like it, to ``torch.linalg.svdvals``. Each matrix is first scaled by a
power of two (exact, in two steps: :func:`_scale`) so that its largest entry lies in :math:`[1/2, 1)`: squares of
entries near :math:`10^{\pm 160}` neither overflow nor underflow, and matrices whose largest entry is subnormal or
near the largest float64 come out as exact as any other.

**Cost, counted for one GPU.** Per step and matrix the three dot products cost :math:`6m\cdot n/2` flops and
the rotations as many, so a sweep costs :math:`6\,m\,n(n-1)` flops; unfused, a step's 41 tensor operations move
about 16 passes over the batch, :math:`16 \times 8\,n m` bytes (float64). On the benchmark's 499,500 pairs
(1,000 clouds of 5 to 60 tokens, d = 384; 71 % of the pairs have a padded side above 32) the engine's blocks of
:math:`2^{22}` entries are 584 batches whose steps add up to 10,110 a sweep, and a matrix takes 10.1 sweeps on
average (the last one finding nothing to rotate; measured on 800 of those pairs). So, in float64:

* arithmetic: :math:`9.3\times 10^{10}` flops a sweep, :math:`9.4\times 10^{11}` in all: 0.03 s at the
  34 TFLOP/s of an H100/H200-class GPU's float64 units;
* memory traffic: :math:`2.0\times 10^{12}` bytes a sweep, :math:`2.0\times 10^{13}` in all: about 4 s at the
  4.8 TB/s of an H200's memory (6 s at an H100's 3.35 TB/s), less where a block (32 MB) stays in the 50 MB L2 cache;
* kernel launches: about 10 sweeps a batch (the slowest matrix of each: 9.8 on average in the sample above)
  x 10,110 steps x 41 operations,
  4.1 million launches: at about 5 microseconds each, some 21 s, so as written the solver is bound by launches.

Against the loop it replaces (cuSOLVER, one call per matrix for the 356,000 pairs above 32 x 32, each call tens of
microseconds or more) this is a gain; capturing a sweep in a CUDA graph would remove the launch cost (about 4 s,
bound by memory), and a fused kernel holding each matrix in shared memory (a 59 x 59 float64 matrix is 28 KB)
would read each matrix once, leaving well under a second. ``python -m socm_lib gpu-check`` times both solvers.
"""

from __future__ import annotations

import torch

#: Most sweeps before a matrix is handed to ``torch.linalg.svdvals`` (one-sided Jacobi typically needs 6 to 10).
MAX_SWEEPS = 30


def _round_robin(n: int) -> torch.Tensor:
    """The row permutation between two steps of a sweep over ``n`` (even) rows.

    Rows ``k`` and ``n/2 + k`` are paired at every step. The order of the rows is that of the circle method
    (player 0 fixed, the others moving one seat): after ``n - 1`` steps every two rows have met once.
    """
    h = n // 2

    def layout(seats: list[int]) -> list[int]:  # pairs (seats[k], seats[n-1-k]) as rows k and h + k
        return seats[:h] + seats[h:][::-1]

    seats = list(range(n))
    now, then = layout(seats), layout([seats[0], seats[-1]] + seats[1:-1])
    where = {player: row for row, player in enumerate(now)}
    return torch.tensor([where[player] for player in then])


def _sweep(W: torch.Tensor, perm: torch.Tensor, tol: float, floor: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One sweep of rotations over the rows of every ``W`` in the batch ``(b, n, m)``; ``(W, rotated)`` after it,
    ``rotated[k]`` true when matrix ``k`` still had a pair above the tolerance. ``floor`` (``(b, 1)``): the
    round-off level of each matrix's inner products, below which a pair is not rotated."""
    h = W.shape[1] // 2
    rotated = torch.zeros(W.shape[0], dtype=torch.bool, device=W.device)
    for _ in range(W.shape[1] - 1):
        x, y = W[:, :h], W[:, h:]
        alpha, beta, gamma = (x * x).sum(-1), (y * y).sum(-1), (x * y).sum(-1)
        g = gamma.abs()
        rotate = (g > tol * torch.sqrt(alpha * beta)) & (g > floor)
        zeta = (beta - alpha) / (2.0 * torch.where(rotate, gamma, torch.ones_like(gamma)))
        t = torch.where(zeta >= 0, 1.0, -1.0) / (zeta.abs() + torch.hypot(torch.ones_like(zeta), zeta))
        t = torch.where(rotate, t, torch.zeros_like(t))
        c = torch.rsqrt(1.0 + t * t)[..., None]
        s = c * t[..., None]
        W = torch.cat([c * x - s * y, s * x + c * y], dim=1)[:, perm]
        rotated |= rotate.any(dim=1)
    return W, rotated


def batched_svdvals(G: torch.Tensor, max_sweeps: int | None = None) -> torch.Tensor:
    """Singular values of each matrix of the batch ``G`` (shape ``(b, p, q)``), shape ``(b, min(p, q))``, unsorted.

    Batched one-sided Jacobi (module docstring) on ``G``'s device and in its dtype; matrices not converged after
    ``max_sweeps`` sweeps (default :data:`MAX_SWEEPS`) get ``torch.linalg.svdvals``, those alone.
    """
    max_sweeps = MAX_SWEEPS if max_sweeps is None else max_sweeps
    b, p, q = G.shape
    W = G if p <= q else G.mT
    n, m = W.shape[1:]
    if b == 0 or n == 0:
        return W.new_zeros(b, n)
    # scale each matrix by a power of two so that its largest entry is in [1/2, 1): exact, and undone at the end
    exponent = torch.frexp(W.abs().amax(dim=(1, 2))).exponent
    W = _scale(W, -exponent[:, None, None])
    if n == 1:  # one row: its norm is the singular value
        return _scale(torch.linalg.vector_norm(W, dim=-1), exponent[:, None])
    if n % 2:
        W = torch.cat([W, W.new_zeros(b, 1, m)], dim=1)
    perm = _round_robin(W.shape[1]).to(W.device)
    eps = torch.finfo(W.dtype).eps
    tol = m * eps
    floor = (m * eps * eps) * (W * W).sum(dim=(1, 2))[:, None]  # rotations keep ||W||_F: the floor stays valid
    out = torch.empty(b, W.shape[1], dtype=W.dtype, device=W.device)
    active = torch.arange(b, device=W.device)
    for _ in range(max_sweeps):
        W, rotated = _sweep(W, perm, tol, floor)
        done = ~rotated
        out[active[done]] = torch.linalg.vector_norm(W[done], dim=-1)
        active, W, floor = active[rotated], W[rotated], floor[rotated]
        if not len(active):
            break
    out = out[:, :n]
    if len(active):  # not converged within max_sweeps: LAPACK / cuSOLVER for these matrices only
        out[active] = _scale(torch.linalg.svdvals(G[active]), -exponent[active, None])
    return _scale(out, exponent[:, None])


def _scale(x: torch.Tensor, exponent: torch.Tensor) -> torch.Tensor:
    r""":math:`x \cdot 2^e`, exact, in two steps of :math:`2^{\lfloor e/2 \rfloor}` and :math:`2^{e - \lfloor e/2 \rfloor}`.

    ``torch.ldexp`` multiplies by :math:`2^e` formed as a float, which overflows for :math:`e \ge 1024` and
    vanishes for :math:`e < -1074`, while the exponents that bring a matrix to unit scale span
    :math:`-1024 \dots 1074` (an entry near 1.5e308 or a subnormal one); each half is representable (as the C
    kernel scales, :mod:`socm_lib.nuclear`).
    """
    half = torch.div(exponent, 2, rounding_mode="floor")
    return torch.ldexp(torch.ldexp(x, half.to(x.dtype)), (exponent - half).to(x.dtype))
