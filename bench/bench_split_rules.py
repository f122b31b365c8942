"""The proving split solvers under side constraints (``core.split_rules``) against the same
solvers without them, run in the same process (the baseline: ``TIME_ONLY``, what they solved
before pins, caps and memory existed for split plans).

Rows: sfc on a 4-accelerator mix (2 TPU-v2 + 2 TPU-v3, alpha grid 1/2 plus the proportional
ratios) and tiny random chains; columns: each solver's wall seconds without rules, with each
kind's memory limit (the default of ``explore --split optimal --solver``), with a cap that binds
and a pin, and under the traffic objective; the ratio to the baseline; and the value found.

    python bench/bench_split_rules.py
"""

from __future__ import annotations

import time
from fractions import Fraction

from explorer.core.array import AcceleratorKind, ArraySpec
from explorer.core.constraints import Cap, Constraints, Pin
from explorer.core.evaluate import evaluate_split
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.core.objective import Objective
from explorer.core.partition import PartitionType, Space
from explorer.core.randnet import random_chain
from explorer.core.split_rules import TIME_ONLY, SplitRules, leaf_memory_limits
from explorer.frontends import load_model
from explorer.solvers.brute import solve_split
from explorer.solvers.uneven import exact_uneven
from explorer.solvers.uneven_cpsat import cpsat_uneven

SOLVERS = {"exact": exact_uneven, "cpsat": cpsat_uneven, "brute": solve_split}


def mix(peaks, bw=70, dtype=2) -> ArraySpec:
    kinds = {p: AcceleratorKind(f"k{p}", Fraction(p), Fraction(32)) for p in set(peaks)}
    H = len(peaks).bit_length() - 1
    return ArraySpec("mix", H, dtype, (Fraction(bw),) * H, min(map(Fraction, peaks)), Fraction(32),
                     leaves=tuple(kinds[p] for p in peaks))


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def rule_sets(net, arr, space, aspace):
    free = solve_split(net, arr, space, aspace) if len(net.layers) < 4 else exact_uneven(net, arr, space, aspace)
    ev = evaluate_split(net, arr, free.plan)
    cap = Cap(0, ev.level_cost[0] * arr.dtype_bytes * Fraction(99, 100))
    return {"memory": SplitRules(leaf_memory_bytes=leaf_memory_limits(arr)),
            "cap+pin": SplitRules(constraints=Constraints(pins=(Pin(0, 0, PartitionType.II),), caps=(cap,)),
                                  leaf_memory_bytes=leaf_memory_limits(arr)),
            "traffic": SplitRules(Objective.TRAFFIC, leaf_memory_bytes=leaf_memory_limits(arr))}


def main() -> None:
    cases = [("sfc, 2 v2 + 2 v3", load_model("sfc"), mix([45, 45, 123, 123]), Space.HYPAR)]
    cases += [(f"chain seed {s}, 1 + 3", random_chain(s, 3, max_channels=16, max_size=4, consistent=False), mix([1, 3]), Space.ACCPAR)
              for s in (1, 2, 3)]
    warm = cases[1]
    for solve in SOLVERS.values():  # imports (CP-SAT's) and caches before any timing
        solve(warm[1], warm[2], warm[3], alpha_space(warm[2], alpha_grid(2)))
    print(f"{'case':<22} {'solver':<6} {'rules':<8} {'base s':>8} {'rules s':>8} {'ratio':>6}  status      value")
    for name, net, arr, space in cases:
        aspace = alpha_space(arr, alpha_grid(2))
        rules = rule_sets(net, arr, space, aspace)
        for sname, solve in SOLVERS.items():
            if sname == "brute" and len(net.layers) > 3:
                continue
            _, base = timed(lambda: solve(net, arr, space, aspace, rules=TIME_ONLY))
            for rname, r in rules.items():
                sol, t = timed(lambda: solve(net, arr, space, aspace, rules=r))
                value = "-" if sol.split_value is None else f"{float(sol.split_value):.6g}"
                print(f"{name:<22} {sname:<6} {rname:<8} {base:>8.3f} {t:>8.3f} {t / base:>6.2f}  {sol.status.value:<11} {value}")


if __name__ == "__main__":
    main()
