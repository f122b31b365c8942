"""Do the memory guards hold? ``exact``'s estimate against the peak it measurably uses (issue 23, item 5).

Each case runs in its own process: it builds the problem, notes the process's peak resident
memory so far (``ru_maxrss``: the interpreter, numpy and the network), runs the solver and
notes the peak again. The table prints the estimate the guard compares with its limit
(``exact.memory_estimate``), the measured increase and their ratio; the guard holds where the
ratio (measured / estimate) stays at or below 1.5. Cases the guard refuses print its message.

    python bench/bench_memory_guard.py            # chains at H = 9-11 and zoo graphs at H = 6-8
    python bench/bench_memory_guard.py --quick    # the small cases only
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {bench!r})
from bench_hpartition import network, random_chain
from explorer.core.array import synthetic_array
from explorer.core.errors import InstanceTooLarge
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.frontends import load_model
from explorer.solvers import exact

kind, name, levels = {kind!r}, {name!r}, {levels!r}
net = network("chain", random_chain(1, int(name)), 32) if kind == "chain" else load_model(name)
problem = Problem(net, synthetic_array(levels), Space.ACCPAR)
problem.tables.level_rows
estimate = exact.memory_estimate(problem)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
try:
    sol = exact.solve(problem)
    status = sol.status.value
except InstanceTooLarge as err:
    status = "refused: " + str(err)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"estimate": estimate, "used": (after - before) * 1024, "status": status,
                  "wall": time.perf_counter() - t0}}))
"""

CASES = [("chain", "200", 11), ("chain", "2000", 9), ("chain", "60", 11), ("chain", "1000", 8),
         ("graph", "resnet18", 8), ("graph", "mobilenet-v2", 7), ("graph", "bert-base", 7), ("graph", "resnet50", 7)]
QUICK = [("chain", "200", 9), ("chain", "1000", 7), ("graph", "resnet18", 6), ("graph", "mobilenet-v2", 6)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    bench = __file__.rsplit("/", 1)[0]
    print(f"{'case':<22}{'H':>3}{'estimate MiB':>14}{'used MiB':>10}{'used/est':>10}{'wall s':>8}  status")
    for kind, name, levels in QUICK if args.quick else CASES:
        code = CHILD.format(bench=bench, kind=kind, name=name, levels=levels)
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if proc.returncode:
            print(f"{name}: {proc.stderr.strip().splitlines()[-1]}")
            continue
        r = json.loads(proc.stdout)
        label = f"chain {int(name):,}" if kind == "chain" else name
        est, used = r["estimate"] / 2**20, r["used"] / 2**20
        print(f"{label:<22}{levels:>3}{est:>14,.1f}{used:>10,.1f}{used / est:>9.2f}x{r['wall']:>8.2f}  {r['status'][:70]}")


if __name__ == "__main__":
    main()
