"""Command line: ``python -m socm_lib run ...`` measures SOCM over text pairs and writes a CSV.

``run`` streams the pairs (:func:`socm_lib.socm_summary`): without ``--out`` it keeps only the
summary, so all pairs of tens of thousands of texts fit in memory; with ``--out`` it writes the CSV
chunk by chunk.

Examples::

    python -m socm_lib run --encoder all-minilm-l6                      # embedded corpus, 1,000 texts, all pairs
    python -m socm_lib run --encoder bert --texts wiki.txt --out bert.csv   # needs a network for 'bert'
    python -m socm_lib run --encoder all-minilm-l6 --pairs labelled
    python -m socm_lib models                                           # the registry of short names
    python -m socm_lib gpu-check                                        # this device vs the CPU reference
"""

from __future__ import annotations

import argparse
import os
import sys
from functools import partial
from pathlib import Path

import numpy as np

from .data import (
    corpus,
    hf_texts,
    labelled_pairs,
    read_lines,
    read_msmarco_passages,
    read_sick,
    read_stsb,
    sample_texts,
)
from .report import summary_lines
from .encoders import REGISTRY, ModelUnavailableError, load_encoder
from .extract import token_embeddings
from .gpu_check import main as gpu_check_main
from .pairs import cross_pairs
from .stats import concentration_ratio
from .summary import socm_summary


def _texts(spec: str) -> list[str]:
    """``corpus``, a text file (one per line), or ``stsb:PATH``, ``sick:PATH``, ``msmarco:PATH``, ``hf:NAME[:SPLIT[:COLUMN]]``."""
    kind, _, rest = spec.partition(":")
    if spec == "corpus":
        return list(corpus()["text"])
    if kind in ("stsb", "sick") and rest:
        df = read_stsb(rest) if kind == "stsb" else read_sick(rest)
        cols = ["sentence1", "sentence2"] if kind == "stsb" else ["sentence_a", "sentence_b"]
        return list(dict.fromkeys(t for c in cols for t in df[c]))  # unique, first-seen order
    if kind == "msmarco" and rest:
        return read_msmarco_passages(rest)
    if kind == "hf" and rest:
        name, split, column = (rest.split(":") + ["train", "text"])[:3]
        return hf_texts(name, split, column)
    return read_lines(spec)


def _pairs(mode: str, n: int, seed: int):
    """``None`` for all pairs, or ``N`` distinct pairs ``i < j`` drawn without replacement (seeded)."""
    if mode == "all":
        return None
    if mode.startswith("random:"):
        count = mode.split(":", 1)[1]
        total = n * (n - 1) // 2
        if not count.isdigit() or not 1 <= int(count) <= total:
            raise ValueError(f"--pairs {mode!r}: N must be an integer with 1 <= N <= {total} "
                             f"(the number of pairs i < j of {n} texts).")
        flat = np.sort(np.random.default_rng(seed).choice(total, size=int(count), replace=False))
        return _condensed_pairs(flat, n)
    raise ValueError(f"Unknown --pairs {mode!r}; use all, random:N or labelled.")


def _condensed_pairs(flat: np.ndarray, n: int) -> np.ndarray:
    """The pairs ``(i, j)``, ``i < j``, at positions ``flat`` of the condensed order of ``n`` texts, ``(P, 2)``.

    Row ``i`` starts at position ``s(i) = i n - i (i + 1) / 2``; ``i`` is the largest row with ``s(i) <= k``.
    """
    k = flat.astype(np.int64)
    i = (n - 2 - np.floor(np.sqrt(-8.0 * k + 4.0 * n * (n - 1) - 7) / 2 - 0.5)).astype(np.int64)
    j = k + i + 1 - n * (n - 1) // 2 + (n - i) * (n - i - 1) // 2
    return np.stack([i, j], axis=1)


def _check_out(path) -> None:
    """Refuse an ``--out`` that cannot be written, before any model is loaded."""
    if path is None:
        return
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    if p.is_dir() or not folder.is_dir() or not os.access(folder, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise ValueError(f"--out {path}: cannot write a file there; choose a writable file path.")


def run(args) -> int:
    """Extract the texts' token clouds, then stream SOCM over the pairs (:func:`socm_lib.socm_summary`).

    Without ``--out`` only the summary is kept (memory bounded by the engine's block size); with
    ``--out`` the pairs are also written to the CSV chunk by chunk, in pair order. The texts, pairs and
    ``--out`` are checked before the model loads.
    """
    if args.pairs == "labelled":
        df = labelled_pairs()
        texts = list(df["text_a"]) + list(df["text_b"])
        pairs = cross_pairs(len(df), len(df), aligned=True)  # (k, n + k): text_a[k] with text_b[k]
        extra = {"kind": np.array(df["kind"], dtype=object)}
    else:
        texts = _texts(args.texts)
        if not texts:
            raise ValueError(f"--texts {args.texts}: no non-empty text found.")
        if args.sample and args.sample < len(texts):
            texts = sample_texts(texts, args.sample, args.seed)
        pairs = _pairs(args.pairs, len(texts), args.seed)
        extra = {}
    _check_out(args.out)
    encoder = load_encoder(args.encoder, device=args.device, trust_remote_code=args.trust_remote_code)
    clouds = token_embeddings(encoder, texts, layer=args.layer, special_tokens=not args.no_special_tokens,
                              batch_size=args.batch_size, progress=True)
    concentration = np.array([concentration_ratio(c) for c in clouds])
    if args.out:
        with open(args.out, "w", newline="") as handle:
            result = socm_summary(clouds, pairs, device=args.device, progress=True,
                                  on_pairs=partial(_write_chunk, handle, texts, extra))
    else:
        result = socm_summary(clouds, pairs, device=args.device, progress=True)
    summary = result.summary()
    summary["mean_concentration"] = float(np.mean(concentration))
    if result.median_socm_error > 0:  # more pairs than the exact median keeps: say how close the median is
        summary["median_socm_error"] = result.median_socm_error
    print(f"encoder: {encoder.name} ({encoder.kind}); texts: {len(texts)}; layer: {args.layer}")
    print("\n".join(summary_lines(summary)))
    if args.out:
        print(f"wrote {result.pairs} rows to {args.out}")
    return 0


def _write_chunk(handle, texts: list[str], extra: dict, start: int, chunk) -> None:
    """Append one chunk of pairs (rows ``start ...`` of the CSV) with its extra columns and both texts."""
    frame = chunk.to_frame()
    for k, v in extra.items():
        frame[k] = v[start : start + len(frame)]
    frame["text_i"] = [texts[i] for i in frame["i"]]
    frame["text_j"] = [texts[j] for j in frame["j"]]
    frame.to_csv(handle, index=False, header=start == 0)


def models(_args) -> int:
    for name, spec in REGISTRY.items():
        paper = "" if spec.paper_socm is None else f"  paper SOCM {spec.paper_socm:.3f}"
        label = f"  [{spec.label}]" if spec.label else ""
        print(f"{name:27s} {spec.kind:12s} {spec.hf_id or '(offline)'}{paper}{label}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m socm_lib", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="measure SOCM over text pairs")
    p.add_argument("--encoder", default="all-minilm-l6", help="registry name, Hugging Face id or folder")
    p.add_argument("--texts", default="corpus", help="corpus | FILE | stsb:FILE | sick:FILE | msmarco:FILE | hf:NAME[:SPLIT[:COLUMN]]")
    p.add_argument("--sample", type=int, default=1000, help="number of texts sampled (seeded); 0 = all")
    p.add_argument("--pairs", default="all", help="all | random:N | labelled")
    p.add_argument("--layer", type=int, default=-1, help="hidden-state index (0 = embeddings, -1 = last)")
    p.add_argument("--no-special-tokens", action="store_true", help="drop [CLS]/[SEP]-type tokens")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--device", default=None, help="cpu | cuda (default: GPU if present)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--trust-remote-code", action="store_true", help="allow model code from its repository")
    p.add_argument("--out", default=None, help="CSV file with one row per pair")
    p.set_defaults(func=run)
    sub.add_parser("models", help="list the registry of encoders").set_defaults(func=models)
    g = sub.add_parser("gpu-check", help="check float16 extraction and SOCM on this device against the CPU")
    g.add_argument("--encoder", default="all-minilm-l6", help="registry name, Hugging Face id or folder")
    g.add_argument("--n-texts", type=int, default=200, help="corpus texts sampled (all pairs are measured)")
    g.add_argument("--device", default=None, help="cpu | cuda (default: GPU if present)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--out", default="gpu_check.json", help="JSON report")
    g.set_defaults(func=gpu_check_main)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError, OSError, ImportError, ModelUnavailableError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
