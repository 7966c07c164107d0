"""The student book (`make student-book`, _build/student-book/html) holds every exercise and no solution: no
solution directive of the chapters (proof exercises included), no notebook cell tagged `solution`, no committed
result of a check cell, and the sources its download buttons offer (`_sources/`) hold none either. Each check is
run on the main book too (_build/html), where the solutions are, so that it can fail."""

import re

import pytest
from solution_text import CHAPTERS, NOTEBOOKS, ROOT, chapter_blocks, html_text, plain_phrases

MAIN, STUDENT = ROOT / "_build" / "html", ROOT / "_build" / "student-book" / "html"
VERDICT = re.compile(r"\bnb\d\d\.\d+: (right|close|wrong|malformed|not answered)\b")  # a check cell's output line


def _page(html_root, path):
    built = html_root / path.relative_to(ROOT).with_suffix(".html")
    if not built.exists():
        pytest.fail(f"{built} is missing: run `make build-book` and `make student-book` first")
    return built.read_text(encoding="utf-8")


def _source(html_root, path):
    """The copy of a page's source that the built book offers for download."""
    return (html_root / "_sources" / path.relative_to(ROOT)).read_text(encoding="utf-8")


def _plain_phrase(body):
    """The longest run of plain words in a directive's body, as it reads in the HTML."""
    runs = plain_phrases(body)
    return max(runs, key=len) if runs else None


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_exercises_without_solutions(chapter):
    blocks = chapter_blocks(chapter)
    exercises = [body for kind, body in blocks if kind == "exercise"]
    solutions = [body for kind, body in blocks if kind == "solution"]
    main, student = _page(MAIN, chapter), _page(STUDENT, chapter)
    assert 'class="solution' not in student, f"{chapter.name}: a solution is rendered in the student book"
    if not blocks:  # a chapter without exercises
        assert 'class="exercise' not in main
        return
    assert main.count('class="solution') == len(solutions)
    assert student.count('class="exercise') == main.count('class="exercise') == len(exercises)
    main_text, student_text = html_text(main), html_text(student)
    for body in exercises:
        phrase = _plain_phrase(body)
        assert phrase is None or phrase in student_text, f"{chapter.name}: exercise text {phrase!r} missing"
    for body in solutions:
        phrase = _plain_phrase(body)
        if phrase is None:
            continue
        assert phrase in main_text, f"{chapter.name}: {phrase!r} not found in the main book (check the test)"
        assert phrase not in student_text, f"{chapter.name}: solution text {phrase!r} is in the student book"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_source_without_solutions(chapter):
    solutions = sum(kind == "solution" for kind, _ in chapter_blocks(chapter))
    assert _source(MAIN, chapter).count("{solution}") == solutions
    assert "{solution}" not in _source(STUDENT, chapter), f"{chapter.name}: the downloadable source has solutions"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_check_cells_without_results(notebook):
    """The committed output of a check cell says that the book's own solution is right: not for students."""
    main, student = _page(MAIN, notebook), _page(STUDENT, notebook)
    assert VERDICT.search(html_text(main)), f"{notebook.stem}: no check result in the main book (check the test)"
    assert not VERDICT.search(html_text(student)), f"{notebook.stem}: a check result is in the student book"
    assert not VERDICT.search(_source(STUDENT, notebook)), f"{notebook.stem}: a check result is in its source"


def _your_turn_intro(html):
    """The text of a lab's "Your turn" introduction: from its heading in the article (after the page's table of
    contents) to its first task."""
    text = html_text(html[html.index("<article"):])
    start = text.index("Your turn")
    return text[start:text.index("Task 1", start)]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_introduction_for_students(notebook):
    """A lab's introduction in the student book speaks of no solution, hidden or behind a toggle."""
    teacher = re.compile(r"solution|hidden|toggle", re.I)
    assert teacher.search(_your_turn_intro(_page(MAIN, notebook))), f"{notebook.stem}: (check the test)"
    intro = _your_turn_intro(_page(STUDENT, notebook))
    assert not teacher.search(intro), f"{notebook.stem}: the student book's introduction says {intro!r}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_without_solution_cells(notebook):
    main, student = _page(MAIN, notebook), _page(STUDENT, notebook)
    tasks = main.count("tag_task")
    assert tasks == main.count("tag_solution"), f"{notebook.stem}: every task should have its solution"
    assert "tag_solution" not in student, f"{notebook.stem}: a solution cell is in the student book"
    assert student.count("tag_task") == tasks, f"{notebook.stem}: a task cell is missing from the student book"


def test_no_instructor_material():
    assert not (STUDENT / "instructor").exists()
    assert "student edition" in _page(STUDENT, ROOT / "book" / "intro.md")
