"""The uneven split's integer table (``core.split_costs``) against the Fraction vectors it
replaced, in the same process (issue 20, item 1).

Table 1, solvers: ``exact_uneven`` and ``cpsat_uneven`` of today against the same functions at the
baseline commit (``--baseline``, default 8529e4c: the last one computing Fraction vectors), whose
``solvers/uneven.py`` is loaded from git into this process; wall seconds of each, their ratio,
and whether the two answers are the same (status, step time, plan). Inputs: lenet-c, alexnet,
vgg-a and resnet18 on tpu-mix-16 (both refuse every one of them at once: 1296 columns per layer,
millions of column pairs; resnet18 is not a chain), then lenet-c on the top levels of tpu-mix-16
(``tpu-mix-2``: v2 | v3; ``tpu-mix-4``: v2 v2 | v3 v3), where they prove (alexnet takes over a
minute there even at alpha grid 1/4: the Pareto fronts grow, not the vectors' cost).

Table 2, evaluator: ``evaluate_split`` (the integer pass) against ``evaluate_split_rational``
(the Fraction reference) on the same plans: the proportional split and random plans with
alphas from the grid, per network on tpu-mix-16; milliseconds per plan and the ratio.

    python bench/bench_split_tables.py            # both tables
    python bench/bench_split_tables.py --quick    # fewer rows
"""

from __future__ import annotations

import argparse
import random
from fractions import Fraction
import subprocess
import sys
import time
import types
from dataclasses import replace
from pathlib import Path

from explorer.core.errors import Refused
from explorer.core.evaluate import evaluate_split, evaluate_split_rational
from explorer.core.plan import Plan
from explorer.core.partition import Space
from explorer.core.uneven import alpha_grid, alpha_space, proportional_alphas, round_to_whole_units, with_group_alphas
from explorer.frontends import load_array, load_model
from explorer.solvers import uneven, uneven_cpsat

MODELS = ("lenet-c", "alexnet", "vgg-a", "resnet18")
CURRENT = {"exact_uneven": uneven.exact_uneven, "cpsat_uneven": uneven_cpsat.cpsat_uneven}
ROOT = Path(__file__).resolve().parent.parent


def baseline(rev: str) -> types.ModuleType:
    """``solvers/uneven.py`` at ``rev``, loaded as a module of this process (it imports explorer.core only)."""
    src = subprocess.run(["git", "show", f"{rev}:solvers/uneven.py"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    mod = types.ModuleType("baseline_uneven")
    sys.modules[mod.__name__] = mod
    exec(compile(src, f"{rev}:solvers/uneven.py", "exec"), mod.__dict__)
    return mod


def top_levels(array, H: int):
    """The top H levels of an array: its first and last 2^(H-1) leaves (the two kinds of a mix)."""
    n = 2 ** (H - 1)
    return replace(array, name=f"{array.name.split('-')[0]}-mix-{2**H}", levels=H,
                   bandwidth_GBps=array.bandwidth_GBps[:H], leaves=array.leaves[:n] + array.leaves[-n:])


def timed(f, *args, **kw):
    t0 = time.perf_counter()
    try:
        out = f(*args, **kw)
    except Refused as e:
        out = e
    return out, time.perf_counter() - t0


def same(a, b) -> bool:
    if isinstance(a, Refused) or isinstance(b, Refused):
        return str(a) == str(b)
    return (a.status, a.step_time_s, a.bound_s, a.plan) == (b.status, b.step_time_s, b.bound_s, b.plan)


def show(sol) -> str:
    if isinstance(sol, Refused):
        return "refused"
    return f"{sol.status.value} {float(sol.step_time_s) * 1e3:.4f} ms"


def solver_rows(models, arrays, old) -> None:
    print("| solver | network | array | grid | baseline s | integer table s | ratio | answer | same |")
    print("|---|---|---|---|---|---|---|---|---|")
    for arr, grid, solvers in arrays:
        for name in models:
            net = load_model(name)
            aspace = alpha_space(arr, alpha_grid(grid))
            for solver, kw in solvers:
                a, ta = timed(getattr(old, solver), net, arr, Space.ACCPAR, aspace, **kw)
                b, tb = timed(CURRENT[solver], net, arr, Space.ACCPAR, aspace, **kw)
                print(f"| {solver} | {name} | {arr.name} | 1/{grid} | {ta:.3f} | {tb:.3f} | {ta / tb:.1f}x | {show(b)} | "
                      f"{'yes' if same(a, b) else 'NO'} |")


def plans(net, arr, rng, n: int):
    """(label, plan): the proportional split of a random plan's types (groups alike share rows),
    then n random plans with an alpha of 1/16 .. 15/16 per level, group and layer (none alike)."""
    H = arr.levels
    types = tuple(tuple(rng.choice([t for t in Space.ACCPAR.types if x.offers(t, h)]) for x in net.layers) for h in range(H))
    yield "proportional", round_to_whole_units(net, with_group_alphas(Plan(types), proportional_alphas(arr)))
    for _ in range(n):
        types = tuple(tuple(rng.choice([t for t in Space.ACCPAR.types if x.offers(t, h)]) for x in net.layers) for h in range(H))
        alphas = tuple(tuple(tuple(Fraction(rng.randint(1, 15), 16) for _ in net.layers) for _ in range(2**h)) for h in range(H))
        yield "random 1/16", round_to_whole_units(net, Plan(types, alphas))


def per_plan_ms(f, net, arr, plan, wc: int, repeat: int) -> float:
    f(net, arr, plan, wc)  # warm: the network's and the coefficients' memos
    t0 = time.perf_counter()
    for _ in range(repeat):
        f(net, arr, plan, wc)
    return (time.perf_counter() - t0) / repeat * 1e3


def evaluator_rows(models, n: int, repeat: int) -> None:
    arr = load_array("tpu-mix-16")
    print()
    print("evaluate_split on tpu-mix-16 (accpar types at random, 2 weight copies): ms per plan, same process")
    print("| network | nodes | plans | Fraction pass ms | integer pass ms | ratio | equal |")
    print("|---|---|---|---|---|---|---|")
    rng = random.Random(20)
    for name in models:
        net = load_model(name)
        rows: dict = {}
        for label, plan in plans(net, arr, rng, n):
            a = per_plan_ms(evaluate_split_rational, net, arr, plan, 2, repeat)
            b = per_plan_ms(evaluate_split, net, arr, plan, 2, repeat)
            eq = evaluate_split(net, arr, plan, 2) == evaluate_split_rational(net, arr, plan, 2)
            r = rows.setdefault(label, [0.0, 0.0, 0, True])
            r[0], r[1], r[2], r[3] = r[0] + a, r[1] + b, r[2] + 1, r[3] and eq
        for label, (a, b, k, eq) in rows.items():
            print(f"| {name} | {len(net.layers)} | {label} x{k} | {a / k:.2f} | {b / k:.2f} | {a / b:.1f}x | "
                  f"{'yes' if eq else 'NO'} |")


# every module that holds its own reference to evaluate_split (``evaluate`` calls it by its global)
_HOLDERS = ("explorer.core.evaluate", "explorer.app.split", "explorer.app.check_uneven", "explorer.solvers.uneven",
            "explorer.solvers.uneven_levels", "explorer.solvers.brute")


def run_rows(models) -> None:
    """``explore split`` runs (search, optimal) with the evaluator's Fraction pass patched in
    everywhere (the baseline) and with its integer pass, same process."""
    import importlib
    from unittest import mock

    from explorer.app.split import Split, split_run

    arr = load_array("tpu-mix-16")
    split_run(load_model("lenet-c"), arr, Space.ACCPAR, Split.OPTIMAL)  # warm: imports, memos
    print()
    print("explore split on tpu-mix-16 (accpar): wall seconds with evaluate_split's Fraction pass and its integer pass")
    print("| network | split | Fraction pass s | integer pass s | ratio | step ms | same |")
    print("|---|---|---|---|---|---|---|")
    for name in models:
        net = load_model(name)
        for split in (Split.SEARCH, Split.OPTIMAL):
            with mock.patch.multiple(importlib.import_module(_HOLDERS[0]), evaluate_split=evaluate_split_rational):
                patches = [mock.patch.object(importlib.import_module(m), "evaluate_split", evaluate_split_rational)
                           for m in _HOLDERS[1:]]
                for p in patches:
                    p.start()
                try:
                    a, ta = timed(split_run, net, arr, Space.ACCPAR, split)
                finally:
                    for p in patches:
                        p.stop()
            b, tb = timed(split_run, net, arr, Space.ACCPAR, split)
            ok = (a.status, a.step_time_s, a.plan, a.bound_s) == (b.status, b.step_time_s, b.plan, b.bound_s)
            print(f"| {name} | {split.value} | {ta:.2f} | {tb:.2f} | {ta / tb:.1f}x | {float(b.step_time_s) * 1e3:.4f} | "
                  f"{'yes' if ok else 'NO'} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--baseline", default="8529e4c")
    ap.add_argument("--only", choices=("solvers", "evaluator", "runs"))
    args = ap.parse_args()
    mix = load_array("tpu-mix-16")
    if args.only in (None, "solvers"):
        old = baseline(args.baseline)
        from ortools.sat.python import cp_model  # imported before either run is timed

        assert cp_model
        both = [("exact_uneven", {}), ("cpsat_uneven", {})]
        solver_rows(MODELS, [(mix, 16, both)], old)  # refused, both
        proving = [(top_levels(mix, 1), 4, both), (top_levels(mix, 1), 8, both), (top_levels(mix, 2), 2, both)]
        solver_rows(("lenet-c",), proving[:1] if args.quick else proving, old)
    if args.only in (None, "runs"):
        run_rows(MODELS[:2] if args.quick else MODELS)
    if args.only in (None, "evaluator"):
        evaluator_rows(MODELS[:2] if args.quick else MODELS + ("resnet50", "vit-b16"), 2 if args.quick else 5,
                       3 if args.quick else 5)

if __name__ == "__main__":
    main()
