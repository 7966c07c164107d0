r"""Labs: check a student's answer to a task of a notebook's "Your turn" section (course kit).

Every notebook ends with two to four tasks. A task with a definite answer has an id such as
``"nb01.2"`` (notebook 1, task 2) and is registered in the module :mod:`socm_lib.course.nb01`, which
says how to *recompute* the expected value through the library, how close an answer must be, and
what hint to give after a wrong answer. In the notebook, a student writes ``answer = ...`` in the task
cell and runs the check cell::

    from socm_lib.course import check
    check("nb01.2", answer)

The registry is read with :func:`get_task` and :func:`all_tasks`; the expected values have no public function.

:func:`check` prints one line: right, close (within about 1 %: give more digits), wrong (with the hint) or
malformed (what form was expected). It never prints the expected value. :func:`verdict` returns the same
judgement as an object, for tests. ``check`` is for practice: it runs in the student's own kernel, where anything
can be changed, so it is no grade. Graded work goes through ``scripts/grade.py``, which never asks this library
for an expected value: the values were stored (:func:`key_entry`) when the assignment was built, and a separate
process judges the student's answer, read back as plain numbers or strings, against them (:func:`judge_entry`,
the same judgement and the same line as ``check``).

An answer is first turned into its plain form by :func:`~socm_lib.course.answers.plain_answer` (numbers, strings
and lists of them: a numpy scalar of any precision, ``np.matrix``, a torch tensor, a pandas ``Series`` or
``DataFrame``, a tuple, ``[[x]]`` all read as students mean them; whatever cannot be read says why), and only that
plain form is judged: the grader's kernel reports answers through the same function, so practice and grading
accept exactly the same answers. The form is judged first, so a malformed answer costs no computation; the
expected value is then computed once per process (cached) with progress bars off. A task's computation calls
the library as its notebook does (same encoder, device, texts and options), so after the notebook has run, the
library's caches of loaded encoders and token clouds (:mod:`socm_lib.memo`) spare it every load and forward pass.

Kinds of answer (``Task.kind``):

* ``"number"`` -- a real number, right when :math:`|a - e| \le \text{atol} + \text{rtol}\,|e|` (the precision
  :attr:`Task.precision` states, which the task's statement repeats), close when
  :math:`|a - e| \le \text{atol} + 0.01\,|e|`;
* ``"array"`` -- numbers of the expected shape, each within the same tolerance;
* ``"integer"`` -- an integer, right when equal;
* ``"choice"`` -- one of ``Task.options`` (a string, compared as a reader sees it: without case, Unicode NFC, spaces collapsed);
* ``"set"`` -- a collection of integers or strings, right when it holds exactly the expected elements.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..checks import text_form
from ..config import config_context
from .answers import plain_answer

KINDS = ("number", "array", "integer", "choice", "set")
CLOSE_RTOL = 0.01  # an answer this close, but outside the task's tolerance, is "close: give more digits"


@dataclass(frozen=True)
class Task:
    """One checkable task: its id, what is asked, how to recompute the answer, and how to judge one."""

    id: str
    question: str
    expected: Callable[[], object]  # recomputes the answer through socm_lib (called once, then cached)
    kind: str = "number"
    hint: str = ""
    rtol: float = 1e-6
    atol: float = 1e-9
    options: tuple[str, ...] = ()
    wrong_example: object = None  # a typical wrong answer; the tests check that it is rejected
    close_rtol: float = CLOSE_RTOL  # smaller where a typical mistake lands within 1 % (it must be judged wrong)

    @property
    def precision(self) -> str:
        """The precision a numeric answer needs, in words (the task's statement in the notebook repeats it)."""
        if self.kind not in ("number", "array"):
            return ""
        if self.rtol > 0:  # rounding to N significant digits errs by at most 5 * 10^-N relative
            digits = math.ceil(math.log10(5 / self.rtol) - 1e-9)
            return (f"Give {digits} significant digits (right within a relative error of {self.rtol:.0e}"
                    + (f" plus {self.atol:.0e}" if self.atol >= 1e-6 else "") + ").")
        if self.atol > 0:
            decimals = math.ceil(math.log10(0.5 / self.atol) - 1e-9)
            return f"Give {decimals} decimals (right within {self.atol:g})."
        return "Give the exact value."

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"Task {self.id!r} has kind {self.kind!r}; choose one of {KINDS}.")
        if self.kind == "choice" and not self.options:
            raise ValueError(f"Task {self.id!r} is a choice task and needs its options.")


@dataclass(frozen=True)
class Verdict:
    """The judgement of one answer: ``status`` is ``"right"``, ``"close"``, ``"wrong"``, ``"malformed"`` or ``"unanswered"``."""

    task_id: str
    status: str
    message: str = field(default="")

    def line(self) -> str:
        marks = {"right": "right", "close": "close", "wrong": "wrong", "malformed": "malformed",
                 "unanswered": "not answered yet"}
        text = f"{self.task_id}: {marks[self.status]}"
        return f"{text}. {self.message}" if self.message else f"{text}."


_TASKS: dict[str, Task] = {}


def register(*tasks: Task) -> None:
    """Add tasks to the registry (called by the modules ``socm_lib.course.nbXX``)."""
    for task in tasks:
        if task.id in _TASKS:
            raise ValueError(f"Task id {task.id!r} is registered twice.")
        _TASKS[task.id] = task


def get_task(task_id: str) -> Task:
    """The task registered under ``task_id`` (``"nbXX.k"``), importing its notebook's module on first use."""
    if not isinstance(task_id, str) or "." not in task_id:
        raise ValueError(f"A task id looks like 'nb01.2' (notebook, task number); got {task_id!r}.")
    if task_id not in _TASKS:
        module = task_id.split(".", 1)[0]
        try:
            importlib.import_module(f"{__name__}.{module}")
        except ModuleNotFoundError:
            raise ValueError(f"No tasks are defined for {module!r}; check the task id {task_id!r}.") from None
    if task_id not in _TASKS:
        known = sorted(t for t in _TASKS if t.startswith(task_id.split(".", 1)[0] + "."))
        raise ValueError(f"Unknown task {task_id!r}; the tasks of that notebook are {known}.")
    return _TASKS[task_id]


def all_tasks(notebooks: Iterable[str]) -> list[Task]:
    """Every registered task of the given notebook prefixes (e.g. ``["nb01", "nb02"]``), in id order."""
    for module in notebooks:
        importlib.import_module(f"{__name__}.{module}")
    prefixes = tuple(f"{m}." for m in notebooks)
    return [_TASKS[k] for k in sorted(_TASKS) if k.startswith(prefixes)]


@lru_cache(maxsize=None)
def _expected(task_id: str):
    """The expected answer of a task, recomputed through the library once per process (cached), progress bars off
    (a check prints one line, never a bar: :func:`socm_lib.config_context`)."""
    task = get_task(task_id)
    with config_context(progress=False):
        return task.expected()


def _numbers(x) -> np.ndarray | None:
    """A plain answer (:func:`plain_answer`) as a float64 array, or None if it is not numbers of one shape."""
    if isinstance(x, (str, bool, dict)) or x is None:
        return None
    try:
        a = np.asarray(x)
    except (TypeError, ValueError):  # lists of different lengths
        return None
    if a.dtype == object or a.dtype.kind not in "iuf":
        return None
    return a.astype(np.float64)


def _as_float(x) -> float | None:
    """One number held as a plain number, or a one-element (nested) list; else None."""
    a = _numbers(x)
    return float(a.reshape(-1)[0]) if a is not None and a.size == 1 else None


def _form(task: Task, answer):
    """The plain answer normalised for its kind, or ``(None, message)`` saying what form was expected."""
    kind = task.kind
    if isinstance(answer, dict):  # plain_answer could not read it
        return None, f"Your answer could not be read: {answer['unreadable']}. {_wanted(task)}"
    if kind == "number":
        a = _as_float(answer)
        if a is None or not math.isfinite(a):
            return None, _wanted(task)
        return a, ""
    if kind == "integer":
        a = _as_float(answer)
        if a is None or not float(a).is_integer():
            return None, _wanted(task)
        return int(a), ""
    if kind == "array":
        a = _numbers(answer)
        if a is None:
            return None, _wanted(task)
        if not np.isfinite(a).all():
            return None, "The array holds NaN or inf."
        return a, ""
    if kind == "choice":
        options = {_spelling(o) for o in task.options}
        if not isinstance(answer, str) or _spelling(answer) not in options:
            return None, _wanted(task)
        return _spelling(answer), ""
    # kind == "set"
    if not isinstance(answer, list):
        return None, _wanted(task)
    if not all(isinstance(x, str) or (_as_float(x) is not None and float(_as_float(x)).is_integer()) for x in answer):
        return None, "Items must be strings or whole numbers."
    return {_item(x) for x in answer}, ""


def _wanted(task: Task) -> str:
    """What an answer to ``task`` must look like, said when it does not."""
    return {"number": "Expected one finite real number (a float, a numpy scalar or a one-element tensor).",
            "integer": "Expected a whole number.", "array": "Expected an array of numbers.",
            "choice": f"Expected one of {list(task.options)}.",
            "set": "Expected a collection (list or set) of items."}[task.kind]


def _within(a, e, task: Task, rtol: float) -> bool:
    return bool(np.all(np.abs(a - e) <= task.atol + rtol * np.abs(e)))


def _judge(task: Task, a, expected) -> tuple[str, str]:
    """Judge an answer already in its normal form (:func:`_form`) against the expected value."""
    kind = task.kind
    if kind in ("number", "array"):
        e = np.asarray(expected, dtype=np.float64)
        if kind == "number":
            e = float(e)
        elif np.shape(a) != e.shape:
            return "malformed", f"Expected an array of shape {e.shape}, got shape {np.shape(a)}."
        if _within(a, e, task, task.rtol):
            return "right", ""
        if _within(a, e, task, max(task.rtol, task.close_rtol)):
            return "close", f"Give more digits. {task.precision}"
        return "wrong", task.hint
    if kind == "integer":
        return ("right", "") if a == int(expected) else ("wrong", task.hint)
    if kind == "choice":
        return ("right", "") if a == _spelling(str(expected)) else ("wrong", task.hint)
    return ("right", "") if a == {_item(x) for x in expected} else ("wrong", task.hint)


def _spelling(text: str) -> str:
    """A text answer as it is compared: as a reader sees it (:func:`socm_lib.checks.text_form`: NFC, one space for
    any run of whitespace, a no-break space included) and without case."""
    return text_form(text).lower()


def _item(x):
    """An element of a set answer, normalised: strings by :func:`_spelling`, numbers as ints."""
    return _spelling(x) if isinstance(x, str) else int(_as_float(x))


def _verdict(task: Task, answer, expected: Callable[[], object]) -> Verdict:
    """Judge ``answer`` to ``task`` by its plain form (:func:`plain_answer`); ``expected()`` is called only for an
    answer of the right form."""
    answer = plain_answer(answer)
    if answer is None:
        return Verdict(task.id, "unanswered", "Set `answer = ...` in the task cell above, run it, then run this cell.")
    normal, message = _form(task, answer)
    if normal is None:
        return Verdict(task.id, "malformed", message)
    status, message = _judge(task, normal, expected())
    return Verdict(task.id, status, message)


def verdict(task_id: str, answer) -> Verdict:
    """Judge ``answer`` to task ``task_id`` without printing anything. ``None`` means not answered yet.

    The form is judged before the expected value is computed (a malformed answer costs nothing).
    """
    return _verdict(get_task(task_id), answer, lambda: _expected(task_id))


def check(task_id: str, answer) -> None:
    """Print whether ``answer`` to task ``task_id`` is right, close, wrong (with a hint) or malformed."""
    print(verdict(task_id, answer).line())


def key_entry(task: Task) -> dict:
    """What grading needs to judge an answer to ``task``, as plain JSON: the expected value (computed here, through
    the library, when an assignment is built), the tolerances, the options and the hint."""
    value = _expected(task.id)
    if task.kind in ("number", "array"):
        value = np.asarray(value, dtype=np.float64).tolist()
    elif task.kind == "integer":
        value = int(value)
    elif task.kind == "choice":
        value = str(value)
    else:
        value = sorted({_item(x) for x in value}, key=str)
    return {"kind": task.kind, "expected": value, "rtol": task.rtol, "atol": task.atol, "close_rtol": task.close_rtol,
            "options": list(task.options), "hint": task.hint}


def judge_entry(task_id: str, entry: dict, answer) -> Verdict:
    """Judge an answer against a stored :func:`key_entry`: the verdict :func:`check` would give, computed from the
    stored value alone. A grader passes the plain form (:func:`plain_answer`) read back from a kernel as JSON; it
    is its own plain form, so it is judged exactly as the object it came from."""
    fields = ("kind", "rtol", "atol", "close_rtol", "hint")
    task = Task(id=task_id, question="", expected=lambda: entry["expected"], options=tuple(entry["options"]),
                **{k: entry[k] for k in fields})
    return _verdict(task, answer, task.expected)
