"""The block moves of ``--split search`` and ``--split levels`` (``solvers.uneven_blocks``; trial 12,
finding 7): each run with them and without them (``refine_blocks`` replaced by a no-op: the former
search and levels), in the same process, on tpu-mix-16 (8 v2 + 8 v3) and 12 v2 + 4 v3, space
accpar, alpha grid 1/16. Columns: step times (ms) without and with, their ratio (below 1: the
block moves found a faster plan), and the median wall seconds of each over ``--repeats`` runs
with their ratio (the cost of the moves).

    python bench/bench_split_blocks.py                # lenet-c, alexnet, vgg-a, resnet18, resnet50
    python bench/bench_split_blocks.py --quick        # lenet-c, alexnet, resnet18
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace
from unittest import mock

import explorer.solvers.uneven as search_mod
import explorer.solvers.uneven_levels as levels_mod
from explorer.app.split import Split, split_run
from explorer.core.partition import Space
from explorer.frontends import load_array, load_model


def _no_moves(network, array, aspace, plan, rank, best, *args, **kwargs):
    return plan, best, 0


def _timed(net, arr, split: Split, repeats: int, moves: bool):
    walls, r = [], None
    for _ in range(repeats):
        with mock.patch.object(search_mod, "refine_blocks", search_mod.refine_blocks if moves else _no_moves), \
                mock.patch.object(levels_mod, "refine_blocks", levels_mod.refine_blocks if moves else _no_moves):
            t0 = time.perf_counter()
            r = split_run(net, arr, Space.ACCPAR, split)
            walls.append(time.perf_counter() - t0)
    return r.step_time_s, statistics.median(walls)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    names = ("lenet-c", "alexnet", "resnet18") if args.quick else ("lenet-c", "alexnet", "vgg-a", "resnet18", "resnet50")
    base = load_array("tpu-mix-16")
    mixes = (("8 v2 + 8 v3", base),
             ("12 v2 + 4 v3", replace(base, name="m124", leaves=tuple(sorted(base.leaves, key=lambda k: k.peak_TFLOPS)[:1] * 12
                                                                     + sorted(base.leaves, key=lambda k: -k.peak_TFLOPS)[:1] * 4))))
    print("| mix | network | split | before ms | after ms | after / before | before s | after s | wall ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, arr in mixes:
        for name in names:
            net = load_model(name)
            for split in (Split.SEARCH, Split.LEVELS):
                t0, w0 = _timed(net, arr, split, args.repeats, moves=False)
                t1, w1 = _timed(net, arr, split, args.repeats, moves=True)
                print(f"| {label} | {name} | {split.value} | {float(t0) * 1e3:.5g} | {float(t1) * 1e3:.5g} | "
                      f"{float(t1 / t0):.4f} | {w0:.2f} | {w1:.2f} | {w1 / w0:.2f} |", flush=True)


if __name__ == "__main__":
    main()
