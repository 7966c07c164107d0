"""Grade submitted lab notebooks against the expected values stored when the assignment was built.

    python scripts/grade.py --key _build/assignments/nb01/autograder/nb01-autograder.zip --out graded/ sub/*.ipynb

Nothing a submission does can reach the judgement. Each submission runs in a Jupyter kernel of its own, in a fresh
folder that holds only the notebook, a copy of the library (without the practice checks' recipes, so that no call
computes an expected value there) and the files the notebooks read, under a Landlock
sandbox (scripts/sandbox.py): the kernel can read the Python installation and that folder, and nothing else, so
neither the key (``--key``) nor the other submissions, and it can write only into its folder. The check cells
(``check("nbXX.k", answer)``) are not run: in their place a cell prints the task's ``answer`` as plain JSON
(numbers, strings, lists; anything else is reported as unreadable). After the kernel has stopped, this process,
which ran none of the submission's code, reads those lines and judges each plain answer against the stored value
with ``socm_lib.course.judge_entry``: the same verdict and the same line as the practice check. So patched
builtins, numpy or ``socm_lib`` in the kernel, an ``answer`` object with its own ``__eq__`` or ``__float__``, or a
forged results file can only change the numbers the kernel reports as answers, never the expected ones nor the
comparison.

Grading runs on one thread (``OMP_NUM_THREADS=1`` and the BLAS libraries' equivalents). For each submission it
writes ``<out>/<notebook stem>.json``: the score, each task's verdict line and points, the seconds the run took
(wall and CPU), and the cells that raised. Needs Linux 5.13 or newer with Landlock enabled; elsewhere it refuses to grade.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell

sys.path.insert(0, str(Path(__file__).resolve().parent))
import editions  # noqa: E402  (scripts/editions.py: the files the notebooks read)
import sandbox  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CHECK = re.compile(r"""check\(\s*["'](nb\d\d\.\d+)["']\s*,\s*answer\s*\)""")
MARK = "SOCM-ANSWER"
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                     "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")}
MAX_ANSWER = 1_000_000  # characters of one answer's JSON; a longer one is unreadable
MAX_NOTEBOOK = 200_000_000  # bytes of the executed notebook read back

# Run in the kernel before the submission: how an answer leaves it (plain JSON, never an object of the student's).
CAPTURE = f'''import json as _socm_json

def _socm_plain(x, depth=0):
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if depth < 4 and hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor
        return _socm_plain(x.detach().cpu().tolist(), depth + 1)
    if depth < 4 and type(x).__module__ == "numpy" and hasattr(x, "tolist"):  # numpy scalars and arrays
        return _socm_plain(x.tolist(), depth + 1)
    if depth < 4 and isinstance(x, (list, tuple, set, frozenset)):
        return [_socm_plain(v, depth + 1) for v in x]
    return {{"unreadable": type(x).__name__}}

def _socm_report(task_id, namespace):
    print("{MARK}", task_id, _socm_json.dumps(_socm_plain(namespace.get("answer"))))
'''


def read_key(path: Path) -> dict:
    """The stored key of an assignment: ``<lab>-key.json``, or the autograder zip that holds it as ``key.json``."""
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as zf:
            return json.loads(zf.read("key.json"))
    return json.loads(path.read_text(encoding="utf-8"))


def prepared(submission: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, dict[int, str]]:
    """The submission's code cells, the capture helper first and each check cell replaced by a cell that reports
    ``answer``; returns the notebook and the index of each reporting cell with its task id."""
    cells, reports = [new_code_cell(CAPTURE)], {}
    for cell in submission.cells:
        if cell.cell_type != "code":
            continue
        found = CHECK.findall(cell.source)
        if found:
            for task_id in found:
                reports[len(cells)] = task_id
                cells.append(new_code_cell(f'_socm_report("{task_id}", globals())'))
        else:
            cells.append(new_code_cell(cell.source))
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}})
    return nb, reports


def _workdir(nb: nbformat.NotebookNode) -> Path:
    """A fresh folder laid out like the student kit: the notebook in notebooks/, the files it reads, the library."""
    import socm_lib
    from socm_lib import e5_4bit

    work = Path(tempfile.mkdtemp(prefix="socm-grade-"))
    # the library without the practice checks' recipes (socm_lib/course/nbXX.py): in a graded run no call can
    # compute an expected value (the check cells are not run; `check` and the registry are still importable)
    shutil.copytree(Path(socm_lib.__file__).parent, work / "socm_lib",
                    ignore=lambda folder, names: [n for n in names if n == "__pycache__"
                                                  or (Path(folder).name == "course" and re.fullmatch(r"nb\d\d\.py", n))])
    editions.copy_data_files(ROOT, work)
    (work / "notebooks").mkdir(exist_ok=True)
    (work / "home" / "e5").mkdir(parents=True)
    cache = e5_4bit.cache_root()  # dequantised E5 models, read (not written) through links: built once, not per run
    for model in sorted(cache.iterdir()) if cache.is_dir() else []:
        (work / "home" / "e5" / model.name).symlink_to(model.resolve())
    nbformat.write(nb, work / "notebooks" / "submission.ipynb")
    return work


def _readable() -> list[Path]:
    """What the kernel may read besides its folder: the system's and Python's own files, and the E5 cache."""
    from socm_lib import e5_4bit

    paths = [Path(p) for p in ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/proc", "/sys")]
    paths += [Path(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}]
    paths += [Path(sys.executable).resolve().parent, e5_4bit.cache_root().resolve()]
    return paths


def execute(work: Path, timeout: int, readable: list[Path]) -> None:
    """(In the sandboxed child.) Confine this process, then run work/notebooks/submission.ipynb cell by cell."""
    from nbclient import NotebookClient

    sandbox.confine(readable, [work, Path("/dev")])
    path = work / "notebooks" / "submission.ipynb"
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, allow_errors=True, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute()
    finally:
        nbformat.write(nb, work / "notebooks" / "executed.ipynb")


def _run_sandboxed(work: Path, cell_timeout: int, timeout: int) -> tuple[float, float]:
    """Run the child that executes the submission; kill everything it started when it ends. Returns the wall
    seconds and the CPU seconds of the child and the kernel (on one thread, the wall time on an idle core)."""
    from socm_lib import e5_4bit

    home = work / "home"
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(work), "HOME": str(home), "IPYTHONDIR": str(home / "ipython"),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "MPLCONFIGDIR": str(home / "mpl"), "TMPDIR": str(home),
           "XDG_CACHE_HOME": str(home / "cache"), "TOKENIZERS_PARALLELISM": "false", "PYTHONNOUSERSITE": "1",
           e5_4bit.CACHE_ENV: str(home / "e5")}
    start, cpu = time.perf_counter(), _children_cpu()
    readable = [arg for path in _readable() for arg in ("--read", str(path))]
    child = subprocess.Popen([sys.executable, __file__, "--execute", str(work), "--cell-timeout", str(cell_timeout),
                              *readable],
                             env=env, cwd=work, start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    try:
        child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)  # the kernel and anything the submission left running
        except ProcessLookupError:
            pass
        child.wait()
    return time.perf_counter() - start, _children_cpu() - cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # waited-for descendants: the child, and its kernel
    return usage.ru_utime + usage.ru_stime


def _answers(work: Path, reports: dict[int, str]) -> tuple[dict[str, object], list[str]]:
    """The plain answer each reporting cell printed (missing: not answered), and the first line of every error."""
    path = work / "notebooks" / "executed.ipynb"
    if not path.is_file() or path.stat().st_size > MAX_NOTEBOOK:
        return {}, ["the notebook did not run to its end (time limit, or the kernel died)"]
    try:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    except (ValueError, KeyError, TypeError):
        return {}, ["the executed notebook could not be read"]
    answers, errors = {}, []
    for k, cell in enumerate(cells if isinstance(cells, list) else []):
        outputs = cell.get("outputs", []) if isinstance(cell, dict) else []
        for out in outputs if isinstance(outputs, list) else []:
            if not isinstance(out, dict):
                continue
            if out.get("output_type") == "error" and k not in reports:
                errors.append(f"cell {k}: {out.get('ename')}: {str(out.get('evalue'))[:200]}")
            text = out.get("text", "")
            text = "".join(text) if isinstance(text, list) else str(text)
            for line in text.splitlines() if k in reports else []:
                parts = line.split(" ", 2)
                if len(parts) == 3 and parts[0] == MARK and parts[1] == reports[k] and len(parts[2]) <= MAX_ANSWER:
                    try:
                        answers[reports[k]] = json.loads(parts[2])
                    except ValueError:
                        answers[reports[k]] = {"unreadable": "text that is not JSON"}
    return answers, errors


def judge(key: dict, answers: dict[str, object]) -> list[dict]:
    """Each task's verdict, from the stored key and the plain answers only."""
    from socm_lib.course import Verdict, judge_entry

    tasks = []
    for task_id, entry in sorted(key["tasks"].items()):
        answer = answers.get(task_id)
        if isinstance(answer, dict):
            what = answer.get("unreadable", "an object")
            verdict = Verdict(task_id, "malformed", f"The grader cannot read an answer of type {what!s:.40}: give "
                                                    "a number, a string, or a list of them.")
        else:
            verdict = judge_entry(task_id, entry, answer)
        right = verdict.status == "right"
        tasks.append({"task": task_id, "status": verdict.status, "line": verdict.line(),
                      "points": entry["points"] if right else 0, "max_points": entry["points"]})
    return tasks


def grade(key: dict, submission: Path, cell_timeout: int = 600, timeout: int = 3600) -> dict:
    """Grade one submitted notebook; return its record (score, each task's verdict, seconds, errors)."""
    if sandbox.abi() < 1:
        raise RuntimeError("Grading needs Linux 5.13 or newer with Landlock enabled, to keep the submission away "
                           "from the key; this kernel offers none.")
    nb, reports = prepared(nbformat.read(submission, as_version=4))
    work = _workdir(nb)
    try:
        seconds, cpu_seconds = _run_sandboxed(work, cell_timeout, timeout)
        answers, errors = _answers(work, reports)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    tasks = judge(key, answers)
    return {"submission": submission.name, "lab": key["lab"], "score": sum(t["points"] for t in tasks),
            "max_score": sum(t["max_points"] for t in tasks), "tasks": tasks,
            "graded_by_hand": key.get("graded_by_hand", []), "seconds": round(seconds, 1),
            "cpu_seconds": round(cpu_seconds, 1), "threads": 1,
            "errors": errors}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("submissions", nargs="*", type=Path, help="the students' notebooks")
    parser.add_argument("--key", type=Path, help="the assignment's autograder zip (or its <lab>-key.json)")
    parser.add_argument("--out", type=Path, help="folder for one <notebook stem>.json per submission")
    parser.add_argument("--cell-timeout", type=int, default=600, help="seconds one cell may run (default 600)")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds one submission may run (default 3600)")
    parser.add_argument("--execute", type=Path, help=argparse.SUPPRESS)  # the sandboxed child: its folder
    parser.add_argument("--read", type=Path, action="append", default=[], help=argparse.SUPPRESS)  # and what it reads
    args = parser.parse_args(argv)
    if args.execute:
        execute(args.execute, args.cell_timeout, args.read)
        return
    if not (args.key and args.out and args.submissions):
        parser.error("give --key, --out and at least one submitted notebook")
    key = read_key(args.key)
    args.out.mkdir(parents=True, exist_ok=True)
    for submission in args.submissions:
        record = grade(key, submission, args.cell_timeout, args.timeout)
        (args.out / f"{submission.stem}.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"{submission.name}: {record['score']}/{record['max_score']} in {record['seconds']} s")
        for task in record["tasks"]:
            print("  " + task["line"])


if __name__ == "__main__":
    main()
