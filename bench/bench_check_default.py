"""``explore check`` without ``--time-limit``: the default limit a solve keeps (``core.kinds.solve_limit``,
``app.check.check_limit``) against no limit at all (before CLI polish item 1), on the same
problems, in-process, interleaved rounds. Printed per case: the medians of the check's wall time,
their ratio, and whether the verdicts are the same (``agree``, the proven optimum, each level's
method, each joint solver's status).

    python bench/bench_check_default.py --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import time

from explorer.api import build_problem
from explorer.app import check as chk
from explorer.app.check import CheckOptions, check

# (ResNet-50 on array-1024, accpar, is left out: without a limit its check ran past 300 s, CP-SAT unproven;
# with the default, `explore check --model resnet50 --array array-1024 --space accpar` ends at 60.2 s)
CASES = [("vgg-a", "hypar-16", "hypar"), ("resnet50", "hypar-16", "hypar"), ("alexnet", "hypar-16", "accpar")]


FIELDS = ("agree", "optimum", "level methods", "solvers")


def verdict(report) -> tuple:
    opt = None if report.optimum is None else report.optimum.objective
    return (report.agree, opt, tuple(lv.method for lv in report.levels),
            tuple((n, r.status.value) for n, r in report.solvers))


def one(problem, default: bool) -> tuple[float, tuple]:
    real = chk.check_limit
    if not default:  # before: the check's limit is --time-limit alone (none here)
        chk.check_limit = lambda p, o: o.solve.time_limit_s
    try:
        t0 = time.perf_counter()
        report = check(problem, CheckOptions())
        return time.perf_counter() - t0, verdict(report)
    finally:
        chk.check_limit = real


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with open("/proc/loadavg") as f:
        print(f"load: {f.read().split()[:3]}")
    print(f"{'case':34} {'no limit s':>10} {'default s':>10} {'ratio':>6}  same verdict (else what differs)")
    for model, array, space in CASES:
        problem = build_problem(model, array, space=space)
        walls = {False: [], True: []}
        seen = {}
        for _ in range(args.repeat):
            for default in (False, True):
                wall, v = one(problem, default)
                walls[default].append(wall)
                seen[default] = v
        before, after = statistics.median(walls[False]), statistics.median(walls[True])
        differ = [f"{name}: {a} -> {b}" for name, a, b in zip(FIELDS, seen[False], seen[True]) if a != b]
        print(f"{model + ' ' + array + ' ' + space:34} {before:10.2f} {after:10.2f} {after / before:6.2f}  "
              f"{'yes' if not differ else '; '.join(differ)}")


if __name__ == "__main__":
    main()
