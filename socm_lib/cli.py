"""Command line: ``python -m socm_lib run ...`` measures SOCM over text pairs and writes a CSV.

``run`` streams the pairs (:func:`socm_lib.socm_summary`): without ``--out`` it keeps only the
summary, so all pairs of tens of thousands of texts fit in memory; with ``--out`` it writes the CSV
chunk by chunk.

Examples::

    python -m socm_lib run --encoder all-minilm-l6                      # embedded corpus, 1,000 texts, all pairs
    python -m socm_lib run --encoder bert --texts wiki.txt --out bert.csv   # needs a network for 'bert'
    python -m socm_lib run --encoder all-minilm-l6 --pairs labelled
    python -m socm_lib run --texts big.txt --sample 0 --target-halfwidth 0.001   # mean SOCM +/- 0.001, sampled pairs
    python -m socm_lib models                                           # the registry of short names
    python -m socm_lib gpu-check                                        # this device vs the CPU reference
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from functools import partial

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
from .checks import ModelUnavailableError, as_device, as_int, distinct_texts, output_file
from .encoders import REGISTRY, layer_count, load_encoder, local_folder
from .extract import layer_indices, token_embeddings
from .gpu_check import main as gpu_check_main
from .memory import BYTES_PER_PAIR, require_memory
from .block_plan import condensed_pairs, cross_pairs
from .report import fmt, summary_lines
from .sampling import sample_size
from .stats import concentration_ratio
from .summary import socm_summary


def _texts_path(spec: str | None) -> str | None:
    """The file ``--texts`` reads: ``PATH`` of ``stsb:PATH``, ``sick:PATH`` or ``msmarco:PATH``, the spec itself for a
    text file, ``None`` for the corpus and a Hugging Face dataset."""
    kind, _, rest = (spec or "corpus").partition(":")
    if spec in (None, "corpus") or (kind == "hf" and rest):
        return None
    return rest if kind in ("stsb", "sick", "msmarco") and rest else spec


def _input_paths(args) -> list[tuple[str, str]]:
    """``(option, path)`` of every file or folder ``run`` reads (``--texts``, a local ``--encoder``; ``None`` where
    there is none), against which ``--out`` is checked (:func:`socm_lib.checks.as_output_path`): a run never writes
    over its own inputs."""
    return [("--texts", _texts_path(args.texts)), ("--encoder", local_folder(args.encoder))]


def _texts(spec: str) -> list[str]:
    """``corpus``, a text file (one per line), or ``stsb:PATH``, ``sick:PATH``, ``msmarco:PATH``, ``hf:NAME[:SPLIT[:COLUMN]]``."""
    kind, _, rest = spec.partition(":")
    if spec == "corpus":
        return list(corpus()["text"])
    if kind in ("stsb", "sick") and rest:
        df = read_stsb(rest) if kind == "stsb" else read_sick(rest)
        cols = ["sentence1", "sentence2"] if kind == "stsb" else ["sentence_a", "sentence_b"]
        return [t for c in cols for t in df[c]]
    if kind == "msmarco" and rest:
        return read_msmarco_passages(rest)
    if kind == "hf" and rest:
        name, split, column = (rest.split(":") + ["train", "text"])[:3]
        return hf_texts(name, split, column)
    return read_lines(spec)


def _distinct(texts: list[str], spec: str) -> list[str]:
    """``texts`` without repeats (first occurrences, in order; :func:`socm_lib.checks.distinct_texts`: the same text
    in two Unicode spellings is one), saying on stderr how many were dropped."""
    unique = distinct_texts(texts)
    if len(unique) < len(texts):
        print(f"note: --texts {spec}: {len(texts) - len(unique)} repeated text(s) dropped, {len(unique)} distinct "
              "kept (a text paired with itself would measure nothing).", file=sys.stderr)
    return unique


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
        count = int(count)
        # numpy draws a large share of the positions from a permutation of all of them (8 bytes each), a small one
        # from a set; then the pairs and their results take BYTES_PER_PAIR each
        draw = 8 * total if 50 * count >= total else 24 * count
        require_memory(draw + count * BYTES_PER_PAIR, f"--pairs {mode}",
                       "Pass a smaller N, or --pairs all, which streams every pair without listing them.")
        flat = np.sort(np.random.default_rng(seed).choice(total, size=count, replace=False))
        return condensed_pairs(flat, n)
    raise ValueError(f"Unknown --pairs {mode!r}; use all, random:N or labelled.")


def _inputs(args) -> tuple[list[str], np.ndarray | None, dict]:
    """The texts, pairs and extra CSV columns that ``run`` measures, every option checked (no model is loaded)."""
    if args.pairs == "labelled":
        ignored = [flag for flag, value in (("--texts", args.texts), ("--sample", args.sample)) if value is not None]
        if ignored:
            raise ValueError(f"--pairs labelled measures the embedded labelled pairs, so {' and '.join(ignored)} "
                             "would be ignored; drop them, or use --pairs all or random:N with your texts.")
        df = labelled_pairs()
        pairs = cross_pairs(len(df), len(df), aligned=True)  # (k, n + k): text_a[k] with text_b[k]
        return list(df["text_a"]) + list(df["text_b"]), pairs, {"kind": np.array(df["kind"], dtype=object)}
    spec = "corpus" if args.texts is None else args.texts
    as_int(args.seed, "--seed", minimum=0)
    sample = as_int(1000 if args.sample is None else args.sample, "--sample", minimum=0,
                    advice="0 measures every text.")
    if sample == 1:
        raise ValueError("--sample 1: a pair needs two texts; pass --sample 2 or more, or 0 for every text.")
    texts = _distinct(_texts(spec), spec)
    if len(texts) < 2:
        raise ValueError(f"--texts {spec}: {len(texts)} distinct text(s) found, but a pair needs two; "
                         "pass a file with at least two different non-empty lines.")
    if sample and sample < len(texts):
        texts = sample_texts(texts, sample, args.seed)
    return texts, _pairs(args.pairs, len(texts), args.seed), {}


def _check_model_options(args) -> None:
    """``--batch-size``, ``--device`` and ``--layer`` checked before the model loads (the layer against the model's
    configuration, read without its weights where it can be)."""
    as_int(args.batch_size, "--batch-size", minimum=1)
    as_device(args.device, "--device")
    layers = layer_count(args.encoder)
    if layers is not None:
        try:
            layer_indices(args.layer, layers)
        except ValueError as exc:
            raise ValueError(f"--layer {args.layer}: {exc}") from None


def run(args) -> int:
    """Extract the texts' token clouds, then stream SOCM over the pairs (:func:`socm_lib.socm_summary`).

    Without ``--out`` only the summary is kept (memory bounded by the engine's block size); with
    ``--out`` the pairs are also written to the CSV chunk by chunk, in pair order (into a temporary file
    moved into place at the end, so an earlier file is kept if the run fails). The texts, pairs, options
    and ``--out`` are checked, and the CSV's header written, before the model loads.
    """
    texts, pairs, extra = _inputs(args)
    _check_model_options(args)
    sampling = _sampling(args, len(texts) * (len(texts) - 1) // 2 if pairs is None else len(pairs))
    with contextlib.ExitStack() as stack:
        handle = None
        if args.out is not None:  # "" is refused there, not taken for "no --out"
            handle = stack.enter_context(output_file(args.out, "--out", newline="", inputs=_input_paths(args)))
            columns = ["i", "j", "d_mu", "d_sigma", "socm", *extra, "text_i", "text_j"]
            try:
                handle.write(",".join(columns) + "\n")
                handle.flush()
            except OSError as exc:
                raise OSError(f"--out {args.out}: cannot write there ({exc.strerror}).") from None
        encoder = load_encoder(args.encoder, device=args.device, trust_remote_code=args.trust_remote_code)
        clouds = token_embeddings(encoder, texts, layer=args.layer, special_tokens=not args.no_special_tokens,
                                  batch_size=args.batch_size, progress=True)
        concentration = np.array([concentration_ratio(c) for c in clouds])
        write = None if handle is None else partial(_write_chunk, handle, texts, extra)
        result = socm_summary(clouds, pairs, device=args.device, progress=True,
                              **({**sampling, "seed": args.seed} if sampling else {"on_pairs": write}))
    print(f"encoder: {encoder.name} ({encoder.kind}); texts: {len(texts)}; layer: {args.layer}")
    if sampling:  # the estimate with its intervals
        print(f"{result}\nmean_concentration_ratio: {fmt(float(np.mean(concentration)))}")
        return 0
    summary = result.summary()
    summary["mean_concentration_ratio"] = float(np.mean(concentration))
    if result.median_socm_error > 0:  # more pairs than the exact median keeps: say how close the median is
        summary["median_socm_error"] = result.median_socm_error
    print("\n".join(summary_lines(summary)))
    if args.out is not None:
        print(f"wrote {result.pairs} rows to {args.out}")
    return 0


def _sampling(args, population: int) -> dict:
    """``socm_summary``'s sampling options from ``--sample-pairs`` and ``--target-halfwidth`` (``{}``: every pair),
    checked against the ``population`` of pairs before the model loads."""
    if args.sample_pairs is None and args.target_halfwidth is None:
        return {}
    if args.out is not None:
        raise ValueError("--out writes every pair measured, but --sample-pairs and --target-halfwidth measure a "
                         "sample; drop --out (the estimate and its intervals are printed), or the sampling options.")
    as_int(args.seed, "--seed", minimum=0)
    sample_pairs, target_halfwidth = sample_size(args.sample_pairs, args.target_halfwidth, population,
                                                 names=("--sample-pairs", "--target-halfwidth"))
    return {"sample_pairs": sample_pairs, "target_halfwidth": target_halfwidth}


def _write_chunk(handle, texts: list[str], extra: dict, start: int, chunk) -> None:
    """Append one chunk of pairs (rows ``start ...`` of the CSV, header already written) with both texts."""
    frame = chunk.to_frame()
    for k, v in extra.items():
        frame[k] = v[start : start + len(frame)]
    frame["text_i"] = [texts[i] for i in frame["i"]]
    frame["text_j"] = [texts[j] for j in frame["j"]]
    frame.to_csv(handle, index=False, header=False)


def models(_args) -> int:
    """The ``models`` command: print the registry (name, kind, Hugging Face id, the paper's SOCM, label)."""
    for name, spec in REGISTRY.items():
        paper = "" if spec.paper_socm is None else f"  paper SOCM {spec.paper_socm:.3f}"
        label = f"  [{spec.label}]" if spec.label else ""
        print(f"{name:27s} {spec.kind:12s} {spec.hf_id or '(offline)'}{paper}{label}")
    return 0


def main(argv=None) -> int:
    """Parse ``argv`` (default: the command line) and run the command; a refused input prints one ``error:`` line
    on stderr and returns 2."""
    parser = argparse.ArgumentParser(prog="python -m socm_lib", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="measure SOCM over text pairs")
    p.add_argument("--encoder", default="all-minilm-l6", help="registry name, Hugging Face id or folder")
    p.add_argument("--texts", default=None, help="corpus (default) | FILE | stsb:FILE | sick:FILE | msmarco:FILE | "
                   "hf:NAME[:SPLIT[:COLUMN]]; repeated texts are measured once")
    p.add_argument("--sample", type=int, default=None, help="number of texts sampled (seeded; default 1000); 0 = all")
    p.add_argument("--pairs", default="all", help="all | random:N | labelled")
    p.add_argument("--layer", type=int, default=-1, help="hidden-state index (0 = embeddings, -1 = last)")
    p.add_argument("--no-special-tokens", action="store_true", help="drop [CLS]/[SEP]-type tokens")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--device", default=None, help="cpu | cuda (default: GPU if present)")
    p.add_argument("--sample-pairs", type=int, default=None, metavar="N", help="estimate from N pairs drawn "
                   "uniformly without replacement (seeded by --seed), with 95%% intervals for the values over all pairs")
    p.add_argument("--target-halfwidth", type=float, default=None, metavar="H", help="estimate from as many sampled "
                   "pairs as the mean SOCM's 95%% interval needs to be at most +/- H (with --sample-pairs: at most N)")
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
    except MemoryError as exc:  # an allocation the estimates did not foresee
        print(f"error: out of memory{f' ({exc})' if str(exc) else ''}; measure fewer texts or pairs (--sample, "
              "--pairs random:N), or run where more memory is free.", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
