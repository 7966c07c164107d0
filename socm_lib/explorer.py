"""Per-pair results for the book's explorer (notebook 4): computed here, one file per encoder, read back as a folder.

The explorer lets a reader of the online book switch encoders, text sets and pair kinds with no kernel: every
number it shows was computed in advance by :func:`pair_results` and written by :func:`write_results`, one JSON
file per encoder, into one folder (``notebooks/explorer/`` in the book). :func:`read_results` reads every file of
the folder, so the file of another encoder (written in Colab for ``bert`` or ``gte``, say) dropped there is one
more choice in the explorer, with no change of code.

A file holds the encoder's name, label and kind, where its weights came from (:func:`socm_lib.encoders.provenance`
without the machine's paths) and, for each text set (:class:`TextSet`), the texts, the pairs (indices into the
texts, and the kind of each labelled pair) and :math:`d_\\mu`, :math:`d_\\Sigma` and SOCM of every pair, rounded to
:data:`DECIMALS` decimals. Every file of a folder must hold the same text sets with the same texts and pairs, so
that the encoders are compared on the same pairs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .checks import as_texts
from .data import labelled_pairs
from .encoders import REGISTRY, Encoder, load_encoder, provenance
from .extract import token_embeddings
from .pairs import all_pairs, socm_pairs

#: Decimals of the values written to a results file (the precision at which notebooks print averages).
DECIMALS = 4
#: The measures of every pair, in the order of :class:`~socm_lib.pairs.PairResult`.
MEASURES = ("d_mu", "d_sigma", "socm")
#: The layout of a results file; :func:`read_results` refuses another.
FORMAT = 1
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
        pairs = np.asarray(self.pairs)
        if pairs.ndim != 2 or pairs.shape[1] != 2 or len(pairs) != len(self.kinds):
            raise ValueError(f"Text set {self.name!r}: pairs must be an (m, 2) array with one kind per pair, got "
                             f"shape {pairs.shape} and {len(self.kinds)} kinds.")
        if len(pairs) and (pairs.min() < 0 or pairs.max() >= len(self.texts)):
            raise ValueError(f"Text set {self.name!r}: a pair indexes a text outside 0..{len(self.texts) - 1}.")

    def __len__(self) -> int:
        return len(self.pairs)

    def same_as(self, other: "TextSet") -> bool:
        """Whether both sets hold the same texts, pairs and kinds (names and labels aside)."""
        return (self.texts == other.texts and self.kinds == other.kinds
                and np.array_equal(np.asarray(self.pairs), np.asarray(other.pairs)))


def sample_set(texts, name: str = "corpus", label: str | None = None) -> TextSet:
    """Every pair ``i < j`` of ``texts`` (:func:`socm_lib.all_pairs`' order), unlabelled."""
    texts = tuple(as_texts(texts))
    pairs = all_pairs(len(texts))
    label = label or f"{name} sample: {len(texts)} texts, all {len(pairs):,} pairs"
    return TextSet(name, label, texts, pairs, ("",) * len(pairs))


def labelled_set(name: str = "labelled", label: str | None = None) -> TextSet:
    """The embedded labelled pairs (:func:`socm_lib.labelled_pairs`): their distinct texts, each pair and its kind."""
    df = labelled_pairs()
    texts = tuple(dict.fromkeys(list(df["text_a"]) + list(df["text_b"])))
    index = {t: k for k, t in enumerate(texts)}
    pairs = np.array([[index[a], index[b]] for a, b in zip(df["text_a"], df["text_b"])], dtype=np.int64)
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
    result = socm_pairs(clouds, np.asarray(text_set.pairs), device=device, progress=False)
    frame = result.to_frame()
    frame.insert(2, "kind", list(text_set.kinds))
    return frame


def results_path(folder, name: str) -> Path:
    """The results file of the encoder ``name`` in ``folder`` (a Hugging Face id's ``/`` written as ``--``)."""
    return Path(folder) / f"{name.replace('/', '--')}.json"


def _record(encoder: Encoder, sets: list[TextSet], frames: list[pd.DataFrame]) -> dict:
    where = {k: v for k, v in provenance(encoder).items() if k not in ("name", "source")}  # no machine paths
    return {
        "format": FORMAT,
        "encoder": encoder.name,
        "label": encoder.label,
        "kind": encoder.kind,
        "provenance": where,
        "decimals": DECIMALS,
        "sets": {
            s.name: {
                "label": s.label,
                "texts": list(s.texts),
                "i": [int(v) for v in frame["i"]],
                "j": [int(v) for v in frame["j"]],
                "kind": list(s.kinds),
                **{m: [round(float(v), DECIMALS) for v in frame[m]] for m in MEASURES},
            }
            for s, frame in zip(sets, frames)
        },
    }


def _close(new: dict, old: dict) -> bool:
    """Whether ``old`` records the same encoder, sets, texts and pairs as ``new``, with every value within
    :data:`KEEP_RTOL` (plus one unit in the last decimal) of the new one."""
    if {k: v for k, v in new.items() if k != "sets"} != {k: v for k, v in old.items() if k != "sets"}:
        return False
    if list(new["sets"]) != list(old.get("sets", {})):
        return False
    for name, s in new["sets"].items():
        o = old["sets"][name]
        if any(s[k] != o.get(k) for k in ("label", "texts", "i", "j", "kind")):
            return False
        for m in MEASURES:
            a, b = np.asarray(s[m], dtype=float), np.asarray(o.get(m, []), dtype=float)
            if a.shape != b.shape or not np.allclose(b, a, rtol=KEEP_RTOL, atol=10.0 ** -DECIMALS):
                return False
    return True


def write_results(folder, encoder, text_sets, *, device=None) -> Path:
    """Compute :func:`pair_results` of ``encoder`` on each of ``text_sets`` and write them to the encoder's file in
    ``folder`` (:func:`results_path`; the folder is created). Returns the file's path.

    A file that already records the same encoder, text sets and pairs with values within :data:`KEEP_RTOL` of the
    new ones is left as it is (float32 extraction differs in the last bits from one CPU to another).
    """
    sets = list(text_sets.values()) if isinstance(text_sets, dict) else list(text_sets)
    if not sets or not all(isinstance(s, TextSet) for s in sets):
        raise TypeError("text_sets must be a non-empty list (or dict) of TextSet objects (sample_set, labelled_set).")
    if len({s.name for s in sets}) != len(sets):
        raise ValueError(f"Text sets need distinct names, got {[s.name for s in sets]}.")
    encoder = encoder if isinstance(encoder, Encoder) else load_encoder(encoder, device=device)
    record = _record(encoder, sets, [pair_results(encoder, s, device=device) for s in sets])
    path = results_path(folder, encoder.name)
    if path.is_file():
        try:
            if _close(record, _read_file(path)):
                return path
        except ValueError:
            pass  # not a results file of this layout: it is replaced
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    return path


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
            pairs = np.asarray(s.pairs)
            part = pd.DataFrame({"set": name, "i": pairs[:, 0], "j": pairs[:, 1], "kind": list(s.kinds)})
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


def _read_file(path: Path) -> dict:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not a results file (not JSON: {exc}); write it with "
                         "socm_lib.explorer.write_results.") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        found = record.get("format") if isinstance(record, dict) else None
        raise ValueError(f"{path} is not a results file of format {FORMAT} (found format {found!r}); write it "
                         "again with socm_lib.explorer.write_results.")
    try:
        for name, s in record["sets"].items():
            n = len(s["i"])
            if any(len(s[k]) != n for k in ("j", "kind", *MEASURES)):
                raise ValueError(f"{path}: text set {name!r} has columns of different lengths.")
        record["encoder"], record["label"], record["kind"]
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{path} lacks a field of a results file ({exc!r}); write it again with "
                         "socm_lib.explorer.write_results.") from None
    return record


def _text_set(name: str, s: dict) -> TextSet:
    """The text set a results file records under ``name``."""
    return TextSet(name, s["label"], tuple(s["texts"]), np.stack([s["i"], s["j"]], axis=1).reshape(-1, 2),
                   tuple(s["kind"]))


def read_results(folder) -> Results:
    """Every results file (``*.json``) of ``folder``, checked to hold the same text sets, texts and pairs.

    Raises ``FileNotFoundError`` for a missing folder, ``ValueError`` for a folder without results files, a file that
    is not one, two files for one encoder, or files whose text sets differ (naming both files).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"No results folder {folder} (resolved: {folder.resolve()}); write the results first "
                                "with socm_lib.explorer.write_results (notebook 4 does).")
    records = [(path, _read_file(path)) for path in sorted(folder.glob("*.json"))]
    if not records:
        raise ValueError(f"{folder} holds no results files (*.json); write them with "
                         "socm_lib.explorer.write_results (notebook 4 does).")
    first_path, first = records[0]
    encoders, values = {}, {}
    sets = {name: _text_set(name, s) for name, s in first["sets"].items()}
    for path, record in sorted(records, key=lambda r: _order(r[1]["encoder"])):
        name = record["encoder"]
        if name in encoders:
            raise ValueError(f"Two results files for encoder {name!r}: {encoders[name]['file']} and {path}.")
        if list(record["sets"]) != list(sets):
            raise ValueError(f"{path} holds the text sets {list(record['sets'])}, {first_path} holds {list(sets)}: "
                             "write every file with the same text sets.")
        for set_name, s in record["sets"].items():
            if not _text_set(set_name, s).same_as(sets[set_name]):
                raise ValueError(f"{path} and {first_path} hold different texts or pairs in text set {set_name!r}: "
                                 "write every file from the same text sets.")
            values[name, set_name] = pd.DataFrame({m: np.asarray(s[m], dtype=float) for m in MEASURES})
        encoders[name] = {"label": record["label"], "kind": record["kind"],
                          "provenance": record.get("provenance", {}), "file": path}
    return Results(folder, encoders, sets, values)
