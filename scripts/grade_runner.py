"""Run a prepared submission's cells in a Jupyter kernel, inside the grading sandbox (scripts/sandbox.py), and log
what the grader needs to a file descriptor the grader holds.

    python grade_runner.py --notebook-fd 3 --result-fd 4 --cell-timeout SECONDS --report-cells 1,4 --mark SOCM-ANSWER

This is the first program of the run, out of the submission's reach: it reads the notebook from one descriptor and
logs to another, neither of which is in the sandbox's file system nor passed on to the kernel; it is not dumpable
(no process of the run can read its memory, its descriptors or its ``/proc`` files); and where the sandbox gave it
two uids (a root grader), it starts the kernel under the other one, which can then neither signal it nor trace it
(the system call filter refuses ``ptrace`` anyway). The kernel and the notebook client talk over the sandbox's own
loopback.

Of each cell's outputs it keeps only what grading reads, so that no output, however large, fills its memory: the
first error (class and message, cut short), and in the reporting cells the last line that starts with the mark.
It logs one JSON object per line, each as soon as it is known, so that a run cut short still tells how far it came:

    {"running": 7}  {"done": 7, "peak_mb": 1210}  {"error": [3, "ValueError", "..."]}
    {"line": [4, "SOCM-ANSWER nb01.1 0.1464"]}
    {"stop": {"reason": "cell timeout" | "kernel died" | "runner failed", "cell": 7, "exit": -24, "detail": "..."}}
    {"end": true}

What the lines and errors hold comes from the submission: the grader reads them as untrusted text.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

MAX_LINE = 4_000_000  # characters of one kept line (an answer of 100,000 numbers is about 2.5 MB of JSON)
MAX_LOG = 64_000_000  # bytes of the whole log
MAX_ERRORS = 100
MAX_MESSAGE = 300  # characters of an error's message
PR_SET_DUMPABLE = 4


class Log:
    """The grader's log: JSON lines appended to a descriptor, at most :data:`MAX_LOG` bytes of lines and errors (the
    small events of the run's progress are always written)."""

    def __init__(self, fd: int):
        self.fd, self.size = fd, 0

    def write(self, event: dict, bulky: bool = False) -> None:
        data = (json.dumps(event) + "\n").encode()
        if bulky and self.size + len(data) > MAX_LOG:
            return
        self.size += len(data)
        os.write(self.fd, data)


class Runner(NotebookClient):
    """A notebook client that logs, of the outputs, only the first error of each cell and the last marked line of
    each reporting cell."""

    def __init__(self, nb, log: Log, report_cells: set[int], mark: str, **kwargs):
        super().__init__(nb, **kwargs)
        self.events, self.report_cells, self.mark = log, report_cells, mark
        self.errors = 0
        self.failed: set[int] = set()
        self.last: dict[int, str] = {}  # each reporting cell's last marked line
        self.partial: dict[int, str] = {}  # each reporting cell's last line, not yet ended

    def output(self, outs, msg, display_id, cell_index):
        kind, content = msg["msg_type"], msg.get("content", {})
        if kind == "error" and self.errors < MAX_ERRORS and cell_index not in self.failed:
            self.errors += 1
            self.failed.add(cell_index)
            self.events.write({"error": [cell_index, str(content.get("ename", ""))[:100],
                                      str(content.get("evalue", ""))[:MAX_MESSAGE]]}, bulky=True)
        elif kind == "stream" and content.get("name") == "stdout" and cell_index in self.report_cells:
            text = self.partial.pop(cell_index, "") + str(content.get("text", ""))
            *complete, last = text.split("\n")
            for line in complete:
                self._keep(cell_index, line)
            if len(last) <= MAX_LINE:
                self.partial[cell_index] = last
        return None

    def _keep(self, cell_index: int, line: str) -> None:
        if line.startswith(self.mark) and len(line) <= MAX_LINE:
            self.last[cell_index] = line

    def cell_ended(self, cell_index: int) -> None:
        if cell_index in self.partial:
            self._keep(cell_index, self.partial.pop(cell_index))
        if cell_index in self.last:
            self.events.write({"line": [cell_index, self.last.pop(cell_index)]}, bulky=True)


def run(nb, log: Log, cell_timeout: int, report_cells: set[int], mark: str, kernel_uid: int | None) -> None:
    client = Runner(nb, log, report_cells, mark, timeout=cell_timeout, allow_errors=True, kernel_name="python3",
                    resources={"metadata": {"path": os.getcwd()}})
    kernel, running = None, None
    launch = {"user": kernel_uid} if kernel_uid is not None else {}
    try:
        with client.setup_kernel(**launch):
            kernel = client.km.provisioner.process  # the kernel's Popen: its exit status, should it die
            for index, cell in enumerate(nb.cells):
                running = index
                log.write({"running": index})
                client.execute_cell(cell, index, execution_count=index + 1)
                client.cell_ended(index)
                log.write({"done": index + 1, "peak_mb": _peak_mb(kernel.pid)})
        running = None
    except CellTimeoutError:
        log.write({"stop": {"reason": "cell timeout", "cell": running}})
    except DeadKernelError:
        status = kernel.poll() if kernel is not None else None
        log.write({"stop": {"reason": "kernel died", "cell": running, "exit": status}})
    except BaseException as error:  # noqa: B036  (the runner's own failure, e.g. MemoryError: the record says so)
        log.write({"stop": {"reason": "runner failed", "cell": running, "detail": type(error).__name__}})
    if running is not None:
        client.cell_ended(running)
    log.write({"end": True})


def _peak_mb(pid: int) -> int:
    """The most memory the process has held (``VmHWM``, its peak resident set), in MB."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    line = next((x for x in status.splitlines() if x.startswith("VmHWM:")), "VmHWM: 0 kB")
    return int(line.split()[1]) // 1024


def _out_of_reach() -> int | None:
    """Make this process unreadable to the run (not dumpable), and, where the sandbox gave it a real uid apart from
    its effective one, take that uid back as its saved uid too: what it starts under the effective uid may then
    not signal it. Returns the uid the kernel is to run under (None: this process's own)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    real, effective, _ = os.getresuid()
    if real == effective:
        return None
    os.setresuid(-1, -1, real)
    return effective


def main(argv=None) -> None:
    kernel_uid = _out_of_reach()
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--notebook-fd", type=int, required=True)
    parser.add_argument("--result-fd", type=int, required=True)
    parser.add_argument("--cell-timeout", type=int, required=True)
    parser.add_argument("--report-cells", default="")
    parser.add_argument("--mark", required=True)
    args = parser.parse_args(argv)
    for fd in (args.notebook_fd, args.result_fd):
        os.set_inheritable(fd, False)  # never passed on to the kernel
    with os.fdopen(args.notebook_fd, "rb") as file:
        nb = nbformat.reads(file.read().decode("utf-8"), as_version=4)
    cells = {int(k) for k in args.report_cells.split(",") if k}
    run(nb, Log(args.result_fd), args.cell_timeout, cells, args.mark, kernel_uid)


if __name__ == "__main__":
    main()
