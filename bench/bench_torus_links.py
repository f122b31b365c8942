"""How much the pair formula under-counts a torus exchange when a split below the top is uneven
(docs/uneven.md, "Uneven splits on a torus"): per model, the proportional split (the even DP's
types, each group's alphas its peak ratio, whole units kept) on torus mixes whose space frees a
level below the top, scored link by link (the evaluator, ``core.torus_links``) and by the pair formula
(the evaluator's split path without the links).

    python bench/bench_torus_links.py

Then the exact DP's wall time with the link windows (the torus) against the same space on the
H-tree (``windows_cost``).
"""

from __future__ import annotations

import time
from dataclasses import replace

from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions
from explorer.core.timing import Topology
from explorer.core.evaluate import evaluate_split, split_evaluation
from explorer.core.split_amounts import split_amounts
from explorer.core.uneven import proportional_alphas, round_to_whole_units
from explorer.frontends import load_array, load_model
from explorer.solvers import get_solver

MODELS = ("sfc", "lenet-c", "cifar-c", "alexnet", "resnet18")


def arrays():
    base = load_array("tpu-mix-16")
    v2, v3 = base.leaves[0], base.leaves[-1]
    yield "torus [v2, v3, v3, v3]", replace(base, levels=2, leaves=(v2, v3, v3, v3), bandwidth_GBps=base.bandwidth_GBps[:2],
                                               topology=Topology.TORUS)
    yield "torus v2 x4 + v3 x12", replace(base, leaves=(v2,) * 4 + (v3,) * 12, topology=Topology.TORUS)


def main() -> None:
    for name, arr in arrays():
        for model in MODELS:
            net = load_model(model)
            t0 = time.perf_counter()
            types = get_solver("dp")(Problem(net, replace(arr, topology=Topology.HTREE), Space.ACCPAR, Objective.TIME),
                                     SolveOptions()).plan.types
            alphas = proportional_alphas(arr)
            plan = round_to_whole_units(net, Plan(types, tuple(tuple((a,) * len(types[0]) for a in row) for row in alphas)))
            links, pair = evaluate_split(net, arr, plan), split_evaluation(net, arr, *split_amounts(net, arr, plan))
            (lc, ls), (pc, ps) = (links.group_comm_s, links.leaf_time_s), (pair.group_comm_s, pair.leaf_time_s)
            worst = max(a / b for la, pa in zip(lc, pc) for a, b in zip(la, pa) if b)
            print(f"{name:24} {model:9} step links {float(max(ls)) * 1e3:9.4f} ms  pair {float(max(ps)) * 1e3:9.4f} ms"
                  f"  x{float(max(ls) / max(ps)):.3f}  worst group exchange x{float(worst):.3f}"
                  f"  ({time.perf_counter() - t0:.1f} s)")




def windows_cost(repeats: int = 3) -> None:
    """The exact DP's wall time on a torus freeing a split below the top (link windows in its
    vectors) against the same array as an H-tree (two sides a group), medians of ``repeats``."""
    from statistics import median

    from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space
    from explorer.solvers.uneven import exact_uneven

    base = load_array("tpu-mix-16")
    v2, v3 = base.leaves[0], base.leaves[-1]
    tor = replace(base, levels=2, leaves=(v2, v3, v3, v3), bandwidth_GBps=base.bandwidth_GBps[:2], topology=Topology.TORUS)
    for model, grid in (("sfc", 4), ("lenet-c", 4), ("cifar-c", 4)):
        net = load_model(model)
        walls = {}
        for name, arr in (("torus", tor), ("htree", replace(tor, topology=Topology.HTREE))):
            aspace = alpha_space(arr, alpha_grid(grid), FreeAlphas.UNLIKE)
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                sol = exact_uneven(net, arr, Space.HYPAR, aspace, time_limit_s=300)
                times.append(time.perf_counter() - t0)
            walls[name] = (median(times), sol.status, float(sol.step_time_s))
        (tt, ts, tv), (ht, hs, hv) = walls["torus"], walls["htree"]
        print(f"exact {model:8} grid {grid}: torus {tt:.2f} s ({ts}, {tv * 1e3:.5f} ms)  h-tree {ht:.2f} s ({hs}, "
              f"{hv * 1e3:.5f} ms)  x{tt / ht:.2f}")


if __name__ == "__main__":
    main()
    windows_cost()
