"""``--workers 1`` against ``--workers 2`` on whole ``explore sweep`` processes (issue 23, item 6):
cheap points (small nets on ``hypar-16``, ~1 ms each, 18 to 400 points), medium points (ResNet-50
and VGG-E exact on ``array-1024``, 10-850 ms) and a mix of both. 1 and 2 workers alternate within
each round (their order flips every round), ``--repeat`` rounds: the median wall time of each,
the ratio of the medians, and the time the sweep's own summary line reports (``in T s (start-up
included)``) against the wall time measured around the process. Every run's ``results.csv``
must be byte-identical to the first one's apart from the timing column (``wall_s``).

    python bench/bench_sweep_workers.py [--repeat 5] [--only cheap-400,mix-212] [--before DIR]
    python bench/bench_sweep_workers.py --parts [--repeat 9]
    python bench/bench_sweep_workers.py --engine dask [--before DIR] [--only cheap-400,mix-212]
    python bench/bench_sweep_workers.py --dask-parts [--repeat 5]

``--parts``: in this process, ratios in one run (medians of interleaved rounds, wall and CPU of
this process and its pool): each sweep's points through ``LocalEngine`` with the parent's own
points (the default) and with every point sent to the pool (``SERIAL_SOLVERS = ()``, as before),
1 and 2 workers; and 400 cache entries written as before (``json.dump`` to the file, the folder
made every time) and now.

``--before DIR`` also runs ``python -m explorer.app.cli`` with ``PYTHONPATH=DIR`` (an older tree,
e.g. ``git archive main | tar -x -C DIR``) in the same rounds; its CSVs are checked equal too.

``--engine dask``: every run on Dask's LocalCluster of ``--workers`` processes (its start-up
included, as a user sees it); with ``--before`` a tree whose Dask engine sent one point per task,
this compares one-point and batched tasks.

``--dask-parts``: in this process, two Dask LocalClusters (1 and 2 workers) started once, so
their start-up is left out: each sweep's points through ``DaskEngine`` with one point a task
(``MAX_BATCH = 1``, as before) and batched, interleaved rounds, medians of the wall time; the
answers checked equal in every run.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import logging
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


def one_run(spec: str, out: str, workers: int, env, engine: str = "local") -> tuple[float, float, float]:
    """(wall s around the process, T of its summary line, CPU s of the process and its pool)."""
    c, t = children_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "explorer.app.cli", "sweep", spec, "--out", out, "--workers", str(workers),
                           "--engine", engine], capture_output=True, text=True, env=env)
    wall, used = time.perf_counter() - t, children_cpu() - c
    if done.returncode != 0:
        raise SystemExit(f"{spec} --workers {workers}: exit {done.returncode}: {done.stderr.strip()}")
    return wall, float(SUMMARY.search(done.stderr).group(1)), used


def cpu_now() -> float:
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def engine_run(sw, workers: int, serial: bool) -> tuple[float, float, list]:
    """(wall s, CPU s of this process and its pool, the answers) of one sweep through LocalEngine."""
    from explorer.app.sweep import engine as eng

    old = eng.SERIAL_SOLVERS
    eng.SERIAL_SOLVERS = old if serial else ()
    e = eng.LocalEngine(workers)
    c, t = cpu_now(), time.perf_counter()
    try:
        out = [(o.status, json_of(o)) for o in eng.run_points(sw.points, sw.base_dir, e)]
    finally:
        e.close()  # the pool's workers reaped: their CPU counted
        eng.SERIAL_SOLVERS = old
    return time.perf_counter() - t, cpu_now() - c, out


def json_of(o) -> str:
    import json

    r = o.result
    return json.dumps({k: v for k, v in r.items() if k != "wall_s"}, sort_keys=True) if r else ""


def put_before(cache, key: str, outcome) -> None:
    """Cache.put as it was: the folder made every time, json.dump to the file (pure Python)."""
    import json

    from explorer.app.output import new_file_mode

    target = cache._path(key)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"key": key, **outcome.to_json()}, f)
    os.chmod(tmp, new_file_mode())
    os.replace(tmp, target)


def parts(repeat: int) -> None:
    from explorer.app.sweep.cache import Cache
    from explorer.app.sweep.spec import parse_sweep

    loads = [os.getloadavg()[0]]
    sweeps = {n: parse_sweep({"version": 1, "name": n, **SWEEPS[n]}, n, ".") for n in ("trial10-18", "cheap-40", "cheap-400")}
    cases = [(n, w, s) for n in sweeps for w in (1, 2) for s in (False, True)]
    got: dict[tuple, list[tuple[float, float]]] = {c: [] for c in cases}
    answers: dict[str, set] = {n: set() for n in sweeps}
    for r in range(repeat):
        for c in (cases if r % 2 == 0 else cases[::-1]):
            wall, used, out = engine_run(sweeps[c[0]], c[1], c[2])
            got[c].append((wall, used))
            answers[c[0]].add(tuple(out))
        loads.append(os.getloadavg()[0])
    assert all(len(a) == 1 for a in answers.values()), "runs disagree"
    print(f"{os.cpu_count()} cores, load average {min(loads):.1f}-{max(loads):.1f}; medians of {repeat} interleaved rounds; "
          "answers equal in every run")
    print()
    print("| sweep | workers | all to the pool: wall s, CPU s | parent's own points (now): wall s, CPU s | CPU now / before |")
    print("|---|---:|---:|---:|---:|")
    for n in sweeps:
        for w in (1, 2):
            b, a = ([statistics.median(x[i] for x in got[(n, w, s)]) for i in (0, 1)] for s in (False, True))
            print(f"| {n} | {w} | {b[0]:.3f}, {b[1]:.3f} | {a[0]:.3f}, {a[1]:.3f} | {a[1] / b[1]:.2f} |")
    outcome = next(iter(engine_run(sweeps["cheap-40"], 1, True)[2]))
    from explorer.app.sweep.point import Outcome

    o = Outcome.make(0, {"status": outcome[0], "result": json.loads(outcome[1])}, outcome[0], "", 0.001)
    times = {"before": [], "now": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeat):
            for name in (("before", "now") if r % 2 == 0 else ("now", "before")):
                cache = Cache(os.path.join(tmp, f"{name}{r}"))
                t = time.process_time()
                for i in range(400):
                    key = f"{i:064x}"
                    put_before(cache, key, o) if name == "before" else cache.put(key, o)
                times[name].append(time.process_time() - t)
    b, a = statistics.median(times["before"]), statistics.median(times["now"])
    print()
    print(f"400 cache entries (a cheap point's result), CPU: before {b * 1e3:.0f} ms, now {a * 1e3:.0f} ms ({b / a:.2f}x)")


def dask_parts(repeat: int) -> None:
    from explorer.app.sweep import batches
    from explorer.app.sweep.engine import DaskEngine, run_points
    from explorer.app.sweep.spec import parse_sweep

    sweeps = {n: parse_sweep({"version": 1, "name": n, **SWEEPS[n]}, n, ".") for n in ("trial10-18", "cheap-40", "cheap-400")}
    # Dask's logs only CRITICAL, as the CLI's engine keeps them (``silence_logs``): each cluster restores the
    # logging it found when it closes, so with two the second's closing INFO lines flooded stderr
    logging.disable(logging.ERROR)
    engines = {w: DaskEngine(workers=w) for w in (1, 2)}
    cases = [(n, w, b) for n in sweeps for w in (1, 2) for b in (False, True)]
    walls: dict[tuple, list[float]] = {c: [] for c in cases}
    answers: dict[str, set] = {n: set() for n in sweeps}
    loads, old = [os.getloadavg()[0]], batches.MAX_BATCH
    try:
        for r in range(repeat):
            for n, w, b in (cases if r % 2 == 0 else cases[::-1]):
                batches.MAX_BATCH = old if b else 1
                t = time.perf_counter()
                out = [(o.status, json_of(o)) for o in run_points(sweeps[n].points, sweeps[n].base_dir, engines[w])]
                walls[(n, w, b)].append(time.perf_counter() - t)
                answers[n].add(tuple(out))
            loads.append(os.getloadavg()[0])
    finally:
        batches.MAX_BATCH = old
        for e in engines.values():
            e.close()
        logging.disable(logging.NOTSET)
    assert all(len(a) == 1 for a in answers.values()), "runs disagree"
    print(f"Dask LocalClusters started once; {os.cpu_count()} cores, load average {min(loads):.1f}-{max(loads):.1f}; "
          f"medians of {repeat} interleaved rounds; answers equal in every run")
    print()
    print("| sweep | workers | one point a task s | batched s | batched / one point | 2 workers / 1 (batched) |")
    print("|---|---:|---:|---:|---:|---:|")
    med = {c: statistics.median(v) for c, v in walls.items()}
    for n in sweeps:
        for w in (1, 2):
            ratio = f"{med[(n, 2, True)] / med[(n, 1, True)]:.2f}" if w == 2 else ""
            print(f"| {n} | {w} | {med[(n, w, False)]:.3f} | {med[(n, w, True)]:.3f} | "
                  f"{med[(n, w, True)] / med[(n, w, False)]:.2f} | {ratio} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--parts", action="store_true")
    ap.add_argument("--dask-parts", action="store_true")
    ap.add_argument("--only", default=",".join(SWEEPS), help="comma-separated sweep names")
    ap.add_argument("--before", metavar="DIR")
    ap.add_argument("--engine", choices=("local", "dask"), default="local")
    a = ap.parse_args()
    if a.parts:
        return parts(a.repeat)
    if a.dask_parts:
        return dask_parts(a.repeat)
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
                        wall, t, used = one_run(specs[n], out, w, env, a.engine)
                        cpus.setdefault((n, tree, w), []).append(used)
                        walls.setdefault((n, tree, w), []).append(wall)
                        told.setdefault((n, tree, w), []).append(t)
                        rows = csv_without_timing(os.path.join(out, "results.csv"))
                        assert first.setdefault(n, rows) == rows, f"{n}: {tree} --workers {w} answered differently"
            loads.append(os.getloadavg()[0])
            gains.append(control(1) / control(2))
    print(f"engine {a.engine}; {os.cpu_count()} cores; load average (1 min) {min(loads):.1f}-{max(loads):.1f} over the runs; "
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
