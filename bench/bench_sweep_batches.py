"""Two workers against one on cheap sweep points, with and without batching (issue 23, item 6).

The 1,000 DP points of ``bench_sweep.CHEAP`` (a few ms each) run through ``LocalEngine`` with 1
and 2 workers, batched (the default: about ``BATCH_SECONDS`` of points per task) and one point
per task (``MAX_BATCH = 1``, as before batching), alternated, best of 3: wall time, and CPU
time (the parent's and the pool workers', user + system), which a shared machine disturbs less.
Every run's answers are checked equal.

    python bench/bench_sweep_batches.py
    python bench/bench_sweep_batches.py --whole --repeat 5 [--before DIR]

``--whole``: trial 10's sweep (alexnet, lenet-c, resnet18 x levels 2, 3, 4 x dp, exact on
hypar-16, accpar; 18 points) as whole ``explore sweep ... --workers W --quiet`` processes, 1 and 2
workers alternated, ``--repeat`` rounds: median and range of the wall time. ``--before DIR`` also
runs ``python -m explorer.app.cli`` with ``PYTHONPATH=DIR`` (an older tree) in the same rounds.
"""

from __future__ import annotations

import os
import resource
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bench_sweep import CHEAP  # noqa: E402

from explorer.app.sweep import batches, engine as eng  # noqa: E402
from explorer.app.sweep.spec import parse_sweep  # noqa: E402


def cpu() -> float:
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def run(sw, workers: int, batched: bool) -> tuple[float, float, list]:
    """(wall s, CPU s of this process and its pool, the answers)."""
    old = batches.MAX_BATCH
    batches.MAX_BATCH = old if batched else 1
    e = eng.LocalEngine(workers)
    c0, t = cpu(), time.perf_counter()
    try:
        out = [o.summary["objective_value"] if o.summary else o.status for o in eng.run_points(sw.points, sw.base_dir, e)]
    finally:
        e.close()  # the pool's workers are reaped: their CPU time is counted
        batches.MAX_BATCH = old
    return time.perf_counter() - t, cpu() - c0, out


def main() -> None:
    sw = parse_sweep(CHEAP, "bench-cheap", ".")
    cases = [(1, False), (2, False), (1, True), (2, True)]
    best = {c: float("inf") for c in cases}
    used = {c: float("inf") for c in cases}
    answers = set()
    for _ in range(3):
        for c in cases:
            dt, dc, out = run(sw, *c)
            best[c], used[c] = min(best[c], dt), min(used[c], dc)
            answers.add(tuple(map(str, out)))
    assert len(answers) == 1, "runs disagree"
    print(f"{len(sw.points)} DP points; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end")
    print(f"{'tasks':<22}{'1 worker s':>12}{'2 workers s':>13}{'2 vs 1':>9}{'cpu 1 s':>10}{'cpu 2 s':>10}")
    for batched in (False, True):
        t1, t2 = best[(1, batched)], best[(2, batched)]
        label = "batched (default)" if batched else "one point per task"
        print(f"{label:<22}{t1:>12.2f}{t2:>13.2f}{t1 / t2:>8.2f}x{used[(1, batched)]:>10.2f}{used[(2, batched)]:>10.2f}")
    print(f"batching, 2 workers: wall {best[(2, False)] / best[(2, True)]:.2f}x, CPU {used[(2, False)] / used[(2, True)]:.2f}x "
          "(one point per task / batched)")


TRIAL10 = """version: 1
name: small
grid:
  model: [alexnet, lenet-c, resnet18]
  levels: [2, 3, 4]
  solver: [dp, exact]
fixed:
  space: accpar
  array: hypar-16
"""


def whole(repeat: int, before: str | None) -> None:
    """Trial 10's 18 cheap points as whole processes, 1 and 2 workers alternated."""
    import statistics
    import subprocess
    import tempfile

    runs = [("after", None)] + ([("before", dict(os.environ, PYTHONPATH=before))] if before else [])
    walls: dict[tuple[str, int], list[float]] = {(n, w): [] for n, _ in runs for w in (1, 2)}
    with tempfile.TemporaryDirectory() as tmp:
        spec = os.path.join(tmp, "sw.yaml")
        with open(spec, "w") as f:
            f.write(TRIAL10)
        print(f"load before: {os.getloadavg()[0]:.1f}")
        for r in range(repeat):
            for name, env in runs:
                for w in (1, 2):
                    out = os.path.join(tmp, f"out-{name}-{w}-{r}")
                    t = time.perf_counter()
                    subprocess.run([sys.executable, "-m", "explorer.app.cli", "sweep", spec, "--out", out, "--workers",
                                    str(w), "--quiet"], check=True, capture_output=True, env=env)
                    walls[(name, w)].append(time.perf_counter() - t)
    print(f"{'run':<8}{'1 worker s':>12}{'2 workers s':>13}{'2 vs 1':>8}   (medians of {repeat}; ranges)")
    for name, _ in runs:
        m1, m2 = statistics.median(walls[(name, 1)]), statistics.median(walls[(name, 2)])
        print(f"{name:<8}{m1:>12.2f}{m2:>13.2f}{m2 / m1:>7.2f}x   1: {min(walls[(name, 1)]):.2f}-{max(walls[(name, 1)]):.2f}"
              f"  2: {min(walls[(name, 2)]):.2f}-{max(walls[(name, 2)]):.2f}")
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    if "--whole" in sys.argv:
        import argparse

        ap = argparse.ArgumentParser()
        ap.add_argument("--whole", action="store_true")
        ap.add_argument("--repeat", type=int, default=5)
        ap.add_argument("--before", metavar="DIR")
        a = ap.parse_args()
        whole(a.repeat, a.before)
    else:
        main()
