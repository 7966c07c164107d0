"""The embedded corpus and labelled pairs, sampling, and the readers for the shared public data sets."""

from __future__ import annotations

import collections
import csv
import re

import pytest

import socm_lib


def words(text: str) -> list[str]:
    return re.findall(r"[\w']+", text.lower())


# ----------------------------------------------------------------------------------------------------------
# Embedded corpus and pairs
# ----------------------------------------------------------------------------------------------------------
def test_corpus():
    df = socm_lib.corpus()
    assert list(df.columns) == ["id", "topic", "text"]
    assert len(df) >= 1000
    assert df["topic"].nunique() >= 20
    n_words = df["text"].str.split().str.len()
    assert n_words.min() >= 3 and n_words.max() <= 60
    assert not df["text"].duplicated().any()
    assert df["id"].is_unique
    assert (df["text"].str.strip() == df["text"]).all() and (df["text"].str.len() > 0).all()
    # enough texts for the paper's protocol, and a spread of lengths
    assert (n_words <= 7).sum() >= 100 and (n_words >= 41).sum() >= 100


def test_labelled_pairs():
    df = socm_lib.labelled_pairs()
    assert list(df.columns) == ["id", "kind", "text_a", "text_b"]
    assert len(df) >= 300
    counts = df["kind"].value_counts()
    assert set(counts.index) == set(socm_lib.PAIR_KINDS)
    assert all(counts[k] >= 30 for k in socm_lib.PAIR_KINDS)
    assert df["id"].is_unique
    assert (df["text_a"] != df["text_b"]).all()
    assert (df["text_a"].str.strip() != "").all() and (df["text_b"].str.strip() != "").all()


def test_word_order_swap_pairs_have_equal_word_multisets():
    df = socm_lib.labelled_pairs(kinds=["word_order_swap"])
    assert len(df) >= 30 and set(df["kind"]) == {"word_order_swap"}
    for a, b in zip(df["text_a"], df["text_b"]):
        assert collections.Counter(words(a)) == collections.Counter(words(b)), (a, b)
        assert words(a) != words(b), (a, b)  # but the order differs


def test_length_mismatch_pairs_differ_in_length():
    df = socm_lib.labelled_pairs(kinds=["length_mismatch"])
    for a, b in zip(df["text_a"], df["text_b"]):
        assert len(b.split()) >= 3 * len(a.split()), (a, b)


def test_labelled_pairs_unknown_kind():
    with pytest.raises(ValueError, match="Unknown pair kind"):
        socm_lib.labelled_pairs(kinds=["paraphrase", "sarcasm"])


def test_sample_texts():
    texts = list(socm_lib.corpus()["text"])
    a = socm_lib.sample_texts(texts, 200, seed=0)
    b = socm_lib.sample_texts(texts, 200, seed=0)
    c = socm_lib.sample_texts(texts, 200, seed=1)
    assert a == b
    assert len(set(a)) == 200 and set(a) <= set(texts)  # without replacement (the corpus has no duplicates)
    assert a != c and set(a) != set(c)
    assert sorted(socm_lib.sample_texts(texts, len(texts), seed=5)) == sorted(texts)
    # drawn order: the same generator, independently
    import numpy as np

    idx = np.random.default_rng(0).choice(len(texts), size=200, replace=False)
    assert a == [texts[i] for i in idx]
    for k in (0, len(texts) + 1):
        with pytest.raises(ValueError, match=rf"k = {k} is outside 1 <= k <= {len(texts)}"):
            socm_lib.sample_texts(texts, k)


def test_sample_texts_draws_distinct_texts_and_checks_k_and_seed():
    texts = ["a", "b", "a", "c", "a", "b"]  # three distinct texts, repeated
    drawn = socm_lib.sample_texts(texts, 3, seed=0)
    assert sorted(drawn) == ["a", "b", "c"]  # every text once (before: a text given twice could be drawn twice)
    with pytest.raises(ValueError, match="k = 4 is outside 1 <= k <= 3. There are 3 distinct texts"):
        socm_lib.sample_texts(texts, 4)
    for k, exc in ((True, TypeError), (2.5, TypeError), ("2", TypeError)):
        with pytest.raises(exc, match="k must be an integer"):
            socm_lib.sample_texts(texts, k)
    with pytest.raises(ValueError, match="seed = -1 is outside 0 <= seed"):
        socm_lib.sample_texts(texts, 2, seed=-1)
    with pytest.raises(TypeError, match="seed must be an integer"):
        socm_lib.sample_texts(texts, 2, seed=1.5)
    with pytest.raises(TypeError, match="texts is a set, which has no fixed order"):
        socm_lib.sample_texts(set(texts), 2)


# ----------------------------------------------------------------------------------------------------------
# Readers on ../shared/data
# ----------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shared():
    path = socm_lib.shared_data_dir()
    if path is None:
        pytest.skip("the shared data folder (../shared/data or $SOCM_SHARED_DATA) is not present")
    return path


@pytest.mark.parametrize("split,rows", [("train", 5749), ("dev", 1500), ("test", 1379)])
def test_read_stsb(shared, split, rows):
    path = shared / "stsb" / f"sts-{split}.csv"
    if not path.exists():
        pytest.skip(f"{path} is not present")
    df = socm_lib.read_stsb(path)
    assert len(df) == rows
    assert list(df.columns) == ["genre", "file", "year", "id", "score", "sentence1", "sentence2"]
    assert df["score"].between(0, 5).all()
    assert (df["sentence1"].str.len() > 0).all() and (df["sentence2"].str.len() > 0).all()
    # independent count of physical lines (one row per line; some rows have 9 fields)
    with open(path, encoding="utf-8") as fh:
        lines = [line for line in fh if line.strip()]
    assert len(lines) == rows
    first = lines[0].rstrip("\n").split("\t")
    assert df.iloc[0]["sentence1"] == first[5] and df.iloc[0]["sentence2"] == first[6]


def test_read_sick(shared):
    path = shared / "sick" / "SICK_train.txt"
    if not path.exists():
        pytest.skip(f"{path} is not present")
    df = socm_lib.read_sick(path)
    assert list(df.columns) == ["pair_id", "sentence_a", "sentence_b", "relatedness", "entailment"]
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    assert len(df) == len(rows) == 4500
    assert df["relatedness"].between(1, 5).all()
    assert set(df["entailment"]) == {"NEUTRAL", "ENTAILMENT", "CONTRADICTION"}
    assert df.iloc[0]["sentence_a"] == rows[0][1]
    assert df.iloc[-1]["relatedness"] == pytest.approx(float(rows[-1][3]))


def test_read_lines_drops_cut_off_last_line(shared):
    path = shared / "wiki1m" / "wiki1m_for_simcse.txt"
    if not path.exists():
        pytest.skip(f"{path} is not present")
    raw = path.read_bytes().decode("utf-8")
    assert not raw.endswith("\n"), "the test expects the shared file to be cut off mid-line"
    complete = raw[: raw.rindex("\n")].split("\n")  # every newline-terminated line
    expected = [line.strip() for line in complete if line.strip()]
    lines = socm_lib.read_lines(path, drop_unterminated_last=True)
    assert len(lines) == len(expected) == 11914
    assert lines == expected
    cut = raw[raw.rindex("\n") + 1 :]
    assert cut and cut not in lines
    assert lines[-1] == complete[-1].strip()


def test_read_lines_keeps_last_line_with_final_newline(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("first line\n\n  second line  \nthird\n", encoding="utf-8")
    assert socm_lib.read_lines(p) == ["first line", "second line", "third"]
    p.write_text("first line\nsecond li", encoding="utf-8")
    assert socm_lib.read_lines(p) == ["first line", "second li"]
    assert socm_lib.read_lines(p, drop_unterminated_last=True) == ["first line"]


def test_read_msmarco_passages(shared):
    path = shared / "msmarco" / "full_collection" / "raw.tsv"
    if not path.exists():
        pytest.skip(f"{path} is not present")
    passages = socm_lib.read_msmarco_passages(path)
    assert len(passages) == 89
    with open(path, encoding="utf-8") as fh:
        first = fh.readline().rstrip("\n").split("\t", 1)
    assert first[0] == "0" and passages[0] == first[1]
    assert passages[0].startswith("The presence of communication amid scientific minds")


def test_missing_file_message(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        socm_lib.read_lines(tmp_path / "nope.txt")
