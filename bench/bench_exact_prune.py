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
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import types
from dataclasses import replace
from pathlib import Path

from explorer.core.errors import Refused
from explorer.core.partition import Space
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers.uneven import exact_uneven

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


def run(solve, net, arr, space, grid: int, limit: float):
    t0 = time.perf_counter()
    try:
        sol = solve(net, arr, space, alpha_space(arr, alpha_grid(grid)), time_limit_s=limit)
    except Refused as e:
        return e, time.perf_counter() - t0
    return sol, time.perf_counter() - t0


def cell(sol) -> str:
    if isinstance(sol, Refused):
        return "refused"
    return f"{sol.status.value} {float(sol.step_time_s) * 1e3:.5f} ms" if sol.step_time_s is not None else sol.status.value


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
            a, ta = run(old, net, arr, space, grid, limit)
            b, tb = run(exact_uneven, net, arr, space, grid, limit)
            states = lambda s: "-" if isinstance(s, Refused) else f"{s.info['explored']:,}"  # noqa: E731
            pruned = "-" if isinstance(b, Refused) else f"{b.info.get('pruned', 0):,}"
            print(f"| {name} | {arr.name} | {space.value} | 1/{grid} | {ta:.2f} | {tb:.2f} | {ta / tb:.1f}x | "
                  f"{states(a)} | {states(b)} | {pruned} | {cell(b)} | {agree(a, b)} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--baseline", default="8971329", help="the commit of 'before' (default: the branch's base)")
    ap.add_argument("--time-limit", type=float, default=30.0, help="seconds per run (default 30)")
    args = ap.parse_args()
    models = ("lenet-c",) if args.quick else ("lenet-c", "alexnet", "vgg-a", "resnet18")
    old = baseline(args.baseline)
    print(f"exact_uneven before ({args.baseline}) and after pruning, same process (time limit {args.time_limit:g} s per run)")
    print("| network | array | space | grid | before s | after s | ratio | states before | states after | "
          "pruned | answer (after) | same |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows(old, models, load_array("tpu-mix-16"), 2, args.time_limit)
    rows(old, models[:3], mix4(), 4, args.time_limit)


if __name__ == "__main__":
    main()
