"""Three-way cross-check of the uneven-split solvers on random tiny chains (issue 13):
brute force == exact Pareto DP == CP-SAT, each plan re-scored by ``evaluate_hetero``.
The test suite runs CP-SAT on every third instance; this runs it on all of them.

    python bench/crosscheck_hetero.py [N]     # N instances (default 300), seed 13 as the test
"""

from __future__ import annotations

import random
import sys
import time

from explorer.core.hetero import evaluate_hetero
from explorer.core.solution import Status
from explorer.solvers.hetero import brute_hetero, cpsat_hetero, exact_hetero

sys.path.insert(0, __file__.rsplit("/bench/", 1)[0])
from tests.test_hetero_model import _random_instance  # noqa: E402


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    rng = random.Random(13)
    walls = {"brute": 0.0, "exact": 0.0, "cpsat": 0.0}
    for _ in range(n):
        net, arr, space, grid = _random_instance(rng)
        sols = [brute_hetero(net, arr, space, grid), exact_hetero(net, arr, space, grid), cpsat_hetero(net, arr, space, grid)]
        values = {s.step_time_s for s in sols} | {evaluate_hetero(net, arr, s.plan).step_time_s for s in sols}
        assert len(values) == 1 and sols[2].status is Status.OPTIMAL, (net.name, [s.step_time_s for s in sols])
        for s in sols:
            walls[s.solver] += s.wall_s
    t = ", ".join(f"{k} {v:.1f} s" for k, v in walls.items())
    print(f"{n} instances: brute == exact == cpsat == evaluator on all ({t})")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"wall {time.perf_counter() - t0:.1f} s")
