"""The student book (`make student-book`, _build/student-book/html) holds every exercise and no solution: no
solution directive of the chapters (proof exercises included) and no notebook cell tagged `solution`. Each check
is run on the main book too (_build/html), where the solutions are, so that it can fail."""

import re
from html import unescape
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAIN, STUDENT = ROOT / "_build" / "html", ROOT / "_build" / "student-book" / "html"
CHAPTERS = sorted((ROOT / "book").glob("ch*.md"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("nb*.ipynb"))
DIRECTIVE = re.compile(r"^(`{3,})\{(exercise|solution)\}[^\n]*\n(.*?)^\1\s*$", re.M | re.S)


def _page(html_root, path):
    built = html_root / path.relative_to(ROOT).with_suffix(".html")
    if not built.exists():
        pytest.fail(f"{built} is missing: run `make build-book` and `make student-book` first")
    return built.read_text(encoding="utf-8")


def _text(html):
    """The page's text with tags, scripts and whitespace runs removed."""
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def _plain_phrase(body):
    """The longest run of plain words in a directive's body (no maths, no roles), as it reads in the HTML."""
    body = re.sub(r"^:\w+:.*$", "", body, flags=re.M)
    runs = re.findall(r"[A-Za-z][A-Za-z ,;]{24,}[A-Za-z]", re.sub(r"\$[^$]*\$|\{[^}]*\}`[^`]*`", "|", body))
    return max(runs, key=len) if runs else None


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_exercises_without_solutions(chapter):
    blocks = DIRECTIVE.findall(chapter.read_text(encoding="utf-8"))
    exercises = [body for _, kind, body in blocks if kind == "exercise"]
    solutions = [body for _, kind, body in blocks if kind == "solution"]
    main, student = _page(MAIN, chapter), _page(STUDENT, chapter)
    assert 'class="solution' not in student, f"{chapter.name}: a solution is rendered in the student book"
    if not blocks:  # a chapter without exercises
        assert 'class="exercise' not in main
        return
    assert main.count('class="solution') == len(solutions)
    assert student.count('class="exercise') == main.count('class="exercise') == len(exercises)
    main_text, student_text = _text(main), _text(student)
    for body in exercises:
        phrase = _plain_phrase(body)
        assert phrase is None or phrase in student_text, f"{chapter.name}: exercise text {phrase!r} missing"
    for body in solutions:
        phrase = _plain_phrase(body)
        if phrase is None:
            continue
        assert phrase in main_text, f"{chapter.name}: {phrase!r} not found in the main book (check the test)"
        assert phrase not in student_text, f"{chapter.name}: solution text {phrase!r} is in the student book"


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
