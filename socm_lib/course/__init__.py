r"""Labs: check a student's answer to a task of a notebook's "Your turn" section (course kit).

Every notebook ends with two to four tasks. A task with a definite answer has an id such as
``"nb01.2"`` (notebook 1, task 2) and is registered in the module :mod:`socm_lib.course.nb01`, which
says how to *recompute* the expected value through the library, how close an answer must be, and
what hint to give after a wrong answer. In the notebook, a student writes ``answer = ...`` in the task
cell and runs the check cell::

    from socm_lib.course import check
    check("nb01.2", answer)

:func:`check` prints one line: right, wrong (with the hint) or malformed (what form was expected). It
never prints the expected value. :func:`verdict` returns the same judgement as an object, for tests.

Kinds of answer (``Task.kind``):

* ``"number"`` -- a real number, right when :math:`|a - e| \le \text{atol} + \text{rtol}\,|e|`;
* ``"array"`` -- numbers of the expected shape, each within the same tolerance;
* ``"integer"`` -- an integer, right when equal;
* ``"choice"`` -- one of ``Task.options`` (a string, compared without case and surrounding spaces);
* ``"set"`` -- a collection of integers or strings, right when it holds exactly the expected elements.
"""

from __future__ import annotations

import importlib
import math
import numbers
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

KINDS = ("number", "array", "integer", "choice", "set")


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

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"Task {self.id!r} has kind {self.kind!r}; choose one of {KINDS}.")
        if self.kind == "choice" and not self.options:
            raise ValueError(f"Task {self.id!r} is a choice task and needs its options.")


@dataclass(frozen=True)
class Verdict:
    """The judgement of one answer: ``status`` is ``"right"``, ``"wrong"``, ``"malformed"`` or ``"unanswered"``."""

    task_id: str
    status: str
    message: str = field(default="")

    def line(self) -> str:
        marks = {"right": "right", "wrong": "wrong", "malformed": "malformed", "unanswered": "not answered yet"}
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
def expected_value(task_id: str):
    """The expected answer of a task, recomputed through the library (cached). For tests and instructors."""
    return get_task(task_id).expected()


def _as_float(x) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (numbers.Real, np.floating, np.integer)):
        if hasattr(x, "item") and getattr(x, "size", 0) == 1:  # 0-d arrays and tensors
            return _as_float(x.item())
        return None
    return float(x)


def _close(a: float, e: float, task: Task) -> bool:
    return abs(a - e) <= task.atol + task.rtol * abs(e)


def _judge(task: Task, answer, expected) -> tuple[str, str]:
    kind = task.kind
    if kind == "number":
        a = _as_float(answer)
        if a is None or not math.isfinite(a):
            return "malformed", "Expected one finite real number."
        return ("right", "") if _close(a, float(expected), task) else ("wrong", task.hint)
    if kind == "integer":
        a = _as_float(answer)
        if a is None or not float(a).is_integer():
            return "malformed", "Expected a whole number."
        return ("right", "") if int(a) == int(expected) else ("wrong", task.hint)
    if kind == "array":
        try:
            a = np.asarray(answer.detach().cpu() if hasattr(answer, "detach") else answer, dtype=np.float64)
        except (TypeError, ValueError):
            return "malformed", "Expected an array of numbers."
        e = np.asarray(expected, dtype=np.float64)
        if a.shape != e.shape:
            return "malformed", f"Expected an array of shape {e.shape}, got shape {a.shape}."
        if not np.isfinite(a).all():
            return "malformed", "The array holds NaN or inf."
        ok = np.abs(a - e) <= task.atol + task.rtol * np.abs(e)
        return ("right", "") if bool(ok.all()) else ("wrong", task.hint)
    if kind == "choice":
        options = {o.strip().lower(): o for o in task.options}
        if not isinstance(answer, str) or answer.strip().lower() not in options:
            return "malformed", f"Expected one of {list(task.options)}."
        return ("right", "") if answer.strip().lower() == str(expected).strip().lower() else ("wrong", task.hint)
    # kind == "set"
    if isinstance(answer, (str, bytes)) or not isinstance(answer, Iterable):
        return "malformed", "Expected a collection (list or set) of items."
    items = list(answer)
    if not all(isinstance(x, str) or (_as_float(x) is not None and float(_as_float(x)).is_integer()) for x in items):
        return "malformed", "Items must be strings or whole numbers."
    return ("right", "") if {_item(x) for x in items} == {_item(x) for x in expected} else ("wrong", task.hint)


def _item(x):
    """An element of a set answer, normalised: strings without case and spaces, numbers as ints."""
    return x.strip().lower() if isinstance(x, str) else int(_as_float(x))


def verdict(task_id: str, answer) -> Verdict:
    """Judge ``answer`` to task ``task_id`` without printing anything. ``None`` means not answered yet."""
    task = get_task(task_id)
    if answer is None or answer is Ellipsis:
        return Verdict(task_id, "unanswered", "Set `answer = ...` in the task cell above, run it, then run this cell.")
    status, message = _judge(task, answer, expected_value(task_id))
    return Verdict(task_id, status, message)


def check(task_id: str, answer) -> None:
    """Print whether ``answer`` to task ``task_id`` is right, wrong (with a hint) or malformed."""
    print(verdict(task_id, answer).line())
