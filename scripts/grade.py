"""Grade submitted lab notebooks against the expected values stored when the assignment was built.

    python scripts/grade.py --key _build/assignments/nb01/autograder/nb01-autograder.zip --out graded/ --jobs 2 \\
        submissions/*/nb01.ipynb

Nothing a submission does can reach the judgement, the instructor, or another submission. Each one runs alone in a
sandbox (scripts/sandbox.py, whose :func:`sandbox.bounds` says which bounds hold on this machine): a box of its own
with uids no other run on the machine has, one budget of memory, processes, cores, bytes and files for the whole run
(a cgroup and an in-memory file system), its own network, processes, ``/tmp`` and ``/dev/shm``, a system call filter
at least as strict as Docker's default, a new session keyring, an environment built from nothing, no terminal, and
a wall-time limit sized from the lab's measured time. It sees the system's programs, Python and the virtual
environment read-only, and a folder laid out like the student kit (``/kit``): the notebook's folder, the files the
notebooks read, and the library without the practice checks' recipes (``socm_lib/course/nbXX.py`` are shown
empty), so no call computes an expected value there. Neither the key nor the other submissions are in its world.

Inside, scripts/grade_runner.py runs the cells in a Jupyter kernel, out of the kernel's reach. Each practice check
that is a statement of its own at the top level of a cell (``check("nbXX.k", answer)``) is replaced by a cell
that prints that ``answer`` in its plain form (:func:`socm_lib.course.answers.plain_answer`, whose source the first
cell runs), as JSON; the rest of the cell is kept (scripts/grade_cells.py). The runner logs those lines to a
descriptor only this process reads. After the run, this process, which ran none of the submission's code, judges
each plain answer against the stored value with :func:`socm_lib.course.judge_entry`: the same verdict and the same
line as the practice check (or, with ``--feedback verdict``, right or wrong only). So patched builtins, numpy or
``socm_lib``, an answer object with its own ``__eq__``, or forged output can only change the submission's own
answers, never the expected ones nor the comparison.

A batch never stops on one submission: a notebook that cannot be opened or read (a link on its path, too large,
not JSON), a run that reaches a limit or kills its kernel with any signal, each gives that submission a record
saying why (0 points for what could not be judged). ``--jobs N`` grades N submissions at once, each in its own
sandbox, each on one thread (``OMP_NUM_THREADS=1`` and the BLAS libraries' equivalents); it is refused when N runs'
memory budgets exceed the memory this machine has free. Records are named after the submissions' paths (below
their common folder) and written as scripts/grade_files.py says; every string in a record, and so everything
printed, is safe text (scripts/safe_text.py): no control character, escape sequence or HTML tag of a student's
reaches a terminal, a log or a page, and none is longer than a stated length. A record holds the submission's path,
the score, each task's verdict line and points, why the run stopped if it did, the cells that raised (class and
message, cut short), notes on checks that were not graded where they were written, the limits, which bounds held
and how, what the kernel counted for the run, the kernel's peak resident memory, and the seconds the run took
(wall, and CPU of all its processes). Needs Linux with bubblewrap (``bwrap``), util-linux and libseccomp; elsewhere
it refuses to grade and says what is missing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

sys.path.insert(0, str(Path(__file__).resolve().parent))
import editions  # noqa: E402  (scripts/editions.py: the files the notebooks read)
import grade_cells  # noqa: E402
import grade_files  # noqa: E402
import sandbox  # noqa: E402
from grade_files import Unreadable  # noqa: E402
from grade_runner import MAX_LOG  # noqa: E402
from safe_text import safe_record  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RUNNER = Path(__file__).resolve().parent / "grade_runner.py"
MEASURED = ROOT / "notebooks" / "grading.json"
MARK = "SOCM-ANSWER"
KIT = "/kit"  # the submission's folder, as the sandbox sees it
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                     "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")}
MAX_SUBMISSION = 20_000_000  # bytes of a submitted notebook, checked before it is read
MAX_RESULT = MAX_LOG + 1_000_000  # bytes of the runner's log
FEEDBACK = ("hints", "verdict")
#: The default wall time of a run: this many times the slowest measured run of its lab, plus a minute, rounded up
#: to the next TIME_STEP seconds.
TIME_MARGIN, TIME_EXTRA, TIME_STEP = 4, 60, 10
#: The default memory budget of a run: this many times its lab's measured peak, rounded up to the next MEMORY_STEP
#: MB, at least MIN_MEMORY_MB.
MEMORY_MARGIN, MEMORY_STEP, MIN_MEMORY_MB = 2, 256, 2048
UNMEASURED = {"timeout": 3600, "memory_mb": 8192}


def _capture() -> str:
    """The first cell of a graded run: :func:`socm_lib.course.answers.plain_answer`, from its own source, in a
    namespace of its own (no import of the library, no name of the student's touched), and the reporting function
    each check is replaced by. An answer leaves the kernel only as that plain form, in JSON, on one line."""
    from socm_lib.course import answers

    source = Path(answers.__file__).read_text(encoding="utf-8")
    return f'''import json as _socm_json, sys as _socm_sys
_socm_rule = {{}}
exec(compile({source!r}, "socm_lib/course/answers.py", "exec"), _socm_rule)
_socm_out = _socm_sys.stdout

def _socm_report(task_id, name, namespace):
    try:
        text = _socm_json.dumps(_socm_rule["plain_answer"](namespace.get(name)))
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


def lab_defaults(lab: str) -> tuple[int, int, dict[str, str]]:
    """The default wall time (s) and memory budget (MB) of one run of ``lab``, and how each was set: from
    notebooks/grading.json, :data:`TIME_MARGIN` times the slowest measured run plus :data:`TIME_EXTRA` seconds
    (to the next :data:`TIME_STEP` s), and :data:`MEMORY_MARGIN` times the measured peak (to the next
    :data:`MEMORY_STEP` MB, at least :data:`MIN_MEMORY_MB`); for a lab not measured there, :data:`UNMEASURED`."""
    try:
        measured = json.loads(MEASURED.read_text(encoding="utf-8"))["labs"][lab]
        runs = [measured[k] for k in ("unanswered", "solved", "at_once") if k in measured]
        slowest = max(r["seconds"]["max"] for r in runs)
        peak = max(r["memory_peak_mb"] for r in runs)
    except (OSError, ValueError, KeyError, TypeError):
        unmeasured = "the default of a lab not measured in notebooks/grading.json"
        return UNMEASURED["timeout"], UNMEASURED["memory_mb"], {"time": unmeasured, "memory": unmeasured}
    timeout = math.ceil((TIME_MARGIN * slowest + TIME_EXTRA) / TIME_STEP) * TIME_STEP
    memory = max(MIN_MEMORY_MB, math.ceil(MEMORY_MARGIN * peak / MEMORY_STEP) * MEMORY_STEP)
    return timeout, memory, {
        "time": f"{TIME_MARGIN} x the slowest run measured in notebooks/grading.json ({slowest} s) + {TIME_EXTRA} s, "
                f"rounded up to the next {TIME_STEP} s",
        "memory": f"{MEMORY_MARGIN} x the peak measured in notebooks/grading.json ({peak} MB), rounded up to the "
                  f"next {MEMORY_STEP} MB"}


def settings(lab: str, timeout: int | None = None, limits: sandbox.Limits | None = None,
             memory_mb: int | None = None) -> tuple[int, sandbox.Limits, str]:
    """The wall time and limits of a run of ``lab``, and how they were set (the lab's defaults for those equal to
    them): those given, else the lab's defaults (:func:`lab_defaults`); a limit of CPU seconds per process not given
    is the wall time."""
    default_timeout, default_memory, how = lab_defaults(lab)
    timeout = timeout or default_timeout
    if limits is None:
        limits = sandbox.Limits(memory_mb=memory_mb or default_memory, cpu_seconds=timeout)
    defaulted = [f"{name}: {how[name]}" for name, value, default in (("time", timeout, default_timeout),
                                                                     ("memory", limits.memory_mb, default_memory))
                 if value == default]
    return timeout, limits, "; ".join(defaulted) or "as given"


def read_submission(fd: int) -> list[tuple[int, str]]:
    """The code cells of the submitted notebook open at ``fd`` (closed here), as ``(number, source)`` with every cell
    counted from 1: at most :data:`MAX_SUBMISSION` bytes (its size is checked before anything is read), JSON of a
    notebook. Raises :class:`Unreadable` saying why not."""
    with os.fdopen(fd, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size > MAX_SUBMISSION:
            raise Unreadable(f"it is larger than {MAX_SUBMISSION // 1_000_000} MB ({size:,} bytes)")
        data = file.read(MAX_SUBMISSION + 1)
    if len(data) > MAX_SUBMISSION:
        raise Unreadable(f"it is larger than {MAX_SUBMISSION // 1_000_000} MB")
    try:
        nb = json.loads(data)
    except Exception as error:  # not UTF-8, not JSON, nested too deep
        raise Unreadable(f"it is not JSON ({type(error).__name__})") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        raise Unreadable("it is not a notebook of format 4 (no list of cells)")
    code = []
    for number, cell in enumerate(cells, start=1):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise Unreadable(f"its cell {number} has no source text")
        code.append((number, source))
    return code


def _layout() -> sandbox.Layout:
    """The sandbox of one submission: ``/kit``, laid out like the student kit."""
    import socm_lib
    from socm_lib import e5_4bit

    library = Path(socm_lib.__file__).parent
    recipes = sorted(p.name for p in (library / "course").glob("nb[0-9][0-9].py"))
    read_only = [(library, f"{KIT}/socm_lib"), (RUNNER, f"{sandbox.GRADER_DIR}/grade_runner.py")]
    data = [p for pattern in editions.DATA_FILES for p in sorted(ROOT.glob(pattern))]
    read_only += [(p, f"{KIT}/{p.relative_to(ROOT)}") for p in data]
    cache = e5_4bit.cache_root()  # dequantised E5 models, read-only: built once, not per run
    models = [m for m in sorted(cache.iterdir()) if m.is_dir()] if cache.is_dir() else []
    read_only += [(m, f"{KIT}/home/e5/{m.name}") for m in models]
    home = f"{KIT}/home"
    env = {**ONE_THREAD, "PATH": f"{Path(sandbox.PYTHON).parent}:/usr/local/bin:/usr/bin:/bin", "HOME": home,
           "USER": "student", "LOGNAME": "student", "LANG": "C.UTF-8", "PYTHONPATH": KIT, "PYTHONNOUSERSITE": "1",
           "PYTHONDONTWRITEBYTECODE": "1", "IPYTHONDIR": f"{home}/ipython", "JUPYTER_RUNTIME_DIR": f"{home}/runtime",
           "MPLCONFIGDIR": f"{home}/mpl", "XDG_CACHE_HOME": f"{home}/cache", "TMPDIR": "/tmp",
           "TOKENIZERS_PARALLELISM": "false", e5_4bit.CACHE_ENV: f"{home}/e5"}
    hidden = [f"{KIT}/socm_lib/course/__pycache__"] if (library / "course" / "__pycache__").is_dir() else []
    return sandbox.Layout(writable=[KIT, f"{KIT}/notebooks", home, f"{home}/e5"], read_only=read_only, env=env,
                          cwd=f"{KIT}/notebooks", hidden_files=[f"{KIT}/socm_lib/course/{name}" for name in recipes],
                          hidden_folders=hidden)


def read_result(fd: int) -> tuple[dict | None, str]:
    """The runner's log (scripts/grade_runner.py) at ``fd``, replayed: at most :data:`MAX_RESULT` bytes (its size
    checked before it is read), each complete line JSON of the runner's events, checked field by field. Returns
    ``(result, "")`` or ``(None, why)``; ``result`` holds ``done``, ``running`` (None once the last cell is done),
    ``peak_mb``, ``lines`` (the marked line of each reporting cell), ``errors``, ``stop``."""
    size = os.fstat(fd).st_size
    if size > MAX_RESULT:
        return None, f"the results are larger than {MAX_RESULT // 1_000_000} MB"
    data = os.pread(fd, size, 0)
    if not data:
        return None, "the run wrote no results"
    result = {"done": 0, "running": None, "peak_mb": 0, "lines": {}, "errors": [], "stop": None}
    ended = False
    try:
        for line in data.split(b"\n")[:-1]:  # a line cut short by the end of the run is left out
            ended = _replay(result, json.loads(line)) or ended
    except Exception:  # not JSON, or not of the runner's shape
        return None, "the results are garbled"
    if ended and result["stop"] is None:
        result["running"] = None
    return result, ""


def _replay(result: dict, event) -> bool:
    """Apply one logged event to ``result``; True for the end of the run. Raises for anything not of its shape."""
    def integer(x, allow_none=False):
        if (x is None and allow_none) or (isinstance(x, int) and not isinstance(x, bool)):
            return x
        raise TypeError("not an integer")

    if not (isinstance(event, dict) and len(event) in (1, 2)):
        raise TypeError("not an event")
    if "running" in event:
        result["running"] = integer(event["running"])
    elif "done" in event:
        result["done"], result["peak_mb"] = integer(event["done"]), integer(event["peak_mb"])
    elif "line" in event:
        index, text = event["line"]
        if not isinstance(text, str):
            raise TypeError("a line that is not text")
        result["lines"][integer(index)] = text
    elif "error" in event:
        index, name, message = event["error"]
        if not (isinstance(name, str) and isinstance(message, str)):
            raise TypeError("an error that is not [cell, class, message]")
        result["errors"].append([integer(index), name, message])
    elif "stop" in event:
        stop = event["stop"]
        if not (isinstance(stop, dict) and isinstance(stop.get("reason"), str)):
            raise TypeError("a stop without its reason")
        integer(stop.get("cell"), allow_none=True), integer(stop.get("exit"), allow_none=True)
        result["stop"] = stop
    elif event != {"end": True}:
        raise TypeError("an unknown event")
    return event == {"end": True}


def _answers(result: dict, reports: dict[int, str]) -> dict[str, object]:
    """The plain answer each reporting cell printed, read back from JSON (a task checked twice: the later check)."""
    from socm_lib.course import plain_answer

    answers = {}
    for index, task_id in sorted(reports.items()):
        parts = result["lines"].get(index, "").split(" ", 2)
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


def signal_name(number: int) -> str:
    """A signal's name (``SIGKILL``, ``SIGRTMIN+6``, or its number for one this machine does not know)."""
    try:
        return signal.Signals(number).name
    except ValueError:
        if signal.SIGRTMIN <= number <= signal.SIGRTMAX:
            return f"SIGRTMIN+{number - signal.SIGRTMIN}"
        return f"signal {number}"


def _stopped(result: dict | None, why: str, outcome: sandbox.Outcome, origin, options: dict) -> str:
    """Why the run ended before its last cell, in words ("" if it did not)."""
    running = result.get("running") if result else None
    memory = (f"the memory budget of {options['memory_mb']} MB for the whole run was reached (the kernel's "
              "out-of-memory killer ended a process of it)")
    out_of_memory = bool(outcome.counted.get("oom_kills"))
    if outcome.timed_out:
        return (f"the time limit of {options['timeout_s']} s for the whole submission was reached in "
                f"{_cell(origin, running)}")
    if result is None:
        return f"{memory}" if out_of_memory else f"the results could not be read: {why}"
    stop = result.get("stop")
    if stop is None:
        if running is None:
            return ""
        return f"{memory} in {_cell(origin, running)}" if out_of_memory else \
            f"the run ended unexpectedly in {_cell(origin, running)}"
    where = _cell(origin, stop.get("cell"))
    if stop["reason"] == "cell timeout":
        return f"the time limit of {options['cell_timeout_s']} s per cell was reached in {where}"
    if stop["reason"] == "kernel died":
        code = stop.get("exit")
        if out_of_memory:
            return f"{memory} in {where}"
        if code == -signal.SIGXCPU:
            return f"the CPU time limit of {options['cpu_s']} s per process was reached in {where}"
        if isinstance(code, int) and code < 0:
            return (f"the kernel died in {where} (signal {signal_name(-code)}; memory limit of "
                    f"{options['memory_mb']} MB?)")
        return f"the kernel died in {where} (exit status {code})"
    detail = str(stop.get("detail"))[:60]
    hint = ": was an output too large?" if detail == "MemoryError" else ""
    return f"the grader's runner stopped in {where} ({detail}{hint})"


def _error_line(origin, error: list, options: dict) -> str:
    """One cell's error as feedback: the cell, the class and the submission's own message, and the limit it shows."""
    index, name, message = error
    line = f"{_cell(origin, index)}: {name[:100]}: {message[:200]}"
    if "MemoryError" in name or "can't allocate memory" in message:
        return f"{line} (the memory limit of {options['memory_mb']} MB was reached)"
    if "File too large" in message:
        return f"{line} (the file size limit of {options['file_size_mb']} MB was reached)"
    if "No space left on device" in message:
        return (f"{line} (the limit of {options['disk_mb']} MB and {options['files']:,} files for all the run "
                "writes was reached)")
    if "Resource temporarily unavailable" in message and name in ("BlockingIOError", "OSError", "RuntimeError"):
        return f"{line} (the limit of {options['processes']} processes and threads was reached?)"
    return line


def judge(key: dict, answers: dict[str, object], reports: dict[int, str], result: dict | None,
          stopped: str) -> list[dict]:
    """Each task's verdict, from the stored key and the plain answers only; a task whose check the run never
    reached is not graded, and says why."""
    from socm_lib.course import judge_entry

    cells_of = {}
    for index, task_id in reports.items():
        cells_of.setdefault(task_id, []).append(index)
    failed = {e[0]: f"{e[1][:100]}: {e[2][:200]}" for e in (result or {}).get("errors", [])}
    done = result["done"] if result else 0
    tasks = []
    for task_id, entry in sorted(key["tasks"].items()):
        reached = [i for i in cells_of.get(task_id, []) if i < done or i in failed]
        if reached and task_id not in answers:
            index = reached[-1]
            status = "malformed"
            said = f"raised {failed[index]}." if index in failed else "printed nothing (was sys.stdout replaced?)."
            line = f"{task_id}: malformed. Your answer could not be read: its check cell {said}"
        elif task_id not in answers and stopped:
            status, line = "not run", f"{task_id}: not graded: {stopped}."
        else:  # answered, or the notebook has no check for it and ran to its end
            verdict = judge_entry(task_id, entry, answers.get(task_id))
            status, line = verdict.status, verdict.line()
        points = entry["points"] if status == "right" else 0
        tasks.append({"task": task_id, "status": status, "line": line, "points": points, "max_points": entry["points"]})
    return tasks


def verdict_only(task: dict) -> dict:
    """A task's feedback cut to right or wrong (``--feedback verdict``): no hint, no "close", no form expected."""
    if task["status"] == "not run":
        return task
    status = {"close": "wrong"}.get(task["status"], task["status"])
    word = {"unanswered": "not answered"}.get(status, status)
    return {**task, "status": status, "line": f"{task['task']}: {word}."}


@lru_cache(maxsize=1)
def _refusal() -> str | None:
    return sandbox.unavailable()


def grade(key: dict, submission: Path, cell_timeout: int | None = None, timeout: int | None = None,
          limits: sandbox.Limits | None = None, feedback: str = "hints", top: Path | None = None) -> dict:
    """Grade one submitted notebook; return its record. ``timeout`` (s) and ``limits`` default to the lab's
    (:func:`settings`), ``cell_timeout`` to ``timeout``; ``top``, the folder below which no link is followed to the
    submission (default: its own folder). Never raises for what the submission is or does (the record says what
    happened); raises RuntimeError where this machine cannot isolate a submission."""
    refusal = _refusal()
    if refusal:
        raise RuntimeError(refusal)
    if feedback not in FEEDBACK:
        raise ValueError(f"feedback must be one of {FEEDBACK}; got {feedback!r}.")
    timeout, limits, how = settings(key["lab"], timeout, limits)
    cell_timeout = min(cell_timeout or timeout, timeout)
    options = {"cell_timeout_s": cell_timeout, "timeout_s": timeout, "cpu_s": limits.cpu_seconds,
               "memory_mb": limits.memory_mb, "processes": limits.processes, "cores": limits.cores,
               "file_size_mb": limits.file_size_mb, "disk_mb": limits.disk_mb, "files": limits.files,
               "defaults": how}
    record = {"submission": os.fsdecode(submission), "lab": key["lab"], "limits": options, "threads": 1,
              "feedback": feedback}
    try:
        fd = grade_files.open_submission(submission, top or grade_files.common_folder([submission]))
        prepared = grade_cells.prepare(read_submission(fd), _capture())
    except Unreadable as why:
        reason = f"the notebook could not be read: {why}"
        return _finished(record, judge(key, {}, {}, None, reason), reason, [], None, [], feedback)
    nb = new_notebook(cells=[new_code_cell(s) for s in prepared.sources], metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}})
    notebook_fd, result_fd = os.memfd_create("submission"), os.memfd_create("results")
    try:
        os.write(notebook_fd, nbformat.writes(nb).encode("utf-8"))
        os.lseek(notebook_fd, 0, os.SEEK_SET)
        runner = [sandbox.PYTHON, f"{sandbox.GRADER_DIR}/grade_runner.py", "--notebook-fd", str(notebook_fd),
                  "--result-fd", str(result_fd), "--cell-timeout", str(cell_timeout), "--mark", MARK,
                  "--report-cells", ",".join(map(str, prepared.reports))]
        outcome = sandbox.run(_layout(), limits, runner, timeout, pass_fds=(notebook_fd, result_fd))
        result, why = read_result(result_fd)
    finally:
        os.close(notebook_fd)
        os.close(result_fd)
    origin = prepared.origin
    stopped = _stopped(result, why, outcome, origin, options)
    answers = _answers(result, prepared.reports) if result else {}
    errors = [_error_line(origin, e, options) for e in (result or {}).get("errors", []) if e[0] not in prepared.reports]
    record["memory_peak_mb"] = result["peak_mb"] if result else None  # the kernel's, as the runner measured it
    tasks = judge(key, answers, prepared.reports, result, stopped)
    return _finished(record, tasks, stopped, errors, outcome, prepared.notes, feedback)


def _finished(record: dict, tasks: list[dict], stopped: str, errors: list[str], outcome, notes: list[str],
              feedback: str) -> dict:
    """The whole record, every string in it safe text (scripts/safe_text.py)."""
    if feedback == "verdict":
        tasks = [verdict_only(t) for t in tasks]
    return safe_record({
        **record, "score": sum(t["points"] for t in tasks), "max_score": sum(t["max_points"] for t in tasks),
        "tasks": tasks, "stopped": stopped or None, "errors": errors, "notes": notes,
        "seconds": round(outcome.seconds, 1) if outcome else 0.0,
        "cpu_seconds": round(outcome.cpu_seconds, 1) if outcome else 0.0,
        "memory_peak_mb": record.get("memory_peak_mb"),
        "counted": outcome.counted if outcome else {}, "isolation": outcome.bounds if outcome else {},
        "uid": outcome.uid if outcome else None})


def available_memory_mb() -> int:
    """The memory this machine has available now (``MemAvailable``), in MB."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    raise RuntimeError("/proc/meminfo says no MemAvailable")


def check_jobs(jobs: int, limits: sandbox.Limits) -> None:
    """Raise ValueError unless ``jobs`` runs at once fit this machine's available memory, each with all it may take
    (:func:`sandbox.memory_per_run_mb`)."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a whole number of at least 1; got {jobs!r}.")
    each = sandbox.memory_per_run_mb(limits)
    need, available = jobs * each, available_memory_mb()
    if need > available:
        raise ValueError(f"--jobs {jobs}: {jobs} runs of {each:,} MB each need {need:,} MB, and "
                         f"this machine has {available:,} MB available; give fewer --jobs or a smaller --memory.")


def grade_all(key: dict, submissions: list[Path], out: Path, jobs: int = 1, **options) -> list[dict]:
    """Grade every submission, ``jobs`` at once, writing each record to its own file under ``out`` as soon as it is
    ready (and printing its score); a submission the grader itself fails on still gets a record. Returns the
    records in the order of ``submissions``. ``options`` are :func:`grade`'s. Stopped (Ctrl-C, SIGTERM), it kills
    every run under way before it goes."""
    refusal = _refusal()
    if refusal:
        raise RuntimeError(refusal)
    unique = list(dict.fromkeys(submissions))
    grade_files.check_out(out, unique)
    options.setdefault("limits", settings(key["lab"], options.get("timeout"))[1])
    check_jobs(jobs, options["limits"])
    names, top = grade_files.record_names(unique), grade_files.common_folder(unique)

    def one(submission: Path) -> dict:
        try:
            record = grade(key, submission, top=top, **options)
        except Exception as error:  # a fault of this grader's: that submission's record says so, the batch goes on
            reason = f"the grader failed on this submission ({type(error).__name__})"
            record = _finished({"submission": os.fsdecode(submission), "lab": key["lab"]},
                               judge(key, {}, {}, None, reason), reason, [], None, [], "hints")
        grade_files.write_record(out, names[submission], json.dumps(record, indent=1) + "\n")
        lines = [f"{record['submission']}: {record['score']}/{record['max_score']} in {record['seconds']} s"
                 + (f" ({record['stopped']})" if record["stopped"] else "")]
        print("\n".join(lines + ["  " + task["line"] for task in record["tasks"]]), flush=True)
        return record

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(one, s) for s in unique]
        try:
            return [future.result() for future in futures]
        except BaseException:
            for future in futures:
                future.cancel()
            sandbox.stop_all()
            raise


def _stop_on_signal(number, frame) -> None:
    raise SystemExit(128 + number)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0], allow_abbrev=False)
    parser.add_argument("submissions", nargs="*", type=Path,
                        help="the students' notebooks (an argument naming an existing file is always one)")
    parser.add_argument("--key", type=Path, help="the assignment's autograder zip (or its <lab>-key.json)")
    parser.add_argument("--out", type=Path, help="folder for the records, not inside the submissions' folder: "
                                                 "<path below the submissions' common folder>.json each")
    parser.add_argument("--jobs", type=int, default=1, help="submissions graded at once, each in its own sandbox on "
                                                            "one thread (at most the machine's cores; default 1)")
    parser.add_argument("--feedback", choices=FEEDBACK, default="hints",
                        help="hints: the practice check's line (right; close; wrong, with the task's hint); "
                             "verdict: right or wrong only")
    parser.add_argument("--timeout", type=int, help="seconds one submission may run (default: from the lab's "
                                                    f"measured time, {TIME_MARGIN} x its slowest run + {TIME_EXTRA} s, "
                                                    f"rounded up to the next {TIME_STEP} s)")
    parser.add_argument("--cell-timeout", type=int, help="seconds one cell may run (default: --timeout)")
    defaults = sandbox.Limits()
    parser.add_argument("--memory", type=int, help=f"MB of memory for one whole submission (default: {MEMORY_MARGIN} "
                                                   f"x the lab's measured peak, rounded up to the next "
                                                   f"{MEMORY_STEP} MB, at least {MIN_MEMORY_MB})")
    parser.add_argument("--cpu-time", type=int, help="CPU seconds one process may use (default: --timeout)")
    parser.add_argument("--processes", type=int, default=defaults.processes,
                        help=f"processes and threads of one submission (default {defaults.processes})")
    parser.add_argument("--file-size", type=int, default=defaults.file_size_mb,
                        help=f"MB of one file a submission writes (default {defaults.file_size_mb})")
    parser.add_argument("--disk", type=int, default=defaults.disk_mb,
                        help=f"MB a submission may write in all, in memory (default {defaults.disk_mb})")
    parser.add_argument("--files", type=int, default=defaults.files,
                        help=f"files and folders a submission may make (default {defaults.files})")
    takes_value = {a for action in parser._actions for a in action.option_strings if action.nargs != 0}
    args = parser.parse_args(grade_files.split_arguments(sys.argv[1:] if argv is None else argv, takes_value))
    if not (args.key and args.out and args.submissions):
        parser.error("give --key, --out and at least one submitted notebook")
    for number in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(number, _stop_on_signal)
    key = read_key(args.key)
    try:
        timeout, lab_limits, _ = settings(key["lab"], args.timeout, memory_mb=args.memory)
        limits = sandbox.Limits(memory_mb=lab_limits.memory_mb, cpu_seconds=args.cpu_time or timeout,
                                processes=args.processes, file_size_mb=args.file_size, disk_mb=args.disk,
                                files=args.files)
        grade_all(key, args.submissions, args.out, args.jobs, cell_timeout=args.cell_timeout, timeout=timeout,
                  limits=limits, feedback=args.feedback)
    except ValueError as error:
        parser.error(str(error))
    except RuntimeError as refusal:
        parser.exit(2, f"{refusal}\n")


if __name__ == "__main__":
    main()
