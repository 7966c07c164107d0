"""Rehearse the Colab runs of notebooks 4, 5 and 6 here, with stand-in checkpoints of ``bert`` and ``gte``.

Usage: python scripts/rehearse.py [--n-texts 30] [--out DIR] [--record notebooks/rehearsal.json]

Stand-in weights: checks the code path, not the science. The script writes a temporary Hugging Face cache
holding random-weight checkpoints with the published architectures of BERT-base and GTE-base
(``tests/standins.py``), points the kernels at it (``HF_HUB_CACHE``, ``HF_HUB_OFFLINE=1``), and executes
temporary copies of the notebooks (the committed ones and notebook 4's committed results are never
touched) with their ``parameters`` set to
``"bert"``/``"gte"`` and a small text count: a cell that sets ENCODER_A, ENCODER_B, ENCODERS, N_TEXTS and
RUN_WIKI (whichever the ``parameters`` cell defines) is inserted after it. Each executed copy must run without
error and show its figures (PNG), tables (HTML) and, in notebook 4, the widget.

Wall time, CPU time and peak memory (RSS) of each notebook's kernel process tree go to the record (one run of
each notebook), with a projection of the paper's full protocol (1,000 texts, 499,500 pairs) on this CPU:
extraction is timed per text and scales linearly in texts; SOCM is timed per pair (on the extracted clouds
repeated to 400 texts, 79,800 pairs, so that token counts stay realistic and the call's fixed cost is spread) and
scales linearly in pairs, i.e. quadratically in texts. Both parts are warmed up, then timed in
:data:`PROJECTION_RUNS` runs each; the projection is quoted as the median of the runs' projections with the
fastest and the slowest, beside the load of the machine (1-minute load average before, and the cores other
processes kept busy while it was timed). The book's status and teaching pages show the record (``make rehearse``
re-executes the status page).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from socm_lib.checks import write_text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # standins.py

NOTEBOOKS = ("nb04_*.ipynb", "nb05_*.ipynb", "nb06_*.ipynb")
ENCODERS = ("bert", "gte")
NOTE = "stand-in weights: checks the code path, not the science"
# what each notebook must show once executed: (kind of output, at least how many)
EXPECTED = {"nb04": {"widgets": 1, "images": 1, "tables": 1}, "nb05": {"images": 1, "tables": 1},
            "nb06": {"images": 1, "tables": 1}}
#: Timed runs of each part of the projection, after an untimed warm-up of each.
PROJECTION_RUNS = 3


def parameters(n_texts: int, out_dir: Path) -> dict:
    """The values the rehearsal gives to the notebooks' parameters (each notebook gets those it defines).

    ``EXPLORER`` (notebook 4's folder of results files) points into ``out_dir``: the committed results in
    ``notebooks/explorer/`` are never touched, and the stand-ins' results never join them.
    """
    return {"ENCODER_A": ENCODERS[0], "ENCODER_B": ENCODERS[1], "ENCODERS": list(ENCODERS), "N_TEXTS": n_texts,
            "RUN_WIKI": False, "EXPLORER": str(Path(out_dir).resolve() / "explorer")}


def inject(nb, values: dict):
    """Insert, after the cell tagged ``parameters``, a cell that overrides the parameters it defines."""
    index = [i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
    if len(index) != 1:
        raise ValueError(f"expected one cell tagged 'parameters', found {len(index)}")
    defined = set(re.findall(r"^([A-Za-z_]\w*)\s*=", nb.cells[index[0]].source, flags=re.M))
    chosen = {k: v for k, v in values.items() if k in defined}
    if not chosen.keys() & {"ENCODER_A", "ENCODER_B", "ENCODERS"}:
        raise ValueError(f"the parameters cell defines none of ENCODER_A, ENCODER_B, ENCODERS: {sorted(defined)}")
    import nbformat

    lines = ["# Injected by scripts/rehearse.py", *(f"{k} = {v!r}" for k, v in chosen.items()),
             f"print('Rehearsal with stand-in checkpoints of {', '.join(ENCODERS)}: {NOTE}.')"]
    cell = nbformat.v4.new_code_cell("\n".join(lines), metadata={"tags": ["injected-parameters"]})
    nb.cells.insert(index[0] + 1, cell)
    return chosen


def output_counts(nb) -> dict:
    """Errors, PNG images, HTML tables and widget views among an executed notebook's outputs."""
    counts = {"errors": 0, "images": 0, "tables": 0, "widgets": 0, "note": 0}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            counts["errors"] += out.get("output_type") == "error"
            counts["images"] += "image/png" in data
            counts["tables"] += "<table" in str(data.get("text/html", ""))
            counts["widgets"] += "application/vnd.jupyter.widget-view+json" in data
            counts["note"] += NOTE in str(out.get("text", ""))
    return counts


class KernelUsage:
    """Peak resident memory and CPU time of this process's children (the kernel and what it starts), polled.

    CPU time (user + system) does not grow when other work shares the machine, unlike wall time.
    """

    def __init__(self, interval: float = 0.1):
        import psutil

        self._me, self._interval, self.peak = psutil.Process(), interval, 0
        self._cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    @property
    def cpu_seconds(self) -> float:
        return sum(self._cpu.values())

    def _poll(self):
        import psutil

        while not self._stop.is_set():
            total = 0
            for child in self._me.children(recursive=True):
                try:
                    total += child.memory_info().rss
                    t = child.cpu_times()
                    self._cpu[child.pid] = t.user + t.system
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)
            self._stop.wait(self._interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def execute(path: Path, out_dir: Path, values: dict) -> dict:
    """Execute a copy of ``path`` with the rehearsal's parameters; write it to ``out_dir``; time and measure it."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    chosen = inject(nb, values)
    start = time.perf_counter()
    with KernelUsage() as usage:
        try:
            NotebookClient(nb, timeout=1800, kernel_name="python3", store_widget_state=True,
                           resources={"metadata": {"path": str(path.parent)}}).execute()
        finally:
            nbformat.write(nb, out_dir / path.name)
    seconds = time.perf_counter() - start
    counts = output_counts(nb)
    expected = EXPECTED.get(path.name[:4], {})
    missing = {k: v for k, v in expected.items() if counts[k] < v}
    if counts["errors"] or missing or not counts["note"]:
        raise RuntimeError(f"{path.name}: the rehearsal's copy {out_dir / path.name} has {counts['errors']} errors; "
                           f"too few outputs: {missing or 'none'}; stand-in note shown: {bool(counts['note'])}")
    return {"seconds": round(seconds, 1), "cpu_seconds": round(usage.cpu_seconds, 1),
            "peak_rss_mib": round(usage.peak / 2**20), "parameters": chosen,
            "outputs": {k: counts[k] for k in ("images", "tables", "widgets")}}


def projection(n_texts: int = 30, tile_to: int = 400, runs: int = PROJECTION_RUNS) -> dict:
    """Time extraction per text and SOCM per pair with the ``bert`` stand-in, warm and repeated; project the protocol.

    The first call of each part in a process pays for thread pools and lazy initialisation, so each part is called
    once untimed, then timed ``runs`` times: the extraction of ``n_texts`` texts, and ``socm_pairs`` on the clouds
    repeated to ``tile_to`` texts. Run ``k`` projects the 1,000-text protocol from its two parts' times; the record
    keeps every run, and the median, fastest and slowest projections, with the load of the machine: the 1-minute
    load average before, and the cores other processes kept busy while the runs were timed.
    """
    import torch

    import socm_lib

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import common  # the benchmarks' measure of other processes' load

    enc = socm_lib.load_encoder(ENCODERS[0], device="cpu")
    texts = socm_lib.sample_texts(socm_lib.corpus()["text"], n_texts, 0)
    load_before = round(os.getloadavg()[0], 2)
    start = common.cpu_seconds()
    socm_lib.token_embeddings(enc, texts, progress=False, cache=False)  # warm-up, untimed
    per_text, cpu_per_text = [], []
    for _ in range(runs):
        t, cpu = time.perf_counter(), time.process_time()
        clouds = socm_lib.token_embeddings(enc, texts, progress=False, cache=False)  # timed: no cached answer
        per_text.append((time.perf_counter() - t) / n_texts)
        cpu_per_text.append((time.process_time() - cpu) / n_texts)
    tiled = [clouds[k % n_texts] for k in range(tile_to)]
    pairs = tile_to * (tile_to - 1) // 2
    socm_lib.socm_pairs(tiled[: min(60, tile_to)], device="cpu", progress=False)  # warm-up, untimed
    per_pair, cpu_per_pair = [], []
    for _ in range(runs):
        t, cpu = time.perf_counter(), time.process_time()
        socm_lib.socm_pairs(tiled, device="cpu", progress=False)
        per_pair.append((time.perf_counter() - t) / pairs)
        cpu_per_pair.append((time.process_time() - cpu) / pairs)
    other = common.other_processes(since=start)
    protocol = [1000 * a + 499_500 * b for a, b in zip(per_text, per_pair)]
    protocol_cpu = [1000 * a + 499_500 * b for a, b in zip(cpu_per_text, cpu_per_pair)]
    median = statistics.median(protocol)
    return {
        "model": "extraction linear in texts (timed on the texts), SOCM linear in pairs (timed on the clouds "
                 f"repeated to {tile_to} texts, {pairs:,} pairs); protocol = 1,000 texts, 499,500 pairs, one encoder, "
                 f"CPU; each part warmed up, then timed in {runs} runs, run k projecting from both parts' run k",
        "encoder": enc.label, "d": enc.dim, "layers": enc.num_layers, "torch_threads": torch.get_num_threads(),
        "runs": runs, "pairs_timed": pairs,
        "extraction_ms_per_text": round(1e3 * statistics.median(per_text), 2),
        "extraction_ms_per_text_runs": [round(1e3 * x, 2) for x in per_text],
        "socm_us_per_pair": round(1e6 * statistics.median(per_pair), 2),
        "socm_us_per_pair_runs": [round(1e6 * x, 2) for x in per_pair],
        "protocol_extraction_s": round(1000 * statistics.median(per_text), 1),
        "protocol_pairs_s": round(499_500 * statistics.median(per_pair), 1),
        "protocol_s": round(median, 1), "protocol_runs_s": [round(x, 1) for x in protocol],
        # CPU time (all threads) of the same parts: what the protocol costs whatever else runs on the machine
        "protocol_cpu_s": round(statistics.median(protocol_cpu), 1),
        "nb05_full_s": round(4 * median, 1),  # two encoders, book corpus and Wikipedia sentences: 4 protocols
        "load_average_1min_before": load_before, "other_processes": other,
    }


def machine() -> dict:
    import psutil

    return {"platform": platform.platform(), "processor": platform.machine(), "cpus": os.cpu_count(),
            "memory_gib": round(psutil.virtual_memory().total / 2**30, 1), "python": platform.python_version(),
            "load_average_1min": round(os.getloadavg()[0], 1)}  # other work on the machine slows every timing


def rehearse(out_dir: Path, n_texts: int = 30, with_projection: bool = True) -> dict:
    """Execute the rehearsal copies into ``out_dir`` (the stand-in cache must already be in the environment)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    values = parameters(n_texts, out_dir)
    record = {"date": datetime.date.today().isoformat(), "machine": machine(), "note": NOTE,
              "encoders": list(ENCODERS), "n_texts": n_texts, "notebooks": {}}
    for pattern in NOTEBOOKS:
        for path in sorted((ROOT / "notebooks").glob(pattern)):
            name = str(path.relative_to(ROOT))
            record["notebooks"][name] = execute(path, out_dir, values)
            entry = record["notebooks"][name]
            print(f"{name}: {entry['seconds']:.0f} s wall, {entry['cpu_seconds']:.0f} s CPU, "
                  f"peak {entry['peak_rss_mib']} MiB", flush=True)
    if len(record["notebooks"]) != len(NOTEBOOKS):
        raise RuntimeError(f"expected one notebook for each of {NOTEBOOKS}, found {list(record['notebooks'])}")
    if with_projection:
        record["projection"] = projection(n_texts)
    record["machine"]["load_average_1min_end"] = round(os.getloadavg()[0], 1)
    return record


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-texts", type=int, default=30)
    parser.add_argument("--out", default=None, help="folder for the executed copies (default: a temporary one)")
    parser.add_argument("--record", default=str(ROOT / "notebooks" / "rehearsal.json"))
    parser.add_argument("--no-status", action="store_true", help="do not re-execute book/status.ipynb")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="socm-rehearsal-") as tmp:
        import standins

        os.environ.update(standins.cache_env(Path(tmp) / "hf"))  # before huggingface_hub is imported
        if "huggingface_hub" in sys.modules:
            raise RuntimeError("huggingface_hub was imported before the stand-in cache was set")
        standins.write_cache(Path(tmp) / "hf", names=ENCODERS)
        os.environ.pop("MPLBACKEND", None)  # kernels must use their inline backend, or figures go missing
        out = Path(args.out) if args.out else Path(tmp) / "executed"
        record = rehearse(out, args.n_texts)
    write_text(args.record, json.dumps(record, indent=2) + "\n", "--record")
    print(f"wrote {args.record}")
    status = ROOT / "book" / "status.ipynb"
    if not args.no_status and Path(args.record).resolve() == (ROOT / "notebooks" / "rehearsal.json").resolve():
        sys.path.insert(0, str(ROOT / "scripts"))
        from run_notebooks import run

        run(status)
    return 0


if __name__ == "__main__":
    sys.exit(main())
