r"""Which blocks of pairs the engine runs, and in what order: the plan, as data (book, Chapter 6).

The pairs are all ``i < j`` of the texts (:func:`all_pairs`, ``pdist``'s order; :func:`condensed_pairs` picks some
by position without forming all), or a listed ``(P, 2)`` array (:func:`cross_pairs` lists those of two sets, in
``cdist``'s order). :func:`plan_blocks` cuts them into blocks of bounded size, each one matrix product and its SVDs
(:mod:`socm_lib.block_math` computes them). A block is a small record of which texts of which two buckets it pairs,
nothing more, so a plan can be inspected, counted, or sent to another process (:mod:`socm_lib.distributed`):

* all pairs: for each pair of buckets, a few texts of the first against the whole second (:class:`RowBlock`);
* listed pairs: grouped by bucket pair; a group that covers its grid (as :func:`socm_lib.socm_cross`'s pairs do) is
  cut into tiles of that grid (:class:`GridBlock`), any other goes pair by pair (:class:`ListedBlock`);
* both are visited tile by tile of buckets (:func:`visit_key`), so that the factor cache of
  :class:`socm_lib.factors.FactorCache` forms each bucket a few times, not once per block;
* a sparse list (few pairs among many texts, as a sampled estimate draws them) would still form whole buckets,
  again and again, for a few pairs each: its blocks (pair by pair, or a tile of a few texts) form their own texts
  alone instead (``own_texts``, :func:`own_texts`), when that forms fewer texts (:func:`forms_own_texts`).

Each pair's numbers depend only on its own block's inputs, never on the order in which blocks run, nor on where.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .checks import as_bool, as_int
from .factors import Bucket


@dataclass(frozen=True)
class RowBlock:
    """All pairs of texts ``start : stop`` of bucket ``a`` with the texts of bucket ``b``; within one bucket
    (``a == b``) only the pairs above the diagonal (text ``r`` with texts ``r + 1, ...``)."""

    a: int
    b: int
    start: int
    stop: int


@dataclass(frozen=True)
class ListedBlock:
    """The listed pairs at ``positions`` (texts of bucket ``a`` with texts of bucket ``b``), one product a pair; with
    ``own_texts`` (a sparse list) it forms the factors of its pairs' texts alone instead of reading whole buckets."""

    a: int
    b: int
    positions: np.ndarray
    own_texts: bool = False


@dataclass(frozen=True)
class GridBlock:
    """The listed pairs at ``positions``, each a text of ``rows`` (sorted texts of bucket ``a``) with one of ``cols``
    (sorted texts of bucket ``b``): one product for the tile ``rows x cols``, from which each pair takes its own; with
    ``own_texts`` (a sparse list) it forms the factors of ``rows`` and ``cols`` alone instead of reading whole
    buckets."""

    a: int
    b: int
    positions: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    own_texts: bool = False


Block = RowBlock | ListedBlock | GridBlock


def reads_buckets(block: Block) -> bool:
    """Whether ``block`` reads the whole data of its two buckets (from the factor cache): every block but those of a
    sparse list, which form their own texts alone (``own_texts``: :func:`own_texts`)."""
    return isinstance(block, RowBlock) or not block.own_texts


def own_texts(block: ListedBlock | GridBlock, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The texts of bucket ``a`` and of bucket ``b`` (each sorted, distinct) that ``block`` reads (``pairs``: the
    listed pairs): its pairs' first and second texts, or a tile's ``rows`` and ``cols``."""
    if isinstance(block, GridBlock):
        return block.rows, block.cols
    return np.unique(pairs[block.positions, 0]), np.unique(pairs[block.positions, 1])


def bucket_tiles(bucket_bytes: list[int], tile_bytes: int) -> list[int]:
    """The tile of each bucket: the buckets (shortest first) cut into consecutive tiles of about ``tile_bytes``
    (``bucket_bytes[b]``: bytes of bucket ``b``'s data in the cache)."""
    tile, used, t = [], 0, 0
    for size in bucket_bytes:
        if used and used + size > tile_bytes:
            t, used = t + 1, 0
        tile.append(t)
        used += size
    return tile


def visit_key(bucket_bytes: list[int], tile_bytes: int):
    """A sort key for bucket pairs ``(a, b)`` that lets a cache of ``2 tile_bytes`` bytes serve most blocks
    (``bucket_bytes[b]``: bytes of bucket ``b``'s data in the cache).

    The buckets are cut into tiles (:func:`bucket_tiles`); the pairs of
    tiles ``s <= t`` are visited row by row (``s`` fixed), every other row backwards (so that a backward
    row starts with the tile the forward one ended on), and within two tiles the buckets of the first are
    swept for each bucket of the second (so the second's buckets, each used for one sweep, are the ones
    the cache drops). The same pairs in another order give the same numbers: each pair's result
    depends only on its own factors.
    """
    tile = bucket_tiles(bucket_bytes, tile_bytes)

    def key(a: int, b: int) -> tuple:
        a, b = min(a, b), max(a, b)
        s, t = tile[a], tile[b]
        return s, t if s % 2 == 0 else -t, b, a

    return key


def forms_own_texts(buckets: list[Bucket], blocks: list, tile: list[int]) -> bool:
    """Whether the blocks of a list (:class:`ListedBlock`, :class:`GridBlock`) should form their own texts alone:
    when that forms fewer texts (at most two a pair, or a tile's rows and columns) than the cache would form of the
    buckets they touch.

    In the order of :func:`visit_key`, with ``T`` tiles among those buckets (``tile``: each bucket's,
    :func:`bucket_tiles`), a tile stays in the cache for its row of tiles and each other tile is formed once a row
    it takes part in: about ``(T + 1) / 2`` formations of each text. A sample of pairs among many texts is the other
    extreme: each text is touched by one or two pairs, and forming it for them alone is all it needs.
    """
    touched = {b.a for b in blocks} | {b.b for b in blocks}
    through_cache = sum(len(buckets[b].members) for b in touched) * (len({tile[b] for b in touched}) + 1) / 2
    alone = sum(len(b.rows) + len(b.cols) if isinstance(b, GridBlock) else 2 * len(b.positions) for b in blocks)
    return alone < through_cache


def plan_blocks(buckets: list[Bucket], pairs: np.ndarray | None, block_elems: int, *, d: int,
                bucket_bytes: list[int], tile_bytes: int) -> list[Block]:
    """Every pair (``pairs=None``: all ``i < j``; else the listed ``(P, 2)`` pairs) as blocks of at most about
    ``block_elems`` cross-Gram entries (at least one text, or one pair), in the order of :func:`visit_key`
    (``bucket_bytes``, ``tile_bytes``); ``d``: the factors' width. The blocks of a sparse list form their own
    texts (:func:`forms_own_texts`)."""
    if pairs is None:
        blocks = _all_pair_blocks(buckets, block_elems)
    else:
        blocks = _listed_pair_blocks(buckets, pairs, block_elems, d)
        if forms_own_texts(buckets, blocks, bucket_tiles(bucket_bytes, tile_bytes)):
            blocks = [replace(block, own_texts=True) for block in blocks]
    key = visit_key(bucket_bytes, tile_bytes)
    return sorted(blocks, key=lambda block: key(block.a, block.b))  # stable: a pair's blocks in turn


def rows_per_block(Ba: Bucket, Bb: Bucket, block_elems: int) -> int:
    """How many texts of ``Ba`` one block of all pairs takes against the whole of ``Bb``: as many as keep its cross-Grams
    within ``block_elems`` entries, at least one."""
    return max(1, block_elems // (Ba.rows * len(Bb.members) * Bb.rows))


def _all_pair_blocks(buckets: list[Bucket], block_elems: int) -> list[RowBlock]:
    """Every pair ``i < j``: for each pair of buckets, rows of the first against the whole second, each block with at
    most ~``block_elems`` cross-Gram entries (:func:`rows_per_block`)."""
    blocks = []
    for a, Ba in enumerate(buckets):
        for Bb in buckets[a:]:
            na, rows = len(Ba.members), rows_per_block(Ba, Bb, block_elems)
            blocks += [RowBlock(Ba.index, Bb.index, r0, min(r0 + rows, na)) for r0 in range(0, na, rows)]
    return blocks


def _listed_pair_blocks(buckets: list[Bucket], pairs: np.ndarray, block_elems: int, d: int) -> list:
    """The given pairs as blocks, grouped by bucket pair so padding stays small.

    A group whose pairs cover its grid (its distinct first texts times its distinct second texts are no more than
    its pairs, as for :func:`socm_lib.socm_cross`) is cut into tiles of the grid, each one :class:`GridBlock`; any
    other group goes pair by pair in :class:`ListedBlock` s. Both hold at most about ``block_elems`` cross-Gram
    entries and ``4 block_elems`` gathered factor entries at a time (at least one text, or one pair).
    """
    bucket_of = np.empty(sum(len(B.members) for B in buckets), dtype=np.int64)
    for b, B in enumerate(buckets):
        bucket_of[B.members] = b
    bi, bj = bucket_of[pairs[:, 0]], bucket_of[pairs[:, 1]]
    order = np.lexsort((bj, bi))
    boundaries = np.flatnonzero(np.diff(bi[order]) | np.diff(bj[order])) + 1
    blocks = []
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
                blocks.append(GridBlock(Ba.index, Bb.index, group[tile], rows[r0 : r0 + height],
                                        cols[c0 : c0 + width]))
            continue
        step = max(1, block_elems // max(La * Lb, (La + Lb) * d // 4))
        blocks += [ListedBlock(Ba.index, Bb.index, group[k0 : k0 + step]) for k0 in range(0, len(group), step)]
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
