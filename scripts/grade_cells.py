"""The cells a graded run executes: the submission's code cells as they are, except that each practice check,
``check("nbXX.k", answer)`` written as a statement of its own at the top level of a cell, is replaced by a cell that
reports that ``answer`` to the grader. The rest of the cell is kept, in order, so what is graded is what the student
practised: in ``answer = 0.25; check("nb01.1", answer)`` the report sees 0.25.

A cell is read as IPython reads it (its magics and shell escapes turned into Python first) and parsed with
:mod:`ast`, so a check in a comment, a string, a loop, a function or a condition is not taken for one; such a
hidden check, and one in a cell that does not parse, is not graded there and gets a note saying so.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

#: A check's call as text, wherever it is (comments and strings included): to find the ones that are not statements.
CHECK_TEXT = re.compile(r"""check\(\s*["'](nb\d\d\.\d+)["']""")
TASK_ID = re.compile(r"nb\d\d\.\d+")


@dataclass
class Prepared:
    """The cells to run (``sources``), the report cells' task ids by index, each cell's number in the submission
    (counting every cell from 1; None for the grader's own cells), and notes for the record."""

    sources: list[str] = field(default_factory=list)
    reports: dict[int, str] = field(default_factory=dict)
    origin: list[int | None] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, source: str, number: int | None, task_id: str | None = None) -> None:
        if task_id is not None:
            self.reports[len(self.sources)] = task_id
        self.sources.append(source)
        self.origin.append(number)


def _python(source: str) -> str:
    """A cell as the kernel runs it: IPython's magics (``%time``, ``!pip``) turned into Python."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def _check(statement: ast.stmt) -> tuple[str, str] | None:
    """``(task id, name)`` if ``statement`` is ``check("nbXX.k", name)`` (or ``<module>.check(...)``)."""
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return None
    call = statement.value
    named = (isinstance(call.func, ast.Name) and call.func.id == "check") or (
        isinstance(call.func, ast.Attribute) and call.func.attr == "check")
    if not (named and len(call.args) == 2 and not call.keywords):
        return None
    task, answer = call.args
    if isinstance(task, ast.Constant) and isinstance(task.value, str) and TASK_ID.fullmatch(task.value) and \
            isinstance(answer, ast.Name):
        return task.value, answer.id
    return None


def split(source: str) -> list[tuple[str, tuple[str, str] | None]] | None:
    """The cell as pieces in order: ``(code, None)`` for code kept, ``("", (task id, name))`` for each check
    statement at its top level; None if the cell does not parse."""
    try:
        code = _python(source)
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    lines = code.encode("utf-8").splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    data = code.encode("utf-8")

    def offset(line: int, column: int) -> int:  # ast's columns count UTF-8 bytes
        return starts[line - 1] + column

    pieces, at = [], 0
    for statement in tree.body:
        found = _check(statement)
        if found is None:
            continue
        pieces.append((data[at:offset(statement.lineno, statement.col_offset)].decode("utf-8"), None))
        pieces.append(("", found))
        at = offset(statement.end_lineno, statement.end_col_offset)
    pieces.append((data[at:].decode("utf-8"), None))
    kept = []
    for text, found in pieces:
        text = text.lstrip(" \t;") if found is None else text
        if found is not None or text.strip():
            kept.append((text, found))
    return kept


def checks(source: str) -> list[str]:
    """The task ids of the check statements at the top level of a cell, in order."""
    return [found[0] for _, found in split(source) or [] if found]


def prepare(code_cells: list[tuple[int, str]], capture: str) -> Prepared:
    """The cells of a graded run from the submission's code cells (``(number, source)``): ``capture`` first, then
    each cell, its check statements replaced by report cells."""
    prepared = Prepared()
    prepared.add(capture, None)
    for number, source in code_cells:
        pieces = split(source)
        graded = [found[0] for _, found in pieces or [] if found]
        for task_id in sorted(set(CHECK_TEXT.findall(source))):
            hidden = CHECK_TEXT.findall(source).count(task_id) - graded.count(task_id)
            if hidden > 0:
                where = ("the cell does not parse" if pieces is None else
                         "it is not a statement of its own at the top level of the cell (it is in a comment, a "
                         "string, a loop, a function or a condition)")
                prepared.notes.append(f"cell {number}: a check of {task_id} was not graded there: {where}.")
        if not graded:
            prepared.add(source, number)
            continue
        for text, found in pieces:
            if found is None:
                prepared.add(text, number)
            else:
                task_id, name = found
                prepared.add(f'_socm_report("{task_id}", "{name}", globals())', number, task_id)
    return prepared
