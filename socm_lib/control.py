r"""What the initialisation scheme alone predicts for the untrained control (notebook 5; Chapter 9).

The control ``untrained-minilm-l6`` is a BERT-type encoder whose weights were never trained: they are
drawn by the BERT initialisation scheme. At the embedding layer (hidden state 0) token :math:`j` of a
text with token ids :math:`t_0, \dots, t_{n-1}` (special tokens included) is

.. math::

    e_j = s + w_{t_j} + p_j, \qquad x_j = \mathrm{LayerNorm}(e_j),

where the word vectors :math:`w_t`, the position vectors :math:`p_j` and the token-type vector
:math:`s` are independent draws with i.i.d. :math:`\mathcal N(0, \sigma^2)` coordinates
(``config.initializer_range``, :math:`\sigma = 0.02`). Every token of every text has token type 0, so
:math:`s` is **one vector shared by all tokens**; positions are shared by all texts (position 0 is in
every text). LayerNorm (gain 1, bias 0 at initialisation) centres each token over its coordinates and
scales it to norm :math:`\sqrt d`.

Assumptions. In dimension :math:`d` independent Gaussian vectors are nearly orthogonal and their squared
norms are close to :math:`d\sigma^2` (relative fluctuations :math:`O(1/\sqrt d)`); the centring removes a
share :math:`1/d` of each vector. To that order, and after dividing by a common factor that cancels in
every ratio below, the tokens have unit norm and

.. math::

    \langle s, s\rangle = \beta, \quad \langle w_t, w_{t'}\rangle = (1-\beta)\,\alpha\,\delta_{tt'}, \quad
    \langle p_j, p_{j'}\rangle = (1-\beta)(1-\alpha)\,\delta_{jj'},

with all cross products zero. :math:`\beta` is the share of the common component in a token's squared norm
and :math:`\alpha` the share of the word in the token-specific rest; equal standard deviations give
:math:`\beta = 1/3` and :math:`\alpha = 1/2`. For a text of length :math:`n` whose token ids occur
:math:`m_t` times (:math:`q = \sum_t m_t^2`, equal to :math:`n` when no id repeats), the mean-pooled vector
:math:`\mu = s + \frac1n \sum_t m_t w_t + \frac1n \sum_{j<n} p_j` has

.. math::

    \lVert\mu\rVert^2 = \beta + (1-\beta)\,\frac{\alpha q + (1-\alpha) n}{n^2}, \qquad
    c = \frac{1}{\lVert\mu\rVert^2} - 1,

the second by the equal-norm identity :math:`c = 1/\overline{\cos} - 1` (Chapter 8), because
:math:`\overline{\cos} = \lVert\mu\rVert^2` for unit tokens. Two texts with lengths :math:`n_1, n_2`
sharing :math:`k = \sum_t m^{(1)}_t m^{(2)}_t` token occurrences ([CLS] and [SEP] give :math:`k \ge 2`)
have

.. math::

    \langle\mu_1, \mu_2\rangle = \beta + (1-\beta)\,\frac{\alpha k + (1-\alpha)\min(n_1, n_2)}{n_1 n_2}, \qquad
    \cos(\mu_1, \mu_2) = \frac{\langle\mu_1, \mu_2\rangle}{\lVert\mu_1\rVert\,\lVert\mu_2\rVert}.

With :math:`\beta = 1/3`, :math:`\alpha = 1/2` and distinct ids, :math:`c = 2(n-1)/(n+2)`, which rises
towards 2 but never reaches it, and for two texts of equal length :math:`n`,
:math:`\cos(\mu_1, \mu_2) = (n^2 + n + k)/(n^2 + 2n) = 1 - (n - k)/(n(n+2))`: the means of any two texts
nearly coincide, because the shared :math:`s` dominates the average once the token-specific parts
have averaged out (like :math:`1/n`). These are statements about the *initialisation scheme*; the random
transformer layers above the embeddings change them (notebook 5 measures by how much).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from math import frexp, ldexp

import numpy as np

from .checks import as_clouds, as_int, as_number, as_texts
from .stats import concentration_ratio, normalize_cloud

BETA = 1 / 3  # common share for equal standard deviations of type, word and position vectors
ALPHA = 1 / 2  # word share of the token-specific part for equal standard deviations


def _check_shares(beta, alpha):
    beta = as_number(beta, "beta", minimum=0.0, maximum=1.0, advice="beta is the common share, in (0, 1].")
    alpha = as_number(alpha, "alpha", minimum=0.0, maximum=1.0, advice="alpha is the word share, in [0, 1].")
    if beta == 0:
        raise ValueError("beta = 0: the common share must be positive (in (0, 1]); with no shared vector every "
                         "mean would vanish as n grows.")
    return beta, alpha


def _counts(value, name: str) -> np.ndarray:
    """``value`` (a number or an array of them) as float64, refusing what is not a finite whole number >= 0."""
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be a whole number or an array of them, got {value!r}.")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a whole number or an array of them, got {value!r}.") from None
    if arr.size == 0:
        raise ValueError(f"{name} is empty; pass at least one count.")
    if not np.isfinite(arr).all() or np.any(arr < 0) or np.any(arr != np.round(arr)):
        raise ValueError(f"{name} must hold finite whole numbers >= 0, got {arr.tolist()}.")
    return arr


def _lengths(n, name="n"):
    n = _counts(n, name)
    if np.any(n < 1):
        raise ValueError(f"{name} must hold whole numbers of tokens >= 1.")
    return n


def _squares(q, n, name: str) -> np.ndarray:
    r""":math:`q = \sum_t m_t^2` of texts of lengths ``n`` (default ``n``: no repeated id), which lies in
    :math:`[n, n^2]` (each count :math:`m_t \ge 1`, and :math:`\sum_t m_t = n`)."""
    if q is None:
        return n
    q = _counts(q, name)
    if np.any(q < n) or np.any(q > n * n):
        raise ValueError(f"{name} = sum of squared token counts must lie between the length n and n^2 (n where no "
                         f"id repeats, n^2 where one id fills the text); got {name} = {q.tolist()} for n = {n.tolist()}.")
    return q


def shares(sigma_type: float = 0.02, sigma_word: float = 0.02, sigma_position: float = 0.02) -> tuple[float, float]:
    r"""The shares :math:`(\beta, \alpha)` implied by the standard deviations of the three embedding tables.

    :math:`\beta = \sigma_s^2/(\sigma_s^2 + \sigma_w^2 + \sigma_p^2)` and
    :math:`\alpha = \sigma_w^2/(\sigma_w^2 + \sigma_p^2)`; equal values (BERT's scheme) give ``(1/3, 1/2)``.
    """
    sigmas = [as_number(v, name) for v, name in ((sigma_type, "sigma_type"), (sigma_word, "sigma_word"),
                                                 (sigma_position, "sigma_position"))]
    if min(sigmas) <= 0:
        raise ValueError("The three standard deviations must be positive.")
    _, top = frexp(max(sigmas))  # divided by a power of two (exact), so that the squares neither overflow nor vanish
    v = np.array([ldexp(x, -top) for x in sigmas], dtype=np.float64) ** 2
    if not v.all():
        raise ValueError(f"The standard deviations {sigmas} differ by more than float64 can square; the smallest "
                         "share would be 0.")
    return float(v[0] / v.sum()), float(v[1] / (v[1] + v[2]))


def predicted_mean_norm2(n, q=None, *, beta: float = BETA, alpha: float = ALPHA):
    r""":math:`\lVert\mu\rVert^2 = \beta + (1-\beta)(\alpha q + (1-\alpha) n)/n^2` for unit tokens (``q`` defaults to
    ``n``; it must lie in :math:`[n, n^2]`)."""
    beta, alpha = _check_shares(beta, alpha)
    n = _lengths(n)
    q = _squares(q, n, "q")
    return beta + (1 - beta) * (alpha * q + (1 - alpha) * n) / n**2


def predicted_concentration(n, q=None, *, beta: float = BETA, alpha: float = ALPHA):
    r"""Predicted concentration ratio :math:`c = 1/\lVert\mu\rVert^2 - 1` of a text of ``n`` tokens.

    With distinct token ids (``q = n``) this is
    :math:`c = (1-\beta)(1 - 1/n) / (\beta + (1-\beta)/n)`, i.e. :math:`2(n-1)/(n+2)` for :math:`\beta = 1/3`;
    it increases with :math:`n` towards :math:`(1-\beta)/\beta`. ``q`` (:math:`\sum_t m_t^2`) accounts for
    repeated ids. See the module docstring for the model and its assumptions.
    """
    return 1.0 / predicted_mean_norm2(n, q, beta=beta, alpha=alpha) - 1.0


def predicted_mean_cosine(n1, n2, k=2, q1=None, q2=None, *, beta: float = BETA, alpha: float = ALPHA):
    r"""Predicted :math:`\cos(\mu_1, \mu_2)` of the mean-pooled vectors of two texts.

    ``n1``, ``n2``: lengths in tokens (special tokens included); ``k``: shared token occurrences
    :math:`\sum_t m^{(1)}_t m^{(2)}_t` (2 for [CLS] and [SEP] alone); ``q1``, ``q2``: :math:`\sum_t m_t^2`
    of each text (default: its length). Formula in the module docstring; broadcasts over arrays.
    """
    beta, alpha = _check_shares(beta, alpha)
    n1, n2 = _lengths(n1, "n1"), _lengths(n2, "n2")
    k = _counts(k, "k")
    q1, q2 = _squares(q1, n1, "q1"), _squares(q2, n2, "q2")
    if np.any(k > np.sqrt(q1 * q2)):  # Cauchy-Schwarz on the two texts' count vectors
        raise ValueError(f"k = {k.tolist()} shared occurrences exceed sqrt(q1 q2), the most two texts with these counts can "
                         "share (Cauchy-Schwarz: k = sum_t m1_t m2_t <= sqrt(sum_t m1_t^2 sum_t m2_t^2)).")
    cross = beta + (1 - beta) * (alpha * k + (1 - alpha) * np.minimum(n1, n2)) / (n1 * n2)
    norms = predicted_mean_norm2(n1, q1, beta=beta, alpha=alpha) * predicted_mean_norm2(n2, q2, beta=beta, alpha=alpha)
    return cross / np.sqrt(norms)


def token_counts(tokenizer, texts, *, max_length: int | None = None) -> list[Counter]:
    """Occurrences of each token id per text, special tokens included, truncated like :func:`token_embeddings`."""
    texts = as_texts(texts)
    if max_length is not None:
        max_length = as_int(max_length, "max_length", minimum=1)
    enc = tokenizer(texts, truncation=True, max_length=max_length or int(tokenizer.model_max_length))
    return [Counter(ids) for ids in enc["input_ids"]]


def count_statistics(counts) -> dict[str, np.ndarray]:
    r"""Per text ``n`` (length) and ``q`` (:math:`\sum_t m_t^2`), and the matrix ``k`` of shared occurrences.

    ``counts`` holds one mapping per text, token id to its occurrences (a whole number >= 1), as
    :func:`token_counts` gives. ``k[a, b]`` is :math:`\sum_t m^{(a)}_t m^{(b)}_t` (the diagonal equals ``q``).
    """
    if isinstance(counts, Mapping):
        raise TypeError("counts is a single mapping; pass a list of them, one Counter of token ids per text.")
    counts = list(counts)
    if not counts:
        raise ValueError("counts is empty: pass one Counter of token ids per text.")
    for a, c in enumerate(counts):
        if not isinstance(c, Mapping):
            raise TypeError(f"counts[{a}] is a {type(c).__name__}; pass one Counter of token ids per text.")
        if not c:
            raise ValueError(f"counts[{a}] is empty: a text has at least one token.")
        bad = [m for m in c.values() if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1]
        if bad:
            raise ValueError(f"counts[{a}] holds the count {bad[0]!r}; every count must be a whole number >= 1.")
    vocab = {t: i for i, t in enumerate(dict.fromkeys(t for c in counts for t in c))}
    M = np.zeros((len(counts), len(vocab)))
    for a, c in enumerate(counts):
        for t, m in c.items():
            M[a, vocab[t]] = m
    k = M @ M.T
    return {"n": M.sum(axis=1), "q": np.diag(k).copy(), "k": k}


def predict_for_texts(tokenizer, texts, *, beta: float = BETA, alpha: float = ALPHA,
                      max_length: int | None = None) -> dict[str, np.ndarray]:
    """Predicted ``concentration`` per text and ``cosine`` matrix of the means, from each text's token ids.

    Also returns ``n`` (lengths) and ``k`` (shared occurrences), see :func:`count_statistics`.
    """
    st = count_statistics(token_counts(tokenizer, texts, max_length=max_length))
    n, q, k = st["n"], st["q"], st["k"]
    conc = predicted_concentration(n, q, beta=beta, alpha=alpha)
    cos = predicted_mean_cosine(n[:, None], n[None, :], k, q[:, None], q[None, :], beta=beta, alpha=alpha)
    return {"n": n, "k": k, "concentration": conc, "cosine": cos}


def measured_statistics(clouds) -> dict[str, np.ndarray]:
    r"""Per cloud ``n`` and concentration ratio ``c``, and the ``cosine`` matrix of the raw means :math:`\mu_i`
    (clouds validated by :func:`socm_lib.checks.as_clouds`; a mean that vanishes is refused, as
    :func:`socm_lib.concentration_ratio` refuses it)."""
    clouds = as_clouds(clouds)
    unit = np.stack([normalize_cloud(X).mean(dim=0).numpy() for X in clouds])
    return {"n": np.array([X.shape[0] for X in clouds], dtype=np.float64),
            "concentration": np.array([concentration_ratio(X) for X in clouds]),
            "cosine": unit @ unit.T}


def embedding_shares(model) -> tuple[float, float]:
    r"""The shares :math:`(\beta, \alpha)` of an actual draw: mean squared norms of a BERT-type model's tables.

    Uses the token-type row 0 (:math:`s`), the mean over the word table (padding row excluded) and the mean
    over the position table, each centred over its coordinates as LayerNorm does. Raises ``ValueError`` for
    models without BERT-type embeddings.
    """
    emb = getattr(model, "embeddings", None)
    tables = [getattr(emb, a, None) for a in ("token_type_embeddings", "word_embeddings", "position_embeddings")]
    if emb is None or any(t is None for t in tables):
        raise ValueError("embedding_shares needs a BERT-type model with word, position and token-type embeddings.")
    tt, word, pos = (t.weight.detach().double().cpu().numpy() for t in tables)
    pad = getattr(tables[1], "padding_idx", None)
    if pad is not None:
        word = np.delete(word, pad, axis=0)

    def msq(a):
        a = a - a.mean(axis=-1, keepdims=True)
        return float((a**2).sum(axis=-1).mean())

    v = np.array([msq(tt[0]), msq(word), msq(pos)])
    return float(v[0] / v.sum()), float(v[1] / (v[1] + v[2]))
