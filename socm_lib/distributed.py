r"""The streamed summary on a Dask cluster: the same blocks, the same numbers (book, Chapter 6).

:func:`socm_lib.socm_summary` with ``client=`` (a ``distributed.Client``) runs here. The client plans the blocks as
the single process does (:meth:`socm_lib.block_runner.Engine.plan`), forms each bucket's data once
(:class:`socm_lib.factors.BucketData`: every text's factor, mean and trace) and scatters it to the cluster, with the
listed pairs and the tally's specification (:class:`socm_lib.tally.TallySpec`); a block of a sparse list takes the
data of its own texts along instead (:func:`socm_lib.block_plan.reads_buckets`); every block is then one task,
:func:`socm_lib.block_math.block_figures` on a worker, which sends back the block's tally
(:meth:`socm_lib.tally.TallySpec.of_block`), and the client merges the tallies as they finish, advancing the
progress bar by each block's pairs. A block's numbers depend only on its two buckets' data, and tallies merge exactly
in any order (:mod:`socm_lib.tally`), so the summary is the single process's, bit for bit, whatever the number of
workers and the order in which blocks finish: counts, sums, histograms, the median and the extreme pairs. (On
workers whose CPUs take other BLAS kernels than the client's, the last bits of a product may differ: then the
figures agree to round-off.)

At most :data:`TASKS_PER_THREAD` tasks per worker thread are submitted at a time, the next ones as these finish,
so the scheduler never holds the whole plan. A worker lost mid-run: Dask runs its tasks again elsewhere. Scattered
data has no recipe Dask could rerun, so a bucket (or the pairs, or the specification) whose only copy was on that
worker is scattered again from the client, and the tasks that needed it are submitted again, at most
:data:`RESUBMISSIONS` times each; the result is unchanged, since every block is computed from the same data.

``dask[distributed]`` is an optional dependency (``pip install socm-book[distributed]``): this module imports without
it, and :func:`require_client` says what to install when ``client=`` is given without it.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import torch

from .block_math import block_figures
from .block_plan import reads_buckets
from .block_runner import Engine, process_settings
from .config import config_context, get_config
from .factors import BucketData
from .tally import Tally, TallySpec

#: Tasks in flight per worker thread of the cluster (more keep the workers busy while results travel back).
TASKS_PER_THREAD = 4
#: How many times one block's task is submitted again after the data it needed was lost with a worker.
RESUBMISSIONS = 3
#: What to install for ``client=`` (said when it is missing).
INSTALL = ("pip install 'socm-book[distributed]' (or pip install 'dask[distributed]'), in the environment of the "
           "client and of every worker")


def require_client(client) -> None:
    """Refuse a ``client`` that is not a ``distributed.Client``, or any client where ``dask[distributed]`` is not
    installed, saying what to do."""
    try:
        import distributed
    except ImportError:
        raise ImportError(f"client= runs socm_summary on a Dask cluster, which needs dask[distributed]: {INSTALL}. "
                          "Without a client, socm_summary runs on this machine's cores.") from None
    if not isinstance(client, distributed.Client):
        raise TypeError(f"client must be a distributed.Client connected to a Dask cluster (or None for this "
                        f"machine's cores), got {type(client).__name__}.")


def _block_task(block, A: BucketData, B: BucketData, pairs, n_texts: int, use_torch: bool, dtype: torch.dtype,
                spec: TallySpec, settings: dict) -> Tally:
    """On a worker: the tally of one block, under the settings of the call (:mod:`socm_lib.config`) and with the
    process-wide settings a run needs (:func:`socm_lib.block_runner.process_settings`). It travels back without
    ``spec``, which the client's tally holds (its fine edges alone are 8 MiB)."""
    from distributed import get_worker

    with config_context(**settings), process_settings(use_torch, dtype, get_worker().state.nthreads):
        return replace(spec.of_block(*block_figures(block, A, B, pairs, n_texts, use_torch)), spec=None)


class _Scattered:
    """The run's data on the cluster (futures of scattered objects), scattered again when a worker took the only
    copy with it."""

    def __init__(self, client, engine: Engine, pairs: np.ndarray | None, spec: TallySpec):
        self.client = client
        self.make = {("bucket", B.index): (lambda B=B: engine.cache.form(B)) for B in engine.buckets}
        self.make["pairs"], self.make["spec"] = (lambda: pairs), (lambda: spec)
        self.futures = {}

    def __getitem__(self, name):
        future = self.futures.get(name)
        for attempt in range(RESUBMISSIONS + 1):
            if future is not None and future.status == "finished":
                return future
            try:
                future = self.futures[name] = self.client.scatter(self.make[name](), hash=False)
            except OSError:  # the worker it went to left the cluster during the transfer: to another one
                if attempt == RESUBMISSIONS:
                    raise
        return future

    def release(self) -> None:
        self.client.cancel(list(self.futures.values()))
        self.futures.clear()


def run_on_cluster(client, engine: Engine, pairs: np.ndarray | None, block_elems: int, tally: Tally, bar) -> None:
    """Every block of ``engine``'s plan of ``pairs`` (``None``: all ``i < j``) as a task on ``client``'s cluster, each
    block's tally merged into ``tally`` as it finishes and ``bar`` advanced by its pairs (module docstring)."""
    from distributed import as_completed

    if engine.device.type != "cpu":
        raise ValueError(f"socm_summary(client=...) computes on the workers' CPUs, but device is "
                         f"{str(engine.device)!r}; pass device='cpu' (or leave it None).")
    blocks = engine.plan(pairs, block_elems)
    data = _Scattered(client, engine, pairs, tally.spec)
    settings, n_texts, dtype = get_config(), engine.n_texts, engine.cache.dtype
    block_of, tries = {}, [0] * len(blocks)

    def submit(k: int):
        block = blocks[k]
        A, B = (data[("bucket", block.a)], data[("bucket", block.b)]) if reads_buckets(block) else \
            engine.block_data(block, pairs)  # a sparse list's block takes its own texts' data along
        future = client.submit(_block_task, block, A, B, None if pairs is None else data["pairs"], n_texts,
                               engine.use_torch, dtype, data["spec"], settings, pure=False)
        block_of[future.key] = k
        return future

    waiting = iter(range(len(blocks)))
    in_flight = TASKS_PER_THREAD * max(sum(client.nthreads().values()), 1)
    # results come back in the background (with_results): the caller only submits and merges
    running = as_completed([submit(k) for k in itertools.islice(waiting, in_flight)], loop=client.loop,
                           with_results=True, raise_errors=False)
    try:
        for future, done in running:
            k = block_of.pop(future.key)
            if future.status == "error":
                future.result()  # raises the task's error (Dask has already run it again where a worker died)
            if isinstance(done, Tally):
                tally.merge(done)
                bar.update(done.n)
                k = next(waiting, None)
            elif tries[k] < RESUBMISSIONS:  # cancelled: the data it needed went with a worker
                tries[k] += 1  # the same block again, its data scattered again where it was lost
            else:
                raise RuntimeError(f"block {k} of the plan lost its data {tries[k] + 1} times: workers keep leaving "
                                   "the cluster; check its logs.")
            if k is not None:
                running.add(submit(k))
    finally:
        client.cancel(list(running.futures))
        data.release()
