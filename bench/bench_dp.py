"""Time HyPar's hierarchical DP in-process on random chains (issue 2, item 11; issue 8, item 5).

Prints a table: layers, levels, space, DP wall time (best of N; chains take the vectorised
scan), the same DP with the reference scan in Python integers ("python ms", the plans are
checked equal) and its speedup, and the ratio of the DP to a baseline run in the same
process: one pass of the cost tables scoring the all-I plan (``plan_level_units``).

    python bench/bench_dp.py            # full table
    python bench/bench_dp.py --quick    # a smaller table
"""

from __future__ import annotations

import argparse

from explorer.core.array import synthetic_array
from explorer.core.costs import plan_level_units
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.randnet import random_chain
from explorer.app.baselines import baseline_plan
from explorer.core.comm import advance, zero_counts
from explorer.solvers.dp import chain_level, hierarchical_dp
from timing import best_of  # bench/timing.py (this folder is on sys.path when run as a script)


def python_dp(problem: Problem):
    """``hierarchical_dp`` with the reference chain scan at every level (the chain is checked once
    here, as ``hierarchical_dp`` does)."""
    assert problem.network.is_chain
    counts, rows = zero_counts(problem.num_layers), []
    for h in range(problem.levels):
        row, _ = chain_level(problem, h, counts)
        rows.append(tuple(row))
        counts = advance(counts, row)
    return tuple(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    sizes = [10, 100, 1000, 10000] if not args.quick else [10, 100, 1000]
    levels = [4, 7, 10, 12] if not args.quick else [4, 10]
    print(f"{'layers':>7} {'levels':>6} {'space':>7} {'dp ms':>9} {'python ms':>10} {'speedup':>8} {'score ms':>9} {'ratio':>7}")
    for space in (Space.HYPAR, Space.ACCPAR):
        for L in sizes:
            for H in levels:
                if L == 10000 and H != 10:
                    continue
                problem = Problem(random_chain(7, L, consistent=False), synthetic_array(H), space)
                _ = problem.tables._base_arrays  # build the tables once, outside the timing (shared by all)
                assert hierarchical_dp(problem)[0].types == python_dp(problem)
                t_dp = best_of(lambda: hierarchical_dp(problem), args.repeat)
                t_py = best_of(lambda: python_dp(problem), args.repeat)
                plan = baseline_plan(problem, "all-I")
                t_score = best_of(lambda: plan_level_units(problem.tables, plan.types), args.repeat)
                print(f"{L:>7} {H:>6} {space.value:>7} {t_dp * 1e3:>9.2f} {t_py * 1e3:>10.2f} {t_py / t_dp:>7.2f}x"
                      f" {t_score * 1e3:>9.2f} {t_dp / t_score:>7.2f}")


if __name__ == "__main__":
    main()
