"""One rule for answers (socm_lib/course/answers.py): the practice check and the grader turn an answer into its plain
form with the same function, so they give the same verdict for every form a student may hold, odd ones included.

The grader's path is followed as it runs: the first cell of a graded notebook (``grade._capture()``) executed in a
namespace of its own, the line it prints read back as the grader reads it (``grade._answers``), then judged against
the stored key (``judge_entry``)."""

from __future__ import annotations

import contextlib
import io
import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from grading_kit import grade
from socm_lib import course
from socm_lib.course.answers import MAX_CHARS, MAX_DEPTH, MAX_ITEMS, plain_answer

pytestmark = pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")  # np.matrix, on purpose


class Exits(list):
    """A list whose items cannot be read: iterating it calls ``sys.exit``."""

    def __iter__(self):
        raise SystemExit


class ExitingArray(np.ndarray):
    def tolist(self):
        raise SystemExit


def _odd_forms(x: float) -> dict:
    """The number ``x`` as students hold it, and a few answers that are not numbers at all."""
    return {
        "float": x, "numpy float64": np.float64(x), "numpy float32": np.float32(x), "numpy longdouble": np.longdouble(x),
        "0-d array": np.array(x), "one-element array": np.array([x]), "np.matrix": np.matrix([[x]]),
        "[[x]]": [[x]], "tuple": (x,), "set": {x}, "0-d tensor": torch.tensor(x, dtype=torch.float64),
        "float32 tensor": torch.tensor([x]), "bfloat16 tensor": torch.tensor(x, dtype=torch.bfloat16),
        "Series": pd.Series([x]), "DataFrame": pd.DataFrame([[x]]), "array subclass": np.array([x]).view(ExitingArray),
        "int subclass": type("Count", (int,), {})(3), "string": "0.1", "complex": np.complex128(x),
        "5,000-digit int": 10**5000, "exits when read": Exits([x]), "dict": {"a": x}, "nan": float("nan"),
        "two numbers": [x, x], "bool": True, "ellipsis": ..., "None": None,
    }


def _graded(task_id: str, answer):
    """The verdict grading gives: the answer reported by the capture cell's code, read back, judged from the key."""
    namespace = {}
    exec(compile(grade._capture(), "capture", "exec"), namespace)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        namespace["_socm_out"] = printed  # the kernel's stdout, as the capture cell holds it
        namespace["_socm_report"](task_id, "answer", {"answer": answer})
    (line,) = printed.getvalue().splitlines()
    result = {"lines": {1: line}}
    answers = grade._answers(result, {1: task_id})
    entry = json.loads(json.dumps(course.key_entry(course.get_task(task_id))))
    return course.judge_entry(task_id, entry, answers.get(task_id))


@pytest.mark.parametrize("task_id", ["nb01.1", "nb01.2"])
def test_practice_and_grading_give_the_same_verdict_for_odd_forms(task_id):
    expected = float(course._expected(task_id))
    for name, answer in _odd_forms(expected).items():
        practice, graded = course.verdict(task_id, answer), _graded(task_id, answer)
        assert practice == graded, (name, practice, graded)
    right = {name for name, answer in _odd_forms(expected).items() if course.verdict(task_id, answer).status == "right"}
    assert {"float", "numpy float64", "numpy float32", "numpy longdouble", "0-d array", "one-element array", "np.matrix",
            "[[x]]", "tuple", "set", "0-d tensor", "float32 tensor", "Series", "DataFrame", "array subclass"} <= right
    assert not right & {"string", "complex", "5,000-digit int", "exits when read", "dict", "nan", "two numbers", "bool"}


def test_an_answer_given_is_never_not_answered():
    for name, answer in _odd_forms(0.5).items():
        if name not in ("ellipsis", "None"):
            assert course.verdict("nb01.1", answer).status != "unanswered", name
    assert "could not be read: SystemExit raised while reading it" in course.verdict("nb01.1", Exits([1.0])).line()


def test_the_plain_form_is_json_and_its_own_plain_form():
    for name, answer in _odd_forms(0.25).items():
        plain = plain_answer(answer)
        assert json.loads(json.dumps(plain)) == plain or (isinstance(plain, float) and math.isnan(plain)), name
        assert plain_answer(plain) == plain or name == "nan", name


def test_what_cannot_be_read_says_why():
    assert plain_answer(10**5000) == math.inf and plain_answer(-(10**400)) == -math.inf
    assert plain_answer(2**70) == float(2**70) and plain_answer(np.uint64(2**64 - 1)) == float(2**64 - 1)
    cases = [("x" * (MAX_CHARS + 1), f"a string of {MAX_CHARS + 1:,} characters"),
             (np.zeros(MAX_ITEMS + 1), f"more than {MAX_ITEMS:,} numbers"),
             ([[0.0] * 10] * (MAX_ITEMS // 10 + 1), f"more than {MAX_ITEMS:,} numbers"),
             (np.zeros((1,) * (MAX_DEPTH + 1)), f"nested more than {MAX_DEPTH} deep"),
             (np.array([1 + 2j]), "complex numbers"), (np.array(["2024-01-01"], dtype="datetime64[D]"), "dates"),
             (Exits([1]), "SystemExit raised while reading it"), (object(), "an object of type object")]
    for answer, why in cases:
        assert why in plain_answer(answer)["unreadable"], (type(answer), plain_answer(answer))


def test_a_text_answer_is_judged_as_a_reader_sees_it():
    """NFC and NFD spellings, a no-break space and a run of spaces are one answer to a reader, so to the grader."""
    from socm_lib.course import judge_entry
    entry = {"kind": "choice", "expected": "café crème", "rtol": 0.0, "atol": 0.0, "close_rtol": 0.0,
             "options": ["café crème", "thé"], "hint": ""}
    decomposed = "cafe\u0301\u00a0  cre\u0300me"
    assert judge_entry("x.1", entry, decomposed).status == "right"
    assert judge_entry("x.1", entry, "THE\u0301").status == "wrong"
    sets = {**entry, "kind": "set", "expected": ["café", "thé"], "options": []}
    assert judge_entry("x.2", sets, ["the\u0301", " cafe\u0301"]).status == "right"
