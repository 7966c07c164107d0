"""Texts to measure: the embedded corpus, its labelled pairs, and readers for public data sets.

The embedded corpus (``socm_lib/data/corpus.tsv``) and labelled pairs
(``socm_lib/data/labelled_pairs.tsv``) were written for this project and are
released under CC0 (see ``socm_lib/data/README.md``). The readers take a path to
files you already have (STS-B, SICK, one sentence per line, MS MARCO passages);
nothing is downloaded unless you call :func:`hf_texts` where a network exists.
"""

from __future__ import annotations

import csv
import os
import re
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from .checks import as_bool, as_input_path, as_int, as_texts, distinct_texts, has_visible_character

PAIR_KINDS = (
    "paraphrase",
    "entailment",
    "contradiction",
    "negation",
    "word_order_swap",
    "same_topic_different_claim",
    "unrelated",
    "length_mismatch",
)


def _read_tsv(path, names=None, header=0) -> pd.DataFrame:
    # QUOTE_NONE: texts contain unbalanced quotes, which default CSV quoting would merge across lines.
    return pd.read_csv(
        path, sep="\t", quoting=csv.QUOTE_NONE, header=header, names=names, dtype=str, keep_default_na=False
    )


def _packaged(name: str) -> Path:
    return Path(str(resources.files("socm_lib") / "data" / name))


def corpus() -> pd.DataFrame:
    """The embedded corpus: columns ``id``, ``topic``, ``text`` (1,080 sentences, 24 topics, 3 to 60 words)."""
    return _read_tsv(_packaged("corpus.tsv"))


def labelled_pairs(kinds=None) -> pd.DataFrame:
    """The embedded labelled pairs: columns ``id``, ``kind``, ``text_a``, ``text_b`` (kinds in :data:`PAIR_KINDS`);
    ``kinds``, ``None`` for all or a list of kinds, keeps those."""
    df = _read_tsv(_packaged("labelled_pairs.tsv"))
    if isinstance(kinds, str):
        raise TypeError(f"kinds is a single string; pass a list of kinds, e.g. [{kinds!r}].")
    if kinds is not None:
        try:
            kinds = list(kinds)  # once: a generator would be used up by the check below
        except TypeError:
            raise TypeError(f"kinds must be None or a list of kinds such as ['negation'], got {kinds!r} "
                            f"({type(kinds).__name__}).") from None
        if not kinds:
            raise ValueError(f"kinds is empty, which would select no pair; pass None for every kind or some of "
                             f"{list(PAIR_KINDS)}.")
        if not all(isinstance(k, str) for k in kinds):
            raise TypeError(f"kinds must hold kind names (strings) such as 'negation', got {kinds!r}.")
        unknown = sorted(set(kinds) - set(PAIR_KINDS))
        if unknown:
            raise ValueError(f"Unknown pair kind(s) {unknown}; choose from {list(PAIR_KINDS)}.")
        df = df[df["kind"].isin(kinds)].reset_index(drop=True)
    return df


def _rows(path, what: str) -> list[tuple[int, list[str]]]:
    """``(line number, tab-separated fields)`` of every non-empty line of a text file (:func:`_text_file`)."""
    raw = _text_file(path, what)
    return [(k, line.split("\t")) for k, line in enumerate(raw.split("\n"), start=1) if line.strip()]


def _score(value: str, path, line: int, what: str) -> float:
    """A numeric field, or an error naming the file, the line and the value."""
    try:
        out = float(value)
    except ValueError:
        raise ValueError(f"{path}, line {line}: the {what} {value!r} is not a number; is the file complete and "
                         "tab-separated?") from None
    if not np.isfinite(out):
        raise ValueError(f"{path}, line {line}: the {what} {value!r} is not a finite number.")
    return out


def read_stsb(path) -> pd.DataFrame:
    """Read an STS-B file (``sts-train.csv``, ``sts-dev.csv`` or ``sts-test.csv``).

    Columns ``genre, file, year, id, score, sentence1, sentence2``; ``score`` is a float in [0, 5]. Rows with
    two extra attribution fields (9 instead of 7) are read correctly; those fields are dropped. A row with fewer
    than 7 fields, or a score that is not a number or lies outside [0, 5], raises ``ValueError`` naming the file and
    line.
    """
    rows = []
    for line, fields in _rows(path, "STS-B file"):
        if len(fields) < 7:
            raise ValueError(f"STS-B file {path}, line {line}: {len(fields)} tab-separated field(s), but an STS-B row "
                             "has 7 (genre, file, year, id, score, sentence1, sentence2); is it an STS-B file?")
        score = _score(fields[4], path, line, "score")
        if not 0.0 <= score <= 5.0:
            raise ValueError(f"STS-B file {path}, line {line}: the score {fields[4]!r} is outside [0, 5], the range of "
                             "STS-B's similarity scores; is it an STS-B file, or were its columns shifted?")
        rows.append(fields[:4] + [score] + fields[5:7])
    df = pd.DataFrame(rows, columns=["genre", "file", "year", "id", "score", "sentence1", "sentence2"])
    df["score"] = df["score"].astype(float)
    return df


#: A SICK file's columns as written in its header, and the names :func:`read_sick` gives them.
SICK_COLUMNS = {"pair_ID": "pair_id", "sentence_A": "sentence_a", "sentence_B": "sentence_b",
                "relatedness_score": "relatedness", "entailment_judgment": "entailment"}


def read_sick(path) -> pd.DataFrame:
    """Read a SICK file: columns ``pair_id, sentence_a, sentence_b, relatedness, entailment``.

    A header that names a column twice, a row whose field count differs from the header's, or a relatedness that is
    not a number raises ``ValueError`` naming the file (and line).
    """
    rows = _rows(path, "SICK file")
    header = rows[0][1] if rows else []
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise ValueError(f"SICK file {path}: its header names the column(s) {repeated} more than once, so which one "
                         "holds the values is unknown; keep one column of each name.")
    missing = set(SICK_COLUMNS) - set(header)
    if missing:
        raise ValueError(f"SICK file {path} lacks the column(s) {sorted(missing)}; is it a SICK file?")
    records = []
    for line, fields in rows[1:]:
        if len(fields) != len(header):
            raise ValueError(f"SICK file {path}, line {line}: {len(fields)} tab-separated field(s), but the header "
                             f"has {len(header)}.")
        record = dict(zip(header, fields))
        record["relatedness_score"] = _score(record["relatedness_score"], path, line, "relatedness score")
        records.append(record)
    df = pd.DataFrame(records, columns=header).rename(columns=SICK_COLUMNS)
    df["relatedness"] = df["relatedness"].astype(float)
    return df[list(SICK_COLUMNS.values())]


def _text_file(path, what: str) -> str:
    """The UTF-8 text of ``path`` with every byte-order mark removed (at the start or where files were joined)
    and line endings made ``\\n`` (``\\r\\n`` and a lone ``\\r`` alike); one-line errors naming the file."""
    p = as_input_path(path, what)
    if p.is_dir():
        raise ValueError(f"{what} {p} is a folder; pass the path to a file.")
    try:
        raw = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} {p} is not UTF-8 (byte {exc.start}); convert it with e.g. iconv -t utf-8.") from None
    return re.sub("\r\n?", "\n", raw.replace("\ufeff", ""))


def read_lines(path, *, drop_unterminated_last: bool = False) -> list[str]:
    """One text per non-empty line, every line kept (byte-order marks removed; ``\\n``, ``\\r\\n`` or ``\\r`` end a line).

    A line that is not blank but has no visible character (only control or zero-width characters, such as ``\\x00``
    or ``\\u200b``: :func:`socm_lib.checks.has_visible_character`) raises ``ValueError`` naming the line.

    ``drop_unterminated_last=True`` drops a last line that has no final newline, for a file known to be
    cut off mid-line (such as the shared extract of ``wiki1m_for_simcse.txt``).
    """
    drop_unterminated_last = as_bool(drop_unterminated_last, "drop_unterminated_last")
    raw = _text_file(path, "Text file")
    lines = raw.split("\n")
    if drop_unterminated_last and not raw.endswith("\n"):
        lines = lines[:-1]
    for number, line in enumerate(lines, start=1):
        if line.strip() and not has_visible_character(line):
            raise ValueError(f"Text file {path}, line {number}: no visible character (only control or zero-width "
                             f"characters, {line[:10]!r}); remove that line or repair the file.")
    return [line.strip() for line in lines if line.strip()]


def read_msmarco_passages(path) -> list[str]:
    """Passages of an MS MARCO ``collection`` file (``pid<TAB>passage`` per line); a line without a tab raises
    ``ValueError`` naming the file and line."""
    passages = []
    for line, fields in _rows(path, "MS MARCO collection"):
        if len(fields) < 2:
            raise ValueError(f"MS MARCO collection {path}, line {line}: no tab; every line must be pid<TAB>passage.")
        passage = "\t".join(fields[1:]).strip()
        if passage:
            passages.append(passage)
    return passages


def shared_data_dir() -> Path | None:
    """The folder of public data sets beside the project (``$SOCM_SHARED_DATA``, else ``../shared/data``), if present."""
    env = os.environ.get("SOCM_SHARED_DATA")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve().parent.parent
    candidates += [here.parent / "shared" / "data", Path.cwd().parent / "shared" / "data"]
    return next((c for c in candidates if (c / "stsb").is_dir() or (c / "wiki1m").is_dir()), None)


def sample_texts(texts, k: int = 1000, seed: int = 0) -> list[str]:
    """``k`` distinct texts drawn without replacement with ``numpy.random.default_rng(seed)``, in drawn order.

    A text given more than once is one candidate (its first occurrence), so no text is drawn twice; texts are the
    same when their :func:`socm_lib.checks.text_form` is (Unicode NFC, whitespace runs as one space).
    """
    texts = distinct_texts(as_texts(texts))
    k = as_int(k, "k", minimum=1, maximum=len(texts), advice=f"There are {len(texts)} distinct texts to draw from.")
    seed = as_int(seed, "seed", minimum=0)
    idx = np.random.default_rng(seed).choice(len(texts), size=k, replace=False)
    return [texts[i] for i in idx]


def hf_texts(dataset: str, split: str = "train", column: str = "text", limit: int | None = None) -> list[str]:
    """Texts from a Hugging Face dataset (needs the ``datasets`` package and a network, e.g. in Colab)."""
    if limit is not None:
        limit = as_int(limit, "limit", minimum=1)
    try:
        import datasets
    except ImportError:
        raise ImportError("hf_texts needs the 'datasets' package: pip install datasets") from None
    try:
        ds = datasets.load_dataset(dataset, split=split)
    except Exception as exc:
        raise OSError(
            f"Could not load the dataset {dataset!r} ({type(exc).__name__}): it needs a network connection to "
            "the Hugging Face Hub. Run this where the Hub is reachable (for example Colab), or use a local file."
        ) from None
    if column not in ds.column_names:
        raise ValueError(f"Dataset {dataset!r} has no column {column!r}; its columns are {ds.column_names}.")
    texts = [t for t in ds[column] if isinstance(t, str) and t.strip()]
    return texts[:limit] if limit else texts
