"""The level DP's CPU per level on an array of many kinds (each accelerator its own peak, 40 + i/8
TFLOPS: ``bench_time_limit.py --groups many-kinds`` at 1,024), with a block over one class scoring
its class's groups and reading the others' by type (``uneven_levels.BY_CLASS``, now) and with every
group scored in every block (the reference), in one process, interleaved per round. Each level's
CPU (``time.process_time``: its inputs and its DP) until a run's budget of seconds is spent;
the plans are compared where both runs ended.

    python bench/bench_levels_kinds.py                          # 1,024 kinds, alexnet, grid 1/16
    python bench/bench_levels_kinds.py --kinds 256 --repeat 3 --reference-budget 60
"""

from __future__ import annotations

import argparse
import statistics
import time
from fractions import Fraction

import explorer.solvers.uneven_levels as lv
from explorer.core.array import AcceleratorKind, ArraySpec
from explorer.core.partition import Space
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_model


def many(n: int) -> ArraySpec:
    leaves = tuple(AcceleratorKind(f"k{i}", 40 + Fraction(i, 8), Fraction(32)) for i in range(n))
    H = n.bit_length() - 1
    return ArraySpec("kinds", H, 2, (Fraction(70),) * H, min(k.peak_TFLOPS for k in leaves), Fraction(32), leaves=leaves)


def run(net, array, aspace, by_class: bool, budget: float):
    """(CPU per level reached, the plan or None where cut) with ``BY_CLASS`` as given."""
    lv.BY_CLASS = by_class
    per: dict[int, float] = {}
    inputs, solve = lv._level_inputs, lv._solve_level

    def timed(f, h_of):
        def g(*a, **k):
            t0 = time.process_time()
            try:
                return f(*a, **k)
            finally:
                h = h_of(a)
                per[h] = per.get(h, 0.0) + time.process_time() - t0
        return g

    lv._level_inputs = timed(inputs, lambda a: a[5])
    lv._solve_level = timed(solve, lambda a: a[3].h)
    try:
        plan = lv.level_dp_plan(net, array, Space.ACCPAR, aspace, deadline=time.perf_counter() + budget)[0]
    except lv._Late:
        plan = None
    finally:
        lv._level_inputs, lv._solve_level, lv.BY_CLASS = inputs, solve, True
    return per, plan


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kinds", type=int, default=1024)
    ap.add_argument("--model", default="alexnet")
    ap.add_argument("--grid", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds of wall time a run by class may take (then cut)")
    ap.add_argument("--reference-budget", type=float, default=15.0, help="the same for every group scored")
    args = ap.parse_args()
    array, net = many(args.kinds), load_model(args.model)
    aspace = alpha_space(array, alpha_grid(args.grid))
    runs: dict[bool, list] = {True: [], False: []}
    for _ in range(args.repeat):
        for by_class in (False, True):
            runs[by_class].append(run(net, array, aspace, by_class, args.budget if by_class else args.reference_budget))
    print(f"{args.model} on {args.kinds} kinds, grid 1/{args.grid}: CPU s per level, medians of {args.repeat}")
    print("| level | every group s | by class s | ratio |\n|---:|---:|---:|---:|")
    for h in range(array.levels):
        old = [p[h] for p, _ in runs[False] if h in p]
        new = [p[h] for p, _ in runs[True] if h in p]
        o = f"{statistics.median(old):.3f}" if old else "-"
        n = f"{statistics.median(new):.3f}" if new else "-"
        r = f"{statistics.median(old) / statistics.median(new):.1f}x" if old and new else "-"
        print(f"| {h} | {o} | {n} | {r} |")
    for by_class in (False, True):
        total = [sum(p.values()) for p, _ in runs[by_class]]
        ended = sum(plan is not None for _, plan in runs[by_class])
        print(f"{'by class' if by_class else 'every group'}: total CPU {statistics.median(total):.2f} s, "
              f"{ended}/{args.repeat} runs ended with the DP's plan")
    same = [a == b for (_, a), (_, b) in zip(runs[False], runs[True]) if a is not None and b is not None]
    print(f"plans compared where both ended: {len(same)}, the same: {sum(same)}")


if __name__ == "__main__":
    main()
