"""Two workers against one on cheap sweep points, with and without batching (issue 23, item 6).

The 1,000 DP points of ``bench_sweep.CHEAP`` (a few ms each) run through ``LocalEngine`` with 1
and 2 workers, batched (the default: about ``BATCH_SECONDS`` of points per task) and one point
per task (``MAX_BATCH = 1``, as before batching), alternated, best of 3: wall time, and CPU
time (the parent's and the pool workers', user + system), which a shared machine disturbs less.
Every run's answers are checked equal.

    python bench/bench_sweep_batches.py
"""

from __future__ import annotations

import os
import resource
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bench_sweep import CHEAP  # noqa: E402

from explorer.app.sweep import engine as eng  # noqa: E402
from explorer.app.sweep.spec import parse_sweep  # noqa: E402


def cpu() -> float:
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def run(sw, workers: int, batched: bool) -> tuple[float, float, list]:
    """(wall s, CPU s of this process and its pool, the answers)."""
    old = eng.MAX_BATCH
    eng.MAX_BATCH = old if batched else 1
    e = eng.LocalEngine(workers)
    c0, t = cpu(), time.perf_counter()
    try:
        out = [o.summary["objective_value"] if o.summary else o.status for o in eng.run_points(sw.points, sw.base_dir, e)]
    finally:
        e.close()  # the pool's workers are reaped: their CPU time is counted
        eng.MAX_BATCH = old
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


if __name__ == "__main__":
    main()
