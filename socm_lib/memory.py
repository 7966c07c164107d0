r"""Memory accounting: what a call will allocate, what the machine has free, and the rule that refuses a call too
large for it (book, Chapter 6).

:func:`available_memory` reads the host's available memory and a container's cgroup limit (v2, then v1);
:func:`block_bytes` and :func:`memory_estimate` bound what :func:`socm_lib.socm_pairs` allocates beyond the prepared
clouds, from the few numbers of a run that decide it (:class:`Footprint`, which the engine fills in:
:meth:`socm_lib.block_runner.Engine.footprint`); :func:`require_memory` raises :class:`InsufficientMemoryError`
before allocating when the estimate exceeds what is free.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .checks import as_int
from .factors import FORMING_ELEMS

#: Memory of :func:`socm_lib.socm_pairs`'s results per pair: ``i, j, d_mu, d_sigma, socm`` (40 bytes), the
#: ``(P, 2)`` index pairs (16) and the temporaries of building them (about 24).
BYTES_PER_PAIR = 80


#: Largest ``block_elems`` accepted (:func:`as_block_elems`): :math:`2^{36}` cross-Gram entries, 512 GiB in float64 for
#: one worker's block, more than any one machine or GPU holds; the default is :math:`2^{22}` (32 MiB).
MAX_BLOCK_ELEMS = 1 << 36


def as_block_elems(value) -> int:
    """``block_elems`` (the cross-Gram entries one worker holds at once) as an integer in ``[1, MAX_BLOCK_ELEMS]``.

    An option with an upper bound: a value past any machine's memory (``10**30``) is a mistake in the option, and is
    named as one here, instead of overflowing an integer in the block plan or being reported as missing memory.
    """
    return as_int(value, "block_elems", minimum=1, maximum=MAX_BLOCK_ELEMS,
                  advice=f"It bounds the cross-Gram entries one worker holds at once (8 bytes each in float64; the "
                         f"default is {1 << 22:,}); {MAX_BLOCK_ELEMS:,} would already take "
                         f"{MAX_BLOCK_ELEMS * 8 / 2**30:,.0f} GiB.")


class InsufficientMemoryError(MemoryError, ValueError):
    """The per-pair results would not fit in the memory this machine has free (see :func:`socm_lib.socm_pairs`)."""


#: Files that hold a container's memory limit and current use: cgroup v2, then cgroup v1.
CGROUP_FILES = (
    ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
    ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
)


def _read_int(path: str) -> int | None:
    """The integer in a one-line file, or ``None`` if absent, unreadable or ``max`` (no limit)."""
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _cgroup_available() -> int | None:
    """Bytes left under this process's cgroup memory limit (limit minus use), or ``None`` without a limit."""
    for limit_file, usage_file in CGROUP_FILES:
        limit = _read_int(limit_file)
        if limit is not None and limit < 1 << 60:  # v1 writes a huge number for "no limit"
            return max(limit - (_read_int(usage_file) or 0), 0)
    return None


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation: the smaller of ``MemAvailable`` of ``/proc/meminfo``
    (else the free physical pages, ``os.sysconf``) and what a container's cgroup limit leaves (v2
    ``memory.max`` minus ``memory.current``, or v1 ``memory.limit_in_bytes`` minus ``memory.usage_in_bytes``);
    ``None`` where none can be read."""
    host = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    host = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    if host is None:
        try:
            host = int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            pass
    known = [m for m in (host, _cgroup_available()) if m is not None]
    return min(known) if known else None


@dataclass(frozen=True)
class Footprint:
    """The numbers of a run that decide its memory: the engine's layout and how it runs, nothing else."""

    d: int  # the embedding dimension
    itemsize: int  # bytes of one factor entry (the engine's dtype)
    rows: int  # L: the tallest padded factor
    widest: int  # the most factor rows in one bucket, max over buckets of texts x L_b
    tokens: int  # the longest cloud's token count
    cache_bytes: int  # what the factor cache holds at most: its capacity, or every bucket's data if less
    threads: int  # workers, each with one block in flight
    use_torch: bool  # the torch path (its SVD workspace differs)


def block_bytes(run: Footprint, block_elems: int) -> int:
    r"""Bytes one worker holds for the largest block it can have in flight (entries counted at 8 bytes, float64).

    * The block's cross-Grams, ``p x q`` per pair: at most ``block_elems`` entries, but never less than one text
      against a whole bucket (all pairs: :math:`L \max_b n_b L_b` entries, ``L`` the tallest padded factor)
      or one pair (listed pairs: :math:`L^2`), held twice (the product and its copy: the pairs above the diagonal
      of one bucket, or the contiguous batch of the torch path).
    * The factors gathered for listed pairs, and the factors of its own texts that a block of a sparse list forms
      (:func:`socm_lib.block_plan.forms_own_texts`): each at most ``max(4 block_elems, 2 L d)`` entries.
    * The SVD's workspace: on the numpy path LAPACK takes one matrix at a time (a copy, ``L^2``, and ``gesdd``'s
      work, under ``8 L``); on the torch path the batched Jacobi (:mod:`socm_lib.jacobi`) holds about six copies
      of the batch (scaled, rotated, permuted and the temporaries of one step), ``torch.linalg.svdvals`` one.
    * Forming factors (:class:`socm_lib.factors.FactorCache`): clouds of one length in batches of at most
      :data:`~socm_lib.factors.FORMING_ELEMS` entries, or one cloud; the batch, at unit scale, centred, its factors
      and the workspace of a long cloud's QR: under ``6 max(FORMING_ELEMS, n d)`` entries for the longest text's ``n``
      tokens.
    """
    L, d = run.rows, run.d
    cross = max(block_elems, L * run.widest)
    listed = 2 * max(4 * block_elems, 2 * L * d)
    svd = 6 * cross if run.use_torch else L * L + 8 * L
    forming = 6 * max(FORMING_ELEMS, run.tokens * d)
    return (2 * cross + listed + svd + forming) * max(run.itemsize, 8)


def memory_estimate(n_pairs: int, run: Footprint, block_elems: int) -> int:
    """Bytes :func:`socm_lib.socm_pairs` allocates beyond the prepared clouds: :data:`BYTES_PER_PAIR` per pair, the
    factor cache (:data:`socm_lib.factors.FACTOR_CACHE_BYTES`, or all buckets if less) and each worker's block in flight
    (:func:`block_bytes`: cross-Grams, their copies, gathered factors, the SVD's workspace), which grows with
    the token count (up to ``d``: no factor has more than ``min(n - 1, d)`` rows)."""
    return n_pairs * BYTES_PER_PAIR + run.cache_bytes + run.threads * block_bytes(run, block_elems)


def require_memory(need: int, what: str, advice: str) -> None:
    """Raise :class:`InsufficientMemoryError` when ``need`` bytes exceed :func:`available_memory`."""
    free = available_memory()
    if free is not None and need > free:
        gib = 2.0**30
        raise InsufficientMemoryError(f"{what} would need about {need / gib:.1f} GiB, but only {free / gib:.1f} GiB "
                                      f"is available. {advice}")
