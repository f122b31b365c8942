"""The uneven split's exact solver (``exact_uneven``) before and after exact pruning
(``solvers.uneven_prune``: a completion bound against a greedy incumbent), back to back in one
process: "before" is ``solvers/uneven.py`` at the branch's base commit (``--baseline``, loaded
from git into this process, on today's ``core``), "after" today's with pruning; wall seconds,
Pareto states kept, states pruned, the answer and whether the two agree (status, step time,
plan; a run stopped by its time limit has no answer to compare).

Inputs: lenet-c, alexnet, vgg-a and resnet18 (not a chain: refused by both) on tpu-mix-16 at
alpha grid 1/2 (plus the proportional ratio), then lenet-c, alexnet and vgg-a on mix4 (2
accelerators of speed v and 2 of 3v, two levels: the top two levels of tpu-mix-16, v2 v2 | v3 v3)
at grid 1/4; both spaces. The plain run stops at ``--time-limit`` (UNKNOWN, no plan).

    python bench/bench_exact_prune.py                 # the table of docs/benchmarks.md
    python bench/bench_exact_prune.py --quick         # lenet-c only
    python bench/bench_exact_prune.py --baseline HEAD # "before": today's solver, pruning off
    python bench/bench_exact_prune.py --pairs         # time and peak memory against column pairs
    python bench/bench_exact_prune.py --tables        # the column tables' CPU against the ends-at-once estimate
    python bench/bench_exact_prune.py --windows       # the same on torus arrays with link windows (and H-tree twins)

``--pairs``: tpu-mix-16, alexnet, lenet-c, vgg-a and resnet18 at alpha grids 1/2, 1/4, 1/8 and 1/16,
both spaces, each run in its own process (``ru_maxrss`` before and after the solve): column pairs,
whether the old 200,000-pair limit refused it, the memory estimate the guard compares with its limit
(``uneven_prune.memory_estimate`` at the most live states seen), the measured rise, their ratio,
wall and CPU seconds, the answer.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import types
from dataclasses import replace
from pathlib import Path

from explorer.core.errors import Refused
from explorer.core.partition import Space
from explorer.frontends import load_array, load_model
from explorer.solvers.uneven import exact_uneven
from uneven_runs import cell, states, timed_solve  # bench/uneven_runs.py (this folder is on sys.path)

ROOT = Path(__file__).resolve().parent.parent


def baseline(rev: str):
    """``exact_uneven`` of ``solvers/uneven.py`` at ``rev`` (HEAD: today's, pruning off)."""
    if rev == "HEAD":
        return lambda *a, **k: exact_uneven(*a, prune=False, **k)
    src = subprocess.run(["git", "show", f"{rev}:solvers/uneven.py"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    mod = types.ModuleType("baseline_uneven")
    mod.__package__ = "explorer.solvers"
    sys.modules[mod.__name__] = mod
    exec(compile(src, f"{rev}:solvers/uneven.py", "exec"), mod.__dict__)
    return mod.exact_uneven


def mix4():
    """Two levels: 2 TPU-v2 chips (speed v, 45 TFLOPS) | 2 chips of speed 3v (135 TFLOPS), tpu-mix-16's links."""
    a = load_array("tpu-mix-16")
    v = a.leaves[0]
    fast = replace(v, name="3v2", peak_TFLOPS=3 * v.peak_TFLOPS, description="three times a TPU-v2 chip")
    return replace(a, name="mix4", levels=2, bandwidth_GBps=a.bandwidth_GBps[:2], leaves=(v, v, fast, fast))


def mix4_t13():
    """Trial 13's mix4.yaml: two levels, one TPU-v2 chip and three v3 (tpu-mix-16's kinds and links)."""
    a = load_array("tpu-mix-16")
    v2, v3 = a.leaves[0], a.leaves[-1]
    return replace(a, name="mix4-t13", levels=2, bandwidth_GBps=a.bandwidth_GBps[:2], leaves=(v2, v3, v3, v3))


def torus(make):
    """``make``'s array as a torus: a free split below the top puts link windows in the vectors."""
    from explorer.core.timing import Topology

    return lambda: replace(make(), name=make().name + "-torus", topology=Topology.TORUS)


def mix16():
    """Four levels: 4 TPU-v2 chips then 12 v3 (tpu-mix-16's kinds and links): level 1's [v2 x4 | v3 x4] is free."""
    a = load_array("tpu-mix-16")
    return replace(a, name="mix16-4v2", leaves=(a.leaves[0],) * 4 + (a.leaves[-1],) * 12)


ARRAYS = {"mix4": mix4, "mix4-t13": mix4_t13, "mix4-t13-torus": torus(mix4_t13), "mix16-4v2": mix16,
          "mix16-4v2-torus": torus(mix16)}


def agree(a, b) -> str:
    if isinstance(a, Refused) or isinstance(b, Refused):
        return "yes" if str(a) == str(b) else "NO"
    if a.step_time_s is None and b.step_time_s is not None:
        return "- (before: time limit)"
    return "yes" if (a.status, a.step_time_s, a.plan) == (b.status, b.step_time_s, b.plan) else "NO"


def rows(old, models, arr, grid: int, limit: float) -> None:
    for name in models:
        net = load_model(name)
        for space in (Space.ACCPAR, Space.HYPAR):
            a, ta = timed_solve(old, net, arr, space, grid, limit)
            b, tb = timed_solve(exact_uneven, net, arr, space, grid, limit)
            pruned = "-" if isinstance(b, Refused) else f"{b.info.get('pruned', 0):,}"
            print(f"| {name} | {arr.name} | {space.value} | 1/{grid} | {ta:.2f} | {tb:.2f} | {ta / tb:.1f}x | "
                  f"{states(a)} | {states(b)} | {pruned} | {cell(b)} | {agree(a, b)} |", flush=True)


CHILD = r"""
import json, resource, sys, time
from explorer.core.errors import Refused
from explorer.core.partition import Space
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers import uneven
from explorer.solvers.uneven_prune import memory_estimate

name, space, grid, limit, prune = {name!r}, Space({space!r}), {grid!r}, {limit!r}, {prune!r}
net, arr = load_model(name), load_array("tpu-mix-16")
aspace = alpha_space(arr, alpha_grid(grid))
most = [0]
check = uneven._Run.check_memory
def spy(self, states):
    most[0] = max(most[0], states)
    return check(self, states)
uneven._Run.check_memory = spy
out = {{}}
try:
    H, L, costs, cols = uneven._chain_columns(net, arr, space, aspace, "exact")
    out["pairs"] = sum(len(a) * len(b) for a, b in zip(cols, cols[1:]))
except Refused as err:
    print(json.dumps({{"status": "refused: " + str(err)}}))
    sys.exit()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
c0, t0 = time.process_time(), time.perf_counter()
try:
    sol = uneven.exact_uneven(net, arr, space, aspace, time_limit_s=limit, prune=prune)
    out["status"] = sol.status.value
    out["ms"] = None if sol.step_time_s is None else float(sol.step_time_s) * 1e3
    out["bound_ms"] = None if sol.bound_s is None else float(sol.bound_s) * 1e3
    out["kept"] = sol.info.get("explored")
except Refused as err:
    out["status"] = "refused: " + str(err)
out["wall"], out["cpu"] = time.perf_counter() - t0, time.process_time() - c0
out["used"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
out["estimate"] = memory_estimate(cols, costs.layout.size, most[0])
out["states"] = most[0]
print(json.dumps(out))
"""


TABLES_CHILD = r"""
import json, sys, time
sys.path.insert(0, {bench!r})
from bench_exact_prune import ARRAYS
from explorer.core.partition import Space
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers import uneven
from explorer.solvers.uneven_tables import ColumnTables

arr = ARRAYS.get({array!r}, lambda: load_array({array!r}))()
net, space = load_model({name!r}), Space({space!r})
H, L, costs, cols = uneven._chain_columns(net, arr, space, alpha_space(arr, alpha_grid({grid!r})), "exact")
windows = uneven.window_count(costs.layout)
c0, t0 = time.process_time(), time.perf_counter()
ColumnTables(costs, cols, lambda: False).rest()
print(json.dumps({{"pairs": sum(len(a) * len(b) for a, b in zip(cols, cols[1:])), "H": H, "windows": windows,
                  "cpu": time.process_time() - c0, "wall": time.perf_counter() - t0,
                  "estimate": uneven.least_seconds(cols, H, windows)}}))
"""

TABLE_CASES = (("mix4", "alexnet", "accpar", 16), ("mix4", "vgg-a", "accpar", 16), ("mix4", "alexnet", "hypar", 16),
               ("mix4-t13", "lenet-c", "accpar", 8), ("mix4-t13", "sfc", "accpar", 8),
               ("tpu-mix-16", "lenet-c", "accpar", 4), ("tpu-mix-16", "alexnet", "accpar", 2),
               ("tpu-mix-16", "vgg-a", "accpar", 2), ("tpu-mix-16", "alexnet", "hypar", 8))
LARGE = (("mix4-t13", "sfc", "accpar", 16),)  # trial 13 #2's instance (--large: about a minute of CPU a run)
# --windows: torus arrays whose free split below the top puts link windows in the vectors, each
# with its H-tree twin (the same columns, sides alone): the windows' own cost a pair
WINDOW_CASES = (("mix4-t13-torus", "sfc", "accpar", 8), ("mix4-t13", "sfc", "accpar", 8),
                ("mix4-t13-torus", "lenet-c", "accpar", 8), ("mix4-t13", "lenet-c", "accpar", 8),
                ("mix16-4v2-torus", "lenet-c", "hypar", 2), ("mix16-4v2", "lenet-c", "hypar", 2),
                ("mix16-4v2-torus", "alexnet", "hypar", 2), ("mix16-4v2", "alexnet", "hypar", 2))


def tables_table(repeat: int, large: bool, cases=TABLE_CASES) -> None:
    """``--tables``: what the exact path spends before its Pareto DP (the column tables and the
    completion bounds, every pair), each case in its own process ``repeat`` times (the least CPU
    kept: the calibration of ``uneven.PAIR_S`` and ``PAIR_GROUP_S`` is a lower bound), against
    ``uneven.least_seconds``: the estimate must stay below the measured CPU."""
    import json

    print("| array | network | space | grid | H | windows | column pairs | least CPU s | wall s | us a pair | estimate s "
          "| CPU / estimate |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    bench = str(Path(__file__).resolve().parent)
    for array, name, space, grid in cases + (LARGE if large else ()):
        code = TABLES_CHILD.format(bench=bench, array=array, name=name, space=space, grid=grid)
        runs = [json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                          check=True).stdout) for _ in range(repeat)]
        r = min(runs, key=lambda x: x["cpu"])
        print(f"| {array} | {name} | {space} | 1/{grid} | {r['H']} | {r['windows']} | {r['pairs']:,} | {r['cpu']:.2f} | "
              f"{r['wall']:.2f} | {r['cpu'] / r['pairs'] * 1e6:.2f} | {r['estimate']:.2f} | "
              f"{r['cpu'] / r['estimate']:.2f} |", flush=True)


def pairs_table(cases, limit: float, prune: bool = True) -> None:
    """``--pairs``: each (network, space, grid) in its own process (its peak memory its own)."""
    print(f"tpu-mix-16, time limit {limit:g} s per run, one process each{'' if prune else ', no pruning'}")
    print("| network | space | grid | column pairs | old limit | estimate MiB | used MiB | used / est | live states "
          "| wall s | CPU s | answer |")
    print("|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for name, space, grid in cases:
        row(name, space, grid, limit, prune)


def row(name: str, space: str, grid: int, limit: float, prune: bool) -> None:
    import json

    code = CHILD.format(name=name, space=space, grid=grid, limit=limit, prune=prune)
    r = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    if "pairs" not in r:
        print(f"| {name} | {space} | 1/{grid} | - | - | - | - | - | - | - | - | {r['status']} |", flush=True)
        return
    est, used = r["estimate"] / 2**20, r["used"] / 2**20
    ans = r["status"] if r.get("ms") is None else f"{r['status']} {r['ms']:.5f} ms"
    if r.get("bound_ms") is not None and r["status"] == "feasible":
        ans += f" (bound {r['bound_ms']:.5f})"
    print(f"| {name} | {space} | 1/{grid} | {r['pairs']:,} | {'refused' if r['pairs'] > 200_000 else 'ran'} | "
          f"{est:.1f} | {used:.1f} | {used / est:.2f} | {r['states']:,} | {r['wall']:.2f} | {r['cpu']:.2f} | "
          f"{ans} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--pairs", action="store_true", help="time and memory against column pairs, grids 2 to 16")
    ap.add_argument("--tables", action="store_true", help="the column tables' CPU against the ends-at-once estimate")
    ap.add_argument("--large", action="store_true", help="--tables: also trial 13's sfc at 1/16 (15.9 M pairs)")
    ap.add_argument("--windows", action="store_true", help="--tables on torus arrays with link windows, and their H-tree twins")
    ap.add_argument("--repeat", type=int, default=3, help="--tables: runs per case, the least CPU kept (default 3)")
    ap.add_argument("--memory", action="store_true", help="the memory estimate against the peak, no pruning (many states)")
    ap.add_argument("--baseline", default="8971329", help="the commit of 'before' (default: the branch's base)")
    ap.add_argument("--time-limit", type=float, default=30.0, help="seconds per run (default 30)")
    args = ap.parse_args()
    models = ("lenet-c",) if args.quick else ("lenet-c", "alexnet", "vgg-a", "resnet18")
    if args.tables or args.windows:
        return tables_table(args.repeat, args.large, WINDOW_CASES if args.windows else TABLE_CASES)
    if args.pairs:
        return pairs_table([(m, s, g) for m in models for s in ("accpar", "hypar") for g in (2, 4, 8, 16)], args.time_limit)
    if args.memory:
        return pairs_table([(m, "hypar", 2) for m in models[:3]] + [("lenet-c", "accpar", 2)], args.time_limit, False)
    old = baseline(args.baseline)
    print(f"exact_uneven before ({args.baseline}) and after pruning, same process (time limit {args.time_limit:g} s per run)")
    print("| network | array | space | grid | before s | after s | ratio | states before | states after | "
          "pruned | answer (after) | same |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows(old, models, load_array("tpu-mix-16"), 2, args.time_limit)
    rows(old, models[:3], mix4(), 4, args.time_limit)


if __name__ == "__main__":
    main()
