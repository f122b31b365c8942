"""Time to a proven joint optimum (issue 3, item 8): CP-SAT, the exact joint DP, and the same
0-1 formulation as a MIP in HiGHS (Alpa's style of planner), run in one process.

Prints one row per instance: network, levels, space, model size, wall time of each method
(and its status when not optimal), and the ratio of CP-SAT's and HiGHS's time to the exact
solver's (the baseline). Every plan is re-scored by the evaluator and checked against the
exact optimum.

    python bench/bench_exact.py            # zoo at 16 and 128 accelerators, random chains, 1,024
    python bench/bench_exact.py --quick
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from highs_mip import solve_highs  # noqa: E402

from explorer.core.array import synthetic_array  # noqa: E402
from explorer.core.errors import InstanceTooLarge  # noqa: E402
from explorer.core.partition import Space  # noqa: E402
from explorer.core.problem import Problem  # noqa: E402
from explorer.core.randnet import random_chain  # noqa: E402
from explorer.app.run import rescore  # noqa: E402
from explorer.frontends import load_array, load_model  # noqa: E402
from explorer.solvers import cpsat, exact  # noqa: E402
from explorer.core.solution import SolveOptions, Status  # noqa: E402


def cell(sol, ref) -> str:
    if sol is None:
        return "refused"
    tag = "" if sol.status is Status.OPTIMAL else f" ({sol.status.value})"
    if sol.plan is not None and ref is not None and sol.status is Status.OPTIMAL and sol.objective != ref:
        tag = " (WRONG)"
    return f"{sol.wall_s:.3f}s{tag}"


def run_row(name: str, problem: Problem, time_limit: float, workers: int, highs: bool) -> None:
    try:
        e = exact.solve(problem)
        rescore(problem, e)
    except InstanceTooLarge:
        e = None
    c = cpsat.solve(problem, SolveOptions(time_limit_s=time_limit, workers=workers))
    if c.plan is not None:
        rescore(problem, c)
    hsol = None
    if highs:
        hsol = solve_highs(problem, time_limit)
        if hsol.plan is not None:
            rescore(problem, hsol)
    ref = e.objective if e else (c.objective if c.status is Status.OPTIMAL else None)
    from explorer.solvers.formulation import build

    nvars = build(problem).num_vars
    base = e.wall_s if e else None
    ratio = lambda s: "-" if (s is None or base is None or s.status is not Status.OPTIMAL) else f"{s.wall_s / base:.0f}x"  # noqa: E731
    print(
        f"{name:<14}{problem.levels:>4}{problem.array.accelerators:>6} {problem.space.value:<7}{problem.num_layers:>5}{nvars:>8}"
        f"  {cell(e, ref):>12}  {cell(c, ref):>20}  {cell(hsol, ref) if highs else '-':>20}  {ratio(c):>8}  {ratio(hsol) if highs else '-':>8}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-highs", action="store_true")
    args = ap.parse_args()
    highs = not args.no_highs
    print(f"{'network':<14}{'H':>4}{'accs':>6} {'space':<7}{'L':>5}{'vars':>8}  {'exact':>12}  {'cpsat':>20}  {'highs':>20}  {'cp/ex':>8}  {'hi/ex':>8}")
    zoo = ["sfc", "sconv", "lenet-c", "cifar-c", "alexnet", "vgg-a", "vgg-b", "vgg-c", "vgg-d", "vgg-e"]
    if args.quick:
        zoo = ["lenet-c", "alexnet", "vgg-e"]
    for arr in ("hypar-16", "accpar-128"):
        for m in zoo:
            run_row(m, Problem(load_model(m), load_array(arr), Space.ACCPAR), args.time_limit, args.workers, highs)
    # random chains: scaling in layers and levels (accpar)
    for L in ([20, 50] if args.quick else [20, 50, 100]):
        for H in ([4, 7] if args.quick else [4, 7, 9]):
            run_row(f"random-{L}", Problem(random_chain(3, L, batch=256, consistent=False), synthetic_array(H), Space.ACCPAR), args.time_limit, args.workers, highs)
    # 1,024 accelerators
    for m in (["vgg-a"] if args.quick else ["alexnet", "vgg-a", "vgg-e"]):
        run_row(m, Problem(load_model(m), load_array("array-1024"), Space.HYPAR), args.time_limit, args.workers, highs)
        run_row(m, Problem(load_model(m), load_array("array-1024"), Space.ACCPAR), args.time_limit, args.workers, highs)


if __name__ == "__main__":
    main()
