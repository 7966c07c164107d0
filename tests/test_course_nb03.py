"""Tasks of notebook 3: token count and concentration ratio, recomputed through the tokenizer and by hand."""

import numpy as np
import pytest

import socm_lib
from socm_lib import course
from socm_lib.course import nb03


@pytest.fixture(scope="module")
def encoder():
    return socm_lib.load_encoder("all-minilm-l6")


def test_task1_counts_pieces_and_special_tokens(encoder):
    pieces = encoder.tokenizer.convert_ids_to_tokens(encoder.tokenizer(nb03.SENTENCE)["input_ids"])
    assert pieces[0] == "[CLS]" and pieces[-1] == "[SEP]"
    assert course._expected("nb03.1") == len(pieces)
    assert len(pieces) > len(nb03.SENTENCE.split()) + 2  # "Unbelievably" and "tokenizer" split into pieces


def test_task2_is_the_concentration_ratio_by_hand(encoder):
    X = socm_lib.token_embeddings(encoder, [nb03.SENTENCE])[0].astype(np.float64)
    m = X.mean(axis=0)
    c = np.sum((X - m) ** 2) / len(X) / np.sum(m**2)
    assert course._expected("nb03.2") == pytest.approx(c, rel=1e-9)


@pytest.mark.parametrize("task_id, malformed", [("nb03.1", 2.5), ("nb03.2", "high")])
def test_verdicts(task_id, malformed):
    task = course.get_task(task_id)
    assert course.verdict(task_id, course._expected(task_id)).status == "right"
    assert course.verdict(task_id, task.wrong_example).status == "wrong"
    assert course.verdict(task_id, malformed).status == "malformed"
    assert f"{course._expected(task_id)}" not in course.verdict(task_id, task.wrong_example).message
