r"""Which blocks of pairs the engine runs, and in what order (book, Chapter 6).

The pairs are all ``i < j`` of the texts (:func:`all_pairs`, ``pdist``'s order; :func:`condensed_pairs` picks some
by position without forming all), or a listed ``(P, 2)`` array (:func:`cross_pairs` lists those of two sets, in
``cdist``'s order). They are cut into blocks of bounded size, each one matrix product and its SVDs
(:mod:`socm_lib.block_math`):

* all pairs: for each pair of buckets, a few texts of the first against the whole second (:func:`_all_pair_blocks`);
* listed pairs: grouped by bucket pair; a group that covers its grid (as :func:`socm_lib.socm_cross`'s pairs do) is
  cut into tiles of that grid, any other goes pair by pair (:func:`_listed_pair_blocks`);
* both are visited tile by tile of buckets (:func:`_visit_key`), so that the factor cache of
  :class:`socm_lib.factors._Factors` forms each bucket a few times, not once per block.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from .block_math import _bucket_pair_block, _grid_pair_block, _listed_pair_block
from .checks import as_bool, as_int
from .factors import _Bucket, _Factors


def _visit_key(buckets: list[_Bucket], factors: _Factors):
    """A sort key for bucket pairs ``(a, b)`` that lets :class:`socm_lib.factors._Factors`' cache serve most blocks.

    The buckets (shortest first) are cut into consecutive tiles of about half the cache; the pairs of
    tiles ``s <= t`` are visited row by row (``s`` fixed), every other row backwards (so that a backward
    row starts with the tile the forward one ended on), and within two tiles the buckets of the first are
    swept for each bucket of the second (so the second's buckets, each used for one sweep, are the ones
    the cache drops). The same pairs in another order give the same numbers: each pair's result
    depends only on its own factors.
    """
    tile, used, t = [], 0, 0
    for B in buckets:
        size = factors.nbytes(B)
        if used and used + size > factors.capacity // 2:
            t, used = t + 1, 0
        tile.append(t)
        used += size

    def key(a: int, b: int) -> tuple:
        a, b = min(a, b), max(a, b)
        s, t = tile[a], tile[b]
        return s, t if s % 2 == 0 else -t, b, a

    return key


def _all_pair_blocks(buckets: list[_Bucket], factors: _Factors, means: np.ndarray, block_elems: int,
                     use_torch: bool) -> list:
    """Every pair ``i < j`` as blocks of :func:`_bucket_pair_block`, each with at most ~``block_elems`` cross-Gram
    entries, in the order of :func:`_visit_key`."""
    blocks, key = [], _visit_key(buckets, factors)
    for a, Ba in enumerate(buckets):
        for Bb in buckets[a:]:
            na, La, nb, Lb = len(Ba.members), Ba.rows, len(Bb.members), Bb.rows
            rows = max(1, block_elems // (La * nb * Lb))
            for r0 in range(0, na, rows):
                blocks.append((key(Ba.index, Bb.index),
                               partial(_bucket_pair_block, factors, Ba, Bb, r0, rows, means, use_torch)))
    return blocks


def _listed_pair_blocks(buckets: list[_Bucket], factors: _Factors, means: np.ndarray, pairs: np.ndarray,
                        block_elems: int, use_torch: bool) -> list:
    """The given pairs as blocks, grouped by bucket pair so padding stays small, in the order of :func:`_visit_key`.

    A group whose pairs cover its grid (its distinct first texts times its distinct second texts are no more than
    its pairs, as for :func:`socm_lib.socm_cross`) is cut into tiles of the grid, each one :func:`_grid_pair_block`; any
    other group goes pair by pair in :func:`_listed_pair_block`. Both hold at most about ``block_elems``
    cross-Gram entries and ``4 block_elems`` gathered factor entries at a time (at least one text, or one pair).
    """
    bucket_of = np.empty(len(means), dtype=np.int64)
    slot_of = np.empty(len(means), dtype=np.int64)
    for b, B in enumerate(buckets):
        bucket_of[B.members] = b
        slot_of[B.members] = np.arange(len(B.members))
    bi, bj = bucket_of[pairs[:, 0]], bucket_of[pairs[:, 1]]
    order = np.lexsort((bj, bi))
    boundaries = np.flatnonzero(np.diff(bi[order]) | np.diff(bj[order])) + 1
    blocks, key, d = [], _visit_key(buckets, factors), factors.d
    for group in np.split(order, boundaries):
        Ba, Bb = buckets[bi[group[0]]], buckets[bj[group[0]]]
        La, Lb = Ba.rows, Bb.rows
        rows, cols = np.unique(pairs[group, 0]), np.unique(pairs[group, 1])
        if len(rows) * len(cols) <= len(group):
            width = min(len(cols), max(1, 2 * block_elems // (Lb * d)))
            height = max(1, min(block_elems // (La * width * Lb), 2 * block_elems // (La * d)))
            r = np.searchsorted(rows, pairs[group, 0]) // height
            c = np.searchsorted(cols, pairs[group, 1]) // width
            tile_order = np.lexsort((c, r))
            cuts = np.flatnonzero(np.diff(r[tile_order]) | np.diff(c[tile_order])) + 1
            for tile in np.split(tile_order, cuts):
                r0, c0 = r[tile[0]] * height, c[tile[0]] * width
                block = partial(_grid_pair_block, factors, Ba, Bb, group[tile], rows[r0 : r0 + height],
                                cols[c0 : c0 + width], pairs, slot_of, means, use_torch)
                blocks.append((key(Ba.index, Bb.index), block))
            continue
        step = max(1, block_elems // max(La * Lb, (La + Lb) * d // 4))
        for k0 in range(0, len(group), step):
            idx = group[k0 : k0 + step]
            block = partial(_listed_pair_block, factors, Ba, Bb, idx, pairs, slot_of, means, use_torch)
            blocks.append((key(Ba.index, Bb.index), block))
    return blocks


def all_pairs(n_texts: int) -> np.ndarray:
    """Every pair ``(i, j)`` with ``i < j`` in lexicographic order (``scipy.spatial.distance.pdist``'s condensed
    order), shape ``(n(n-1)/2, 2)``."""
    i, j = np.triu_indices(as_int(n_texts, "n_texts", minimum=0), k=1)
    return np.stack([i, j], axis=1)


def condensed_pairs(positions, n_texts: int) -> np.ndarray:
    """The pairs ``(i, j)``, ``i < j``, at ``positions`` of :func:`all_pairs`'s order of ``n_texts`` texts, ``(P, 2)``,
    without forming all pairs.

    Row ``i`` starts at position ``s(i) = i n - i (i + 1) / 2``; ``i`` is the largest row with ``s(i) <= k``
    (found in floating point, then corrected by one where rounding put it off).
    """
    n = as_int(n_texts, "n_texts", minimum=0)
    total = n * (n - 1) // 2
    k = np.asarray(positions)
    if k.dtype.kind not in "iu":
        raise TypeError(f"positions has dtype {k.dtype}; pass integer positions 0 <= k < {total}.")
    if k.ndim != 1:
        raise ValueError(f"positions has shape {k.shape}; pass a 1-D array of positions.")
    if k.size and (k.min() < 0 or k.max() >= total):
        raise ValueError(f"positions holds {k.min() if k.min() < 0 else k.max()}, outside 0 <= k < {total} (the "
                         f"pairs i < j of {n} texts).")
    k = k.astype(np.int64)

    def start(row):
        return row * n - row * (row + 1) // 2

    i = (n - 2 - np.floor(np.sqrt(-8.0 * k + 4.0 * n * (n - 1) - 7) / 2 - 0.5)).astype(np.int64)
    i -= start(i) > k
    i += start(i + 1) <= k
    return np.stack([i, k - start(i) + i + 1], axis=1)


def cross_pairs(n_a: int, n_b: int, *, aligned: bool = False) -> np.ndarray:
    """Index pairs into the concatenation ``clouds_a + clouds_b`` of ``n_a`` and ``n_b`` clouds, shape ``(P, 2)``.

    Every ``(a, b)``, ``a < n_a`` and ``b < n_b``, as ``(a, n_a + b)`` in row-major order
    (``scipy.spatial.distance.cdist(...).ravel()``'s order, ``P = n_a n_b``); with ``aligned=True`` only
    ``(k, n_a + k)`` for ``k < n_a`` (``n_a == n_b`` required).
    """
    n_a, n_b = as_int(n_a, "n_a", minimum=1), as_int(n_b, "n_b", minimum=1)
    if as_bool(aligned, "aligned"):
        if n_a != n_b:
            raise ValueError(f"aligned=True pairs the k-th cloud of each set, but the sets have {n_a} and {n_b} "
                             "clouds; pass sets of the same length, or aligned=False for every pair (a, b).")
        a = np.arange(n_a)
        return np.stack([a, a + n_a], axis=1)
    a, b = np.divmod(np.arange(n_a * n_b), n_b)
    return np.stack([a, b + n_a], axis=1)
