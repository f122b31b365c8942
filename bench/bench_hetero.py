"""Uneven splits on the TPU-v2/v3 mix (issue 13): step times and speedups, and how far the exact
Pareto DP scales.

Table 1, for every ImageNet network of the zoo on ``tpu-mix-16`` (space accpar, alpha grid 1/16):
the step time (slowest accelerator) of the best equal-split plan the hierarchical DP finds
(objective time), of the proportional split and of the split search (``explore split``), and
the search plan's speedup over data parallelism, the trick and HyPar's plan (hypar space), all
three with an equal split; wall time of the search. No plan here is proven optimal.

Table 2: the exact Pareto DP (``solvers.hetero.exact_hetero``, proven optimum) on random chains
of growing size on a 2-kind array: its wall time and kept states, against the evaluator scoring
one plan (the baseline run in the same process), until it refuses.

    python bench/bench_hetero.py            # both tables
    python bench/bench_hetero.py --quick    # three networks, small table 2
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction

from explorer.app.split import Split, split_run
from explorer.core.array import AcceleratorKind, ArraySpec
from explorer.core.hetero import HeteroPlan, alpha_grid, evaluate_hetero
from explorer.core.partition import PartitionType, Space
from explorer.core.plan import Plan
from explorer.core.randnet import random_chain
from explorer.frontends import load_array, load_model
from explorer.solvers.hetero import HeteroRefused, exact_hetero

IMAGENET = ("alexnet", "vgg-a", "vgg-b", "vgg-c", "vgg-d", "vgg-e", "resnet18", "resnet34", "resnet50")


def table_mix(names) -> None:
    arr = load_array("tpu-mix-16")
    print("tpu-mix-16 (8 TPU-v2 + 8 TPU-v3), space accpar, alpha grid 1/16; step times in ms")
    print(f"{'network':<9} {'equal':>9} {'prop.':>9} {'search':>9} {'alpha0':>7} {'vs DP':>7} {'vs trick':>8} "
          f"{'vs HyPar':>8} {'vs equal':>8} {'idle ms':>8} {'wall s':>7}")
    for name in names:
        net = load_model(name)
        eq = split_run(net, arr, Space.ACCPAR, Split.EQUAL)
        prop = split_run(net, arr, Space.ACCPAR, Split.PROPORTIONAL)
        t0 = time.perf_counter()
        s = split_run(net, arr, Space.ACCPAR, Split.SEARCH)
        wall = time.perf_counter() - t0
        a0 = sorted(set(s.plan.alphas[0]))
        print(f"{name:<9} {float(eq.step_time_s) * 1e3:>9.4g} {float(prop.step_time_s) * 1e3:>9.4g} "
              f"{float(s.step_time_s) * 1e3:>9.4g} {'/'.join(map(str, a0)):>7} {float(s.speedup('all-I')):>7.3f} "
              f"{float(s.speedup('trick')):>8.3f} {float(s.speedup('hypar')):>8.3f} "
              f"{float(eq.step_time_s / s.step_time_s):>8.3f} {float(s.idle_s) * 1e3:>8.3g} {wall:>7.2f}")


def table_exact(max_layers: int) -> None:
    print("\nexact Pareto DP (proof) on random chains, 2 kinds (1 and 3 TFLOPS), space hypar")
    print(f"{'levels':>6} {'layers':>6} {'grid':>5} {'exact ms':>9} {'states':>7} {'eval ms':>8} {'ratio':>7}")
    for H, grid in ((1, 4), (1, 8), (2, 2), (2, 4)):
        k = [AcceleratorKind("a", Fraction(1), Fraction(16)), AcceleratorKind("b", Fraction(3), Fraction(16))]
        leaves = tuple(k[i * 2 >> H] for i in range(2**H))
        arr = ArraySpec("two-kinds", H, 2, (Fraction(10),) * H, Fraction(1), Fraction(16), leaves=leaves)
        for L in range(2, max_layers + 1, 2):
            net = random_chain(L, L, max_channels=64, max_size=8)
            t0 = time.perf_counter()
            plan = HeteroPlan.equal(Plan(((PartitionType.I,) * L,) * H))
            evaluate_hetero(net, arr, plan)
            ev_ms = (time.perf_counter() - t0) * 1e3
            t0 = time.perf_counter()
            try:
                e = exact_hetero(net, arr, Space.HYPAR, alpha_grid(grid), max_states=20_000)
            except HeteroRefused as err:
                print(f"{H:>6} {L:>6} {grid:>5}  refused: {err}")
                break
            ms = (time.perf_counter() - t0) * 1e3
            print(f"{H:>6} {L:>6} {grid:>5} {ms:>9.1f} {e.explored:>7} {ev_ms:>8.2f} {ms / ev_ms:>7.0f}")
            if ms > 5_000:
                break


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    table_mix(IMAGENET[:3] if args.quick else IMAGENET)
    table_exact(4 if args.quick else 6)


if __name__ == "__main__":
    main()
