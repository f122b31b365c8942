"""Cross-check of the uneven-split solvers on random tiny instances (issue 13): brute force ==
exact Pareto DP == CP-SAT == joint solver, each plan re-scored by ``evaluate_split``. The
instances are those of ``tests/test_uneven_joint.py`` (random mixes of any shape, both spaces,
free alphas unlike|all, chains and graphs); the test runs 300 with CP-SAT on every fourth, this
runs N with CP-SAT on every chain.

    python bench/crosscheck_uneven.py [N]     # N instances (default 1000), seed 2013 as the test
"""

from __future__ import annotations

import random
import sys
import time

from explorer.core.errors import Refused
from explorer.core.evaluate import evaluate_split
from explorer.core.solution import Status
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.uneven import exact_uneven
from explorer.solvers.uneven_cpsat import cpsat_uneven
from explorer.solvers.uneven_joint import joint_uneven

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])
from tests.test_uneven_joint import _instance  # noqa: E402


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    rng = random.Random(2013)
    walls = {"brute": 0.0, "exact": 0.0, "cpsat": 0.0, "joint": 0.0}
    counts = dict.fromkeys(walls, 0)
    for _ in range(n):
        net, arr, space, aspace = _instance(rng)
        sols = [brute_split(net, arr, space, aspace)]
        if net.is_chain:
            sols += [exact_uneven(net, arr, space, aspace), cpsat_uneven(net, arr, space, aspace)]
        try:
            j = joint_uneven(net, arr, space, aspace)
            if j.status is Status.OPTIMAL:
                sols.append(j)
            else:
                assert j.bound_s <= sols[0].step_time_s <= j.step_time_s
                walls["joint"] += j.wall_s
                counts["joint"] += 1
        except Refused:
            pass
        values = {s.step_time_s for s in sols} | {evaluate_split(net, arr, s.plan).step_time_s for s in sols}
        assert len(values) == 1 and all(s.status is Status.OPTIMAL for s in sols), (net.name, [s.step_time_s for s in sols])
        for s in sols:
            walls[s.solver] += s.wall_s
            counts[s.solver] += 1
    t = ", ".join(f"{k} {counts[k]} runs {v:.1f} s" for k, v in walls.items())
    print(f"{n} instances: every proven optimum equal, every plan re-scored equal ({t})")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"wall {time.perf_counter() - t0:.1f} s")
