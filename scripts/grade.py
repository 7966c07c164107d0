"""Grade submitted lab notebooks against the expected values stored when the assignment was built.

    python scripts/grade.py --key _build/assignments/nb01/autograder/nb01-autograder.zip --out graded/ --jobs 4 \\
        submissions/*/nb01.ipynb

Nothing a submission does can reach the judgement, the instructor, or another submission. Each one runs alone in a
sandbox of bubblewrap (scripts/sandbox.py): its own network (no socket of the machine reachable), its own
processes (all of them end with its run), its own ``/tmp`` and ``/dev/shm``, an unprivileged user, an environment
built from nothing, no terminal, limits on CPU time, memory, processes and file size. It sees the system's
programs, Python and the virtual environment read-only, and a folder of its own laid out like the student kit
(``/kit``): the notebook in ``notebooks/``, the files the notebooks read, and the library without the practice
checks' recipes (``socm_lib/course/nbXX.py`` are shown empty), so no call computes an expected value there.
Neither the key nor the other submissions are in its world.

Inside, scripts/grade_runner.py runs the cells in a Jupyter kernel that talks to it over the sandbox's own
loopback. The check cells (``check("nbXX.k", answer)``) are not run: in their place a cell prints the task's
``answer`` in its plain form, computed by the one rule of the practice check
(:func:`socm_lib.course.answers.plain_answer`, whose source the first cell runs), as JSON. After the run, this
process, which ran none of the submission's code, reads the runner's result file as untrusted input (no link
followed, a regular file, bounded in size, checked field by field) and judges each plain answer against the stored
value with :func:`socm_lib.course.judge_entry`: the same verdict and the same line as the practice check. So
patched builtins, numpy or ``socm_lib``, an answer object with its own ``__eq__``, or a forged result file can
only change the submission's own answers, never the expected ones nor the comparison.

A batch never stops on one submission: a notebook that cannot be read, a run that reaches a limit, a result file
that is a link, too large or garbled, each gives that submission a record saying why (0 points for what could not
be judged). ``--jobs N`` grades N submissions at once, each in its own sandbox, each on one thread
(``OMP_NUM_THREADS=1`` and the BLAS libraries' equivalents). The record of ``submissions/alice/nb01.ipynb`` is
``<out>/alice/nb01.json`` (paths below the submissions' common folder): the submission's path, the score, each
task's verdict line and points, why the run stopped if it did, the cells that raised (class and message, cut
short), the limits, the kernel's peak resident memory, and the seconds the run took (wall, and CPU of all its
processes). Needs Linux with bubblewrap
(``bwrap``) and util-linux (``prlimit``, ``setpriv``); elsewhere it refuses to grade and says what is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shutil
import signal
import stat
import sys
import tempfile
import threading
import zipfile
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell

sys.path.insert(0, str(Path(__file__).resolve().parent))
import editions  # noqa: E402  (scripts/editions.py: the files the notebooks read)
import sandbox  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RUNNER = Path(__file__).resolve().parent / "grade_runner.py"
CHECK = re.compile(r"""check\(\s*["'](nb\d\d\.\d+)["']\s*,\s*answer\s*\)""")
MARK = "SOCM-ANSWER"
KIT = "/kit"  # the submission's folder, as the sandbox sees it
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                     "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")}
MAX_SUBMISSION = 100_000_000  # bytes of a submitted notebook
MAX_RESULT = 100_000_000  # bytes of the runner's result file


def _capture() -> str:
    """The first cell of a graded run: :func:`socm_lib.course.answers.plain_answer`, from its own source, in a
    namespace of its own (no import of the library, no name of the student's touched), and the reporting function
    each check cell is replaced by. An answer leaves the kernel only as that plain form, in JSON, on one line."""
    from socm_lib.course import answers

    source = Path(answers.__file__).read_text(encoding="utf-8")
    return f'''import json as _socm_json, sys as _socm_sys
_socm_rule = {{}}
exec(compile({source!r}, "socm_lib/course/answers.py", "exec"), _socm_rule)
_socm_out = _socm_sys.stdout

def _socm_report(task_id, namespace):
    try:
        text = _socm_json.dumps(_socm_rule["plain_answer"](namespace.get("answer")))
    except BaseException as error:
        text = _socm_json.dumps({{"unreadable": type(error).__name__ + " raised while reading it"}})
    _socm_out.write("{MARK} " + task_id + " " + text + "\\n")
    _socm_out.flush()
'''


def read_key(path: Path) -> dict:
    """The stored key of an assignment: ``<lab>-key.json``, or the autograder zip that holds it as ``key.json``."""
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as zf:
            return json.loads(zf.read("key.json"))
    return json.loads(path.read_text(encoding="utf-8"))


class Unreadable(Exception):
    """A submission that cannot be graded, with the reason in words (never its content: that could be anything)."""


def read_submission(path: Path) -> nbformat.NotebookNode:
    """The submitted notebook: a regular file (not a link), at most :data:`MAX_SUBMISSION` bytes, JSON of a
    notebook. Raises :class:`Unreadable` saying why not."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        raise Unreadable("it is a link, not a file" if os.path.islink(path) else
                         f"it could not be opened ({type(error).__name__})") from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable("it is not a regular file")
        data = file.read(MAX_SUBMISSION + 1)
    if len(data) > MAX_SUBMISSION:
        raise Unreadable(f"it is larger than {MAX_SUBMISSION // 1_000_000} MB")
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
        if not all(isinstance(c.get("source"), str) for c in nb.cells if c.get("cell_type") == "code"):
            raise TypeError("a code cell without source text")
    except Exception as error:
        raise Unreadable(f"it is not a notebook this grader can read ({type(error).__name__})") from None
    return nb


def prepared(submission: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, dict[int, str], list[int | None]]:
    """The submission's code cells, the capture cell first and each check cell replaced by a cell that reports
    ``answer``; returns the notebook, the index of each reporting cell with its task id, and for each cell its
    number in the submission (counting every cell from 1; None for the capture cell)."""
    cells, reports, origin = [new_code_cell(_capture())], {}, [None]
    for number, cell in enumerate(submission.cells, start=1):
        if cell.get("cell_type") != "code":
            continue
        found = CHECK.findall(cell.source)
        for task_id in found:
            reports[len(cells)] = task_id
            cells.append(new_code_cell(f'_socm_report("{task_id}", globals())'))
            origin.append(number)
        if not found:
            cells.append(new_code_cell(cell.source))
            origin.append(number)
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}})
    return nb, reports, origin


def _layout(work: Path) -> sandbox.Layout:
    """The sandbox of one submission: its folder ``work`` at ``/kit``, laid out like the student kit."""
    import socm_lib
    from socm_lib import e5_4bit

    library = Path(socm_lib.__file__).parent
    recipes = sorted(p.name for p in (library / "course").glob("nb[0-9][0-9].py"))
    read_only = [(library, f"{KIT}/socm_lib"), (RUNNER, "/grader/grade_runner.py")]
    data = [p for pattern in editions.DATA_FILES for p in sorted(ROOT.glob(pattern))]
    read_only += [(p, f"{KIT}/{p.relative_to(ROOT)}") for p in data]
    cache = e5_4bit.cache_root()  # dequantised E5 models, read-only: built once, not per run
    models = [m for m in sorted(cache.iterdir()) if m.is_dir()] if cache.is_dir() else []
    read_only += [(m, f"{KIT}/home/e5/{m.name}") for m in models]
    home = f"{KIT}/home"
    env = {**ONE_THREAD, "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "HOME": home,
           "USER": "student", "LOGNAME": "student", "LANG": "C.UTF-8", "PYTHONPATH": KIT, "PYTHONNOUSERSITE": "1",
           "PYTHONDONTWRITEBYTECODE": "1", "IPYTHONDIR": f"{home}/ipython", "JUPYTER_RUNTIME_DIR": f"{home}/runtime",
           "MPLCONFIGDIR": f"{home}/mpl", "XDG_CACHE_HOME": f"{home}/cache", "TMPDIR": "/tmp",
           "TOKENIZERS_PARALLELISM": "false", e5_4bit.CACHE_ENV: f"{home}/e5"}
    hidden = [f"{KIT}/socm_lib/course/__pycache__"] if (library / "course" / "__pycache__").is_dir() else []
    return sandbox.Layout(folder=work, mount=KIT, read_only=read_only, env=env, cwd=f"{KIT}/notebooks",
                          hidden_files=[f"{KIT}/socm_lib/course/{name}" for name in recipes], hidden_folders=hidden)


def _workdir(nb: nbformat.NotebookNode, slot: int) -> Path:
    """A fresh folder for one run, holding the prepared notebook; owned by the run's user."""
    work = Path(tempfile.mkdtemp(prefix="socm-grade-"))
    for folder in (work / "notebooks", work / "home", work / "home" / "e5"):
        folder.mkdir()
    nbformat.write(nb, work / "notebooks" / "submission.ipynb")
    if os.geteuid() == 0:
        for path in (work, work / "notebooks", work / "home", work / "home" / "e5",
                     work / "notebooks" / "submission.ipynb"):
            os.chown(path, sandbox.uid(slot), sandbox.uid(slot))
    return work


def _remove(work: Path) -> None:
    """Remove a run's folder, whatever the run did to the permissions inside it (what still resists stays)."""
    def opened(function, path, _):
        try:
            os.chmod(os.path.dirname(path), 0o700)
            function(path)
        except OSError:
            pass

    shutil.rmtree(work, onerror=opened)


def read_result(work: Path) -> tuple[dict | None, str]:
    """The runner's result (``work/result.json``), read as untrusted input: no link followed, a regular file of at
    most :data:`MAX_RESULT` bytes, JSON of the expected shape. Returns ``(result, "")`` or ``(None, why)``."""
    folder = os.open(work, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        fd = os.open("result.json", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except FileNotFoundError:
        return None, "the run wrote no results"
    except OSError:
        return None, "the results file is a link or cannot be opened"
    finally:
        os.close(folder)
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            return None, "the results file is not a regular file"
        data = file.read(MAX_RESULT + 1)
    if len(data) > MAX_RESULT:
        return None, f"the results file is larger than {MAX_RESULT // 1_000_000} MB"
    try:
        result = json.loads(data)
        return _checked(result), ""
    except Exception:  # not JSON, nested too deep, or not of the runner's shape
        return None, "the results file is garbled"


def _checked(result) -> dict:
    """``result`` if it has the runner's shape (scripts/grade_runner.py), with its fields' types; else raises."""
    def integer(x, allow_none=False):
        if (x is None and allow_none) or (isinstance(x, int) and not isinstance(x, bool)):
            return x
        raise TypeError("not an integer")

    if not (isinstance(result, dict) and isinstance(result.get("lines"), dict) and isinstance(result.get("errors"), list)):
        raise TypeError("not the runner's result")
    integer(result.get("done")), integer(result.get("running"), allow_none=True), integer(result.get("peak_mb"))
    for key, lines in result["lines"].items():
        integer(int(key))
        if not (isinstance(lines, list) and all(isinstance(line, str) for line in lines)):
            raise TypeError("lines that are not text")
    for error in result["errors"]:
        if not (isinstance(error, list) and len(error) == 3 and all(isinstance(e, str) for e in error[1:])):
            raise TypeError("an error that is not [cell, class, message]")
        integer(error[0])
    stop = result.get("stop")
    if stop is not None and not (isinstance(stop, dict) and isinstance(stop.get("reason"), str)):
        raise TypeError("a stop without its reason")
    if stop is not None:
        integer(stop.get("cell"), allow_none=True), integer(stop.get("exit"), allow_none=True)
    return result


def _answers(result: dict, reports: dict[int, str]) -> dict[str, object]:
    """The plain answer each reporting cell printed (its last line for its task), read back from JSON."""
    from socm_lib.course import plain_answer

    answers = {}
    for index, task_id in reports.items():
        for line in result["lines"].get(str(index), []):
            parts = line.split(" ", 2)
            if len(parts) == 3 and parts[0] == MARK and parts[1] == task_id:
                try:
                    answers[task_id] = plain_answer(json.loads(parts[2]))
                except Exception:  # not JSON, nested too deep, digits beyond Python's limit
                    answers[task_id] = {"unreadable": "the answer's text is not JSON"}
    return answers


def _cell(origin: list[int | None], index) -> str:
    """Where the run was, in the submission's own numbering of its cells."""
    if not isinstance(index, int) or not 0 <= index < len(origin):
        return "the start of the run"
    return f"cell {origin[index]}" if origin[index] else "the grader's first cell"


def _stopped(result: dict | None, why: str, outcome: sandbox.Outcome, origin, options: dict) -> str:
    """Why the run ended before its last cell, in words ("" if it did not)."""
    running = result.get("running") if result else None
    if outcome.timed_out:
        return (f"the time limit of {options['timeout_s']} s for the whole submission was reached in "
                f"{_cell(origin, running)}")
    if result is None:
        return f"the results could not be read: {why}"
    stop = result.get("stop")
    if stop is None:
        return "" if running is None else f"the run ended unexpectedly in {_cell(origin, running)}"
    where = _cell(origin, stop.get("cell"))
    if stop["reason"] == "cell timeout":
        return f"the time limit of {options['cell_timeout_s']} s per cell was reached in {where}"
    if stop["reason"] == "kernel died":
        code = stop.get("exit")
        if code == -signal.SIGXCPU:
            return f"the CPU time limit of {options['cpu_s']} s was reached in {where}"
        name = signal.Signals(-code).name if isinstance(code, int) and -code in signal.valid_signals() else "unknown"
        return f"the kernel died in {where} (signal {name}; memory limit of {options['memory_mb']} MB?)"
    detail = str(stop.get("detail"))[:60]
    hint = ": was an output too large?" if detail == "MemoryError" else ""
    return f"the grader's runner stopped in {where} ({detail}{hint})"


def _error_line(origin, error: list, options: dict) -> str:
    """One cell's error as feedback: the cell, the class and the submission's own message, and the limit it shows."""
    index, name, message = error
    line = f"{_cell(origin, index)}: {name}: {message[:200]}"
    if "MemoryError" in name or "can't allocate memory" in message:
        return f"{line} (the memory limit of {options['memory_mb']} MB was reached)"
    if "File too large" in message:
        return f"{line} (the file size limit of {options['file_size_mb']} MB was reached)"
    if "Resource temporarily unavailable" in message and name in ("BlockingIOError", "OSError", "RuntimeError"):
        return f"{line} (the limit of {options['processes']} processes and threads was reached?)"
    return line


def judge(key: dict, answers: dict[str, object], reports: dict[int, str], result: dict | None, stopped: str,
          origin) -> list[dict]:
    """Each task's verdict, from the stored key and the plain answers only; a task whose check cell the run never
    reached is not graded, and says why."""
    from socm_lib.course import judge_entry

    cell_of = {task_id: index for index, task_id in reports.items()}
    failed = {e[0]: f"{e[1]}: {e[2][:200]}" for e in (result or {}).get("errors", [])}
    done = result["done"] if result else 0
    tasks = []
    for task_id, entry in sorted(key["tasks"].items()):
        index = cell_of.get(task_id)
        if index is not None and task_id not in answers and (index < done or index in failed):
            status = "malformed"
            line = (f"{task_id}: malformed. Your answer could not be read: its check cell "
                    + (f"raised {failed[index]}." if index in failed else "printed nothing (was sys.stdout replaced?)."))
        elif task_id not in answers and stopped:
            status, line = "not run", f"{task_id}: not graded: {stopped}."
        else:  # answered, or the notebook has no check cell for it and ran to its end
            verdict = judge_entry(task_id, entry, answers.get(task_id))
            status, line = verdict.status, verdict.line()
        points = entry["points"] if status == "right" else 0
        tasks.append({"task": task_id, "status": status, "line": line, "points": points, "max_points": entry["points"]})
    return tasks


@lru_cache(maxsize=1)
def _refusal() -> str | None:
    return sandbox.unavailable()


def grade(key: dict, submission: Path, cell_timeout: int = 600, timeout: int = 3600,
          limits: sandbox.Limits = sandbox.Limits(), slot: int = 0) -> dict:
    """Grade one submitted notebook; return its record. Never raises for what the submission is or does (the
    record says what happened); raises RuntimeError where this machine cannot isolate a submission. ``slot`` tells
    apart the runs of one batch that are under way at once (0 to jobs - 1)."""
    refusal = _refusal()
    if refusal:
        raise RuntimeError(refusal)
    options = {"cell_timeout_s": cell_timeout, "timeout_s": timeout, "cpu_s": limits.cpu_seconds,
               "memory_mb": limits.memory_mb, "processes": limits.processes, "file_size_mb": limits.file_size_mb}
    record = {"submission": str(submission), "lab": key["lab"], "limits": options, "threads": 1}
    try:
        nb, reports, origin = prepared(read_submission(submission))
    except Unreadable as why:
        return _finished(record, judge(key, {}, {}, None, f"the notebook could not be read: {why}", []),
                         f"the notebook could not be read: {why}", [], None)
    work = _workdir(nb, slot)
    try:
        layout = _layout(work)
        runner = [sys.executable, "/grader/grade_runner.py", f"{KIT}/notebooks/submission.ipynb", f"{KIT}/result.json",
                  "--cell-timeout", str(cell_timeout), "--mark", MARK, "--report-cells", ",".join(map(str, reports))]
        outcome = sandbox.run(sandbox.command(layout, limits, runner, slot), timeout)
        result, why = read_result(work)
    finally:
        _remove(work)
    stopped = _stopped(result, why, outcome, origin, options)
    answers = _answers(result, reports) if result else {}
    errors = [_error_line(origin, e, options) for e in (result or {}).get("errors", []) if e[0] not in reports]
    record["memory_peak_mb"] = result["peak_mb"] if result else None  # the kernel's, as the run reported it
    return _finished(record, judge(key, answers, reports, result, stopped, origin), stopped, errors, outcome)


def _finished(record: dict, tasks: list[dict], stopped: str, errors: list[str], outcome) -> dict:
    return {**record, "score": sum(t["points"] for t in tasks), "max_score": sum(t["max_points"] for t in tasks),
            "tasks": tasks, "stopped": stopped or None, "errors": errors,
            "seconds": round(outcome.seconds, 1) if outcome else 0.0,
            "cpu_seconds": round(outcome.cpu_seconds, 1) if outcome else 0.0,
            "memory_peak_mb": record.get("memory_peak_mb")}


def record_names(submissions: list[Path]) -> dict[Path, Path]:
    """Each submission's record, a path relative to the output folder: its path below the submissions' common
    folder, ``.ipynb`` replaced by ``.json`` (``alice/nb01.ipynb`` -> ``alice/nb01.json``); distinct paths, distinct
    names."""
    absolute = {s: Path(os.path.abspath(s)) for s in submissions}
    common = Path(os.path.commonpath([p.parent for p in absolute.values()]))
    names = {}
    for submission, path in absolute.items():
        relative = path.relative_to(common)
        name = relative.with_name(relative.name[:-6] + ".json") if relative.name.endswith(".ipynb") else None
        if name is None or name in names.values():
            name = relative.with_name(relative.name + ".json")
        names[submission] = name
    return names


def grade_all(key: dict, submissions: list[Path], out: Path, jobs: int = 1, **options) -> list[dict]:
    """Grade every submission, ``jobs`` at once, writing each record to its own file under ``out`` as soon as it is
    ready (and printing its score); a submission the grader itself fails on still gets a record. Returns the
    records in the order of ``submissions``."""
    refusal = _refusal()
    if refusal:
        raise RuntimeError(refusal)
    unique = list(dict.fromkeys(submissions))
    names = record_names(unique)
    slots, printing = queue.Queue(), threading.Lock()
    for slot in range(jobs):
        slots.put(slot)

    def one(submission: Path) -> dict:
        slot = slots.get()
        try:
            record = grade(key, submission, slot=slot, **options)
        except Exception as error:  # a fault of this grader's: that submission's record says so, the batch goes on
            reason = f"the grader failed on this submission ({type(error).__name__})"
            record = _finished({"submission": str(submission), "lab": key["lab"]},
                               judge(key, {}, {}, None, reason, []), reason, [], None)
        finally:
            slots.put(slot)
        path = out / names[submission]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        with printing:
            print(f"{submission}: {record['score']}/{record['max_score']} in {record['seconds']} s"
                  + (f" ({record['stopped']})" if record["stopped"] else ""), flush=True)
            for task in record["tasks"]:
                print("  " + task["line"], flush=True)
        return record

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, unique))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("submissions", nargs="*", type=Path, help="the students' notebooks")
    parser.add_argument("--key", type=Path, help="the assignment's autograder zip (or its <lab>-key.json)")
    parser.add_argument("--out", type=Path, help="folder for the records: <path below the submissions' common "
                                                 "folder>.json each")
    parser.add_argument("--jobs", type=int, default=1, help="submissions graded at once, each in its own sandbox on "
                                                            "one thread (at most the machine's cores; default 1)")
    parser.add_argument("--cell-timeout", type=int, default=600, help="seconds one cell may run (default 600)")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds one submission may run (default 3600)")
    defaults = sandbox.Limits()
    parser.add_argument("--cpu-time", type=int, default=defaults.cpu_seconds,
                        help=f"CPU seconds one process of a submission may use (default {defaults.cpu_seconds})")
    parser.add_argument("--memory", type=int, default=defaults.memory_mb,
                        help=f"MB of writable memory (RLIMIT_DATA) one process may use (default {defaults.memory_mb})")
    parser.add_argument("--processes", type=int, default=defaults.processes,
                        help=f"processes and threads of one submission (default {defaults.processes})")
    parser.add_argument("--file-size", type=int, default=defaults.file_size_mb,
                        help=f"MB of one file a submission writes (default {defaults.file_size_mb})")
    args = parser.parse_args(argv)
    if not (args.key and args.out and args.submissions) or args.jobs < 1:
        parser.error("give --key, --out, at least one submitted notebook, and --jobs of at least 1")
    limits = sandbox.Limits(cpu_seconds=args.cpu_time, memory_mb=args.memory, processes=args.processes,
                            file_size_mb=args.file_size)
    try:
        grade_all(read_key(args.key), args.submissions, args.out, args.jobs, cell_timeout=args.cell_timeout,
                  timeout=args.timeout, limits=limits)
    except RuntimeError as refusal:
        parser.exit(2, f"{refusal}\n")


if __name__ == "__main__":
    main()
