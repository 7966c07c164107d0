r"""The engine: prepared clouds, and the runner that computes their blocks and hands them on (book, Chapter 6).

:func:`prepare_engine` validates the engine's options and prepares the clouds (:mod:`socm_lib.factors`) into an
:class:`Engine`; :func:`run_blocks` computes every block of its plan (:meth:`Engine.plan`, :mod:`socm_lib.block_plan`)
with :func:`socm_lib.block_math.block_figures` and gives each block's pairs to a consumer, then drops them:
:func:`socm_lib.socm_pairs` writes them into its result arrays, :func:`socm_lib.socm_summary` folds them into a
tally (:mod:`socm_lib.tally`), in memory bounded by the block size. On the CPU every core takes whole blocks, so the
products of one block overlap the SVDs of another; on a GPU the blocks run one after another as batched calls.
:mod:`socm_lib.distributed` runs the same plan's blocks on a Dask cluster instead.

Precision. On a GPU, float64 (the default) is exact to round-off, like the CPU; float32 is much faster and good to
about 1e-6 relative. TF32 (10-bit mantissas in float32 products, allowed by
``torch.backends.cuda.matmul.allow_tf32``) is switched off while float32 products run, so it can never silently cost
precision.

Process-wide settings. Two of the engine's needs are settings of the whole process: its CPU workers want a
single-threaded BLAS each (:data:`SINGLE_THREADED_BLAS`), and float32 products on the torch path want TF32 off and
torch's float32 matmul precision at ``"highest"`` (:data:`FULL_PRECISION_MATMUL`). Neither BLAS nor torch offers
them per call or per thread, so each is a :class:`SharedSetting`: under one lock, the first run that needs it saves
the process's value and changes it, runs that start meanwhile find it changed, and the last run to finish restores
the saved value. Concurrent calls, in any number of threads, therefore leave the process as they found it (a save
and restore per call would not: a second call would save the first one's change and put it back after the first had
restored the user's value). A run changes nothing it does not need: a run with one worker leaves BLAS alone, and a
float64 run (whose products never use TF32) or a numpy-path run leaves torch's settings alone
(:func:`process_settings`). The library's own settings (the route of the nuclear norms, the torch path's solver,
progress bars) are not process-wide: they belong to the caller's context (:mod:`socm_lib.config`), and each worker
thread runs its blocks in a copy of it.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from .block_math import block_figures
from .block_plan import Block, own_texts, plan_blocks, reads_buckets
from .checks import as_bool, as_device, as_dtype, as_number
from .factors import BucketData, FactorCache, Prepared, prepare
from .memory import Footprint
from .nuclear import kernel

#: The engine's backends: ``"auto"`` (numpy on the CPU, torch on a GPU), ``"numpy"`` or ``"torch"`` (any device).
BACKENDS = ("auto", "numpy", "torch")


class SharedSetting:
    """A process-wide setting held by every engine run that needs it: the first run in saves the process's value and
    sets the engine's (``apply()`` returns what ``restore(saved)`` puts back), the last run out restores it, both
    under one lock, so that runs overlapping in any order leave the value they found (module docstring)."""

    def __init__(self, apply, restore):
        self._apply, self._restore = apply, restore
        self._lock = threading.Lock()
        self._holders = 0
        self._saved = None

    @contextlib.contextmanager
    def held(self):
        """The engine's value while the ``with`` block runs (and while any other run holds it)."""
        with self._lock:
            if self._holders == 0:
                self._saved = self._apply()
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if self._holders == 0:
                    self._restore(self._saved)
                    self._saved = None


def _full_precision_matmul_on():
    """Float32 products at full float32 precision; returns the settings it replaced.

    ``torch.backends.cuda.matmul.allow_tf32 = True`` (or ``set_float32_matmul_precision("high")``) lets a GPU
    multiply float32 matrices with 10-bit mantissas (TF32), about 1e-3 relative error, silently.
    """
    saved = torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    return saved


def _full_precision_matmul_off(saved) -> None:
    """Put back the settings :func:`_full_precision_matmul_on` replaced."""
    torch.backends.cuda.matmul.allow_tf32, precision = saved
    torch.set_float32_matmul_precision(precision)


#: TF32 off and the float32 matmul precision at ``"highest"``, while float32 products run on the torch path.
FULL_PRECISION_MATMUL = SharedSetting(_full_precision_matmul_on, _full_precision_matmul_off)
#: One BLAS thread, while the numpy path's workers run (each takes whole blocks on its own core).
SINGLE_THREADED_BLAS = SharedSetting(lambda: threadpool_limits(1, user_api="blas"),
                                     lambda limiter: limiter.restore_original_limits())


@contextlib.contextmanager
def process_settings(use_torch: bool, dtype: torch.dtype, workers: int):
    """Hold what a run of ``workers`` block-computing threads needs of the process while the ``with`` block runs:
    one BLAS thread each when there are several (:data:`SINGLE_THREADED_BLAS`), full float32 precision when float32
    products run on the torch path (:data:`FULL_PRECISION_MATMUL`); nothing else."""
    with contextlib.ExitStack() as stack:
        if workers > 1:
            stack.enter_context(SINGLE_THREADED_BLAS.held())
        if use_torch and dtype == torch.float32:
            stack.enter_context(FULL_PRECISION_MATMUL.held())
        yield


@dataclass
class Engine:
    """Prepared clouds (:func:`socm_lib.factors.prepare`), their bucket data and how to run their blocks."""

    prepared: Prepared
    cache: FactorCache  # each bucket's data, formed when a block needs it
    device: torch.device
    use_torch: bool  # the batched-torch path (every GPU run; on the CPU when backend="torch")

    @property
    def n_texts(self) -> int:
        """The number of texts ``N``."""
        return len(self.prepared.clouds)

    @functools.cached_property
    def means(self) -> np.ndarray:
        """``(N, d)`` normalised means, float64 (formed on first use)."""
        return self.prepared.means()

    @property
    def traces(self) -> np.ndarray:
        """``(N,)`` traces tr Sigma, float64."""
        return self.prepared.traces

    @property
    def buckets(self) -> list:
        """The length buckets, shortest texts first."""
        return self.prepared.buckets

    @property
    def threads(self) -> int:
        """Worker threads: one per core on the numpy path, one (blocks in turn, batched calls) on the torch path."""
        return 1 if self.use_torch else torch.get_num_threads()

    def bucket(self, index: int) -> BucketData:
        """The data of bucket ``index`` (from the cache)."""
        return self.cache(self.buckets[index])

    def block_data(self, block: Block, pairs: np.ndarray | None) -> tuple[BucketData, BucketData]:
        """The data of ``block``'s two buckets: from the cache, or, for a block of a sparse list (``own_texts``),
        formed for the texts it reads alone (:func:`socm_lib.block_plan.own_texts`; ``pairs``: the listed pairs)."""
        if reads_buckets(block):
            return self.bucket(block.a), self.bucket(block.b)
        first, second = own_texts(block, pairs)
        A, B = self.buckets[block.a], self.buckets[block.b]
        if block.a == block.b:
            data = self.cache.form(A, np.union1d(first, second))
            return data, data
        return self.cache.form(A, first), self.cache.form(B, second)

    def plan(self, pairs: np.ndarray | None, block_elems: int) -> list[Block]:
        """The blocks of ``pairs`` (``None``: all ``i < j``), in the order that serves the cache best."""
        cache = self.cache
        return plan_blocks(self.buckets, pairs, block_elems, d=cache.d,
                           bucket_bytes=[cache.nbytes(B) for B in self.buckets], tile_bytes=cache.capacity // 2)

    def footprint(self) -> Footprint:
        """The numbers that decide a run's memory (:func:`socm_lib.memory.memory_estimate`)."""
        buckets, cache = self.buckets, self.cache
        return Footprint(d=cache.d, itemsize=cache.itemsize, rows=max(B.rows for B in buckets),
                         widest=max(len(B.members) * B.rows for B in buckets),
                         tokens=max(x.shape[0] for x in self.prepared.clouds),
                         cache_bytes=min(cache.capacity, sum(cache.nbytes(B) for B in buckets)),
                         threads=self.threads, use_torch=self.use_torch)


def prepare_engine(clouds, *, normalize: bool, device, dtype, backend: str, bucket_tolerance: float,
                   name=lambda k: f"clouds[{k}]") -> Engine:
    """Validate the engine's options and the route of the nuclear norms, then prepare the clouds (a cloud the engine
    refuses is named by ``name(k)``)."""
    device, dtype = as_device(device), as_dtype(dtype)
    normalize, bucket_tolerance = as_bool(normalize, "normalize"), as_number(bucket_tolerance, "bucket_tolerance")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {backend!r}: 'auto' takes "
                         "numpy on the CPU and torch on a GPU.")
    if backend == "numpy" and device.type != "cpu":
        raise ValueError(f"backend='numpy' runs on the CPU only, but device is {str(device)!r}; "
                         "use backend='auto' or 'torch' there.")
    use_torch = backend == "torch" or device.type != "cpu"
    if not use_torch:
        kernel()  # a route of the nuclear norms this machine cannot take is refused before any work
    prepared = prepare(clouds, normalize, bucket_tolerance, name)
    return Engine(prepared, FactorCache(prepared, normalize, device, dtype), device, use_torch)


def run_blocks(engine: Engine, pairs: np.ndarray | None, block_elems: int, consume, bar) -> None:
    """Compute every pair (``pairs=None``: all ``i < j``) block by block and hand each block to ``consume``.

    ``consume(positions, i, j, d_mu, d_sigma, socm)`` receives one block's pairs (``positions`` index
    them in ``pairs``, or in the order of :func:`socm_lib.block_plan.all_pairs`); calls never overlap, and nothing of a
    block is kept once it returns, so memory is bounded by the block size, not by the number of pairs. ``bar``
    (a tqdm bar) is advanced by each block's pairs.

    On the numpy path the blocks run in one thread per core, in the order of the plan, each with a
    single-threaded BLAS: numpy's matrix products and LAPACK calls release the GIL, so while one core
    multiplies, another takes SVDs, and no core waits for a shared step to finish. On the torch path
    (every GPU run) the blocks run one after another, each as batched calls. Every block runs in a copy of the
    caller's context, under its settings (:mod:`socm_lib.config`).
    """
    blocks = engine.plan(pairs, block_elems)
    lock = threading.Lock()

    def run(block: Block) -> int:
        figures = block_figures(block, *engine.block_data(block, pairs), pairs, engine.n_texts, engine.use_torch)
        with lock:
            consume(*figures)
        return len(figures[0])

    threads = min(engine.threads, len(blocks))
    with process_settings(engine.use_torch, engine.cache.dtype, threads):
        if threads <= 1:
            for block in blocks:
                bar.update(run(block))
            return
        with ThreadPoolExecutor(threads) as pool:
            futures = [pool.submit(contextvars.copy_context().run, run, block) for block in blocks]
            try:
                for done in as_completed(futures):
                    bar.update(done.result())
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
