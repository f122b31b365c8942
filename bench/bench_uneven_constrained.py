"""The uneven split under a cap or a memory limit, three solvers back to back in one process:
"before", ``exact_uneven`` at the branch's base commit (``--baseline``: its ``solvers/uneven.py``
and ``uneven_prune.py`` loaded from git, on today's ``core``); "exact", today's ``exact_uneven``
(the Pareto DP on the shared column tables, ``solvers/uneven_tables.py``); "constrained", the
constrained path (``solvers.uneven_constrained``: the joint solver with the limits' terms in its
labels where it applies, else the Pareto DP), which ``--split optimal --solver exact`` runs under
caps or memory.

tpu-mix-16 at alpha grid 1/2 (plus the proportional ratio), both spaces. The rules, from the
unconstrained hypar optimum: ``cap`` = the deepest level capped at 3/4 of its c_h; ``memory`` =
every accelerator at 3/4 of that plan's largest footprint. resnet18 is not a chain (refused by
all), vgg-a accpar has more than 200,000 column pairs (refused by all).

    python bench/bench_uneven_constrained.py            # the table of docs/benchmarks.md
    python bench/bench_uneven_constrained.py --quick    # lenet-c only
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import types
from fractions import Fraction
from pathlib import Path

from explorer.core.constraints import Cap, Constraints
from explorer.core.errors import Refused
from explorer.core.evaluate import evaluate_split
from explorer.core.partition import Space
from explorer.core.split_rules import SplitRules
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers.uneven import exact_uneven
from explorer.solvers.uneven_constrained import constrained_uneven
from uneven_runs import cell, states, timed_solve  # bench/uneven_runs.py (this folder is on sys.path)

ROOT = Path(__file__).resolve().parent.parent
SHARE = Fraction(3, 4)


def baseline(rev: str):
    """``exact_uneven`` of ``solvers/uneven.py`` at ``rev``, with that commit's ``uneven_prune``."""
    def source(path):
        return subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout

    def module(name, path):
        mod = types.ModuleType(name)
        mod.__package__ = "explorer.solvers"
        exec(compile(source(path), f"{rev}:{path}", "exec"), mod.__dict__)
        return mod

    key = "explorer.solvers.uneven_prune"
    today = sys.modules[key]
    sys.modules[key] = module("baseline_uneven_prune", "solvers/uneven_prune.py")
    try:
        return module("baseline_uneven", "solvers/uneven.py").exact_uneven
    finally:
        sys.modules[key] = today


def rules_for(net, arr):
    free = exact_uneven(net, arr, Space.HYPAR, alpha_space(arr, alpha_grid(2)))
    ev = evaluate_split(net, arr, free.plan)
    h = arr.levels - 1
    cap = SplitRules(constraints=Constraints(caps=(Cap(h, ev.level_cost[h] * arr.dtype_bytes * SHARE),)))
    memory = SplitRules(leaf_memory_bytes=tuple(max(ev.leaf_memory_bytes) * SHARE for _ in ev.leaf_memory_bytes))
    return {"cap": cap, "memory": memory}


def agree(*sols) -> str:
    done = [s for s in sols if not isinstance(s, Refused) and s.status.value in ("optimal", "infeasible")]
    if len(done) < len(sols) and all(isinstance(s, Refused) for s in sols):
        return "yes (refused)"
    return "yes" if len({(s.status, s.step_time_s) for s in done}) <= 1 else "NO"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--baseline", default="cc9b956")
    args = ap.parse_args()
    before = baseline(args.baseline)
    arr = load_array("tpu-mix-16")
    print("| network | space | rule | before s | exact s | constrained s | states (before / exact / constrained) "
          "| exact | constrained | agree |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in (["lenet-c"] if args.quick else ["alexnet", "lenet-c", "vgg-a", "resnet18"]):
        net = load_model(name)
        try:
            rules = rules_for(net, arr)
        except Refused as e:
            print(f"| {name} | both | - | - | - | - | - | refused ({str(e).split(';')[0]}) | refused | yes |")
            continue
        for space in (Space.HYPAR, Space.ACCPAR):
            for rule, r in rules.items():
                a, ta = timed_solve(before, net, arr, space, 2, args.time_limit, rules=r)
                b, tb = timed_solve(exact_uneven, net, arr, space, 2, args.time_limit, rules=r)
                c, tc = timed_solve(constrained_uneven, net, arr, space, 2, args.time_limit, rules=r)
                print(f"| {name} | {space.value} | {rule} | {ta:.2f} | {tb:.2f} | {tc:.2f} | "
                      f"{states(a)} / {states(b)} / {states(c)} | {cell(b, gap=True)} | {cell(c, gap=True)} | {agree(a, b, c)} |", flush=True)


if __name__ == "__main__":
    main()
