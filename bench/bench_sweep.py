"""Sweep engine throughput, as ratios measured in one run (issue 9, "Speed"):

1. ``--workers 1`` vs ``--workers 2`` on the same points (points of 50 ms and more);
2. the engine's per-point overhead against the same solves in a plain in-process loop;
3. the cache: a full rerun of a finished 1,000-point sweep (cheap DP points) vs its first run;
4. Dask (a LocalCluster of 2 worker processes) vs the local process pool of 2 workers,
   with and without the cluster's start-up.

The machine may be shared: each time is the best of three alternated runs, the load average
is printed with the table, and a control row says what 2 processes gain on pure CPU work at
the time (the ceiling for the workers-2 ratio).

    python bench/bench_sweep.py
"""

from __future__ import annotations

import os
import tempfile
import time

from explorer.api import sweep
from explorer.app.sweep.engine import DaskEngine, LocalEngine, run_points
from explorer.app.sweep.point import run_single
from explorer.app.sweep.spec import parse_sweep, resolve_paths

SLOW = {  # CP-SAT points (one search worker, fixed seed) of 50 ms to 2 s
    "version": 1, "name": "bench-slow",
    "grid": {"model": ["vgg-a", "vgg-e", "resnet18", "resnet50"], "levels": [6, 7, 8]},
    "fixed": {"solver": "cpsat", "array": "array-1024", "space": "hypar"},
}
CHEAP = {  # 1,000 DP points
    "version": 1, "name": "bench-cheap",
    "grid": {"model": ["lenet-c", "sfc", "sconv", "cifar-c", "alexnet"], "levels": list(range(1, 11)),
             "batch": [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192], "space": ["hypar", "accpar"]},
    "fixed": {"solver": "dp", "array": "array-1024"},
}


def burn(n: int) -> int:
    """Pure CPU work: the control for what 2 processes can gain on this machine right now."""
    s = 0
    for i in range(n):
        s += i * i
    return s


def control(workers: int) -> float:
    from concurrent.futures import ProcessPoolExecutor

    t = time.perf_counter()
    with ProcessPoolExecutor(workers) as ex:
        list(ex.map(burn, [2_000_000] * 8))
    return time.perf_counter() - t


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def engine_run(sw, engine) -> list:
    try:
        return list(run_points(sw.points, sw.base_dir, engine))
    finally:
        engine.close()


def main() -> None:
    slow = parse_sweep(SLOW, "bench-slow", ".")
    cheap = parse_sweep(CHEAP, "bench-cheap", ".")
    params = [resolve_paths(p.as_dict(), slow.base_dir) for p in slow.points]
    for p in params[:3]:  # warm the parse caches of this process, as a worker's are after its first point
        run_single(p)
    # the machine is shared: alternate the runs and keep the best of three of each
    t_loop = t1 = t2 = own = float("inf")
    for _ in range(3):
        dt, loop = timed(lambda: [run_single(p) for p in params])
        t_loop = min(t_loop, dt)
        dt, one = timed(lambda: engine_run(slow, LocalEngine(1)))
        t1 = min(t1, dt)
        # the engine's own time: the sweep's wall time minus the time spent inside the points
        own = min(own, (dt - sum(o.wall_s for o in one)) / len(one))
        dt, two = timed(lambda: engine_run(slow, LocalEngine(2)))
        t2 = min(t2, dt)
    per_point = t_loop / len(params)
    assert [o.result["objective_value"] for o in one] == [r["objective_value"] for r in loop]
    assert [o.result["objective_value"] for o in two] == [r["objective_value"] for r in loop]

    c1 = min(control(1) for _ in range(2))
    c2 = min(control(2) for _ in range(2))
    t_start, eng = timed(lambda: DaskEngine(workers=2))
    t_dask, dask = timed(lambda: list(run_points(slow.points, slow.base_dir, eng)))  # workers warm up
    for _ in range(2):
        t_dask = min(t_dask, timed(lambda: list(run_points(slow.points, slow.base_dir, eng)))[0])
    eng.close()
    assert [o.result["objective_value"] for o in dask] == [r["objective_value"] for r in loop]

    with tempfile.TemporaryDirectory() as out:
        t_first, rows = timed(lambda: list(sweep(cheap, out, workers=2)))
        t_again, again = timed(lambda: list(sweep(cheap, out, workers=2)))
    assert len(rows) == len(again) == 1000 and all(r["cached"] for r in again)

    print(f"{len(params)} CP-SAT points ({per_point * 1e3:.0f} ms each in a plain loop, "
          f"{min(o.wall_s for o in one) * 1e3:.0f}-{max(o.wall_s for o in one) * 1e3:.0f} ms), "
          f"1,000 cheap DP points; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end")
    print()
    print("| measurement | time | ratio |")
    print("|---|---:|---:|")
    print(f"| plain loop of the solves (baseline) | {t_loop:.2f} s | 1.00 |")
    print(f"| sweep, --workers 1 | {t1:.2f} s | {t1 / t_loop:.2f} (overhead {100 * (t1 / t_loop - 1):+.1f}%) |")
    print(f"| engine's own time per point (1 worker: wall minus time inside the points) | {own * 1e3:.1f} ms | "
          f"{100 * own / per_point:.1f}% of a point |")
    print(f"| sweep, --workers 2 | {t2:.2f} s | {t1 / t2:.2f}x faster than --workers 1 |")
    print(f"| control: pure-Python CPU work, 1 vs 2 processes | {c1:.2f} s / {c2:.2f} s | {c1 / c2:.2f}x "
          f"(what 2 processes can gain on this machine now) |")
    print(f"| Dask LocalCluster, 2 workers, start-up | {t_start:.2f} s | |")
    print(f"| Dask LocalCluster, 2 workers, points | {t_dask:.2f} s | {t_dask / t2:.2f} of the process pool "
          f"({(t_dask + t_start) / t2:.2f} with start-up) |")
    print(f"| 1,000 DP points, first run (--workers 2) | {t_first:.2f} s | 1.00 |")
    print(f"| 1,000 DP points, full rerun (all cached) | {t_again:.2f} s | {100 * t_again / t_first:.1f}% of the first run |")


if __name__ == "__main__":
    main()
