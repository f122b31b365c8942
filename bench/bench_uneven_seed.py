"""The even seed of the uneven paths under limits (``solvers.uneven_seed``, trial 10's finding 14):
``constrained_uneven`` (the joint solver under caps and memory) with and without the even exact
solve's plan as a start, in the same process: status, step time, gap and the median wall of
``REPEATS`` runs, and the wall ratio seeded / unseeded.

    python bench/bench_uneven_seed.py [time limit s, default 10]
"""

from __future__ import annotations

import statistics
import sys
import time
from fractions import Fraction as F

from uneven_runs import cell

from explorer.core.constraints import Cap, Constraints
from explorer.core.evaluate import evaluate_split
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.split_rules import SplitRules, leaf_memory_limits
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers import uneven_seed
from explorer.solvers.uneven import exact_uneven
from explorer.solvers.uneven_constrained import constrained_uneven

REPEATS = 3  # runs that prove (time-limited runs: one)


def _memory(model: str, gib: F, copies: int = 2):
    arr = load_array("tpu-mix-16")
    rules = SplitRules(Objective.TIME, Constraints(weight_copies=copies), leaf_memory_limits(arr, gib * 2**30))
    return f"{model} accpar 1/16 --memory {float(gib):g} --weight-copies {copies}", load_model(model), arr, \
        Space.ACCPAR, alpha_space(arr, alpha_grid(16)), rules


def _lenet_cap():
    arr, net = load_array("tpu-mix-16"), load_model("lenet-c")
    aspace = alpha_space(arr, alpha_grid(2))
    c1 = evaluate_split(net, arr, exact_uneven(net, arr, Space.HYPAR, aspace).plan).level_cost[1]
    rules = SplitRules(constraints=Constraints(caps=(Cap(1, c1 * arr.dtype_bytes * F(3, 4)),)))
    return "lenet-c hypar 1/2, level-1 cap 3/4 of the free optimum's", net, arr, Space.HYPAR, aspace, rules


def main(limit: float) -> None:
    real = uneven_seed.even_under_limits
    cases = [_lenet_cap(), _memory("alexnet", F(12, 100)), _memory("alexnet", F(9, 100)),
             _memory("alexnet", F(7, 100)), _memory("alexnet", F(6, 100))]
    print(f"time limit {limit:g} s")
    print("| instance | unseeded | seeded | wall unseeded | wall seeded | ratio |\n|---|---|---|---|---|---|")
    for name, net, arr, space, aspace, rules in cases:
        row, walls = {}, {}
        for seeded in (False, True):
            uneven_seed.even_under_limits = real if seeded else (lambda *a, **k: None)
            ts = []
            for _ in range(REPEATS):
                t0 = time.perf_counter()
                sol = constrained_uneven(net, arr, space, aspace, time_limit_s=limit, rules=rules)
                ts.append(time.perf_counter() - t0)
                if sol.status.value != "optimal":
                    break
            row[seeded], walls[seeded] = cell(sol, gap=True), statistics.median(ts)
        uneven_seed.even_under_limits = real
        print(f"| {name} | {row[False]} | {row[True]} | {walls[False]:.2f} s | {walls[True]:.2f} s | "
              f"{walls[True] / walls[False]:.2f} |")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 10.0)
