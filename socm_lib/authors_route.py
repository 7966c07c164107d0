r"""The paper's own route to :math:`d_\mu`, :math:`d_\Sigma` and SOCM, as a named reference (book, chapter "The paper's own route").

:func:`paper_route` re-implements the :math:`d \times d` computation of the code released by
Hara et al. (2026) (github.com/tohoku-nlp/socm-text-embedding, MIT licence), step by step. It is a
faithful re-implementation written for this book, not the authors' code. Per text, in float32:

1. divide every token by :math:`\lVert\mu(X)\rVert + 10^{-12}`;
2. mean :math:`m` and population covariance :math:`\Sigma = \frac1n\sum_j (x_j - m)(x_j - m)^\top`.

Per pair, in batches of 64 pairs:

3. :math:`R = \operatorname{sqrt}(\Sigma_1)` and the fidelity :math:`F = \operatorname{tr}\operatorname{sqrt}(R\,\Sigma_2\,R)`,
   where :math:`\operatorname{sqrt}(S)` symmetrises :math:`S` to :math:`(S + S^\top)/2`, adds
   :math:`\varepsilon I` with :math:`\varepsilon = 10^{-9}`, and clamps the eigenvalues at 0: :math:`R` by
   ``torch.linalg.eigh`` (its eigenvectors are needed), the trace of the second root from the eigenvalues alone
   (``torch.linalg.eigvalsh``);
4. :math:`\operatorname{BW}^2 = \max(\operatorname{tr}\Sigma_1 + \operatorname{tr}\Sigma_2 - 2F,\ 0)`,
   :math:`d_\Sigma = \operatorname{BW}^2/4`, :math:`d_\mu = \lVert m_1 - m_2\rVert^2/4`,
   :math:`\mathrm{SOCM} = (1 - d_\mu)\,d_\Sigma`.

Known bias. Token clouds have rank :math:`r_i \le n_i - 1 \ll d`. With :math:`\varepsilon I` added,
:math:`R^2 = \Sigma_1 + \varepsilon I` exactly, so :math:`R\,\Sigma_2 R` has the nonzero eigenvalues of the
:math:`n_2 \times n_2` matrix :math:`B R^2 B^\top = (AB^\top)^\top(AB^\top) + \varepsilon BB^\top`. Since
:math:`\varepsilon BB^\top \succeq 0`, Weyl's inequality bounds the excess fidelity of the route from below by the
count of the regulariser's directions (book, Proposition ``prop-ch07-regulariser``):

.. math::

    F_{\text{route}} - \lVert AB^\top\rVert_* \;\ge\; (d - r)\sqrt\varepsilon
        + \sum_{k=1}^{r}\big(\sqrt{s_k^2 + \varepsilon} - s_k\big),

with :math:`s_1, \dots, s_r` the nonzero singular values of the cross-Gram and :math:`r = \operatorname{rank}(AB^\top)`
(:math:`\min(r_1, r_2)` in general position). Where :math:`r_2 > r_1` the :math:`r_2 - r_1` extra directions return
:math:`\sqrt{\varepsilon(1 + \lambda_m(\Sigma_2))}` rather than :math:`\sqrt\varepsilon`, so the bound is not the first-order
value: it is low by up to about :math:`\sqrt\varepsilon\operatorname{tr}\Sigma_2/2`, and the excess depends on the order of
the pair. :func:`regulariser_excess` returns the exact excess and both bounds. The route's :math:`d_\Sigma` is
:math:`\max(\operatorname{BW}^2 - 2(F_{\text{route}} - F),\ 0)/4`: low by half the excess, whose leading term
:math:`(d - r)\sqrt\varepsilon/2` is about :math:`0.0057` at :math:`d = 384` and :math:`0.0118` at :math:`d = 768` for
25-token texts (:math:`r = 24`), and exactly 0 for every pair whose exact :math:`d_\Sigma` is at most its shift. In
float32 the eigenvalues that should equal :math:`\varepsilon` come back with round-off of order
:math:`10^{-7}\lVert R\Sigma_2R\rVert`, which can exceed :math:`\varepsilon`, so the float32 route adds noise on top of the
bias (the book's chapter on the paper's route and notebook 10 measure both).
``dtype=torch.float64`` runs every step in float64, which isolates the regulariser's bias, and ``step_dtypes``
rounds one step alone in float32 (the statistics, the first root or the second root), which tells whose round-off
moves the float32 route's result.

Where the arithmetic holds. The route keeps the released code's arithmetic, which holds only for clouds of ordinary
scale; :func:`paper_route` refuses (``ValueError``, naming the cloud and the cause) every cloud on which it would
overflow or underflow, instead of returning the zeros that arithmetic then gives:

* step 1 squares the entries of the mean in ``dtype``: the norm overflows once :math:`\lVert\mu(X)\rVert` exceeds
  :math:`\sqrt{\text{largest float}}`, about :math:`1.8\times10^{19}` in float32 and :math:`1.3\times10^{154}` in
  float64 (for clouds whose mean norm is of order 1, scaled by :math:`10^{19}` or :math:`10^{155}`), and the cloud is
  then divided by infinity; a float64 cloud with entries beyond float32's range (:math:`3.4\times10^{38}`, e.g.
  scaled by :math:`10^{200}`) becomes infinite when cast, and ``eigh`` fails to converge on it;
* step 1 adds :math:`10^{-12}` to the norm. Normalising by :math:`\lVert\mu\rVert + 10^{-12}` instead of
  :math:`\lVert\mu\rVert` shrinks the cloud by the factor :math:`1/(1 + 10^{-12}/\lVert\mu\rVert)`, so :math:`d_\mu`
  and :math:`d_\Sigma` come out low by about :math:`2\cdot10^{-12}/\lVert\mu\rVert` relative (about :math:`10^{-4}` at
  :math:`\lVert\mu\rVert = 2\times10^{-8}`). Below
  :data:`MIN_MEAN_NORM` (:math:`10^{-10}`, a 2 % error) it is refused: at :math:`10^{-25}` and below the normalised
  covariance falls under the regulariser and every :math:`d_\Sigma` is clamped to an exact 0;
* after step 1 nothing overflows: a cloud whose mean's norm is below :data:`socm_lib.stats.MEAN_TOLERANCE` of its
  tokens' RMS norm is refused first (:func:`socm_lib.stats.mean_norm`), so the normalised covariances have traces
  below :math:`10^{12}` and :math:`R\,\Sigma_2 R` entries below :math:`10^{24}`, within float32's range;
* ``eps`` is at most 1 (:data:`MAX_REGULARISER`): the normalised covariances have traces of order 1 (the
  concentration ratios), which a larger regulariser would swamp (``eps=1e300`` even overflows float32, and ``eigh``
  fails to converge).

:func:`socm_lib.socm_pairs` is exact at every scale (it brings each cloud to unit scale by a power of two first,
:func:`socm_lib.stats.unit_scale`), and is the way to measure clouds the route refuses.
"""

from __future__ import annotations

import sys
from typing import NamedTuple

import numpy as np
import torch
from tqdm import tqdm

from .checks import as_clouds, as_device, as_dtype, as_int, as_number, as_pair_set, as_progress, show_progress
from .block_plan import condensed_pairs
from .memory import require_memory
from .reference import lowrank_factor
from .results import PairResult
from .stats import mean_norm

#: The regulariser the released code adds to every matrix before its square root.
REGULARISER = 1e-9
#: The smallest :math:`\lVert\mu(X)\rVert` :func:`paper_route` accepts: below it the released code's
#: :math:`+10^{-12}` on the norm moves :math:`d_\mu` and :math:`d_\Sigma` by more than 2 % (module docstring).
MIN_MEAN_NORM = 1e-10
#: The largest ``eps`` :func:`paper_route` accepts (module docstring).
MAX_REGULARISER = 1.0
#: Pairs per batch in the released code.
BATCH = 64
#: Above this many pairs, ``progress=None`` shows a progress bar (the route is O(d^3) a pair, slower than the engine).
ROUTE_PROGRESS_PAIRS = 2_000
#: The route's steps whose precision ``step_dtypes`` can set on its own.
STEPS = ("statistics", "first root", "second root")


def _statistics(x: torch.Tensor, dtype: torch.dtype, name: str, exact_norm: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Normalised mean and population covariance of one cloud, in ``dtype`` (steps 1 and 2), refusing a cloud on
    which this arithmetic overflows or underflows (module docstring); ``exact_norm``, its mean's norm in float64
    (:func:`socm_lib.stats.mean_norm`), is named in the refusal."""
    big, kind = _overflow_scale(dtype), str(dtype).removeprefix("torch.")
    advice = ("SOCM does not depend on the scale: divide the cloud by a constant first, or use socm_lib.socm_pairs, "
              "which is exact at any scale.")
    x = x.to(dtype)
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} has entries beyond {kind}'s range ({torch.finfo(dtype).max:.1e}), which the paper's "
                         f"route casts to inf. {advice}")
    norm = torch.linalg.vector_norm(x.mean(dim=0))
    if not bool(torch.isfinite(norm)):
        raise ValueError(f"{name}: the paper's route squares its mean's entries in {kind}, which overflows for a mean "
                         f"norm above about {big:.1e} (this one: {exact_norm:.1e}), and would "
                         f"then divide the cloud by inf and return zeros.{_float64_hint(dtype)} {advice}")
    if not bool(norm >= MIN_MEAN_NORM):
        raise ValueError(f"{name} has a mean norm of {exact_norm:.1e}, below {MIN_MEAN_NORM:g}: the paper's route "
                         "divides by the norm plus 1e-12, which then shrinks d_mu and d_sigma by more than 2 % (at "
                         "1e-25 and below, the normalised covariance falls under the regulariser and every d_sigma is "
                         f"clamped to 0). {advice}")
    x = x / (norm + 1e-12)
    m = x.mean(dim=0)
    c = x - m
    return m, c.T @ c / x.shape[0]


def _overflow_scale(dtype: torch.dtype) -> float:
    """The mean norm above which the route's norm overflows ``dtype``: the square root of its largest float."""
    return float(np.sqrt(torch.finfo(dtype).max))


def _float64_hint(dtype: torch.dtype) -> str:
    """Advice to run in float64, where that would help."""
    return "" if dtype == torch.float64 else (f" With dtype=torch.float64 the route holds up to about "
                                              f"{_overflow_scale(torch.float64):.1e}.")


def _step_dtypes(dtype: torch.dtype, given) -> dict[str, torch.dtype]:
    """The dtype of each step of the route: ``dtype``, except where ``given`` names the step."""
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise TypeError(f"step_dtypes must be a dict from step names {STEPS} to dtypes, got {type(given).__name__}.")
    unknown = sorted(set(given) - set(STEPS))
    if unknown:
        raise ValueError(f"step_dtypes names unknown steps {unknown}; the route's steps are {list(STEPS)}.")
    return {s: as_dtype(given[s], name=f"step_dtypes[{s!r}]") if s in given else dtype for s in STEPS}


def _regularised_eigenvalues(S: torch.Tensor, eps: float, vectors: bool):
    """Eigenvalues (clamped at 0) of ``(S + S^T)/2 + eps I`` for a batch ``S`` ``(..., d, d)``, and the eigenvectors."""
    S = (S + S.mT) / 2 + eps * torch.eye(S.shape[-1], dtype=S.dtype, device=S.device)
    if vectors:
        lam, V = torch.linalg.eigh(S)
        return lam.clamp(min=0), V
    return torch.linalg.eigvalsh(S).clamp(min=0), None


def paper_route(
    clouds,
    pairs=None,
    *,
    dtype: torch.dtype = torch.float32,
    eps: float = REGULARISER,
    batch_size: int = BATCH,
    device=None,
    progress: bool | None = None,
    step_dtypes: dict | None = None,
) -> PairResult:
    r""":math:`d_\mu`, :math:`d_\Sigma` and SOCM by the paper's :math:`d \times d` route (released code, float32, :math:`10^{-9} I`).

    Parameters
    ----------
    clouds
        List of ``(n_i, d)`` numpy arrays or torch tensors, one per text.
    pairs
        ``None`` for every pair ``i < j`` (lexicographic order, ``scipy.spatial.distance.pdist``'s condensed order, as
        :func:`socm_lib.socm_pairs`), or ``(P, 2)`` indices.
    dtype
        ``torch.float32`` (the released code) or ``torch.float64`` (to study the regulariser's bias alone);
        ``numpy.float32`` or ``"float32"`` are the same (:func:`socm_lib.checks.as_dtype`).
    eps
        The regulariser added before each square root (:math:`10^{-9}` in the released code).
    batch_size
        Pairs per batched eigendecomposition (64 in the released code; the results do not depend on it).
    device
        ``"cpu"``, ``"cuda"`` or ``None`` for the GPU when one is present.
    progress
        Show a progress bar on stderr; ``None`` shows one for more than 2,000 pairs when stderr is a terminal.
    step_dtypes
        ``dtype`` for single steps, by name: ``"statistics"`` (steps 1 and 2, and the traces), ``"first root"``
        (:math:`R`) or ``"second root"`` (the fidelity, and :math:`d_\Sigma` from it). ``{"second root": "float32"}``
        with ``dtype=torch.float64`` rounds that step alone as the released code does. ``None``: ``dtype`` throughout.

    Within a batch, :math:`\Sigma_i^{1/2}` is computed once for each distinct first text ``i`` (the same
    arithmetic as once per pair). Returns a :class:`~socm_lib.PairResult` in float64 numpy. A cloud on which the
    released arithmetic overflows or underflows (mean norm above about 1.8e19 in float32 or 1.3e154 in float64, entries
    beyond float32's range, or a mean norm below :data:`MIN_MEAN_NORM`, 1e-10) is refused with a ``ValueError`` that
    says why (module docstring), never returned as zeros. The route is
    :math:`O(d^3)` per pair and biased low on rank-deficient clouds (module docstring); use it to measure
    what the paper's numbers carry, and :func:`socm_lib.socm_pairs` for the exact values.
    """
    dtype, device = as_dtype(dtype), as_device(device)
    step = _step_dtypes(dtype, step_dtypes)
    batch_size = as_int(batch_size, "batch_size", minimum=1)
    eps = as_number(eps, "eps", maximum=MAX_REGULARISER,
                    advice=f"It is the regulariser added before each square root ({REGULARISER:g} in the released "
                           "code); the normalised covariances have traces of order 1, which a larger one would swamp.")
    progress = as_progress(progress)
    X = as_clouds(clouds)
    # a zero mean would be divided by the released code's 1e-12; the exact norms name a scale the route cannot take
    norms = [float(mean_norm(x, f"clouds[{k}]")) for k, x in enumerate(X)]
    listed, count = as_pair_set(pairs, len(X))
    d, itemsize = X[0].shape[1], max(torch.empty((), dtype=s).element_size() for s in step.values())
    # every cloud's d x d covariance, a batch's square roots and products, and the results (i, j and three floats)
    need = len(X) * (d * d + d) * itemsize + 6 * min(batch_size, count) * d * d * itemsize + count * 5 * 8
    require_memory(need, f"paper_route on {len(X):,} clouds of d = {d} ({d} x {d} covariances) and "
                         f"{count:,} pairs", "Use socm_lib.socm_pairs (exact, O(n^2 d) memory per pair), "
                         "or fewer clouds.")
    stats = [_statistics(x.to(device), step["statistics"], f"clouds[{k}]", norms[k]) for k, x in enumerate(X)]
    out, ij = np.empty((count, 3)), np.empty((count, 2), dtype=np.int64)
    show = show_progress(progress, count, ROUTE_PROGRESS_PAIRS)
    with tqdm(total=count, disable=not show, file=sys.stderr, unit="pair", desc="paper route") as bar:
        for s in range(0, count, batch_size):  # all pairs are formed batch by batch, never all at once
            span = np.arange(s, min(s + batch_size, count))
            chunk = listed[span] if listed is not None else condensed_pairs(span, len(X))
            ij[span] = chunk
            first, slot = np.unique(chunk[:, 0], return_inverse=True)
            first_covs = torch.stack([stats[i][1] for i in first]).to(step["first root"])
            lam, V = _regularised_eigenvalues(first_covs, eps, vectors=True)
            R = ((V * lam.sqrt()[:, None, :]) @ V.mT)[torch.from_numpy(slot.reshape(-1)).to(device)]
            R = R.to(step["second root"])
            S1 = torch.stack([stats[i][1] for i in chunk[:, 0]])
            S2 = torch.stack([stats[j][1] for j in chunk[:, 1]])
            mu, _ = _regularised_eigenvalues(R @ S2.to(R.dtype) @ R, eps, vectors=False)
            fidelity = mu.sqrt().sum(dim=-1)
            traces = S1.diagonal(dim1=-2, dim2=-1).sum(-1) + S2.diagonal(dim1=-2, dim2=-1).sum(-1)
            d_sigma = (traces.to(fidelity.dtype) - 2 * fidelity).clamp(min=0) / 4
            m1 = torch.stack([stats[i][0] for i in chunk[:, 0]])
            m2 = torch.stack([stats[j][0] for j in chunk[:, 1]])
            d_mu = ((m1 - m2) ** 2).sum(dim=-1) / 4
            common = torch.promote_types(d_mu.dtype, d_sigma.dtype)  # one dtype unless step_dtypes mixes them
            d_mu, d_sigma = d_mu.to(common), d_sigma.to(common)
            block = torch.stack([d_mu, d_sigma, (1 - d_mu) * d_sigma], dim=1)
            out[s : s + len(chunk)] = block.to("cpu", torch.float64).numpy()
            bar.update(len(chunk))
    return PairResult(i=ij[:, 0].copy(), j=ij[:, 1].copy(), d_mu=out[:, 0], d_sigma=out[:, 1], socm=out[:, 2])


class RegulariserExcess(NamedTuple):
    r"""How much the regularised route overstates the fidelity of one ordered pair, in exact arithmetic.

    ``lower <= exact <= upper`` bound :math:`F_{\text{route}} - F`, where :math:`F = \lVert AB^\top\rVert_*`
    (book, Proposition ``prop-ch07-regulariser``). The route's :math:`d_\Sigma` is
    :math:`\max(\operatorname{BW}^2 - 2\,\texttt{exact},\ 0)/4`: low by ``exact / 2`` unless the exact
    :math:`\operatorname{BW}^2` is at most ``2 * exact`` (the exact :math:`d_\Sigma` at most ``exact / 2``), where it is 0.
    """

    lower: float
    exact: float
    upper: float


def _root_step(s: np.ndarray, t) -> np.ndarray:
    r""":math:`\sqrt{s^2 + t} - s` for :math:`s, t \ge 0`, without cancellation."""
    return t / (np.sqrt(s**2 + t) + s)


def regulariser_excess(x1, x2, eps: float = REGULARISER) -> RegulariserExcess:
    r"""The regularised route's excess fidelity :math:`F_{\text{route}} - \lVert AB^\top\rVert_*` for the ordered pair (x1, x2).

    ``x1`` and ``x2`` are token clouds ``(n_i, d)``, normalised and factored as the book does
    (:math:`\Sigma_1 = A^\top A`, :math:`\Sigma_2 = B^\top B`). With :math:`R^2 = \Sigma_1 + \varepsilon I` exactly,
    :math:`R\,\Sigma_2 R` has the nonzero eigenvalues of the :math:`n_2 \times n_2` matrix
    :math:`H = B R^2 B^\top = G^\top G + \varepsilon B B^\top`, with the cross-Gram matrix :math:`G = AB^\top`, so

    .. math::

        F_{\text{route}} = \operatorname{tr}(R\,\Sigma_2 R + \varepsilon I)^{1/2}
            = (d - n_2)\sqrt\varepsilon + \operatorname{tr}(H + \varepsilon I_{n_2})^{1/2}   \quad(\texttt{exact}).

    With :math:`s_1 \ge \dots \ge s_r > 0` the singular values of :math:`G`, :math:`r_2 = \operatorname{rank} B` and
    :math:`\lambda_1 \ge \lambda_2 \ge \dots` the eigenvalues of :math:`\Sigma_2`, Weyl's inequality
    (:math:`0 \preceq \varepsilon BB^\top \preceq \varepsilon\lambda_1 I`) gives

    .. math::

        \texttt{lower} = (d - r)\sqrt\varepsilon + \sum_{k=1}^{r}\big(\sqrt{s_k^2 + \varepsilon} - s_k\big), \qquad
        \texttt{upper} = (d - r_2)\sqrt\varepsilon + \sum_{m=1}^{r_2 - r}\sqrt{\varepsilon(1 + \lambda_m)}
            + \sum_{k=1}^{r}\big(\sqrt{s_k^2 + \varepsilon(1 + \lambda_1)} - s_k\big).

    ``exact`` depends on the order of the pair (through :math:`BB^\top`); ``lower`` does not. All in float64, with
    numerical ranks from :func:`numpy.linalg.matrix_rank`.
    """
    eps = as_number(eps, "eps", maximum=MAX_REGULARISER)
    x1, x2 = as_clouds([x1, x2])  # one d for both; a centred cloud is refused by lowrank_factor
    A, B = lowrank_factor(x1, name="x1")[0], lowrank_factor(x2, name="x2")[0]
    d, n2 = A.shape[1], B.shape[0]
    G = A @ B.T  # the cross-Gram matrix
    s = np.linalg.svd(G, compute_uv=False)
    r, r2 = np.linalg.matrix_rank(G), np.linalg.matrix_rank(B)
    s = s[:r]
    lam = np.linalg.eigvalsh(B @ B.T)[::-1].clip(min=0)  # the nonzero eigenvalues of Sigma_2 = B^T B, and zeros
    root = np.sqrt(eps)
    fidelity = s.sum()
    theta = np.linalg.eigvalsh(G.T @ G + eps * (B @ B.T))  # the eigenvalues of H
    exact = (d - n2) * root + np.sqrt(theta.clip(min=0) + eps).sum() - fidelity
    lower = (d - r) * root + _root_step(s, eps).sum()
    upper = ((d - r2) * root + np.sqrt(eps * (1 + lam[: r2 - r])).sum()
             + _root_step(s, eps * (1 + lam[0])).sum())
    return RegulariserExcess(float(lower), float(exact), float(upper))


def null_roots(x1, x2, *, dtype=torch.float32, eps: float = REGULARISER) -> np.ndarray:
    r"""The roots the route's second square root takes on the regulariser's directions, for the ordered pair (x1, x2).

    Of the :math:`d` eigenvalues of :math:`R\,\Sigma_2 R + \varepsilon I`, clamped at 0 as the route clamps them,
    the :math:`d - r` smallest, with :math:`r` the rank of the cross-Gram matrix. In exact arithmetic each is
    :math:`\varepsilon` (:math:`\varepsilon(1 + \lambda_m)` on the second text's extra directions), so each root is
    about :math:`\sqrt\varepsilon` and together they make the leading term :math:`(d - r)\sqrt\varepsilon` of the
    route's excess fidelity. In float32 (``dtype``, the released code's) their round-off is of the order of
    :math:`\varepsilon` itself. Returns the :math:`d - r` roots, ascending, as float64 numpy.
    """
    dtype = as_dtype(dtype)
    X = as_clouds([x1, x2])
    (_, s1), (_, s2) = (_statistics(x, dtype, name, float(mean_norm(x, name)))
                        for x, name in zip(X, ("x1", "x2")))
    lam, V = _regularised_eigenvalues(s1[None], eps, vectors=True)
    R = (V * lam.sqrt()[:, None, :]) @ V.mT
    mu, _ = _regularised_eigenvalues(R @ s2[None] @ R, eps, vectors=False)
    r = int(np.linalg.matrix_rank(lowrank_factor(x1)[0] @ lowrank_factor(x2)[0].T))
    return mu[0, : X[0].shape[1] - r].sqrt().to("cpu", torch.float64).numpy()
