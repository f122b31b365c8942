"""``explore split`` wall times: the current code against the one before the speed-up, run in the
same process (the baseline), on the inputs a new-user trial found slow.

The baseline is the earlier algorithm, rebuilt here: the split evaluator walking every group's
ancestors for every layer (``group_amounts`` and ``leaf_flops``, the per-group definitions) and
the search scanning every grid value of every free class in every round. The current code scores
groups alike once (``core.uneven.level_shares``), scans a grid of more than 64 values coarse to
fine, and does not rescan a class whose answer cannot have changed (``solvers.uneven``). Columns:
wall seconds of each, their ratio, and the step times found (the coarse-to-fine search is a
heuristic: on a fine grid it may stop at another value than the full scan).

    python bench/bench_split.py            # every row (the baseline takes several minutes)
    python bench/bench_split.py --quick    # the first two rows
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction
from unittest import mock

import explorer.app.split as split_mod
from explorer.app.split import Split, split_run
from explorer.core.array import AcceleratorKind, ArraySpec
from explorer.core.errors import SpecError
from explorer.core.uneven import (
    check_array,
    check_network,
    check_plan,
    group_amounts,
    leaf_flops,
)
from explorer.core.evaluate import Evaluation, split_evaluation
from explorer.core.network import Layer, LayerKind, Network
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.solution import Status, split_solution
from explorer.frontends import load_array, load_model


def old_evaluate(network: Network, array: ArraySpec, plan: Plan, weight_copies: int = 0) -> Evaluation:
    """The evaluator before the speed-up (per group, per layer, each ancestor walked); no memory."""
    check_array(array)
    check_network(network)
    check_plan(network, array, plan)
    H = array.levels
    amounts = tuple(tuple(group_amounts(network, plan, h, g) for g in range(2**h)) for h in range(H))
    peaks = array.leaf_peaks_TFLOPS()
    compute = tuple(leaf_flops(network, plan, i) / (peaks[i] * 10**12) for i in range(2**H))
    return split_evaluation(network, array, amounts, compute, (Fraction(0),) * 2**H)


def old_search(network, array, start, aspace, rounds: int = 3, progress=None, **_):
    """The search before the speed-up: every grid value of every free class, every round."""
    L = len(network.layers)
    current = start
    best = old_evaluate(network, array, current).step_time_s
    for _ in range(rounds):
        changed = False
        for h, c in aspace.free_classes():
            for a in aspace.grid:
                row = tuple((a,) * L if aspace.group_class[h][g] == c else r for g, r in enumerate(current.alphas[h]))
                cand = Plan(current.types, current.alphas[:h] + (row,) + current.alphas[h + 1 :])
                t = old_evaluate(network, array, cand).step_time_s
                if t < best:
                    best, current, changed = t, cand, True
        if not changed:
            break
    return split_solution("search", Status.FEASIBLE, current, best, None, 0.0, 0)


def two_fc() -> Network:
    return Network.chain("two-fc", 4096, [Layer("fc1", LayerKind.FC, 800, 500), Layer("fc2", LayerKind.FC, 500, 10)])


def mix(levels: int, names: list[str], peaks: dict[str, int]) -> ArraySpec:
    kinds = {n: AcceleratorKind(n, Fraction(p), Fraction(16)) for n, p in peaks.items()}
    leaves = tuple(kinds[n] for n in names)
    return ArraySpec(f"{len(kinds)} kinds, H={levels}", levels, 2, (Fraction(70),) * levels,
                     min(k.peak_TFLOPS for k in leaves), Fraction(16), leaves=leaves)


def cases():
    tpu = load_array("tpu-mix-16")
    yield "alexnet, tpu-mix-16, search, grid 1/1024", load_model("alexnet"), tpu, Split.SEARCH, 1024
    yield "alexnet, tpu-mix-16, search, grid 1/16", load_model("alexnet"), tpu, Split.SEARCH, 16
    yield "vgg-a, tpu-mix-16, search, grid 1/1024", load_model("vgg-a"), tpu, Split.SEARCH, 1024
    yield "resnet50, tpu-mix-16, search, grid 1/128", load_model("resnet50"), tpu, Split.SEARCH, 128
    m12 = mix(12, ["a"] * 2048 + ["b"] * 2048, {"a": 45, "b": 123})
    yield "2 fc, 2048 a + 2048 b (H=12), search, grid 1/16", two_fc(), m12, Split.SEARCH, 16
    d14 = mix(14, [f"k{i}" for i in range(2**14)], {f"k{i}": 10 + i for i in range(2**14)})
    yield "2 fc, 2^14 distinct kinds, equal", two_fc(), d14, Split.EQUAL, 16
    yield "2 fc, 2^14 distinct kinds, search", two_fc(), d14, Split.SEARCH, 16


def timed(fn):
    t0 = time.perf_counter()
    try:
        return fn(), time.perf_counter() - t0
    except SpecError as err:
        return err, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    print("| input | before s | now s | ratio | before step ms | now step ms |")
    print("|---|---|---|---|---|---|")
    for i, (label, net, arr, split, grid) in enumerate(cases()):
        if args.quick and i >= 2:
            break
        now, t_now = timed(lambda: split_run(net, arr, Space.ACCPAR, split, grid))
        if isinstance(now, SpecError):  # refused now: the baseline would run for hours
            print(f"| {label} | (hours) | {t_now:.2f} | - | - | refused: {str(now).split(': ', 1)[1][:60]}... |", flush=True)
            continue
        with mock.patch.object(split_mod, "evaluate_split", old_evaluate), \
                mock.patch.object(split_mod, "search_level_alphas", old_search):
            before, t_before = timed(lambda: split_run(net, arr, Space.ACCPAR, split, grid))
        print(f"| {label} | {t_before:.2f} | {t_now:.2f} | {t_before / t_now:.1f}x | "
              f"{float(before.step_time_s) * 1e3:.6g} | {float(now.step_time_s) * 1e3:.6g} |", flush=True)


if __name__ == "__main__":
    main()
