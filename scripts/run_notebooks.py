"""Execute every notebook top to bottom in a fresh kernel and save it in place, widget state included.

Usage: python scripts/run_notebooks.py [notebooks/nb01_socm_by_hand.ipynb ...]
The committed outputs are what nbval re-checks in CI and what the book shows.
"""

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def run(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(
        nb, timeout=1800, kernel_name="python3", store_widget_state=True,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    nbformat.write(nb, path)
    print(f"{path.relative_to(ROOT)}: {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    paths = [Path(p).resolve() for p in sys.argv[1:]] or sorted((ROOT / "notebooks").glob("nb*.ipynb"))
    for p in paths:
        run(p)
