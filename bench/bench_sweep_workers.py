"""``--workers 1`` against ``--workers 2`` on whole ``explore sweep`` processes (issue 23, item 6):
cheap points (small nets on ``hypar-16``, ~1 ms each, 18 to 400 points), medium points (ResNet-50
and VGG-E exact on ``array-1024``, 10-850 ms) and a mix of both. 1 and 2 workers alternate within
each round (their order flips every round), ``--repeat`` rounds: the median wall time of each,
the ratio of the medians, and the time the sweep's own summary line reports (``in T s (start-up
included)``) against the wall time measured around the process. Every run's ``results.csv``
must be byte-identical to the first one's apart from the timing column (``wall_s``).

    python bench/bench_sweep_workers.py [--repeat 5] [--only cheap-400,mix] [--before DIR]

``--before DIR`` also runs ``python -m explorer.app.cli`` with ``PYTHONPATH=DIR`` (an older tree,
e.g. ``git archive main | tar -x -C DIR``) in the same rounds; its CSVs are checked equal too.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_sweep import control  # noqa: E402

SMALL = ["lenet-c", "sfc", "sconv", "cifar-c", "alexnet"]
SWEEPS = {
    # trial 10's sweep: 18 points, 1-37 ms
    "trial10-18": {"grid": {"model": ["alexnet", "lenet-c", "resnet18"], "levels": [2, 3, 4], "solver": ["dp", "exact"]},
                   "fixed": {"space": "accpar", "array": "hypar-16"}},
    # cheap DP points, ~1 ms each
    "cheap-40": {"grid": {"model": SMALL, "levels": [1, 2, 3, 4], "space": ["hypar", "accpar"]},
                 "fixed": {"solver": "dp", "array": "hypar-16"}},
    "cheap-400": {"grid": {"model": SMALL, "levels": [1, 2, 3, 4], "space": ["hypar", "accpar"],
                           "batch": [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]},
                  "fixed": {"solver": "dp", "array": "hypar-16"}},
    # exact points of 10-850 ms
    "medium-12": {"grid": {"model": ["resnet50", "vgg-e"], "levels": [4, 5, 6], "space": ["hypar", "accpar"]},
                  "fixed": {"solver": "exact", "array": "array-1024"}},
    # both: the medium points first, then 200 cheap ones
    "mix-212": {"points": [*({"model": m, "levels": h, "space": s, "solver": "exact", "array": "array-1024"}
                             for m in ("resnet50", "vgg-e") for h in (4, 5, 6) for s in ("hypar", "accpar")),
                           *({"model": m, "levels": h, "space": s, "batch": b, "solver": "dp", "array": "hypar-16"}
                             for m in SMALL for h in (1, 2, 3, 4) for s in ("hypar", "accpar") for b in (16, 64, 256, 1024, 4096))]},
}
SUMMARY = re.compile(r" in ([0-9.]+) s \(start-up included\)")


def write_spec(folder: str, name: str) -> str:
    import yaml

    path = os.path.join(folder, f"{name}.yaml")
    with open(path, "w") as f:
        yaml.safe_dump({"version": 1, "name": name, **SWEEPS[name]}, f)
    return path


def csv_without_timing(path: str) -> str:
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    drop = rows[0].index("wall_s")
    out = io.StringIO()
    csv.writer(out).writerows([r[:drop] + r[drop + 1:] for r in rows])
    return out.getvalue()


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one_run(spec: str, out: str, workers: int, env) -> tuple[float, float, float]:
    """(wall s around the process, T of its summary line, CPU s of the process and its pool)."""
    c, t = children_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "explorer.app.cli", "sweep", spec, "--out", out, "--workers", str(workers)],
                          capture_output=True, text=True, env=env)
    wall, used = time.perf_counter() - t, children_cpu() - c
    if done.returncode != 0:
        raise SystemExit(f"{spec} --workers {workers}: exit {done.returncode}: {done.stderr.strip()}")
    return wall, float(SUMMARY.search(done.stderr).group(1)), used


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default=",".join(SWEEPS), help="comma-separated sweep names")
    ap.add_argument("--before", metavar="DIR")
    a = ap.parse_args()
    names = a.only.split(",")
    trees = [("now", None)] + ([("before", dict(os.environ, PYTHONPATH=a.before))] if a.before else [])
    walls: dict[tuple, list[float]] = {}
    told: dict[tuple, list[float]] = {}
    cpus: dict[tuple, list[float]] = {}
    loads = [os.getloadavg()[0]]
    gains: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        specs = {n: write_spec(tmp, n) for n in names}
        first: dict[str, str] = {}
        for r in range(a.repeat):
            for n in names:
                for tree, env in trees:
                    for w in ((1, 2) if r % 2 == 0 else (2, 1)):
                        out = os.path.join(tmp, f"{n}-{tree}-{w}-{r}")
                        wall, t, used = one_run(specs[n], out, w, env)
                        cpus.setdefault((n, tree, w), []).append(used)
                        walls.setdefault((n, tree, w), []).append(wall)
                        told.setdefault((n, tree, w), []).append(t)
                        rows = csv_without_timing(os.path.join(out, "results.csv"))
                        assert first.setdefault(n, rows) == rows, f"{n}: {tree} --workers {w} answered differently"
            loads.append(os.getloadavg()[0])
            gains.append(control(1) / control(2))
    print(f"{os.cpu_count()} cores; load average (1 min) {min(loads):.1f}-{max(loads):.1f} over the runs; "
          f"medians of {a.repeat}; every run's results.csv equal apart from wall_s")
    print()
    print(f"control: 2 processes did pure-Python CPU work {statistics.median(gains):.2f}x as fast as 1 (median of the rounds, "
          f"{min(gains):.2f}-{max(gains):.2f}; 2.00 with a free second core, 1.00 with none)")
    print("| sweep | tree | 1 worker s | 2 workers s | 2 workers / 1 | CPU s 1, 2 | summary's T / wall (1, 2) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for n in names:
        for tree, _ in trees:
            m1, m2 = (statistics.median(walls[(n, tree, w)]) for w in (1, 2))
            t1, t2 = (statistics.median(told[(n, tree, w)]) for w in (1, 2))
            print(f"| {n} | {tree} | {m1:.2f} ({min(walls[(n, tree, 1)]):.2f}-{max(walls[(n, tree, 1)]):.2f}) | "
                  f"{m2:.2f} ({min(walls[(n, tree, 2)]):.2f}-{max(walls[(n, tree, 2)]):.2f}) | {m2 / m1:.2f} | "
                  f"{statistics.median(cpus[(n, tree, 1)]):.2f}, {statistics.median(cpus[(n, tree, 2)]):.2f} | "
                  f"{t1 / m1:.2f}, {t2 / m2:.2f} |")


if __name__ == "__main__":
    main()
