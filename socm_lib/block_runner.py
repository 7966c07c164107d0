r"""The engine: prepared clouds, and the runner that computes their blocks and hands them on (book, Chapter 6).

:func:`_engine` validates the engine's options and prepares the clouds (:mod:`socm_lib.factors`);
:func:`_run_blocks` computes every block that :mod:`socm_lib.block_plan` plans (:mod:`socm_lib.block_math`) and gives
each block's pairs to a consumer, then drops them: :func:`socm_lib.socm_pairs` writes them into its result arrays,
:func:`socm_lib.socm_summary` folds them into running sums, histograms and top-k lists, in memory bounded by the
block size. On the CPU every core takes whole blocks, so the products of one block overlap the SVDs of another; on a
GPU the blocks run one after another as batched calls.

Precision. On a GPU, float64 (the default) is exact to round-off, like the CPU; float32 is much faster and good to
about 1e-6 relative. TF32 (10-bit mantissas in float32 products, allowed by
``torch.backends.cuda.matmul.allow_tf32``) is switched off while float32 products run, so it can never silently cost
precision.

Process-wide settings. Two of the engine's needs are settings of the whole process: its CPU workers want a
single-threaded BLAS each (:data:`SINGLE_THREADED_BLAS`), and float32 products on the torch path want TF32 off and
torch's float32 matmul precision at ``"highest"`` (:data:`FULL_PRECISION_MATMUL`). Neither BLAS nor torch offers
them per call or per thread, so each is a :class:`_SharedSetting`: under one lock, the first run that needs it saves
the process's value and changes it, runs that start meanwhile find it changed, and the last run to finish restores
the saved value. Concurrent calls, in any number of threads, therefore leave the process as they found it (a save
and restore per call would not: a second call would save the first one's change and put it back after the first had
restored the user's value). A run changes nothing it does not need: a run with one worker leaves BLAS alone, and a
float64 run (whose products never use TF32) or a numpy-path run leaves torch's settings alone.
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from .block_plan import _all_pair_blocks, _listed_pair_blocks
from .checks import as_bool, as_device, as_dtype, as_number
from .factors import _Bucket, _Factors, _prepare

#: The engine's backends: ``"auto"`` (numpy on the CPU, torch on a GPU), ``"numpy"`` or ``"torch"`` (any device).
BACKENDS = ("auto", "numpy", "torch")


class _SharedSetting:
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
FULL_PRECISION_MATMUL = _SharedSetting(_full_precision_matmul_on, _full_precision_matmul_off)
#: One BLAS thread, while the numpy path's workers run (each takes whole blocks on its own core).
SINGLE_THREADED_BLAS = _SharedSetting(lambda: threadpool_limits(1, user_api="blas"),
                                      lambda limiter: limiter.restore_original_limits())


@dataclass
class _Engine:
    """Prepared clouds (:func:`socm_lib.factors._prepare`) and how to run their blocks."""

    means: np.ndarray  # (N, d) normalised means, float64
    traces: np.ndarray  # (N,) tr Sigma, float64
    buckets: list[_Bucket]
    factors: _Factors  # the buckets' padded factors, formed when a block needs them
    device: torch.device
    use_torch: bool  # the batched-torch path (every GPU run; on the CPU when backend="torch")

    @property
    def threads(self) -> int:
        """Worker threads: one per core on the numpy path, one (blocks in turn, batched calls) on the torch path."""
        return 1 if self.use_torch else torch.get_num_threads()


def _engine(clouds, *, normalize: bool, device, dtype, backend: str, bucket_tolerance: float) -> _Engine:
    """Validate the engine's options, then prepare the clouds."""
    device, dtype = as_device(device), as_dtype(dtype)
    normalize, bucket_tolerance = as_bool(normalize, "normalize"), as_number(bucket_tolerance, "bucket_tolerance")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {backend!r}: 'auto' takes "
                         "numpy on the CPU and torch on a GPU.")
    if backend == "numpy" and device.type != "cpu":
        raise ValueError(f"backend='numpy' runs on the CPU only, but device is {str(device)!r}; "
                         "use backend='auto' or 'torch' there.")
    use_torch = backend == "torch" or device.type != "cpu"
    means, traces, buckets, compact = _prepare(clouds, normalize, bucket_tolerance)
    return _Engine(means, traces, buckets, _Factors(compact, normalize, device, dtype), device, use_torch)


def _run_blocks(engine: _Engine, pairs: np.ndarray | None, block_elems: int, consume, bar) -> None:
    """Compute every pair (``pairs=None``: all ``i < j``) block by block and hand each block to ``consume``.

    ``consume(positions, i, j, d_mu, d_sigma, socm)`` receives one block's pairs (``positions`` index
    them in ``pairs``, or in the order of :func:`socm_lib.block_plan.all_pairs`); calls never overlap, and nothing of a
    block is kept once it returns, so memory is bounded by the block size, not by the number of pairs.

    On the numpy path the blocks run in one thread per core, in the order of
    :func:`socm_lib.block_plan._visit_key`, each with a
    single-threaded BLAS: numpy's matrix products and LAPACK calls release the GIL, so while one core
    multiplies, another takes SVDs, and no core waits for a shared step to finish. On the torch path
    (every GPU run) the blocks run one after another, each as batched calls.
    """
    if pairs is None:
        blocks = _all_pair_blocks(engine.buckets, engine.factors, engine.means, block_elems, engine.use_torch)
    else:
        blocks = _listed_pair_blocks(engine.buckets, engine.factors, engine.means, pairs, block_elems,
                                     engine.use_torch)
    blocks = [block for _, block in sorted(blocks, key=lambda item: item[0])]  # stable: a pair's blocks in turn
    lock = threading.Lock()
    traces = engine.traces

    def run(block) -> int:
        positions, i, j, nuclear, d_mu = block()
        d_sigma = np.maximum(traces[i] + traces[j] - 2.0 * nuclear, 0.0) / 4.0
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below
            socm_ = (1.0 - d_mu) * d_sigma
        _require_finite(socm_, lambda k: (f"clouds[{i[k]}]", f"clouds[{j[k]}]"))
        with lock:
            consume(positions, i, j, d_mu, d_sigma, socm_)
        return len(positions)

    threads = min(engine.threads, len(blocks))
    if threads <= 1:
        float32 = engine.use_torch and engine.factors.dtype == torch.float32
        with FULL_PRECISION_MATMUL.held() if float32 else contextlib.nullcontext():
            for block in blocks:
                bar.update(run(block))
        return
    with SINGLE_THREADED_BLAS.held(), ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(run, block) for block in blocks]
        try:
            for done in as_completed(futures):
                bar.update(done.result())
        except BaseException:
            for f in futures:
                f.cancel()
            raise


def _require_finite(socm_: np.ndarray, names) -> None:
    """Refuse a non-finite SOCM, naming the two clouds (``names(k)``) of the first pair ``k`` that has one."""
    bad = np.flatnonzero(~np.isfinite(socm_))
    if len(bad):
        a, b = names(bad[0])
        raise ValueError(f"The pair ({a}, {b}) gives a non-finite SOCM: its clouds are too large for normalize=False "
                         "(d_mu or d_sigma overflows float64). Pass normalize=True (SOCM is then scale-free), or "
                         "rescale the clouds.")
