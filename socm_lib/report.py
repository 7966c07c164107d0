"""Plain-text reports below the presentation layer: fixed-precision numbers, summary lines, the device report
and the benchmark result files.

The command line, the GPU check and the course's checks use these; :mod:`socm_lib.viz` re-exports them for
the notebooks. Nothing here imports matplotlib, ipywidgets or pandas.
"""

from __future__ import annotations

import json
import platform
import urllib.request
from pathlib import Path

DIGITS = 4


def fmt(x, digits: int = DIGITS) -> str:
    """``x`` rounded to ``digits`` decimals, with ``-0.0000`` shown as ``0.0000``."""
    s = f"{float(x):.{digits}f}"
    return s[1:] if s.startswith("-") and float(s) == 0 else s


def summary_lines(summary: dict, digits: int = DIGITS) -> list[str]:
    """Lines ``name: value`` for a summary dict such as :meth:`PairResult.summary`."""
    return [f"{k}: {int(v) if k == 'pairs' else fmt(v, digits)}" for k, v in summary.items()]


def device_report() -> str:
    """Where the work runs: CPU threads, GPU name if any, library versions, the route of the CPU's nuclear norms
    (:func:`socm_lib.nuclear.kernel_report`); not for compared outputs."""
    import transformers

    import torch

    from .nuclear import kernel_report

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    return (
        f"python {platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}; "
        f"CPU threads: {torch.get_num_threads()}; GPU: {gpu}; {kernel_report()}"
    )


RESULT_NAMES = ("metric", "extraction", "scaling")
#: Where the committed results live on GitHub (used only when no local copy is found, e.g. in Colab).
RESULTS_URL = "https://raw.githubusercontent.com/socm-book/socm-book/main/benchmarks/results/{name}.json"


def load_results(folder=None, *, names=RESULT_NAMES, download: bool = False) -> dict[str, dict]:
    """The benchmark result files as ``{name: dict}``.

    ``folder`` defaults to the first of ``benchmarks/results`` and ``../benchmarks/results`` that exists.
    With ``download=True`` (for Colab, where the repository is not on disk) the committed files are
    fetched from GitHub when the folder does not hold them.
    """
    candidates = [Path(folder)] if folder is not None else [Path("benchmarks/results"), Path("../benchmarks/results")]
    base = next((p for p in candidates if p.is_dir()), None)
    out = {}
    for name in names:
        path = base / f"{name}.json" if base is not None else None
        if path is not None and path.exists():
            out[name] = json.loads(path.read_text(encoding="utf-8"))
        elif download:
            with urllib.request.urlopen(RESULTS_URL.format(name=name), timeout=30) as resp:
                out[name] = json.loads(resp.read().decode())
        else:
            where = ", ".join(str(p) for p in candidates)
            raise FileNotFoundError(
                f"Benchmark results '{name}.json' not found in {where} (seen from {Path.cwd()}). The notebooks expect "
                "the layout of the book's repository and of the student kit, notebooks/ beside benchmarks/results/: "
                "open the notebook from that notebooks/ folder (in the kit: jupyter lab notebooks/, as its README "
                "says). To measure the results anew, run `python benchmarks/run_all.py` in a clone of the "
                "repository; download=True reads the committed ones from GitHub."
            )
    return out
