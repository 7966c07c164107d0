"""Per-pair results for the book's explorer (notebook 4): computed here, written to one folder, read back checked.

The explorer lets a reader of the online book switch encoders, text sets and pair kinds with no kernel: every
number it shows was computed in advance by :func:`pair_results` and written by :func:`write_results` into one
folder (``notebooks/explorer/`` in the book). :func:`read_results` reads the whole folder, so the file of another
encoder (written in Colab for ``bert`` or ``gte``, say, on the same text sets) dropped there is one more choice in
the explorer, with no change of code.

**The folder's files** (schema version :data:`VERSION`; every file JSON in UTF-8, written atomically by
:func:`socm_lib.checks.output_file`, so that a reader never sees a partial file):

* :data:`TEXT_SETS_FILE` holds the text sets, once for every encoder::

    {"schema": "socm-book/explorer-text-sets", "version": 2,
     "sets": [{"name": "corpus", "label": "...", "texts": ["...", ...],
               "pairs": [[i, j], ...], "pair_kinds": ["paraphrase" or "", ...]}, ...]}

  ``pairs`` index ``texts``; ``pair_kinds[k]`` is pair ``k``'s kind (one of :data:`socm_lib.PAIR_KINDS`) or ``""``
  where the pairs carry no label.
* one file per encoder, ``<encoder>.json`` (:func:`results_path`)::

    {"schema": "socm-book/explorer-encoder", "version": 2, "text_sets": "<sha256 of the text sets>",
     "encoder": "all-minilm-l6", "label": "...", "encoder_kind": "contrastive", "provenance": {...},
     "decimals": 4, "values": {"corpus": {"d_mu": [...], "d_sigma": [...], "socm": [...]}, ...}}

  ``values`` holds :math:`d_\\mu`, :math:`d_\\Sigma` and SOCM of every pair of every set, in the sets' pair order,
  rounded to :data:`DECIMALS` decimals; ``text_sets`` is the fingerprint (:func:`fingerprint`) of the text sets
  they were measured on, so that results of two different runs are never shown side by side.

Every field is checked on reading, and every refusal names the file and the field. :func:`write_results` checks
the folder before it computes anything: a folder that holds results of other text sets is refused, or, with
``replace=True``, its results files are replaced as a whole (with a warning naming what was removed), so a
folder never mixes two runs.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .checks import as_bool, as_texts, distinct_texts, text_form, write_text
from .data import labelled_pairs
from .encoders import REGISTRY, Encoder, load_encoder, provenance
from .extract import token_embeddings
from .pairs import all_pairs, socm_pairs

#: Decimals of the values written to a results file (the precision at which notebooks print averages).
DECIMALS = 4
#: The measures of every pair, in the order of :class:`~socm_lib.pairs.PairResult`.
MEASURES = ("d_mu", "d_sigma", "socm")
#: The version of the folder's schema (module docstring); :func:`read_results` refuses another.
VERSION = 2
#: The ``schema`` of each kind of file.
SETS_SCHEMA, ENCODER_SCHEMA = "socm-book/explorer-text-sets", "socm-book/explorer-encoder"
#: The file of the text sets, one per folder.
TEXT_SETS_FILE = "text-sets.json"
#: A rewritten file keeps its old values where every new one lies within this relative tolerance of them (the
#: tolerance nbval allows float32 results; see conftest.py), so re-executing notebook 4 on another CPU, whose
#: float32 kernels differ in the last bits, leaves the committed files as they are.
KEEP_RTOL = 1e-3


@dataclass(frozen=True, eq=False)
class TextSet:
    """Texts and the pairs of them to measure: ``pairs[k]`` indexes ``texts``; ``kinds[k]`` is pair ``k``'s kind
    (one of :data:`socm_lib.PAIR_KINDS`), or ``""`` where the pairs carry no label."""

    name: str
    label: str
    texts: tuple[str, ...]
    pairs: np.ndarray
    kinds: tuple[str, ...]

    def __post_init__(self):
        for field, value in (("name", self.name), ("label", self.label)):
            if not isinstance(value, str) or not value.strip():
                raise TypeError(f"Text set {self.name!r}: {field} must be a non-empty string, got {value!r}.")
        object.__setattr__(self, "texts", tuple(as_texts(self.texts, f"text set {self.name!r}: texts")))
        if not isinstance(self.kinds, (list, tuple)) or not all(isinstance(k, str) for k in self.kinds):
            raise TypeError(f"Text set {self.name!r}: kinds must be a list of strings, one per pair.")
        object.__setattr__(self, "kinds", tuple(self.kinds))
        pairs = np.asarray(self.pairs)
        if pairs.size == 0:
            pairs = pairs.reshape(0, 2).astype(np.int64)
        if pairs.ndim != 2 or pairs.shape[1] != 2 or len(pairs) != len(self.kinds):
            raise ValueError(f"Text set {self.name!r}: pairs must be an (m, 2) array with one kind per pair, got "
                             f"shape {pairs.shape} and {len(self.kinds)} kinds.")
        if pairs.dtype.kind not in "iu":
            raise TypeError(f"Text set {self.name!r}: pairs must hold integer indices, got dtype {pairs.dtype}.")
        if len(pairs) == 0:
            raise ValueError(f"Text set {self.name!r} has no pair; give it at least one.")
        if pairs.min() < 0 or pairs.max() >= len(self.texts):
            raise ValueError(f"Text set {self.name!r}: a pair indexes a text outside 0..{len(self.texts) - 1}.")
        object.__setattr__(self, "pairs", pairs.astype(np.int64))

    def __len__(self) -> int:
        return len(self.pairs)

    def same_as(self, other: "TextSet") -> bool:
        """Whether both sets hold the same texts (by :func:`socm_lib.checks.text_form`), pairs and kinds (names and
        labels aside)."""
        return (len(self.texts) == len(other.texts)
                and all(text_form(a) == text_form(b) for a, b in zip(self.texts, other.texts))
                and self.kinds == other.kinds and np.array_equal(self.pairs, other.pairs))


def sample_set(texts, name: str = "corpus", label: str | None = None) -> TextSet:
    """Every pair ``i < j`` of ``texts`` (:func:`socm_lib.all_pairs`' order), unlabelled; a text given twice (by
    :func:`socm_lib.checks.text_form`) is refused, since it would be paired with itself."""
    texts = tuple(as_texts(texts))
    if len(distinct_texts(texts)) < len(texts):
        raise ValueError(f"texts holds {len(texts) - len(distinct_texts(texts))} repeated text(s); pass distinct "
                         "texts (socm_lib.checks.distinct_texts keeps the first of each).")
    if len(texts) < 2:
        raise ValueError("A sample set needs at least two texts to make a pair.")
    pairs = all_pairs(len(texts))
    label = label or f"{name} sample: {len(texts)} texts, all {len(pairs):,} pairs"
    return TextSet(name, label, texts, pairs, ("",) * len(pairs))


def labelled_set(name: str = "labelled", label: str | None = None) -> TextSet:
    """The embedded labelled pairs (:func:`socm_lib.labelled_pairs`): their distinct texts, each pair and its kind."""
    df = labelled_pairs()
    texts = tuple(distinct_texts(list(df["text_a"]) + list(df["text_b"])))
    index = {text_form(t): k for k, t in enumerate(texts)}
    pairs = np.array([[index[text_form(a)], index[text_form(b)]] for a, b in zip(df["text_a"], df["text_b"])],
                     dtype=np.int64)
    label = label or f"labelled pairs ({len(df)}, {df['kind'].nunique()} kinds)"
    return TextSet(name, label, texts, pairs, tuple(df["kind"]))


def pair_results(encoder, text_set: TextSet, *, device=None) -> pd.DataFrame:
    """:math:`d_\\mu`, :math:`d_\\Sigma` and SOCM of every pair of ``text_set`` under one encoder.

    ``encoder`` is a registry name or a loaded :class:`~socm_lib.encoders.Encoder`. The clouds are
    :func:`socm_lib.token_embeddings` (the paper's conventions: final layer, special tokens included) and the values
    :func:`socm_lib.socm_pairs`' (exact, in float64). Returns a DataFrame with one row per pair, in the set's order:
    columns ``i``, ``j`` (indices into ``text_set.texts``), ``kind`` and :data:`MEASURES`.
    """
    if not isinstance(text_set, TextSet):
        raise TypeError(f"text_set must be a TextSet (sample_set, labelled_set), got {type(text_set).__name__}.")
    encoder = encoder if isinstance(encoder, Encoder) else load_encoder(encoder, device=device)
    clouds = token_embeddings(encoder, list(text_set.texts), progress=False)
    result = socm_pairs(clouds, text_set.pairs, device=device, progress=False)
    frame = result.to_frame()
    frame.insert(2, "kind", list(text_set.kinds))
    return frame


def results_path(folder, name: str) -> Path:
    """The results file of the encoder ``name`` in ``folder`` (a Hugging Face id's ``/`` written as ``--``)."""
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"The encoder's name must be a non-empty string, got {name!r}.")
    path = Path(folder) / f"{name.replace('/', '--').replace(os.sep, '--')}.json"
    if path.name == TEXT_SETS_FILE:
        raise ValueError(f"An encoder named {name!r} would write over the folder's {TEXT_SETS_FILE}; rename it.")
    return path


# ---------------------------------------------------------------------------------------------------------------------
# The records of the two kinds of file


def _sets_record(sets: list[TextSet]) -> dict:
    """The content of :data:`TEXT_SETS_FILE` for ``sets``."""
    return {"schema": SETS_SCHEMA, "version": VERSION, "sets": [
        {"name": s.name, "label": s.label, "texts": list(s.texts), "pairs": s.pairs.tolist(),
         "pair_kinds": list(s.kinds)} for s in sets]}


def fingerprint(sets: list[TextSet]) -> str:
    """The SHA-256 of the text sets' names, labels, texts (by :func:`socm_lib.checks.text_form`), pairs and kinds:
    two folders' results were measured on the same pairs exactly when their fingerprints agree."""
    canon = [{"name": s.name, "label": s.label, "texts": [text_form(t) for t in s.texts],
              "pairs": s.pairs.tolist(), "pair_kinds": list(s.kinds)} for s in sets]
    return hashlib.sha256(json.dumps(canon, ensure_ascii=False, separators=(",", ":")).encode("utf-8")).hexdigest()


def _encoder_record(encoder: Encoder, sets: list[TextSet], frames: list[pd.DataFrame]) -> dict:
    """The content of an encoder's file: its name, label, kind, provenance and the values of every pair."""
    where = {k: v for k, v in provenance(encoder).items() if k not in ("name", "source")}  # no machine paths
    return {
        "schema": ENCODER_SCHEMA, "version": VERSION, "text_sets": fingerprint(sets),
        "encoder": encoder.name, "label": encoder.label, "encoder_kind": encoder.kind, "provenance": where,
        "decimals": DECIMALS,
        "values": {s.name: {m: [round(float(v), DECIMALS) for v in frame[m]] for m in MEASURES}
                   for s, frame in zip(sets, frames)},
    }


def _close(new: dict, old: dict) -> bool:
    """Whether ``old`` records the same encoder and text sets as ``new``, with every value within
    :data:`KEEP_RTOL` (plus one unit in the last decimal) of the new one."""
    if {k: v for k, v in new.items() if k != "values"} != {k: v for k, v in old.items() if k != "values"}:
        return False
    return all(np.allclose(old["values"][name][m], values[m], rtol=KEEP_RTOL, atol=10.0 ** -DECIMALS)
               for name, values in new["values"].items() for m in MEASURES)


def _write_json(path: Path, record: dict) -> None:
    """``record`` as compact UTF-8 JSON in ``path``, atomically (:func:`socm_lib.checks.write_text`)."""
    write_text(path, json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n",
               "results file")


# ---------------------------------------------------------------------------------------------------------------------
# Reading and checking


class _Refusal(ValueError):
    """A results file that breaks the schema (the message names the file and the field)."""


def _refuse(path: Path, what: str) -> _Refusal:
    return _Refusal(f"{path}: {what}; write the folder again with socm_lib.explorer.write_results (notebook 4 "
                    "does).")


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is beyond the range of float64")
    return value


def _load(path: Path) -> dict:
    """The JSON object in ``path``: a regular UTF-8 file holding strict JSON (no NaN, Infinity or 1e999)."""
    if path.is_symlink() and not path.exists():
        raise _Refusal(f"{path} is a symbolic link to {os.readlink(path)}, which does not exist; remove it or "
                       "restore its target.")
    if path.is_dir():
        raise _Refusal(f"{path} is a folder, not a results file; a results folder holds only its results files "
                       f"({TEXT_SETS_FILE} and one <encoder>.json per encoder).")
    try:
        text = path.read_bytes().decode("utf-8")
        record = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except UnicodeDecodeError as exc:
        raise _refuse(path, f"not UTF-8 (byte {exc.start})") from None
    except ValueError as exc:  # JSONDecodeError is a ValueError, and so are the two refusals above
        raise _refuse(path, f"not strict JSON ({exc})") from None
    except OSError as exc:
        raise _Refusal(f"{path}: cannot be read ({exc.strerror or exc}).") from None
    if not isinstance(record, dict):
        raise _refuse(path, f"holds a JSON {type(record).__name__}, not an object")
    return record


def _field(path: Path, record: dict, key: str, kind, where: str = ""):
    """``record[key]``, which must be an instance of ``kind`` (never a ``bool`` standing for a number)."""
    if key not in record:
        raise _refuse(path, f"the field {where}{key!r} is missing")
    value = record[key]
    if isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise _refuse(path, f"the field {where}{key!r} must be a {names}, got {value!r:.60}")
    return value


def _list_of(path: Path, record: dict, key: str, kind, where: str, length: int | None = None) -> list:
    """``record[key]``: a list whose every item is a ``kind`` (and, where given, of ``length`` items)."""
    items = _field(path, record, key, list, where)
    for k, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, kind):
            raise _refuse(path, f"{where}{key}[{k}] is {item!r:.60}, not a {getattr(kind, '__name__', 'number')}")
    if length is not None and len(items) != length:
        raise _refuse(path, f"{where}{key} has {len(items)} entries, but the set has {length} pairs")
    return items


def _check_header(path: Path, record: dict, schema: str) -> None:
    if record.get("format") == 1 and "schema" not in record:
        raise _refuse(path, "a results file of the first layout (format 1, texts copied into every encoder's file)")
    found = _field(path, record, "schema", str)
    if found != schema:
        raise _refuse(path, f"the field 'schema' is {found!r}, expected {schema!r}")
    version = _field(path, record, "version", int)
    if version != VERSION:
        raise _refuse(path, f"schema version {version}, but this library reads version {VERSION}")


def _read_sets(path: Path) -> list[TextSet]:
    """The text sets of a folder's :data:`TEXT_SETS_FILE`, every field checked."""
    record = _load(path)
    _check_header(path, record, SETS_SCHEMA)
    entries = _field(path, record, "sets", list)
    if not entries:
        raise _refuse(path, "the field 'sets' is empty")
    sets = []
    for k, entry in enumerate(entries):
        where = f"sets[{k}]."
        if not isinstance(entry, dict):
            raise _refuse(path, f"sets[{k}] is {entry!r:.60}, not an object")
        name, label = _field(path, entry, "name", str, where), _field(path, entry, "label", str, where)
        texts = _list_of(path, entry, "texts", str, where)
        pairs = _list_of(path, entry, "pairs", list, where)
        for p, pair in enumerate(pairs):
            if len(pair) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in pair):
                raise _refuse(path, f"{where}pairs[{p}] is {pair!r:.60}, not a pair [i, j] of whole numbers")
        kinds = _list_of(path, entry, "pair_kinds", str, where, len(pairs))
        try:
            sets.append(TextSet(name, label, tuple(texts), np.array(pairs, dtype=np.int64).reshape(-1, 2),
                                tuple(kinds)))
        except (TypeError, ValueError, OverflowError) as exc:
            raise _refuse(path, f"{where[:-1]}: {exc}") from None
    names = [s.name for s in sets]
    if len(set(names)) < len(names):
        raise _refuse(path, f"two text sets share a name ({names})")
    return sets


def _read_encoder(path: Path, sets: list[TextSet], expected: str) -> dict:
    """The record of an encoder's file, every field checked against the folder's text ``sets`` (whose
    :func:`fingerprint` is ``expected``)."""
    record = _load(path)
    _check_header(path, record, ENCODER_SCHEMA)
    for key in ("text_sets", "encoder", "label", "encoder_kind"):
        _field(path, record, key, str)
    if record["text_sets"] != expected:
        raise _Refusal(f"{path} was measured on other text sets than the folder's {TEXT_SETS_FILE} holds (its field "
                       f"'text_sets' is {record['text_sets'][:12]}..., theirs {expected[:12]}...): the "
                       "folder mixes two runs. Write the folder again with socm_lib.explorer.write_results, or move "
                       "that file to the folder of its own run.")
    _field(path, record, "provenance", dict)
    _field(path, record, "decimals", int)
    if not record["encoder"].strip():
        raise _refuse(path, "the field 'encoder' is empty")
    values = _field(path, record, "values", dict)
    if list(values) != [s.name for s in sets]:
        raise _refuse(path, f"the field 'values' holds the sets {list(values)}, but the folder's {TEXT_SETS_FILE} "
                            f"holds {[s.name for s in sets]}")
    for s in sets:
        where = f"values[{s.name!r}]."
        if not isinstance(values[s.name], dict):
            raise _refuse(path, f"{where[:-1]} is not an object")
        for m in MEASURES:
            _list_of(path, values[s.name], m, (int, float), where, len(s))
    return record


@dataclass
class Results:
    """The results files of one folder (:func:`read_results`): the encoders, the text sets they share, and the
    values of every pair under every encoder."""

    folder: Path
    encoders: dict[str, dict]  # name -> {"label", "kind", "provenance", "file"}, offline registry order first
    sets: dict[str, TextSet]
    values: dict[tuple[str, str], pd.DataFrame]  # (encoder, set name) -> columns MEASURES, one row per pair

    def select(self, encoder: str, text_set: str, kind: str | None = None) -> pd.DataFrame:
        """The values of ``encoder`` on the pairs of ``text_set`` (only those of ``kind``, if given)."""
        if encoder not in self.encoders:
            raise ValueError(f"No results for encoder {encoder!r} in {self.folder}; found {list(self.encoders)}.")
        if text_set not in self.sets:
            raise ValueError(f"No text set {text_set!r} in {self.folder}; found {list(self.sets)}.")
        frame = self.values[encoder, text_set]
        if kind is None:
            return frame
        kinds = np.asarray(self.sets[text_set].kinds)
        if kind not in set(kinds):
            raise ValueError(f"Text set {text_set!r} has no pairs of kind {kind!r}; its kinds: {sorted(set(kinds))}.")
        return frame[kinds == kind].reset_index(drop=True)

    def mean(self, encoder: str, text_set: str, kind: str | None = None, measure: str = "socm") -> float:
        """The average of ``measure`` (one of :data:`MEASURES`) over the pairs :meth:`select` gives."""
        if measure not in MEASURES:
            raise ValueError(f"measure must be one of {MEASURES}, got {measure!r}.")
        return float(np.mean(self.select(encoder, text_set, kind)[measure]))

    def pair_table(self) -> pd.DataFrame:
        """Every pair of every set, one row each: ``set``, ``i``, ``j``, ``kind``, then one column
        ``"<measure>@<encoder>"`` per measure and encoder (the explorer's data)."""
        parts = []
        for name, s in self.sets.items():
            part = pd.DataFrame({"set": name, "i": s.pairs[:, 0], "j": s.pairs[:, 1], "kind": list(s.kinds)})
            for enc in self.encoders:
                for m in MEASURES:
                    part[f"{m}@{enc}"] = self.values[enc, name][m].to_numpy()
            parts.append(part)
        return pd.concat(parts, ignore_index=True)

    def text_table(self) -> pd.DataFrame:
        """Every text of every set, one row each: ``set``, ``index`` (into the set's texts) and ``text``."""
        return pd.DataFrame([{"set": name, "index": k, "text": t}
                             for name, s in self.sets.items() for k, t in enumerate(s.texts)])


def _order(name: str) -> tuple:
    """Registry encoders first, in the registry's order (the offline ones lead it), then the others by name."""
    names = list(REGISTRY)
    return (0, names.index(name), "") if name in REGISTRY else (1, 0, name)


def _results_folder(folder) -> Path:
    """``folder`` as a :class:`~pathlib.Path` of an existing folder."""
    if isinstance(folder, bytes):
        folder = os.fsdecode(folder)
    if not isinstance(folder, (str, os.PathLike)):
        raise TypeError(f"folder must be a path (str or pathlib.Path), got {folder!r}.")
    folder = Path(folder)
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else f"does not exist (resolved: {folder.resolve()})"
        raise FileNotFoundError(f"The results folder {folder} {what}; write the results first with "
                                "socm_lib.explorer.write_results (notebook 4 does).")
    return folder


def read_results(folder) -> Results:
    """Every results file of ``folder``: its :data:`TEXT_SETS_FILE` and each encoder's file, every field checked
    (module docstring), all of them measured on the same text sets.

    Raises ``FileNotFoundError`` for a missing folder and ``ValueError``, naming the file and the field, for a
    folder without results, a file that breaks the schema (a value that is not a finite number, an index that is
    not a whole number, a missing field, a folder or a broken link named ``*.json``, a file of the first layout),
    two files for one encoder, or an encoder's file measured on other text sets than the folder's.
    """
    folder = _results_folder(folder)
    sets_path = folder / TEXT_SETS_FILE
    paths = sorted(p for p in folder.glob("*.json") if p.name != TEXT_SETS_FILE)
    if not sets_path.exists() and not sets_path.is_symlink():
        if paths:
            for path in paths:  # a file of the first layout says so
                _check_header(path, _load(path), ENCODER_SCHEMA)
            raise ValueError(f"{folder} has no {TEXT_SETS_FILE}, so its encoders' files cannot be read; write the "
                             "folder again with socm_lib.explorer.write_results (notebook 4 does).")
        raise ValueError(f"{folder} holds no results files ({TEXT_SETS_FILE} and one <encoder>.json per encoder); "
                         "write them with socm_lib.explorer.write_results (notebook 4 does).")
    sets = _read_sets(sets_path)
    if not paths:
        raise ValueError(f"{folder} holds no encoder's results file beside {TEXT_SETS_FILE}; write them with "
                         "socm_lib.explorer.write_results (notebook 4 does).")
    expected = fingerprint(sets)
    records = [(path, _read_encoder(path, sets, expected)) for path in paths]
    encoders, values = {}, {}
    for path, record in sorted(records, key=lambda r: _order(r[1]["encoder"])):
        name = record["encoder"]
        if name in encoders:
            raise ValueError(f"Two results files for encoder {name!r}: {encoders[name]['file']} and {path}.")
        for s in sets:
            values[name, s.name] = pd.DataFrame({m: np.asarray(record["values"][s.name][m], dtype=float)
                                                 for m in MEASURES})
        encoders[name] = {"label": record["label"], "kind": record["encoder_kind"],
                          "provenance": record["provenance"], "file": path}
    return Results(folder, encoders, {s.name: s for s in sets}, values)


# ---------------------------------------------------------------------------------------------------------------------
# Writing


def _is_results_file(path: Path) -> bool:
    """Whether ``path`` is a results file of any layout this library has written (the only files it replaces)."""
    try:
        record = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and (record.get("format") == 1 or record.get("schema") in (SETS_SCHEMA,
                                                                                                ENCODER_SCHEMA))


def _other_run(folder: Path, expected: str) -> list[Path]:
    """The results files of ``folder`` that belong to another run than the text sets of fingerprint ``expected``
    (every one of them, once any does), or ``[]`` when the folder holds this run's files or none."""
    if not folder.exists():
        return []
    files = sorted(p for p in folder.glob("*.json") if p.is_file() and _is_results_file(p))
    try:
        same = fingerprint(_read_sets(folder / TEXT_SETS_FILE)) == expected
        same = same and all(json.loads(p.read_bytes().decode("utf-8")).get("text_sets") == expected
                            for p in files if p.name != TEXT_SETS_FILE)
    except (_Refusal, OSError):
        same = not files
    return [] if same else files


def write_results(folder, encoder, text_sets, *, device=None, replace: bool = False) -> Path:
    """Compute :func:`pair_results` of ``encoder`` on each of ``text_sets`` and write them to ``folder``
    (created if missing): the encoder's file (:func:`results_path`) and, once, the folder's
    :data:`TEXT_SETS_FILE`. Returns the encoder's file.

    Before anything is computed, the folder is checked: where it holds results of other text sets (another sample,
    other labels, a file of the first layout), ``replace=False`` refuses with a ``ValueError`` that names them, and
    ``replace=True`` replaces that whole set of files once the new values are computed (the old encoders' files are
    removed first, then the new files written, so the folder never mixes two runs), with a warning naming what was
    removed. Other files are never touched. A file that already records the same encoder and text sets with values
    within :data:`KEEP_RTOL` of the new ones is left as it is (float32 extraction differs in the last bits from one
    CPU to another).
    """
    replace = as_bool(replace, "replace")
    sets = list(text_sets.values()) if isinstance(text_sets, dict) else list(text_sets)
    if not sets or not all(isinstance(s, TextSet) for s in sets):
        raise TypeError("text_sets must be a non-empty list (or dict) of TextSet objects (sample_set, labelled_set).")
    if len({s.name for s in sets}) != len(sets):
        raise ValueError(f"Text sets need distinct names, got {[s.name for s in sets]}.")
    if isinstance(folder, bytes):
        folder = os.fsdecode(folder)
    if not isinstance(folder, (str, os.PathLike)):
        raise TypeError(f"folder must be a path (str or pathlib.Path), got {folder!r}.")
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"folder {folder} is a file; pass a folder for the results files.")
    name = encoder.name if isinstance(encoder, Encoder) else encoder
    path = results_path(folder, name)
    expected = fingerprint(sets)
    stale = _other_run(folder, expected)
    if stale and not replace:
        raise ValueError(f"{folder} holds results of other text sets ({', '.join(p.name for p in stale)}); nothing "
                         "was computed or written. Pass replace=True to replace all of them with this run's, or "
                         "write to another folder.")
    encoder = encoder if isinstance(encoder, Encoder) else load_encoder(encoder, device=device)
    record = _encoder_record(encoder, sets, [pair_results(encoder, s, device=device) for s in sets])
    folder.mkdir(parents=True, exist_ok=True)
    if stale:
        for old in stale:
            old.unlink()
        warnings.warn(f"{folder} held results of other text sets: removed {', '.join(p.name for p in stale)}, "
                      f"which this run's files replace.", stacklevel=2)
    if not (folder / TEXT_SETS_FILE).exists():
        _write_json(folder / TEXT_SETS_FILE, _sets_record(sets))
    try:
        if path.is_file() and _close(record, _read_encoder(path, sets, expected)):
            return path
    except (_Refusal, KeyError):
        pass  # not a results file of this layout: it is replaced
    _write_json(path, record)
    return path
