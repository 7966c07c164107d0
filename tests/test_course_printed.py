"""No graded task is answered by the notebook itself: no number a notebook shows outside its solutions (the outputs of
its cells, its glued values as the prose formats them, its Markdown) is judged right by the task's own check.

A task with a check cell earns points when its answer is right (``scripts/grade.py``); if the notebook already
prints that answer above the task, the points go for copying. This reads the committed outputs, so after a task's
inputs change it passes only once the notebook has been executed again.

Number and array tasks only: whole numbers and option names are printed everywhere (a count of 13 tokens, an
encoder's name) without giving anything away. A printed number gives an answer when it agrees with the expected
value to every digit it shows and the check judges it right; an array answer of k numbers is looked for among any k
numbers printed in a row.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from notebook_cells import NOTEBOOKS, ids, read, tags
from socm_lib import course

#: Tasks that read a figure off the page by design, each with its reason.
LOOKUPS = {
    "nb09.1": "a timing ratio read from the committed benchmark results: it cannot be recomputed on a student's machine",
    "nb09.2": "a share of the time read from the committed benchmark profile, for the same reason",
}
NUMBER = re.compile(r"(?<![\w.])[-−]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+−]?\d+)?(?![\w])")
GLUE = re.compile(r"\{glue(?::text)?\}`([^:`]+)(?::([^`]+))?`")


def numbers(text: str) -> list[tuple[float, float]]:
    """Every number written in ``text`` ("0.0959", "5.9690e-03", "-0.02", "28.5"), in order, each with half a unit
    of its last digit (the rounding it may carry)."""
    found = []
    for m in NUMBER.finditer(text):
        written = m.group(0).replace("−", "-")
        mantissa, _, exponent = written.lower().partition("e")
        decimals = len(mantissa.partition(".")[2])
        found.append((float(written), 0.5 * 10.0 ** (int(exponent or 0) - decimals)))
    return found


def glued_values(notebook) -> dict[str, str]:
    """``name -> text/plain`` of every value the notebook glues."""
    values = {}
    for cell in notebook.cells:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                values[name] = out["data"].get("application/papermill.record/text/plain", "")
    return values


def shown_texts(path) -> list[str]:
    """What a reader of the notebook sees outside its solution cells: each output's text, and each Markdown cell with
    its glue roles replaced by the values as formatted there."""
    from myst_nb.core.variables import format_plain_text

    notebook = read(path)
    values = glued_values(notebook)
    texts = []
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            texts.append(GLUE.sub(lambda m: format_plain_text(values[m.group(1)], m.group(2) or "")
                                  if m.group(1) in values else "", cell.source))  # a value not glued shows nothing
        elif "solution" not in tags(cell):
            for out in cell.get("outputs", []):
                if out.get("metadata", {}).get("scrapbook"):
                    continue  # a glued value shows where the prose uses it, formatted there
                texts.append(out.get("text") or out.get("data", {}).get("text/plain", ""))
    return texts


def answering(task, texts: list[str]) -> list[str]:
    """The printed numbers (or runs of numbers, for an array answer) that give the task's answer: each agrees with
    the expected value to every digit it shows, and the task's check judges it right. A number that only falls within
    the task's tolerance (another quantity of about the same size) gives nothing away and does not count."""
    expected = np.atleast_1d(np.asarray(course._expected(task.id), dtype=float))
    k, found = expected.size, []
    for text in texts:
        printed = numbers(text)
        values = np.array([value for value, _ in printed])
        halves = np.array([half for _, half in printed])
        for start in range(len(printed) - k + 1):
            run, half = values[start:start + k], halves[start:start + k]
            if np.all(np.abs(run - expected) <= half * (1 + 1e-9) + 1e-12 * np.abs(expected)):
                answer = float(run[0]) if task.kind == "number" else run.tolist()
                if course.verdict(task.id, answer).status == "right":
                    found.append(str(answer))
    return found


def test_numbers_are_read_as_printed():
    read = numbers("[0.0959, 0.1153], shift 5.9690e-03, nb02.2: right, -0.0214 and 28.5; 19,900")
    assert [value for value, _ in read] == [0.0959, 0.1153, 5.969e-3, -0.0214, 28.5, 19, 900]
    assert [half for _, half in read] == pytest.approx([5e-5, 5e-5, 5e-8, 5e-5, 0.05, 0.5, 0.5])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids())
def test_no_printed_number_answers_a_task(path):
    tasks = [t for t in course.all_tasks([path.stem[:4]]) if t.kind in ("number", "array") and t.id not in LOOKUPS]
    texts = shown_texts(path)
    given = {t.id: found for t in tasks if (found := answering(t, texts))}
    assert not given, (f"{path.stem} shows the answers of its graded tasks outside their solutions: {given}; change "
                       "the task's inputs (another pair, sample, level or order) in socm_lib/course and the notebook")
