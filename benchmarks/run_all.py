"""Run every benchmark: the one command behind ``make bench``.

    python benchmarks/run_all.py            # full run: rewrites benchmarks/results/*.json and scaling.png
    python benchmarks/run_all.py --quick    # smoke run with small sizes (targets not evaluated; results go to
                                            # a temporary folder, never over benchmarks/results)

Runs bench_metric.py, bench_extraction.py, bench_scaling.py, bench_kernel.py, bench_distributed.py and
bench_sampling.py one after the other, each in its own process, then prints every target with its measured figure
and whether it is met. Every timing is repeated (at least three runs, each recorded). The full run takes about 25
minutes on an idle 2-core machine, estimated from the per-run times of the last full runs: metric about 4 minutes,
extraction 1, scaling 4 (its point of 1,000 texts is the metric benchmark's, reused), kernel 3, distributed 2 and
sampling 11. The benchmarks use every core; run them on an otherwise idle machine (the 1-minute load average at
the start of each script, and the cores other processes used while it ran, are recorded in its JSON file).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = ("bench_metric.py", "bench_extraction.py", "bench_scaling.py", "bench_kernel.py", "bench_distributed.py",
           "bench_sampling.py")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run (targets not evaluated)")
    parser.add_argument("--only", choices=[s.removesuffix(".py").removeprefix("bench_") for s in SCRIPTS],
                        action="append", help="run only this benchmark (may be repeated)")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    cores = os.cpu_count() or 1
    if load > 0.5 * cores:
        print(f"warning: the 1-minute load average is {load:.2f} on {cores} cores; other work will slow the "
              "benchmarks down (the load is recorded in each result file).", file=sys.stderr)
    t0 = time.perf_counter()
    failed, done = [], []
    for script in SCRIPTS:
        name = script.removesuffix(".py").removeprefix("bench_")
        if args.only and name not in args.only:
            continue
        print(f"\n######## {script}{' --quick' if args.quick else ''}", flush=True)
        extra = ["--quick"] if args.quick else []
        if name == "scaling" and not args.quick and "bench_metric.py" in done:
            extra += ["--reuse-metric", str(HERE / "results" / "metric.json")]  # same clouds: N = 1,000 already measured
        rc = subprocess.run([sys.executable, str(HERE / script)] + extra).returncode
        if rc == 0:
            done.append(script)
        if rc != 0:
            failed.append(script)
    print(f"\n######## summary ({time.perf_counter() - t0:.0f} s in all)")
    from socm_lib.viz import benchmarking

    sys.path.insert(0, str(HERE))
    import common

    for name in ("metric", "extraction", "kernel"):
        path = common.results_dir(args.quick) / f"{name}.json"
        if path.exists():
            record = json.loads(path.read_text())
            other = record.get("other_processes", {})
            print(f"\n{name}.json ({record['date']}, load average {record['load_average_1min_start']} at start; "
                  f"other processes used {other.get('cores')} cores on average"
                  f"{' -- BUSY MACHINE, rerun when idle' if other.get('busy') else ''})")
            print(benchmarking.targets_table(record["targets"]).to_string(index=False))
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
