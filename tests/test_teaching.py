"""The teaching page (book/teaching.ipynb) assigns every chapter exercise by its label, gives student working
times beside the machine times, has a rubric with points for each open lab task and each proof exercise, makes
no claim about exercises or sections a chapter does not have, and keeps the instructor's marking key out of the
student material."""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "book" / "teaching.ipynb"
SOURCE = "\n".join("".join(c["source"]) for c in json.loads(PAGE.read_text(encoding="utf-8"))["cells"])
LABELS = {p.stem: re.findall(r"````\{exercise\}[^\n]*\n:label: (\S+)", p.read_text(encoding="utf-8"))
          for p in sorted((ROOT / "book").glob("ch*.md"))}


def _rubric_rows():
    section = SOURCE.split("## Rubrics", 1)[1]
    return [row for row in section.splitlines() if row.startswith("| ") and "points" not in row.split("|")[1]]


def test_every_exercise_is_assigned_by_label():
    assert sum(map(len, LABELS.values())) >= 30, "fewer exercises than the book has: has the label pattern changed?"
    sessions = SOURCE.split("## How long the labs take", 1)[0]
    for chapter, labels in LABELS.items():
        for label in labels:
            assert f"{{ref}}`{label}`" in sessions, f"{label} ({chapter}) is not assigned in a session"
    assert "Exercises of Chapter" not in SOURCE, "exercises listed without labels"


def test_rubrics_for_proofs_and_open_tasks():
    rows = _rubric_rows()
    proofs = [label for labels in LABELS.values() for label in labels if "-proof-" in label]
    for label in proofs:
        row = [r for r in rows if f"{{ref}}`{label}`" in r]
        assert len(row) == 1, f"no rubric row for {label}"
        assert sum(map(int, re.findall(r"(\d+): ", row[0]))) == 10, f"{label}: points do not add up to 10"
    notebooks = sorted(p.stem for p in (ROOT / "notebooks").glob("nb*.ipynb"))
    for stem in notebooks:
        row = [r for r in rows if f"open task of {{doc}}`../notebooks/{stem}`" in r]
        assert len(row) == 1, f"no rubric row for the open task of {stem}"
        assert sum(map(int, re.findall(r"(\d+): ", row[0]))) == 10, f"{stem}: points do not add up to 10"


def test_student_and_machine_times():
    assert "student working time" in SOURCE and "STUDENT_MIN" in SOURCE
    cells = json.loads(PAGE.read_text(encoding="utf-8"))["cells"]
    code = next("".join(c["source"]) for c in cells if "STUDENT_MIN" in "".join(c["source"]))
    estimated = re.search(r"STUDENT_MIN = \{(.*?)\}", code, re.S).group(1)
    stems = {p.stem[:4] for p in (ROOT / "notebooks").glob("nb*.ipynb")}
    assert set(re.findall(r'"(nb\d\d)": \d+', estimated)) == stems, "a lab without its student time"


def test_claims_the_chapters_support():
    assert "open questions at the end" not in SOURCE, "no chapter ends with open questions"
    for chapter, labels in LABELS.items():
        if not any("-proof-" in label for label in labels):
            assert "no proof exercise" in SOURCE, f"{chapter} has no proof exercise: the page must not claim one"
    assert "make venv" in SOURCE and "CUDA" in SOURCE and "for practice" in SOURCE and "otter run" in SOURCE


def test_marking_key_stays_out_of_student_material():
    key = ROOT / "instructor" / "rubrics.md"
    assert key.exists()
    config = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    assert "instructor" not in config, "the marking key must not be a page of the book"
    import sys
    sys.path.insert(0, str(ROOT / "scripts"))
    import student_book
    assert "instructor" in student_book.LEFT_OUT and not any(p.startswith("instructor") for p in student_book.COPIED)
