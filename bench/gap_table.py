"""What the cross-checker found (issue 3, item 7): the DP's gap to the proven joint optimum,
traffic objective, for every zoo network at 16 and 128 accelerators in both spaces.

The optimum is computed by the exact joint solver and proven by CP-SAT (objective == bound);
the row says "unproven" if CP-SAT did not prove it. Prints a Markdown table (pasted into
docs/solvers.md) and the wall time of the whole run.

    python bench/gap_table.py
"""

from __future__ import annotations

import time

from explorer.frontends import zoo
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.app.run import rescore
from explorer.frontends import load_array, load_model
from explorer.solvers import cpsat, dp, exact
from explorer.core.solution import SolveOptions, Status

ZOO = ["sfc", "sconv", "lenet-c", "cifar-c", "alexnet", "vgg-a", "vgg-b", "vgg-c", "vgg-d", "vgg-e"]


def main() -> None:
    t0 = time.perf_counter()
    assert set(ZOO) <= set(zoo.zoo_files())
    print("| network | accelerators | space | DP traffic (elements) | optimum (elements) | DP gap | cells differing | CP-SAT proof |")
    print("|---|---:|---|---:|---:|---:|---:|---|")
    for arr_name in ("hypar-16", "accpar-128"):
        arr = load_array(arr_name)
        for space in (Space.HYPAR, Space.ACCPAR):
            for m in ZOO:
                p = Problem(load_model(m), arr, space)
                d, e = dp.solve(p), exact.solve(p)
                c = cpsat.solve(p, SolveOptions(workers=2, time_limit_s=120))
                for s in (d, e, c):
                    rescore(p, s)
                proven = c.status is Status.OPTIMAL and c.objective == e.objective
                scale = p.weights.scale
                dp_v, opt_v = scale * d.objective, scale * e.objective
                gap = 100 * float((dp_v - opt_v) / opt_v)
                print(
                    f"| {m} | {arr.accelerators} | {space.value} | {float(dp_v):,.0f} | {float(opt_v):,.0f} | "
                    f"{gap:.3f}% | {len(d.plan.diff(e.plan)) if gap else 0} | "
                    f"{'proven, ' + format(c.wall_s, '.2f') + ' s' if proven else 'unproven (' + c.status.value + ')'} |",
                    flush=True,
                )
    print(f"\n(total {time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
