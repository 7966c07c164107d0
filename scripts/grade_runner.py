"""Run a prepared submission's cells in a Jupyter kernel, inside the grading sandbox (scripts/sandbox.py), and write
what the grader needs to a file of the submission's folder.

    python grade_runner.py NOTEBOOK RESULT --cell-timeout SECONDS --report-cells 1,4 --mark SOCM-ANSWER

This is process 1 of the sandbox: the kernel and the notebook client talk over the sandbox's own loopback, and
when this process ends every process of the submission ends with it. Of each cell's outputs it keeps only what
grading reads, so that no output, however large, fills its memory: the first error (class and message, cut
short), and in the reporting cells the lines that start with the mark. After every cell it rewrites ``RESULT``
(JSON), so that a run cut short still tells how far it came, and the kernel's peak resident memory so far:

    {"cells": 12, "done": 7, "running": 7, "peak_mb": 1210, "lines": {"4": ["SOCM-ANSWER nb01.1 0.1464"]},
     "errors": [[3, "ValueError", "..."]], "stop": {"reason": "cell timeout" | "kernel died" | "runner failed",
     "cell": 7, "exit": -24, "detail": "..."} or null}

The grader reads this file as untrusted input: the submission's own code can write to it too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

MAX_LINE = 4_000_000  # characters of one kept line
MAX_LINES = 20  # kept lines per reporting cell
MAX_ERRORS = 100
MAX_MESSAGE = 300  # characters of an error's message


class Runner(NotebookClient):
    """A notebook client that keeps, of the outputs, only the first error of each cell and the marked lines of the
    reporting cells."""

    def __init__(self, nb, report_cells: set[int], mark: str, **kwargs):
        super().__init__(nb, **kwargs)
        self.report_cells, self.mark = report_cells, mark
        self.lines: dict[int, list[str]] = {}
        self.errors: list[list] = []
        self.partial: dict[int, str] = {}  # each reporting cell's last line, not yet ended

    def output(self, outs, msg, display_id, cell_index):
        kind, content = msg["msg_type"], msg.get("content", {})
        if kind == "error" and len(self.errors) < MAX_ERRORS and not any(e[0] == cell_index for e in self.errors):
            self.errors.append([cell_index, str(content.get("ename", ""))[:100],
                                str(content.get("evalue", ""))[:MAX_MESSAGE]])
        elif kind == "stream" and content.get("name") == "stdout" and cell_index in self.report_cells:
            text = self.partial.pop(cell_index, "") + str(content.get("text", ""))
            *complete, last = text.split("\n")
            for line in complete:
                self._keep(cell_index, line)
            if len(last) <= MAX_LINE:
                self.partial[cell_index] = last
        return None

    def _keep(self, cell_index: int, line: str) -> None:
        kept = self.lines.setdefault(cell_index, [])
        if line.startswith(self.mark) and len(line) <= MAX_LINE and len(kept) < MAX_LINES:
            kept.append(line)

    def cell_ended(self, cell_index: int) -> None:
        if cell_index in self.partial:
            self._keep(cell_index, self.partial.pop(cell_index))


def run(notebook: Path, result: Path, cell_timeout: int, report_cells: set[int], mark: str) -> None:
    nb = nbformat.read(notebook, as_version=4)
    state = {"cells": len(nb.cells), "done": 0, "running": None, "stop": None, "peak_mb": 0}
    client = Runner(nb, report_cells, mark, timeout=cell_timeout, allow_errors=True, kernel_name="python3",
                    resources={"metadata": {"path": str(notebook.parent)}})

    def save():
        temporary = result.with_name(result.name + ".part")
        temporary.write_text(json.dumps({**state, "lines": {str(k): v for k, v in client.lines.items()},
                                         "errors": client.errors}))
        os.replace(temporary, result)

    kernel = None
    try:
        with client.setup_kernel():
            kernel = client.km.provisioner.process  # the kernel's Popen: its exit status, should it die
            for index, cell in enumerate(nb.cells):
                state["running"] = index
                save()
                client.execute_cell(cell, index, execution_count=index + 1)
                client.cell_ended(index)
                state["done"], state["peak_mb"] = index + 1, max(state["peak_mb"], _peak_mb(kernel.pid))
        state["running"] = None
    except CellTimeoutError:
        state["stop"] = {"reason": "cell timeout", "cell": state["running"]}
    except DeadKernelError:
        status = kernel.poll() if kernel is not None else None
        state["stop"] = {"reason": "kernel died", "cell": state["running"], "exit": status}
    except BaseException as error:  # noqa: B036  (the runner's own failure, e.g. MemoryError: the record says so)
        state["stop"] = {"reason": "runner failed", "cell": state["running"], "detail": type(error).__name__}
    if state["running"] is not None:
        client.cell_ended(state["running"])
    save()


def _peak_mb(pid: int) -> int:
    """The most memory the process has held (``VmHWM``, its peak resident set), in MB."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    line = next((x for x in status.splitlines() if x.startswith("VmHWM:")), "VmHWM: 0 kB")
    return int(line.split()[1]) // 1024


def _end_with_the_grader() -> None:
    """Standard input is a pipe only the grader writes to: its end means the grader has gone, and so must the run
    (this process is the sandbox's process 1: the kernel ends every other process of the run with it)."""
    sys.stdin.buffer.read()
    os._exit(1)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("notebook", type=Path)
    parser.add_argument("result", type=Path)
    parser.add_argument("--cell-timeout", type=int, required=True)
    parser.add_argument("--report-cells", default="")
    parser.add_argument("--mark", required=True)
    args = parser.parse_args(argv)
    threading.Thread(target=_end_with_the_grader, daemon=True).start()
    cells = {int(k) for k in args.report_cells.split(",") if k}
    run(args.notebook, args.result, args.cell_timeout, cells, args.mark)


if __name__ == "__main__":
    main()
