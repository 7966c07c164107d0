"""Measure how long grading takes per submission, one thread, and record it for the teaching page.

    python scripts/time_grading.py nb10          # some labs (default: every lab); needs the built book

Builds each lab's assignment (scripts/assignments.py) in a temporary folder, grades its unanswered student copy and
its solved copy (scripts/grade.py, one thread), and merges into ``notebooks/grading.json`` per lab the seconds each
took, wall and CPU, with the machine's cores and its load average over the minute before each run: on one thread
the CPU time is what the run takes on an idle core, whatever else the machine was doing; the wall time grows with
the load.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import assignments  # noqa: E402
import grade  # noqa: E402

RECORD = assignments.ROOT / "notebooks" / "grading.json"


def measure(lab: str, out: Path) -> dict:
    folder = assignments.build(lab, out)
    archive = folder / "autograder" / f"{lab}-autograder.zip"
    solved = folder / "autograder" / f"{lab}-solution.ipynb"
    with zipfile.ZipFile(archive) as zf:
        solved.write_bytes(zf.read(solved.name))
    key = grade.read_key(archive)
    result = {}
    for name, notebook in (("unanswered", folder / "student" / f"{lab}.ipynb"), ("solved", solved)):
        load = os.getloadavg()[0]
        record = grade.grade(key, notebook)
        result[name] = {"seconds": record["seconds"], "cpu_seconds": record["cpu_seconds"], "score": record["score"],
                        "max_score": record["max_score"], "load_average_before": round(load, 2)}
    return result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("labs", nargs="*", help="labs such as nb10 (default: every lab)")
    args = parser.parse_args(argv)
    record = json.loads(RECORD.read_text()) if RECORD.exists() else {"labs": {}}
    record.update({"threads": 1, "cores": os.cpu_count(), "command": "python scripts/time_grading.py"})
    with tempfile.TemporaryDirectory() as tmp:
        for lab in args.labs or assignments.all_labs():  # written after each lab: a long run keeps what it measured
            record["labs"][lab] = {**measure(lab, Path(tmp)), "date": datetime.date.today().isoformat()}
            RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
            print(lab, record["labs"][lab], flush=True)


if __name__ == "__main__":
    main()
