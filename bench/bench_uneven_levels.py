"""AccPar's hierarchical DP for uneven splits (``solvers.uneven_levels``, ``explore split --split
levels``) against the other split rules, and its gap to the proven optimum on small cases.

Table 1, every ImageNet network of the zoo on ``tpu-mix-16`` (space accpar, alpha grid 1/16): the
levels DP's step time (the evaluator's, slowest accelerator) and wall time, and its ratio to the
step time of ``explore split --split equal | proportional | search`` (types of HyPar's time DP,
run in the same process; below 1: the levels DP is faster), and, with alpha grid 1/64, its ratio
to the proportional split (which may leave the grid: 15/56 on this mix) and its wall time. Then
the joint solver (``solvers.uneven_joint``, 10 s: a proven optimum on chains, a bound on ResNets)
and its AccPar-style DP over whole columns (``accpar_uneven``): levels / their step times, and
levels / the joint solver's proven bound (an upper bound on the levels DP's gap).

Table 2, the same on other mixes of v2 and v3 chips (kinds in tree order, v2 first): n v2 + (16 - n) v3.

Table 3, seeded random chains (2-4 layers, H = 1 and 2, two random kinds, alpha grid 1/4, space
hypar): step time of the levels DP over the proven optimum (``exact_uneven``, the Pareto DP,
equal to brute force in ``tests/test_uneven_model.py``): how often it is optimal, and the gaps.

    python bench/bench_uneven_levels.py            # all three tables
    python bench/bench_uneven_levels.py --quick    # three networks, two mixes, 40 instances
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from fractions import Fraction

from explorer.app.split import Split, split_run
from explorer.core.array import AcceleratorKind, ArraySpec
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.core.partition import Space
from explorer.core.randnet import random_chain
from explorer.frontends import load_array, load_model
from explorer.solvers.uneven import exact_uneven
from explorer.solvers.uneven_joint import JointOptions, accpar_uneven, joint_uneven
from explorer.solvers.uneven_levels import levels_uneven

IMAGENET = ("alexnet", "vgg-a", "vgg-b", "vgg-c", "vgg-d", "vgg-e", "resnet18", "resnet34", "resnet50")
V2 = AcceleratorKind("v2", Fraction(45), Fraction(16))
V3 = AcceleratorKind("v3", Fraction(123), Fraction(32))


def tpu_mix(n_v2: int) -> ArraySpec:
    return ArraySpec(f"mix-{n_v2}-{16 - n_v2}", 4, 2, (Fraction(70),) * 4, Fraction(45), Fraction(16),
                     leaves=(V2,) * n_v2 + (V3,) * (16 - n_v2))


def row(name: str, net, arr) -> None:
    aspace = alpha_space(arr, alpha_grid(16))
    t0 = time.perf_counter()
    lv = levels_uneven(net, arr, Space.ACCPAR, aspace)
    wall = time.perf_counter() - t0
    others = {s: split_run(net, arr, Space.ACCPAR, s).step_time_s for s in (Split.EQUAL, Split.PROPORTIONAL, Split.SEARCH)}
    assert aspace.contains(lv.plan)
    t0 = time.perf_counter()
    fine = levels_uneven(net, arr, Space.ACCPAR, alpha_grid(64)).step_time_s
    wall64 = time.perf_counter() - t0
    t = lv.step_time_s
    print(f"{name:<9} {float(t) * 1e3:>9.4g} {wall:>7.3f} {float(t / others[Split.EQUAL]):>8.3f} "
          f"{float(t / others[Split.PROPORTIONAL]):>8.3f} {float(t / others[Split.SEARCH]):>8.3f} "
          f"{float(fine / others[Split.PROPORTIONAL]):>11.3f} {wall64:>9.3f}")


HEADER = (f"{'network':<9} {'levels ms':>9} {'wall s':>7} {'/ equal':>8} {'/ prop.':>8} {'/ search':>8} "
          f"{'1/64 / prop':>11} {'1/64 wall':>9}")


def table_zoo(names) -> None:
    arr = load_array("tpu-mix-16")
    print("levels DP on tpu-mix-16 (8 TPU-v2 + 8 TPU-v3), space accpar, alpha grid 1/16 (ratios: levels / other)")
    print(HEADER)
    for name in names:
        row(name, load_model(name), arr)
    print("\nthe same against the joint solver (solvers.uneven_joint, 10 s) and its AccPar-style DP over columns")
    print(f"{'network':<9} {'levels ms':>9} {'joint ms':>9} {'status':>9} {'/ joint':>8} {'/ bound':>8} {'accpar ms':>9} {'/ accpar':>8}")
    aspace = alpha_space(arr, alpha_grid(16))
    for name in names:
        net = load_model(name)
        lv = levels_uneven(net, arr, Space.ACCPAR, aspace).step_time_s
        j = joint_uneven(net, arr, Space.ACCPAR, aspace, JointOptions(time_limit_s=10.0))
        ac = accpar_uneven(net, arr, Space.ACCPAR, aspace).step_time_s
        print(f"{name:<9} {float(lv) * 1e3:>9.4g} {float(j.step_time_s) * 1e3:>9.4g} {j.status.value:>9} "
              f"{float(lv / j.step_time_s):>8.3f} {float(lv / j.bound_s):>8.3f} {float(ac) * 1e3:>9.4g} {float(lv / ac):>8.3f}")


def table_mixes(mixes, names) -> None:
    for n in mixes:
        arr = tpu_mix(n)
        print(f"\n{n} v2 + {16 - n} v3 (tree order), space accpar, alpha grid 1/16")
        print(HEADER)
        for name in names:
            row(name, load_model(name), arr)


def table_gap(count: int) -> None:
    print(f"\nlevels DP / proven optimum on {count} random chains (alpha grid 1/4, space hypar)")
    print(f"{'levels':>6} {'cases':>6} {'optimal':>8} {'mean':>7} {'median':>7} {'p90':>7} {'max':>7} {'levels ms':>9} {'exact ms':>9}")
    for H in (1, 2):
        gaps, t_lv, t_ex = [], 0.0, 0.0
        for seed in range(count):
            rng = random.Random(seed)
            peaks = sorted(rng.choice([1, 2, 3, 5]) for _ in range(2**H))
            kinds = {p: AcceleratorKind(f"k{p}", Fraction(p), Fraction(16)) for p in set(peaks)}
            arr = ArraySpec("two-kinds", H, 2, (Fraction(rng.choice([1, 10, 100, 2000])),) * H, Fraction(min(peaks)),
                            Fraction(16), leaves=tuple(kinds[p] for p in peaks))
            net = random_chain(seed, rng.randint(2, 4) if H == 1 else 2, max_channels=32, max_size=4, consistent=False)
            aspace = alpha_space(arr, alpha_grid(4))
            t0 = time.perf_counter()
            lv = levels_uneven(net, arr, Space.HYPAR, aspace)
            t1 = time.perf_counter()
            ex = exact_uneven(net, arr, Space.HYPAR, aspace)
            t2 = time.perf_counter()
            t_lv, t_ex = t_lv + t1 - t0, t_ex + t2 - t1
            assert ex.step_time_s <= lv.step_time_s
            gaps.append(float(lv.step_time_s / ex.step_time_s))
        gaps.sort()
        optimal = sum(g == 1 for g in gaps)
        print(f"{H:>6} {count:>6} {optimal / count:>7.0%} {statistics.mean(gaps):>7.4f} {statistics.median(gaps):>7.4f} "
              f"{gaps[int(0.9 * (count - 1))]:>7.4f} {gaps[-1]:>7.4f} {t_lv / count * 1e3:>9.2f} {t_ex / count * 1e3:>9.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    table_zoo(IMAGENET[:3] if args.quick else IMAGENET)
    table_mixes((4, 2) if args.quick else (4, 2, 12, 14), ("alexnet", "vgg-a", "resnet18"))
    table_gap(40 if args.quick else 200)


if __name__ == "__main__":
    main()
