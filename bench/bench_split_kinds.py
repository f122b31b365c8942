"""The evaluator's integer pass on arrays of many kinds (issue 23, item 2: ``--split proportional``
on 1,024 kinds took 8-19 s, one exact evaluation of the proportional plan).

Per array of 2^H kinds (each accelerator its own peak, 40 + i/8 TFLOPS: the array of
``bench_time_limit.py --groups many-kinds`` at H = 10) and network, the proportional plan on the
even DP's types is scored by ``split_amounts`` of today (each group's D its own path's), by the
same module at the baseline commit (``--baseline``, default c7e50d7: one D, the lcm of every
alpha's denominator, for the whole plan), loaded from git into this process, and by the Fraction
reference (``evaluate_split_rational``); medians of ``--repeat`` interleaved rounds, seconds, the
ratios, and whether the three agree (every group's sides, every leaf's compute and memory).

    python bench/bench_split_kinds.py                  # H = 6, 8, 10; alexnet and resnet50
    python bench/bench_split_kinds.py --levels 10 --models alexnet --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import types
from fractions import Fraction
from pathlib import Path

from explorer.core import split_amounts as today
from explorer.core.array import AcceleratorKind, ArraySpec
from explorer.core.evaluate import evaluate_split_rational
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.uneven import proportional_plan
from explorer.frontends import load_model
from explorer.solvers.dp import solve as dp_solve

ROOT = Path(__file__).resolve().parent.parent


def baseline(rev: str) -> types.ModuleType:
    """``explorer/core/split_amounts.py`` at ``rev``, loaded as a module of explorer.core in this process."""
    src = subprocess.run(["git", "show", f"{rev}:explorer/core/split_amounts.py"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    mod = types.ModuleType("explorer.core.baseline_split_amounts")
    mod.__package__ = "explorer.core"
    sys.modules[mod.__name__] = mod
    exec(compile(src, f"{rev}:explorer/core/split_amounts.py", "exec"), mod.__dict__)
    return mod


def kinds(H: int) -> ArraySpec:
    leaves = tuple(AcceleratorKind(f"k{i}", Fraction(40) + Fraction(i, 8), Fraction(32)) for i in range(2**H))
    return ArraySpec(f"kinds-{2**H}", H, 2, (Fraction(70),) * H, Fraction(40), Fraction(32), leaves=leaves)


def timed(f) -> tuple[float, object]:
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", type=int, nargs="+", default=[6, 8, 10])
    ap.add_argument("--models", nargs="+", default=["alexnet", "resnet50"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", default="c7e50d7")
    args = ap.parse_args()
    old = baseline(args.baseline)
    print(f"load {open('/proc/loadavg').read().split()[0]}")
    print(f"{'network':<10}{'kinds':>6}{'today s':>10}{'baseline s':>12}{'ratio':>9}{'Fraction s':>12}{'ratio':>8}  same")
    for model in args.models:
        for H in args.levels:
            net, arr = load_model(model), kinds(H)
            plan = proportional_plan(net, arr, dp_solve(Problem(net, arr, Space.ACCPAR, Objective.TIME)).plan)
            runs: dict[str, list[float]] = {"today": [], "baseline": [], "fraction": []}
            outs = {}
            for _ in range(args.repeat):  # interleaved rounds: each sees the same load
                for name, f in (("today", lambda: today.split_amounts(net, arr, plan)),
                                ("baseline", lambda: old.split_amounts(net, arr, plan)),
                                ("fraction", lambda: evaluate_split_rational(net, arr, plan))):
                    dt, outs[name] = timed(f)
                    runs[name].append(dt)
            ref = outs["fraction"]
            same = outs["today"] == outs["baseline"] == (ref.group_amounts, ref.leaf_compute_s, ref.leaf_memory_bytes)
            t, b, r = (statistics.median(runs[k]) for k in ("today", "baseline", "fraction"))
            print(f"{model:<10}{2**H:>6}{t:>10.3f}{b:>12.3f}{b / t:>8.1f}x{r:>12.3f}{r / t:>7.1f}x  {same}", flush=True)
    print(f"load {open('/proc/loadavg').read().split()[0]}")


if __name__ == "__main__":
    main()
