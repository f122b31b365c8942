"""The even and uneven CP-SAT after they share their running code (``solvers.cpsat_run``) and
the pair encoding (``formulation.pair_rows``), against the same solvers at a baseline commit
(``--baseline``, default 479b4cd: before the share), in the same process: the baseline's
``solvers/cpsat.py``, ``solvers/formulation.py`` and ``solvers/uneven_cpsat.py`` are loaded from
git as modules of this process (their other imports are today's, unchanged by the share).

Per instance, ``--rounds`` rounds, each running the baseline and today's solver (in alternating
order): the median wall and CPU seconds of each, their ratios, whether the answers are the same
(status, value, bound, plan), and whether CP-SAT ran the same searches (``same_search``: its
branches, conflicts and deterministic time, search by search; one worker, so equal counters mean
the same search whatever the load, and a wall-time difference is the machine's noise or the
Python around the search). Even: ``cpsat.solve`` (one worker) on zoo networks on ``hypar-16``
and ``accpar-128``, free and with a cap at 3/4 of the optimum's last level;
uneven: ``cpsat_uneven`` on lenet-c on the top 1 and 2 levels of ``tpu-mix-16`` (where it
proves), time and traffic objectives (traffic runs the tie-break's second stage), and under a
cap and the memory limits the free optimum keeps.

    python bench/bench_cpsat_share.py               # both tables, 5 rounds
    python bench/bench_cpsat_share.py --rounds 3 --only uneven
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
import types
from fractions import Fraction
from dataclasses import replace
from pathlib import Path

from explorer.core.constraints import Cap, Constraints
from explorer.core.evaluate import evaluate_split
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions
from explorer.core.split_rules import SplitRules
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers import cpsat, uneven_cpsat

ROOT = Path(__file__).resolve().parent.parent


def load(rev: str, path: str, name: str, renames: dict[str, str]) -> types.ModuleType:
    """``path`` at ``rev`` as the module ``explorer.solvers.<name>`` (its relative imports resolve
    to today's modules, but for ``renames``: {module: baseline module})."""
    src = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for old, new in renames.items():
        src = src.replace(f"from .{old} import", f"from .{new} import")
    mod = types.ModuleType(f"explorer.solvers.{name}")
    mod.__package__ = "explorer.solvers"
    sys.modules[mod.__name__] = mod
    exec(compile(src, f"{rev}:{path}", "exec"), mod.__dict__)
    return mod


def baseline(rev: str):
    load(rev, "solvers/formulation.py", "_base_formulation", {})
    even = load(rev, "solvers/cpsat.py", "_base_cpsat", {"formulation": "_base_formulation"})
    return even, load(rev, "solvers/uneven_cpsat.py", "_base_uneven_cpsat", {})


_WORK: list = []


def _counting(mod) -> None:
    """``mod.run_solver`` noting each search's work (branches, conflicts, deterministic time)."""
    real = mod.run_solver

    def run(solver, model, callback=None):
        out = real(solver, model, callback)
        r = solver.response_proto
        _WORK.append((r.num_branches, r.num_conflicts, r.deterministic_time))
        return out

    mod.run_solver = run


def same_search(old, new) -> bool:
    """Whether old() and new() run the same CP-SAT searches: the same work counters, search by
    search (deterministic with one worker: a difference of the load cannot show there)."""
    _WORK.clear()
    old()
    first = list(_WORK)
    _WORK.clear()
    new()
    return first == _WORK


def rounds(n: int, old, new):
    """Median wall and CPU seconds (the process's, every thread's: less moved by the other
    processes' load) of old() and new() over n rounds (alternating which runs first), and their
    last answers: (wall old, wall new, cpu old, cpu new, answer old, answer new)."""
    wall, cpu, last = ([], []), ([], []), [None, None]
    for r in range(n):
        for which in ((0, 1) if r % 2 == 0 else (1, 0)):
            t0, c0 = time.perf_counter(), time.process_time()
            last[which] = (old, new)[which]()
            wall[which].append(time.perf_counter() - t0)
            cpu[which].append(time.process_time() - c0)
    med = statistics.median
    return med(wall[0]), med(wall[1]), med(cpu[0]), med(cpu[1]), last[0], last[1]


def even_rows(old, n: int) -> None:
    print("| even cpsat (1 worker) | array | space | baseline s | shared s | ratio | baseline CPU s | shared CPU s | "
          "ratio | status | same | same search |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, array, space in (("lenet-c", "hypar-16", Space.HYPAR), ("resnet50", "hypar-16", Space.ACCPAR),
                               ("alexnet", "accpar-128", Space.ACCPAR), ("vgg-e", "accpar-128", Space.ACCPAR),
                               ("resnet18", "accpar-128", Space.HYPAR)):
        arr = load_array(array)
        p = Problem(load_model(name), arr, space)
        h = p.levels - 1  # a cap at 3/4 of the optimum's last level
        units = cpsat.solve(p, SolveOptions(workers=1)).level_units[h]
        most = units * arr.dtype_bytes * Fraction(3, 4) / p.tables.unit_per_element
        cap = p.with_constraints(Constraints(caps=(Cap(h, most),)))
        for label, q in ((name, p), (f"{name} cap", cap)):
            opts = SolveOptions(workers=1)
            search = same_search(lambda: old.solve(q, opts), lambda: cpsat.solve(q, opts))
            ta, tb, ca, cb, a, b = rounds(n, lambda: old.solve(q, opts), lambda: cpsat.solve(q, opts))
            same = (a.status, a.objective, a.bound, a.plan) == (b.status, b.objective, b.bound, b.plan)
            print(f"| {label} | {array} | {space.value} | {ta:.3f} | {tb:.3f} | {ta / tb:.2f}x | {ca:.3f} | {cb:.3f} | "
                  f"{ca / cb:.2f}x | {b.status.value} | "
                  f"{'yes' if same else 'NO'} | {'yes' if search else 'NO'} |", flush=True)


def top_levels(array, H: int):
    """The top H levels of an array: its first and last 2^(H-1) leaves (the two kinds of a mix)."""
    k = 2 ** (H - 1)
    return replace(array, name=f"{array.name.split('-')[0]}-mix-{2**H}", levels=H,
                   bandwidth_GBps=array.bandwidth_GBps[:H], leaves=array.leaves[:k] + array.leaves[-k:])


def uneven_cases():
    mix = load_array("tpu-mix-16")
    net = load_model("lenet-c")
    for H, grid in ((1, 16), (2, 4)):
        arr = top_levels(mix, H)
        aspace = alpha_space(arr, alpha_grid(grid))
        free = uneven_cpsat.cpsat_uneven(net, arr, Space.ACCPAR, aspace, time_limit_s=60)
        ev = evaluate_split(net, arr, free.plan)
        cap = Cap(0, ev.level_cost[0] * arr.dtype_bytes)  # the free optimum's: the plan keeps them
        memory = ev.leaf_memory_bytes
        for label, rules in (("time", SplitRules(Objective.TIME)), ("traffic", SplitRules(Objective.TRAFFIC)),
                             ("time, cap", SplitRules(Objective.TIME, Constraints(caps=(cap,)))),
                             ("time, memory", SplitRules(Objective.TIME, leaf_memory_bytes=memory))):
            yield f"lenet-c on {arr.name}, 1/{grid}, {label}", net, arr, aspace, rules


def uneven_rows(old, n: int) -> None:
    print()
    print("| uneven cpsat (accpar) | baseline s | shared s | ratio | baseline CPU s | shared CPU s | ratio | status | "
          "same | same search |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, net, arr, aspace, rules in uneven_cases():
        def run(mod):
            return lambda: mod.cpsat_uneven(net, arr, Space.ACCPAR, aspace, time_limit_s=60, rules=rules)
        search = same_search(run(old), run(uneven_cpsat))
        ta, tb, ca, cb, a, b = rounds(n, run(old), run(uneven_cpsat))
        same = (a.status, a.split_value, a.split_bound, a.plan) == (b.status, b.split_value, b.split_bound, b.plan)
        print(f"| {label} | {ta:.3f} | {tb:.3f} | {ta / tb:.2f}x | {ca:.3f} | {cb:.3f} | {ca / cb:.2f}x | "
              f"{b.status.value} | {'yes' if same else 'NO'} | "
              f"{'yes' if search else 'NO'} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="479b4cd")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", choices=("even", "uneven"))
    args = ap.parse_args()
    old_even, old_uneven = baseline(args.baseline)
    _counting(old_even)  # (the baseline's uneven cpsat runs through today's ``cpsat.run_solver``)
    _counting(cpsat)
    if args.only != "uneven":
        even_rows(old_even, args.rounds)
    if args.only != "even":
        uneven_rows(old_uneven, args.rounds)


if __name__ == "__main__":
    main()
