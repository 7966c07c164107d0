"""Measure how long grading takes per submission, one thread each, and record it for the teaching page.

    python scripts/time_grading.py nb01 nb09      # some labs (default: every lab); needs the built book
    python scripts/time_grading.py --runs 5       # runs of each submission alone (default 3)

Builds each lab's assignment (scripts/assignments.py) in a temporary folder and grades (scripts/grade.py) its
unanswered student copy and its solved copy, each alone, ``--runs`` times in turn; then as many solved copies at
once as the machine has cores (``--jobs`` equal to the cores, as the teaching page advises). For each it merges into
``notebooks/grading.json`` per lab the spread of the seconds a submission took, CPU (all of its processes) and wall:
minimum, median and maximum, with the load average over the minute before each run, and the peak resident memory
a kernel reached (``grade.py --memory`` defaults to twice that). Run it on an idle machine: a CPU second buys less
work when other processes share the cores, their caches and the memory bus, so CPU time grows with the load too, and
the runs at once measure how much. The runs get the limits of a lab not measured yet (``grade.UNMEASURED``), not the defaults
this record sets, so that no measurement is cut short by the last one.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import assignments  # noqa: E402
import grade  # noqa: E402
from socm_lib.checks import write_text  # noqa: E402

RECORD = assignments.ROOT / "notebooks" / "grading.json"


def spread(values: list[float]) -> dict:
    """Minimum, median and maximum of ``values``, to a tenth."""
    return {"min": round(min(values), 1), "median": round(statistics.median(values), 1), "max": round(max(values), 1)}


def _summary(records: list[dict], loads: list[float]) -> dict:
    return {"cpu_seconds": spread([r["cpu_seconds"] for r in records]),
            "seconds": spread([r["seconds"] for r in records]),
            "memory_peak_mb": max(r["memory_peak_mb"] or 0 for r in records),
            "score": min(r["score"] for r in records), "max_score": records[0]["max_score"],
            "load_average_before": [round(x, 2) for x in loads], "runs": len(records)}


def measure(lab: str, out: Path, runs: int, jobs: int) -> dict:
    folder = assignments.build(lab, out)
    archive = folder / "autograder" / f"{lab}-autograder.zip"
    solved = folder / "autograder" / f"{lab}-solution.ipynb"
    with zipfile.ZipFile(archive) as zf:
        solved.write_bytes(zf.read(solved.name))
    key = grade.read_key(archive)
    seconds, memory = grade.UNMEASURED["timeout"], grade.UNMEASURED["memory_mb"]
    limits = {"timeout": seconds, "limits": grade.sandbox.Limits(memory_mb=memory, cpu_seconds=seconds)}
    alone = {"unanswered": ([], []), "solved": ([], [])}
    for _ in range(runs):
        for name, notebook in (("unanswered", folder / "student" / f"{lab}.ipynb"), ("solved", solved)):
            alone[name][1].append(os.getloadavg()[0])
            alone[name][0].append(grade.grade(key, notebook, **limits))
    copies = []
    for k in range(jobs):
        copy = out / f"{lab}-at-once" / f"{k}" / solved.name
        copy.parent.mkdir(parents=True)
        copy.write_bytes(solved.read_bytes())
        copies.append(copy)
    load = os.getloadavg()[0]
    at_once = grade.grade_all(key, copies, out / f"{lab}-graded", jobs=jobs, **limits)
    return {**{name: _summary(*pair) for name, pair in alone.items()},
            "at_once": {**_summary(at_once, [load]), "jobs": jobs}}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("labs", nargs="*", help="labs such as nb10 (default: every lab)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each submission alone (default 3)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count(),
                        help="solved copies graded at once (default: the machine's cores)")
    args = parser.parse_args(argv)
    record = json.loads(RECORD.read_text()) if RECORD.exists() else {"labs": {}}
    record.update({"threads": 1, "cores": os.cpu_count(), "command": "python scripts/time_grading.py"})
    with tempfile.TemporaryDirectory() as tmp:
        for lab in args.labs or assignments.all_labs():  # written after each lab: a long run keeps what it measured
            record["labs"][lab] = {**measure(lab, Path(tmp), args.runs, args.jobs),
                                   "date": datetime.date.today().isoformat()}
            write_text(RECORD, json.dumps(record, indent=1, sort_keys=True) + "\n")
            print(lab, json.dumps(record["labs"][lab]), flush=True)


if __name__ == "__main__":
    main()
