"""``--solver dp`` on uneven splits (the level DP, ``solvers.uneven_levels``) against the joint
solver and the split rules, all run in this process.

Table 1, ``tpu-mix-16`` (8 TPU v2 | 8 TPU v3, space accpar, alpha grid 1/16 + proportional):
per network, ``--split optimal --solver dp`` (the level DP: types and alphas level by level) and
``--split proportional --solver dp`` (the level DP's types at the proportional alphas): their
step times over the joint solver's (``--split optimal``, 10 s: proven optimum or its bound) and
over ``--split proportional`` (the even DP's types at the same alphas), and the wall times
(solver only) with the joint solver's over dp's.

Table 2, arrays of one kind (every alpha 1/2): the level DP is the even DP there (the same plan);
its wall time over the even DP's (``solvers.dp``), both on the same problem.

    python bench/bench_split_dp.py            # lenet-c, alexnet, vgg-a, resnet18; vgg-a, resnet50
    python bench/bench_split_dp.py --quick    # lenet-c, alexnet; vgg-a
"""

from __future__ import annotations

import argparse
import time

from explorer.app.split import proportional_space
from explorer.core.evaluate import evaluate_split
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions
from explorer.core.uneven import alpha_grid, alpha_space, proportional_alphas, round_to_whole_units, with_group_alphas
from explorer.frontends import load_array, load_model
from explorer.solvers import get_solver
from explorer.solvers.uneven_joint import JointOptions, joint_uneven
from explorer.solvers.uneven_levels import levels_uneven


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def mix_table(models: list[str]) -> None:
    arr = load_array("tpu-mix-16")
    aspace = alpha_space(arr, alpha_grid(16))
    print("tpu-mix-16, accpar, alpha grid 1/16 + proportional")
    print(f"{'network':<10} {'dp ms':>8} {'/ joint':>8} {'joint':>8} {'prop+dp ms':>10} {'/ prop':>7} "
          f"{'dp s':>6} {'prop+dp s':>9} {'joint s':>8} {'joint/dp':>8}")
    for name in models:
        net = load_model(name)
        dp, dp_s = _timed(lambda: levels_uneven(net, arr, Space.ACCPAR, aspace, name="dp"))
        pdp, pdp_s = _timed(lambda: levels_uneven(net, arr, Space.ACCPAR, proportional_space(arr, aspace), name="dp"))
        types = get_solver("dp")(Problem(net, arr, Space.ACCPAR, Objective.TIME), SolveOptions()).plan
        prop = round_to_whole_units(net, with_group_alphas(types, proportional_alphas(arr)))
        prop_t = evaluate_split(net, arr, prop).step_time_s
        joint, joint_s = _timed(lambda: joint_uneven(net, arr, Space.ACCPAR, aspace, JointOptions(time_limit_s=10.0),
                                                     starts=(Plan.even(types),)))
        ref = joint.bound_s if joint.status.value != "optimal" else joint.step_time_s
        label = "opt" if joint.status.value == "optimal" else "bound"
        print(f"{name:<10} {float(dp.step_time_s) * 1e3:>8.4g} {float(dp.step_time_s / ref):>8.4f} {label:>8} "
              f"{float(pdp.step_time_s) * 1e3:>10.4g} {float(pdp.step_time_s / prop_t):>7.4f} {dp_s:>6.2f} "
              f"{pdp_s:>9.2f} {joint_s:>8.2f} {joint_s / dp_s:>8.1f}")


def even_table(models: list[str]) -> None:
    arr = load_array("hypar-16")
    aspace = alpha_space(arr, alpha_grid(16))
    print("\nhypar-16 (one kind), accpar: the level DP over the even DP (same plan)")
    print(f"{'network':<10} {'even dp s':>9} {'level dp s':>10} {'ratio':>6} {'same plan':>9}")
    for name in models:
        net = load_model(name)
        problem = Problem(net, arr, Space.ACCPAR, Objective.TIME)
        even, even_s = _timed(lambda: get_solver("dp")(problem, SolveOptions()))
        lv, lv_s = _timed(lambda: levels_uneven(net, arr, Space.ACCPAR, aspace, name="dp"))
        print(f"{name:<10} {even_s:>9.3f} {lv_s:>10.3f} {lv_s / even_s:>6.2f} {str(lv.plan == Plan.even(even.plan)):>9}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    mix_table(["lenet-c", "alexnet"] if args.quick else ["lenet-c", "alexnet", "vgg-a", "resnet18"])
    even_table(["vgg-a"] if args.quick else ["vgg-a", "resnet50"])


if __name__ == "__main__":
    main()
