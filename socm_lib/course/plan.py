r"""Student working time of a lab, by the rule the teaching page states (course kit).

The times are estimates, not measurements: no class has been timed. A lab's time is

.. math:: t = \Big\lceil \frac{w}{r} \Big\rceil_{5} + \sum_{k \in \text{tasks}} m(\text{category}_k),

where :math:`w` is the number of words of the notebook's Markdown read (all of it before its "Your turn" section,
or the part a session reads), :math:`r` = :data:`WORDS_PER_MINUTE` (prose read with its cells run and their outputs
looked at), :math:`\lceil\cdot\rceil_5` rounds up to a multiple of 5 minutes, and :math:`m` gives 5, 15 or 30 minutes
to a task that is quick, needs thought or is open (:data:`TASK_MINUTES`). Each lab's task categories are
:data:`LAB_TASKS`; every task's heading in its notebook names the same category (``### Task 2: ... (needs
thought)``), which ``tests/test_course_plan.py`` checks.

A notebook is read as the JSON it is (no Jupyter package needed).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import NamedTuple

#: Minutes a task takes by its category.
TASK_MINUTES = {"quick": 5, "needs thought": 15, "open": 30}
#: Words of a notebook's prose read per minute, its cells run and their outputs looked at.
WORDS_PER_MINUTE = 60
#: Reading times are rounded up to a multiple of this many minutes.
ROUND_TO = 5
#: The category of each task of each lab, in task order.
LAB_TASKS = {
    "nb01": ("quick", "needs thought", "open"),
    "nb02": ("quick", "quick", "open"),
    "nb03": ("quick", "quick", "open"),
    "nb04": ("quick", "needs thought", "open", "quick"),
    "nb05": ("quick", "quick", "needs thought", "open"),
    "nb06": ("quick", "needs thought", "open"),
    "nb07": ("quick", "needs thought", "open"),
    "nb08": ("quick", "needs thought", "open"),
    "nb09": ("quick", "quick", "open"),
    "nb10": ("quick", "needs thought", "open"),
}


class Part(NamedTuple):
    """What a session works through of one lab: its tasks (numbered from 1), and the sections read, from the one
    whose title starts with ``start`` (None: the notebook's beginning) up to, not including, ``stop`` (None: the
    "Your turn" section)."""

    lab: str
    tasks: tuple[int, ...]
    start: str | None = None
    stop: str | None = None


#: The labs of each session of the teaching page (the optional project session has no lab of its own).
SESSIONS = {
    1: (Part("nb03", (1, 2, 3)),),
    2: (Part("nb01", (1, 2), stop="Four cases"),),
    3: (Part("nb02", (1, 2, 3)),),
    4: (Part("nb01", (3,), start="Four cases", stop="Transport lines"),),
    5: (Part("nb09", (1, 2, 3)), Part("nb10", (1, 2, 3))),
    6: (Part("nb06", (1, 2)),),
    7: (Part("nb04", (1, 2, 4)), Part("nb05", (1, 2, 3))),
}
#: The heading that starts a notebook's tasks; what follows it is the tasks' time, not reading time.
TASKS_HEADING = "## Your turn"
_WORD = re.compile(r"\S+")


def _markdown_cells(notebook: Path) -> list[str]:
    cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in cells if c["cell_type"] == "markdown"]


def _lab(notebook: Path) -> str:
    lab = Path(notebook).name[:4]
    if lab not in LAB_TASKS:
        raise ValueError(f"{Path(notebook).name} is not a lab of the course; the labs are {sorted(LAB_TASKS)}.")
    return lab


def reading_words(notebook, start: str | None = None, stop: str | None = None) -> int:
    """Words of the notebook's Markdown from the section whose title starts with ``start`` (default: the notebook's
    beginning) up to, not including, the section whose title starts with ``stop`` (default: its "Your turn")."""
    cells = _markdown_cells(notebook)
    titles = [line[3:].strip() for source in cells for line in source.splitlines() if line.startswith("## ")]
    for bound in (start, stop):
        if bound is not None and not any(title.startswith(bound) for title in titles):
            raise ValueError(f"{Path(notebook).name} has no section whose title starts with {bound!r}; its sections "
                             f"are {titles}.")
    stop = TASKS_HEADING[3:] if stop is None else stop
    words, reading = 0, start is None
    for source in cells:
        for line in source.splitlines():
            if line.startswith("## "):
                title = line[3:].strip()
                if title.startswith(stop):
                    return words
                reading = reading or title.startswith(start)
            if reading:
                words += len(_WORD.findall(line))
    return words


def reading_minutes(notebook, start: str | None = None, stop: str | None = None) -> int:
    """:func:`reading_words` at :data:`WORDS_PER_MINUTE`, rounded up to a multiple of :data:`ROUND_TO` minutes."""
    return ROUND_TO * math.ceil(reading_words(notebook, start, stop) / WORDS_PER_MINUTE / ROUND_TO)


def task_minutes(lab: str, tasks=None) -> int:
    """Minutes of the lab's tasks numbered ``tasks`` (from 1; all of them by default), by :data:`TASK_MINUTES`."""
    categories = LAB_TASKS[lab]
    tasks = range(1, len(categories) + 1) if tasks is None else tasks
    unknown = [k for k in tasks if not 1 <= k <= len(categories)]
    if unknown:
        raise ValueError(f"{lab} has tasks 1 to {len(categories)}; tasks {unknown} do not exist.")
    return sum(TASK_MINUTES[categories[k - 1]] for k in tasks)


def lab_minutes(notebook, tasks=None, start: str | None = None, stop: str | None = None) -> int:
    """The estimated student working time of a lab: :func:`reading_minutes` of the part read plus
    :func:`task_minutes` of the tasks worked."""
    return reading_minutes(notebook, start, stop) + task_minutes(_lab(notebook), tasks)


def duration(minutes: int) -> str:
    """``minutes`` as the teaching page writes a time: ``"45 min"``, ``"1 h"``, ``"2 h 25 min"``."""
    hours, rest = divmod(int(minutes), 60)
    return " ".join(part for part in (f"{hours} h" if hours else "", f"{rest} min" if rest or not hours else "")
                    if part)


def _lab_notebook(folder: Path, lab: str) -> Path:
    """The one notebook of ``lab`` (``<lab>_*.ipynb``) in ``folder``; a ``ValueError`` when there is none or several."""
    found = sorted(folder.glob(f"{lab}_*.ipynb"))
    if len(found) != 1:
        raise ValueError(f"{folder} holds {len(found)} notebooks of lab {lab}; one is needed.")
    return found[0]


def session_minutes(session: int, notebooks) -> int:
    """The estimated lab time of a session of :data:`SESSIONS`: the sum of :func:`lab_minutes` of its parts, the
    notebooks read from the folder ``notebooks``."""
    if session not in SESSIONS:
        raise ValueError(f"session must be one of {sorted(SESSIONS)}, got {session!r}.")
    folder = Path(notebooks)
    return sum(lab_minutes(_lab_notebook(folder, part.lab), part.tasks, part.start, part.stop)
               for part in SESSIONS[session])


def record(notebooks) -> dict:
    """Every figure of the teaching page's time estimates, from the labs in the folder ``notebooks``: the rule's
    constants, and for each lab its task categories, reading minutes, task minutes and total, and each session's
    lab time. ``scripts/run_notebooks.py`` writes it to ``notebooks/course_plan.json``, the record the teaching page
    reads (so that its editions, which carry their records but no notebooks, show the same table)."""
    folder = Path(notebooks)
    labs = {}
    for lab, categories in LAB_TASKS.items():
        notebook = _lab_notebook(folder, lab)
        labs[lab] = {"notebook": notebook.stem, "tasks": list(categories), "reading_min": reading_minutes(notebook),
                     "tasks_min": task_minutes(lab), "student_min": lab_minutes(notebook)}
    return {"words_per_minute": WORDS_PER_MINUTE, "round_to": ROUND_TO, "task_minutes": dict(TASK_MINUTES),
            "labs": labs, "sessions": {str(s): session_minutes(s, folder) for s in SESSIONS}}
