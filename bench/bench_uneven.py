"""Uneven splits on the TPU-v2/v3 mix (issue 13): the joint solver's proofs, step times and
speedups, and how far the exact Pareto DP scales.

Table 1, for every ImageNet network of the zoo the model covers, on ``tpu-mix-16`` (alpha grid
1/16, free alphas unlike: the top split only), spaces accpar and hypar: ``explore split --split
optimal`` (``solvers.uneven_joint``, 10 s limit): status, the joint solver's wall time (to proof,
or to its limit), the proven bound's gap, the step time, the level-by-level search's step time
(``--split search``, a heuristic), the AccPar-style DP's (each term's busier side summed, a
heuristic), and the optimum's speedup over data parallelism, the trick
and HyPar's plan (hypar space), all three with an equal split, and over the best equal-split
plan (every alpha 1/2, types chosen for it; the joint solver computes it). Ratios are of step
times computed in the same run.

Table 2: the exact Pareto DP (``solvers.uneven.exact_uneven``, proven optimum) on random chains
of growing size on a 2-kind array: its wall time and kept states, against the evaluator scoring
one plan (the baseline run in the same process), until it refuses.

    python bench/bench_uneven.py            # both tables
    python bench/bench_uneven.py --quick    # three networks, accpar only, small table 2
    python bench/bench_uneven.py --networks resnet18,resnet34,resnet50   # table 1 rows only
    python bench/bench_uneven.py --declared vgg-e,resnet18,mobilenet-v2   # table 3 only

Table 3 (``--declared``): the declared alpha space with each free class's proportional ratio
(the default) against ``--grid-only`` (the multiples of 1/16 alone), accpar space, same process:
the joint solver's wall time and status in each (and their ratio), the proven optima, the
search's step times, and the equal and proportional splits.
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction

from explorer.app.split import Split, split_run
from explorer.core.array import AcceleratorKind, ArraySpec
from explorer.core.errors import Refused
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.core.evaluate import evaluate_split
from explorer.core.partition import PartitionType, Space
from explorer.core.plan import Plan
from explorer.core.randnet import random_chain
from explorer.frontends import load_array, load_model
from explorer.solvers.uneven import exact_uneven
from explorer.solvers.uneven_joint import JointOptions, accpar_uneven, joint_uneven

IMAGENET = ("alexnet", "alexnet-paper", "vgg-a", "vgg-b", "vgg-c", "vgg-d", "vgg-e", "resnet18", "resnet34", "resnet50",
            "mobilenet-v2", "efficientnet-b0", "vit-b16")


def table_mix(names, spaces) -> None:
    arr = load_array("tpu-mix-16")
    print("tpu-mix-16 (8 TPU-v2 | 8 TPU-v3), alpha grid 1/16 + the proportional ratio (top split free), joint solver limit 10 s; step times in ms")
    print("| network | space | status | solver s | gap | step ms | AccPar DP ms | search ms | vs DP | vs trick | vs HyPar | vs best equal | top alphas |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for space in spaces:
        for name in names:
            net = load_model(name)
            r = split_run(net, arr, space, Split.OPTIMAL)
            s = split_run(net, arr, space, Split.SEARCH)
            acc = accpar_uneven(net, arr, space, r.alpha_space)
            a0 = ", ".join(str(a) for a in sorted(set(r.plan.alphas[0][0])))
            print(f"| {name} | {space} | {r.status} | {r.solver_wall_s:.2f} | {float(r.gap) * 100:.3f}% | "
                  f"{float(r.step_time_s) * 1e3:.4g} | {float(acc.step_time_s) * 1e3:.4g} | {float(s.step_time_s) * 1e3:.4g} | {float(r.speedup('all-I')):.3f} | "
                  f"{float(r.speedup('trick')):.3f} | {float(r.speedup('hypar')):.3f} | "
                  f"{float(r.equal_best_s / r.step_time_s):.3f} | {a0} |", flush=True)
            assert r.step_time_s <= r.equal_best_s  # never slower than the best equal split


def table_exact(max_layers: int) -> None:
    print("\nexact Pareto DP (proof) on random chains, 2 kinds (1 and 3 TFLOPS), space hypar")
    print(f"{'levels':>6} {'layers':>6} {'grid':>5} {'exact ms':>9} {'states':>7} {'eval ms':>8} {'ratio':>7}")
    for H, grid in ((1, 4), (1, 8), (2, 2), (2, 4)):
        k = [AcceleratorKind("a", Fraction(1), Fraction(16)), AcceleratorKind("b", Fraction(3), Fraction(16))]
        leaves = tuple(k[i * 2 >> H] for i in range(2**H))
        arr = ArraySpec("two-kinds", H, 2, (Fraction(10),) * H, Fraction(1), Fraction(16), leaves=leaves)
        for L in range(2, max_layers + 1, 2):
            net = random_chain(L, L, max_channels=64, max_size=8, consistent=False)
            t0 = time.perf_counter()
            plan = Plan.even(Plan(((PartitionType.I,) * L,) * H))
            evaluate_split(net, arr, plan)
            ev_ms = (time.perf_counter() - t0) * 1e3
            t0 = time.perf_counter()
            try:
                e = exact_uneven(net, arr, Space.HYPAR, alpha_grid(grid), max_bytes=64 * 2**20)  # about 20,000 live states
            except Refused as err:
                print(f"{H:>6} {L:>6} {grid:>5}  refused: {err}")
                break
            ms = (time.perf_counter() - t0) * 1e3
            print(f"{H:>6} {L:>6} {grid:>5} {ms:>9.1f} {e.explored:>7} {ev_ms:>8.2f} {ms / ev_ms:>7.0f}")
            if ms > 5_000:
                break


def table_declared(names, limit_s: float = 10.0) -> None:
    """Table 3: the grid and the proportional ratio vs the grid alone (the joint solver from the
    equal split alone, as ``check --uneven`` runs it; ``--split optimal`` adds the search plan)."""
    arr = load_array("tpu-mix-16")
    print(f"tpu-mix-16, accpar, alpha grid 1/16: the declared space with 15/56 (new) vs --grid-only (old); "
          f"joint solver limit {limit_s:g} s; step times in ms")
    print("| network | old joint s | old status | new joint s | new status | new/old time | old optimum | new optimum "
          "| new/old step | old search | new search | equal | proportional |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ms = lambda x: f"{float(x) * 1e3:.6g}"  # noqa: E731
    for name in names:
        net = load_model(name)
        row = {}
        for key, prop in (("old", False), ("new", True)):
            aspace = alpha_space(arr, alpha_grid(16), proportional=prop)
            t0 = time.perf_counter()
            j = joint_uneven(net, arr, Space.ACCPAR, aspace, JointOptions(time_limit_s=limit_s))
            row[key] = (time.perf_counter() - t0, j, split_run(net, arr, Space.ACCPAR, Split.SEARCH, grid_only=not prop))
        eq = split_run(net, arr, Space.ACCPAR, Split.EQUAL)
        pr = split_run(net, arr, Space.ACCPAR, Split.PROPORTIONAL)
        (to, jo, so), (tn, jn, sn) = row["old"], row["new"]
        print(f"| {name} | {to:.2f} | {jo.status} | {tn:.2f} | {jn.status} | {tn / to:.2f} | {ms(jo.step_time_s)} | "
              f"{ms(jn.step_time_s)} | {float(jn.step_time_s / jo.step_time_s):.4f} | {ms(so.step_time_s)} | "
              f"{ms(sn.step_time_s)} | {ms(eq.step_time_s)} | {ms(pr.step_time_s)} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--networks", help="comma-separated zoo names for table 1 only (no table 2)")
    ap.add_argument("--declared", help="comma-separated zoo names for table 3 only (the declared space vs --grid-only)")
    args = ap.parse_args()
    if args.declared:
        table_declared(args.declared.split(","))
        return
    if args.networks:
        table_mix(args.networks.split(","), (Space.ACCPAR, Space.HYPAR))
        return
    table_mix(IMAGENET[:3] if args.quick else IMAGENET, (Space.ACCPAR,) if args.quick else (Space.ACCPAR, Space.HYPAR))
    table_exact(4 if args.quick else 6)


if __name__ == "__main__":
    main()
