"""Autograded assignments from the labs (otter-grader): one master notebook per lab, then ``otter assign``.

For a lab ``notebooks/nbXX_*.ipynb`` the master notebook holds an ``# ASSIGNMENT CONFIG`` cell, the lab's code
cells before its "Your turn" section (the setup the tasks use; the Colab install cell and the device report
left out), and one question per checked task: the task's statement, its solution cell between ``# BEGIN
SOLUTION`` / ``# END SOLUTION`` (the student version keeps ``answer = None``), and a test that asserts
``socm_lib.course.grade(task_id, ANSWERS[task_id])`` (otter runs the tests after the notebook's last cell, so
each task's ``answer`` is kept under its id). The tests therefore take expected values and tolerances from
:mod:`socm_lib.course`, the same source as the practice check, and never state an expected value.

    python scripts/assignments.py --out _build/assignments            # every lab
    python scripts/assignments.py --out _build/assignments nb01 nb02  # some

writes ``<out>/<lab>/master/<lab>.ipynb``, ``<out>/<lab>/student/`` (to hand out) and ``<out>/<lab>/autograder/``
(the solution notebook and the ``*.zip`` that ``otter run -a <zip> -o <dir> <submission.ipynb>`` grades with).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell

ROOT = Path(__file__).resolve().parents[1]
CHECK = re.compile(r"""check\(\s*["'](nb\d\d\.\d+)["']\s*,\s*answer\s*\)""")
CONFIG = """# ASSIGNMENT CONFIG
name: {name}
init_cell: true
check_all_cell: false
export_cell: false
run_tests: false
generate: true
"""


def _tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def lab_path(lab: str) -> Path:
    """The notebook of lab ``lab`` (e.g. ``"nb01"`` -> ``notebooks/nb01_socm_by_hand.ipynb``)."""
    found = sorted((ROOT / "notebooks").glob(f"{lab}_*.ipynb"))
    if len(found) != 1:
        raise ValueError(f"Expected one notebook notebooks/{lab}_*.ipynb, found {len(found)}; give a lab such as 'nb01'.")
    return found[0]


def all_labs() -> list[str]:
    """Every lab: the notebooks with a "Your turn" section, as ``nbXX`` names, in order."""
    return [p.name[:4] for p in sorted((ROOT / "notebooks").glob("nb*.ipynb"))
            if any(c.cell_type == "markdown" and c.source.startswith("## Your turn")
                   for c in nbformat.read(p, as_version=4).cells)]


def master_notebook(lab: str) -> nbformat.NotebookNode:
    """The otter master notebook of ``lab``: config, setup cells, one question per checked task."""
    source = nbformat.read(lab_path(lab), as_version=4)
    cells = source.cells
    turn = next((i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith("## Your turn")), None)
    if turn is None:
        raise ValueError(f"{lab} has no '## Your turn' section to build an assignment from.")
    out = [new_raw_cell(CONFIG.format(name=lab)), new_markdown_cell(cells[0].source.split("\n", 1)[0] + " (assignment)")]
    out += [new_code_cell(c.source) for c in cells[:turn]
            if c.cell_type == "code" and not {"nbval-skip", "nbval-ignore-output"} & set(_tags(c))]
    out.append(new_markdown_cell(cells[turn].source))
    out.append(new_code_cell("ANSWERS = {}  # each task's answer, under its id (otter tests run after the last cell)"))
    statement = None  # the first task's statement may sit in the "Your turn" cell itself, already copied
    for i, cell in enumerate(cells[turn + 1:], start=turn + 1):
        if cell.cell_type == "markdown":
            statement = cell.source
        elif "solution" in _tags(cell):
            task = cells[i - 1]
            check = cells[i + 1] if i + 1 < len(cells) else None
            match = CHECK.search(check.source) if check is not None and check.cell_type == "code" else None
            if match is None or "task" not in _tags(task):
                continue  # an open task (no check): not autograded
            task_id = match.group(1)
            out += [
                new_raw_cell(f"# BEGIN QUESTION\nname: {task_id.replace('.', '_')}\npoints: 1"),
                *([new_markdown_cell(statement)] if statement else []),
                new_raw_cell("# BEGIN SOLUTION"),
                new_code_cell(f"{task.source}\n# BEGIN SOLUTION\n{cell.source}\n# END SOLUTION\n"
                              f'ANSWERS["{task_id}"] = answer  # kept for the autograder'),
                new_raw_cell("# END SOLUTION"),
                new_raw_cell("# BEGIN TESTS"),
                new_code_cell(f'from socm_lib.course import grade\n\nassert grade("{task_id}", ANSWERS.get("{task_id}"))'),
                new_raw_cell("# END TESTS"),
                new_raw_cell("# END QUESTION"),
            ]
    nb = new_notebook(cells=out, metadata={"kernelspec": source.metadata.get("kernelspec", {
        "name": "python3", "display_name": "Python 3", "language": "python"})})
    return nb


def build(lab: str, out: Path) -> Path:
    """Write ``out/<lab>/master/<lab>.ipynb`` and run ``otter assign`` into ``out/<lab>/``; return that folder."""
    folder = out / lab
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    master = folder / "master" / f"{lab}.ipynb"
    master.parent.mkdir()
    nbformat.write(master_notebook(lab), master)
    otter = Path(sys.executable).with_name("otter")
    subprocess.run([str(otter), "assign", str(master), str(folder)], check=True, cwd=folder)
    return folder


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "assignments")
    parser.add_argument("labs", nargs="*", help="labs such as nb01 nb02 (default: every lab)")
    args = parser.parse_args(argv)
    for lab in args.labs or all_labs():
        print("assignment written:", build(lab, args.out.resolve()))


if __name__ == "__main__":
    main()
