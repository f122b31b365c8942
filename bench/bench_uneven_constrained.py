"""The uneven split under a cap and a memory limit: ``exact_uneven`` (the Pareto DP alone) against
the constrained path (``solvers.uneven_constrained``: the Lagrangian bound, then the same labels
pruned by its cut), back to back in one process, on tpu-mix-16 at alpha grid 1/2 (plus the
proportional ratio). The rules: level 0 capped at ``CAP`` of the unconstrained optimum's c_0, and
every accelerator's memory at ``MEMORY`` of its largest footprint (both bind). Wall seconds, the
answer, the bound, and whether the two agree (status and value; a run stopped by its time
limit is compared by what it proves). resnet18 is not a chain: refused by both.

    python bench/bench_uneven_constrained.py            # the table of docs/benchmarks.md
    python bench/bench_uneven_constrained.py --quick    # lenet-c, hypar only
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction

from explorer.core.constraints import Cap, Constraints
from explorer.core.errors import Refused
from explorer.core.evaluate import evaluate_split
from explorer.core.partition import Space
from explorer.core.split_rules import SplitRules
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers.uneven import exact_uneven
from explorer.solvers.uneven_constrained import constrained_uneven

CAP, MEMORY = Fraction(9, 10), Fraction(1)


def rules_for(net, arr, space, aspace, limit: float):
    """The cap and the memory limit around the unconstrained optimum (hypar's: accpar's own takes too long)."""
    free = exact_uneven(net, arr, Space.HYPAR, alpha_space(arr, alpha_grid(2)), time_limit_s=limit)
    ev = evaluate_split(net, arr, free.plan)
    cap = Cap(0, ev.level_cost[0] * arr.dtype_bytes * CAP)
    memory = tuple(max(ev.leaf_memory_bytes) * MEMORY for _ in ev.leaf_memory_bytes)
    return SplitRules(constraints=Constraints(caps=(cap,)), leaf_memory_bytes=memory)


def run(solve, net, arr, space, aspace, rules, limit: float):
    t0 = time.perf_counter()
    try:
        sol = solve(net, arr, space, aspace, time_limit_s=limit, rules=rules)
    except Refused as e:
        return e, time.perf_counter() - t0
    return sol, time.perf_counter() - t0


def ms(x) -> str:
    return "-" if x is None else f"{float(x) * 1e3:.4f}"


def cell(sol) -> str:
    if isinstance(sol, Refused):
        return "refused"
    gap = "" if sol.step_time_s is None or sol.bound_s is None else \
        f", gap {float((sol.step_time_s - sol.bound_s) / sol.step_time_s) * 100:.3f}%"
    return f"{sol.status.value} {ms(sol.step_time_s)} ms (bound {ms(sol.bound_s)}{gap})"


def agree(a, b) -> str:
    if isinstance(a, Refused) or isinstance(b, Refused):
        return "yes" if isinstance(a, Refused) and isinstance(b, Refused) else "NO"
    if a.status.value == "unknown":
        return "- (exact: time limit)"
    return "yes" if (a.status, a.step_time_s) == (b.status, b.step_time_s) else "NO"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args()
    arr = load_array("tpu-mix-16")
    models = ["lenet-c"] if args.quick else ["alexnet", "lenet-c", "vgg-a", "resnet18"]
    spaces = [Space.HYPAR] if args.quick else [Space.HYPAR, Space.ACCPAR]
    print("| model | space | exact s | exact | constrained s | constrained | agree |")
    print("|---|---|---|---|---|---|---|")
    for name in models:
        net = load_model(name)
        for space in spaces:
            aspace = alpha_space(arr, alpha_grid(2))
            try:
                rules = rules_for(net, arr, space, aspace, args.time_limit)
            except Refused as e:
                print(f"| {name} | {space.value} | - | refused ({str(e).split(';')[0]}) | - | refused | yes |")
                continue
            a, ta = run(exact_uneven, net, arr, space, aspace, rules, args.time_limit)
            b, tb = run(constrained_uneven, net, arr, space, aspace, rules, args.time_limit)
            print(f"| {name} | {space.value} | {ta:.2f} | {cell(a)} | {tb:.2f} | {cell(b)} | {agree(a, b)} |", flush=True)


if __name__ == "__main__":
    main()
