"""The smallest-feasible-cap search of an infeasible uneven run (``solvers.uneven_least``): its
Pareto pass on a level's sides, the exact pass alone (the former search) against the beam pass
then the exact pass below its plan's value (the current one), in one process; medians of
``--repeats`` runs. Usage: python bench/bench_uneven_least.py [--repeats 3] [--limit 60]"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.split_rules import SplitRules
from explorer.core.split_costs import SplitCosts, VectorLayout
from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers import uneven_least as UL
from explorer.solvers.uneven import _columns

MIX4 = ("version: 1\nname: mix-4\nlevels: 2\ndtype_bytes: 2\nkinds:\n  v2: {peak_TFLOPS: 45, memory_GiB: 16}\n"
        "  v3: {peak_TFLOPS: 123, memory_GiB: 32}\naccelerators: [v2, v3, v3, v3]\nlink_bandwidth_GBps: [70, 50]\n")


def _case(model: str, array: str, grid: int, level: int):
    net, arr = load_model(model), load_array(array)
    aspace = alpha_space(arr, alpha_grid(grid), FreeAlphas.UNLIKE, proportional=True)
    columns = _columns(net, Space.ACCPAR, aspace, arr.levels, SplitRules(Objective.TIME))
    costs = SplitCosts(net, arr.levels, aspace.values(), VectorLayout(arr.levels, True), 0)
    positions = [p + s for (h, _), p in costs.layout.pos.items() if h == level for s in (0, 1)]
    return costs, columns, UL._own(costs, columns), positions


def _time(fn, repeats: int):
    walls, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls), out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--limit", type=float, default=60.0)
    a = ap.parse_args()
    mix4 = Path(tempfile.mkdtemp()) / "mix-4.yaml"
    mix4.write_text(MIX4)
    cases = [("sfc", str(mix4), 4, 0), ("sfc", str(mix4), 4, 1), ("lenet-c", "tpu-mix-16", 2, 1)]
    print(f"{'case':<28} {'former s':>9} {'now s':>9} {'ratio':>7}  same")
    for model, array, grid, level in cases:
        costs, columns, own, pos = _case(model, array, grid, level)
        comps = sorted(pos)
        top = list(range(len(comps)))
        former = lambda: UL._fronts(costs, columns, own, comps, top, [], time.perf_counter() + a.limit)[:2]  # noqa: E731
        now = lambda: UL._least_pareto(costs, columns, own, pos, [], time.perf_counter() + a.limit)[:2]  # noqa: E731
        t_old, r_old = _time(former, a.repeats)
        t_new, r_new = _time(now, a.repeats)
        name = f"{model} {Path(array).stem} 1/{grid} level {level}"
        print(f"{name:<28} {t_old:9.2f} {t_new:9.2f} {t_old / t_new:7.2f}  {r_old == r_new} {r_new}")


if __name__ == "__main__":
    main()
