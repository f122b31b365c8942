"""Where do proofs stand at 1,024 accelerators (issue 23, item 3)? Incumbent, proven bound, gap,
time and peak memory of each method on the zoo graphs, accpar space, traffic objective.

Each (network, levels, method) runs in its own process, so the peak resident memory
(``ru_maxrss``, whole process: interpreter, numpy, OR-Tools) is that method's alone. Methods:

- ``dp``: HyPar's level-wise DP (an incumbent, no bound);
- ``exact``: the graph elimination over type vectors (refuses above its guards: H = 8 is its
  last level count on these graphs);
- ``cpsat``: CP-SAT with the DP's plan as hint, ``--time-limit`` seconds for the whole solve;
- ``pruned``: bound and prune (``solvers.pruned``): the tree dual bound of ``solvers.tree_dual``
  (a Lagrangian bound: spanning tree plus multiplier-tied copies of the other edges) and its
  incumbent (the DP's plan, improved), then exact eliminations over the vectors whose marginal
  stays within a threshold U (``solvers.survivor_elim``: dense steps and level steps), each U
  the largest whose planned work fits the time left; ``optimal`` only when one closes.

``cpu s`` is the process's CPU time (all threads): on a machine shared with other jobs the wall
time can be several times it.

Incumbents and bounds are in elements, as ``explore`` prints them. The gap column is (incumbent -
best bound of the row's network and H) / incumbent, where the best bound is the largest proven bound
any method of that network and H reached (an exact optimum is its own bound); ``excess`` is (incumbent
- best bound) / best bound: on the dp row, where the best bound is the optimum, the "DP gap"
``explore check`` prints (docs/solvers.md).

    python bench/bench_h10_proofs.py                          # the zoo graphs, H = 8 and 10 (~25 min)
    python bench/bench_h10_proofs.py --levels 10 --methods dp,pruned
    python bench/bench_h10_proofs.py --nets resnet50 --levels 10 --methods dp,pruned
    python bench/bench_h10_proofs.py --levels 10 --methods pruned --base /tmp/base/.venv/bin/python

``--base PYTHON``: each method also runs under that interpreter (say, a venv with the commit
before a change installed), its rows marked ``@base``, interleaved with this one's: before and
after in the same run, under the same load.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, resource, time
from explorer.core.array import synthetic_array
from explorer.core.errors import InstanceTooLarge
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions
from explorer.frontends import load_model

name, levels, method, limit = {name!r}, {levels!r}, {method!r}, {limit!r}
problem = Problem(load_model(name), synthetic_array(levels), Space.ACCPAR)
t0, c0 = time.perf_counter(), time.process_time()
out = {{"objective": None, "bound": None, "status": ""}}
try:
    if method == "pruned":
        from explorer.solvers.pruned import solve
    else:
        from explorer.solvers import get_solver
        solve = get_solver(method)
    sol = solve(problem, SolveOptions(time_limit_s=limit, workers=2))
    real = lambda x: None if x is None else int(problem.real(x))  # elements, as explore prints them (whole at H = 8, 10)
    out["objective"], out["bound"], out["status"] = real(sol.objective), real(sol.bound), sol.status.value
except InstanceTooLarge as err:
    out["status"] = "refused: " + str(err)[:70]
out["wall"], out["cpu"] = time.perf_counter() - t0, time.process_time() - c0
out["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps(out))
"""

NETS = ["resnet50", "bert-base", "gpt2-small", "vit-b16", "mobilenet-v2", "efficientnet-b0", "llama-7b"]


def run(name: str, levels: int, method: str, limit: float, python: str = sys.executable) -> dict:
    code = CHILD.format(name=name, levels=levels, method=method, limit=limit)
    done = subprocess.run([python, "-c", code], capture_output=True, text=True)
    if done.returncode:
        return {"objective": None, "bound": None, "status": "error: " + done.stderr.strip().splitlines()[-1][:60],
                "wall": 0.0, "cpu": 0.0, "peak": 0}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nets", default=",".join(NETS))
    ap.add_argument("--levels", default="8,10")
    ap.add_argument("--methods", default="dp,exact,pruned,cpsat")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--base", help="another Python interpreter whose rows (marked @base) run beside each method's")
    args = ap.parse_args()
    print(f"{'network':<16}{'H':>3} {'method':<12}{'incumbent':>20}{'bound':>20}{'gap':>9}{'excess':>9}{'wall s':>9}{'cpu s':>8}{'peak MiB':>10}  status")
    for name in args.nets.split(","):
        for levels in (int(x) for x in args.levels.split(",")):
            rows = []
            for m in args.methods.split(","):
                if args.base:
                    rows.append((m + "@base", run(name, levels, m, args.time_limit, args.base)))
                rows.append((m, run(name, levels, m, args.time_limit)))
            best = max((r["bound"] for _, r in rows if r["bound"] is not None), default=None)
            for m, r in rows:
                obj = r["objective"]
                gap = "-" if obj is None or best is None else f"{(obj - best) / obj:.3%}"
                excess = "-" if obj is None or not best else f"{(obj - best) / best:.3%}"
                print(f"{name:<16}{levels:>3} {m:<12}{obj if obj is not None else '-':>20}"
                      f"{r['bound'] if r['bound'] is not None else '-':>20}{gap:>9}{excess:>9}{r['wall']:>9.2f}"
                      f"{r['cpu']:>8.2f}{r['peak'] / 2**20:>10.0f}  {r['status']}", flush=True)


if __name__ == "__main__":
    main()
