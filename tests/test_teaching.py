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
EXERCISE = re.compile(r"````\{exercise\}([^\n]*)\n:label: (\S+)\n(.*?)````", re.S)
EXERCISES = {p.stem: EXERCISE.findall(p.read_text(encoding="utf-8")) for p in sorted((ROOT / "book").glob("ch*.md"))}
LABELS = {chapter: [label for _, label, _ in found] for chapter, found in EXERCISES.items()}
#: Proof exercises: a "-proof-" label, a title "Proof exercise: ...", or a statement that asks to "Prove" something.
PROOFS = [label for found in EXERCISES.values() for title, label, body in found
          if "-proof-" in label or title.strip().startswith("Proof exercise") or re.search(r"\bProve\b", body)]
KEY = ROOT / "instructor" / "rubrics.md"


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
    assert len(PROOFS) >= 8 and "ex-ch07-2" in PROOFS, "fewer proof exercises than the book has"
    key = KEY.read_text(encoding="utf-8")
    for label in PROOFS:
        row = [r for r in rows if f"{{ref}}`{label}`" in r]
        assert len(row) == 1, f"no rubric row for {label}"
        points = list(map(int, re.findall(r"(\d+): ", row[0])))
        assert sum(points) == 10, f"{label}: points do not add up to 10"
        # the marking key splits the same points, in the same order
        split = re.search(rf"\*\*{re.escape(label)}\*\* \(([\d + ]+)\)", key)
        assert split, f"{label} has no entry in instructor/rubrics.md"
        assert list(map(int, split.group(1).split("+"))) == points, f"{label}: the marking key splits other points"
    notebooks = sorted(p.stem for p in (ROOT / "notebooks").glob("nb*.ipynb"))
    for stem in notebooks:
        row = [r for r in rows if f"open task of {{doc}}`../notebooks/{stem}`" in r]
        assert len(row) == 1, f"no rubric row for the open task of {stem}"
        assert sum(map(int, re.findall(r"(\d+): ", row[0]))) == 10, f"{stem}: points do not add up to 10"


def _minutes(text: str) -> int:
    hours = re.search(r"(\d+) h", text)
    minutes = re.search(r"(\d+) min", text)
    return 60 * int(hours.group(1) if hours else 0) + int(minutes.group(1) if minutes else 0)


def test_homework_times_follow_the_stated_estimate():
    """20 min per computational exercise, 45 per proof exercise, 30 per open lab task, as the page says."""
    assert "estimates, not measurements" in SOURCE and "20 minutes per computational exercise, 45 per proof" in SOURCE
    table = SOURCE.split("## Sessions", 1)[1].split("## How long", 1)[0]
    sessions = [row.split(" | ") for row in table.splitlines() if re.match(r"\| \d\. ", row)]
    assert len(sessions) >= 7
    for row in sessions:
        homework, time = row[3], row[4]
        if "homework" not in time:
            continue  # the project session has one overall time
        labels = re.findall(r"\{ref\}`(ex-[^`]+)`", homework)
        proofs = sum(label in PROOFS for label in labels)
        open_tasks = 1 if "open task" in homework else 0
        expected = 20 * (len(labels) - proofs) + 45 * proofs + 30 * open_tasks
        stated = _minutes(time.split("homework", 1)[1])
        assert stated == expected, f"session {row[0]}: homework stated {stated} min, the estimate gives {expected}"


def test_student_and_machine_times():
    """The students' times come from the rule (socm_lib.course.plan), for every lab, not typed by hand."""
    from socm_lib.course import plan

    assert "student working time" in SOURCE and "STUDENT_MIN" in SOURCE
    cells = json.loads(PAGE.read_text(encoding="utf-8"))["cells"]
    code = next("".join(c["source"]) for c in cells if "STUDENT_MIN =" in "".join(c["source"]))
    assert 'json.loads(Path("../notebooks/course_plan.json").read_text())' in code  # plan.record, tested equal
    assert 'STUDENT_MIN = {lab: info["student_min"] for lab, info in course_plan["labs"].items()}' in code
    stems = {p.stem[:4] for p in (ROOT / "notebooks").glob("nb*.ipynb")}
    assert set(plan.LAB_TASKS) == stems, "a lab without its student time"


def test_claims_the_chapters_support():
    assert "open questions at the end" not in SOURCE, "no chapter ends with open questions"
    for chapter, labels in LABELS.items():
        if not set(labels) & set(PROOFS):
            assert "no proof exercise" in SOURCE, f"{chapter} has no proof exercise: the page must not claim one"
    assert "make venv" in SOURCE and "CUDA" in SOURCE and "for practice" in SOURCE and "scripts/grade.py --key" in SOURCE


def test_marking_key_stays_out_of_student_material():
    key = ROOT / "instructor" / "rubrics.md"
    assert key.exists()
    config = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    assert "instructor" not in config, "the marking key must not be a page of the book"
    import sys
    sys.path.insert(0, str(ROOT / "scripts"))
    import student_book
    assert "instructor" in student_book.LEFT_OUT and not any(p.startswith("instructor") for p in student_book.COPIED)


def _assigned_tasks() -> dict[str, set[int]]:
    """Task numbers assigned per lab in the sessions table: "Tasks 1–3", "Tasks 1, 2 and 4", "Task 3" after a
    notebook's link, or "Tasks ... of each" for every notebook of the cell."""
    table = SOURCE.split("## Sessions", 1)[1].split("## How long", 1)[0]
    link = r"\{doc\}`\.\./notebooks/(nb\d\d)_\w+`"
    assigned = {}
    for row in (r for r in table.splitlines() if re.match(r"\| \d\. ", r)):
        for cell in row.split(" | "):
            parts = re.split(link, cell)
            labs = parts[1::2]
            for lab, text in zip(labs, parts[2::2]):
                for phrase in re.findall(r"Tasks? (\d(?:–\d)?(?:, \d)*(?: and \d)?)( of each)?", text):
                    numbers = {int(n) for n in re.findall(r"\d", phrase[0])}
                    if "–" in phrase[0]:
                        low, high = map(int, phrase[0].split("–"))
                        numbers = set(range(low, high + 1))
                    for target in labs if phrase[1] else [lab]:
                        assigned.setdefault(target, set()).update(numbers)
    return assigned


def test_every_task_of_every_lab_is_assigned_in_a_session():
    import nbformat

    assigned = _assigned_tasks()
    for path in sorted((ROOT / "notebooks").glob("nb*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        count = sum(len(re.findall(r"^### Task \d", c.source, re.M)) for c in cells if c.cell_type == "markdown")
        assert count >= 2 and assigned.get(path.stem[:4]) == set(range(1, count + 1)), (
            f"{path.stem}: tasks {sorted(assigned.get(path.stem[:4], []))} of {count} assigned")


def test_points_of_every_kind_of_work():
    import sys
    sys.path.insert(0, str(ROOT / "scripts"))
    import assignments
    rubrics = SOURCE.split("## Rubrics", 1)[1]
    assert f"Each open task and each proof exercise is worth {assignments.POINTS['open']} points" in rubrics
    assert "Each computational exercise of the chapters is worth 5 points" in rubrics
    assert f"each lab task with a check cell is worth {assignments.POINTS['checked']} points" in rubrics


def test_grading_time_is_measured_on_one_thread_with_its_spread():
    record = json.loads((ROOT / "notebooks" / "grading.json").read_text(encoding="utf-8"))
    assert record["threads"] == 1 and "time_grading.py" in record["command"]
    assert "nb10" in record["labs"] and set(record["labs"]) <= {p.stem[:4] for p in (ROOT / "notebooks").glob("nb*.ipynb")}
    for lab, r in record["labs"].items():
        assert r["unanswered"]["score"] == 0 and r["solved"]["score"] == r["solved"]["max_score"] > 0, lab
        runs = [r["unanswered"], r["solved"]] + ([r["at_once"]] if "at_once" in r else [])
        for run in runs:  # the spread of every measurement, and the load before each of its runs
            for seconds in (run["cpu_seconds"], run["seconds"]):
                assert seconds["min"] <= seconds["median"] <= seconds["max"], (lab, run)
            assert run["runs"] >= 1 and len(run["load_average_before"]) in (1, run["runs"]), (lab, run)
        if "at_once" in r:  # as many solved copies at once as the machine has cores, each graded in full
            assert r["at_once"]["runs"] == r["at_once"]["jobs"] == record["cores"], lab
            assert r["at_once"]["score"] == r["at_once"]["max_score"] == r["solved"]["max_score"], lab
    # on an idle core, one thread
    nb10 = record["labs"]["nb10"]["unanswered"]["cpu_seconds"]["median"]
    assert nb10 < 300, "nb10's unanswered submission takes over 5 min"
    assert "notebooks/grading.json" in SOURCE and "one thread" in SOURCE and "--jobs 2" in SOURCE
    assert "all cores at once: wall" in SOURCE and "at once / alone: wall" in SOURCE  # what the load costs, measured
