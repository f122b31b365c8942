"""How well does ``--solver pruned`` plan its time (issue 23)? Per zoo graph and level count: the
start (tables, DP), the dual rounds, then every threshold's elimination with its estimated
seconds (planned work over the rate the run measured: the dual rounds' for the first, then the
largest finished elimination's) against the measured wall and CPU seconds, and how the run ended
(status, wall, the reason when not proven).

Each (network, H) runs in its own process. ``ratio`` is measured wall / estimate.

    python bench/bench_pruned_budget.py                       # zoo graphs, H = 8, 9, 10
    python bench/bench_pruned_budget.py --nets resnet50 --levels 10 --time-limit 15
    python bench/bench_pruned_budget.py --ratio --nets resnet50,llama-7b --levels 10

``--resume DUAL_S``: the dual's share of the limit cut to DUAL_S seconds (as a set-up that took
most of it on a loaded machine leaves it), each network run twice in one process, the dual not
resumed (``pruned.RESUME_MIN_S`` infinite: before) and resumed with the time the search cannot
use (``pruned._use_the_rest``: after), ``--repeat`` times, alternating.

    python bench/bench_pruned_budget.py --resume 0.3 --nets efficientnet-b0,bert-base --levels 10 --time-limit 40

``--ratio``: the producer direction's measured cost per planned element over the consumer's
(``VectorCosts.reduce_producer`` / ``reduce_consumer`` on rows of a level step's block, every
edge of the graph whose ends both have K types, the median of three timings each way), the
weight ``survivor_elim.PRODUCER_WEIGHT`` stands for.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, time
from explorer.core.array import synthetic_array
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions
from explorer.frontends import load_model
from explorer.solvers.pruned import solve

problem = Problem(load_model({name!r}), synthetic_array({levels!r}), Space.ACCPAR)
t0, c0 = time.perf_counter(), time.process_time()
sol = solve(problem, SolveOptions(time_limit_s={limit!r}, workers=2))
info = dict(sol.info)
print(json.dumps({{"status": sol.status.value, "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                  "gap": None if sol.bound is None else (sol.objective - sol.bound) / sol.objective,
                  "info": {{k: info.get(k) for k in ("start_s", "dual_s", "dual_rounds", "eliminations", "reason", "resumed",
                                                    "method", "block_chain")}}}}))
"""

RESUME_CHILD = r"""
import json, math, time
from explorer.core.array import synthetic_array
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions
from explorer.frontends import load_model
from explorer.solvers import pruned

problem = Problem(load_model({name!r}), synthetic_array({levels!r}), Space.ACCPAR)
pruned.dual_deadline = lambda t0, t_dual, limit, end: t_dual + {dual_s!r}
for r in range({repeat!r}):
    for mode in ("before", "after"):
        pruned.RESUME_MIN_S = math.inf if mode == "before" else 0.5
        t0, c0 = time.perf_counter(), time.process_time()
        sol = pruned.solve(problem, SolveOptions(time_limit_s={limit!r}, workers=2))
        print(json.dumps({{"mode": mode, "status": sol.status.value, "gap": (sol.objective - sol.bound) / sol.objective,
                          "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
                          "rounds": sol.info.get("dual_rounds"), "resumed": sol.info.get("resumed", 0)}}), flush=True)
"""


def main_resume(nets: list[str], levels: list[int], limit: float, dual_s: float, repeat: int) -> None:
    print(f"{'network':<16}{'H':>3} {'mode':<7}{'status':<10}{'gap %':>9}{'wall s':>8}{'cpu s':>8}{'rounds':>7}{'resumed':>8}")
    for name in nets:
        for h in levels:
            code = RESUME_CHILD.format(name=name, levels=h, dual_s=dual_s, repeat=repeat, limit=limit)
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
            for line in done.stdout.strip().splitlines() or [done.stderr.strip().splitlines()[-1]]:
                r = json.loads(line) if line.startswith("{") else {"mode": "error: " + line[:60]}
                print(f"{name:<16}{h:>3} {r['mode']:<7}{r.get('status', ''):<10}{100 * r.get('gap', 0):>9.3f}"
                      f"{r.get('wall', 0):>8.2f}{r.get('cpu', 0):>8.2f}{r.get('rounds') or 0:>7}{r.get('resumed', 0):>8}", flush=True)


RATIO_CHILD = r"""
import json, statistics, time
import numpy as np
from explorer.core.array import synthetic_array
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.frontends import load_model
from explorer.solvers.survivor_elim import _rows_in_flight
from explorer.solvers.vectors import VectorCosts

vc = VectorCosts(Problem(load_model({name!r}), synthetic_array({levels!r}), Space.ACCPAR))
rng = np.random.default_rng(0)
times = {{"producer": 0.0, "consumer": 0.0}}
edges = [e for e, (u, x) in enumerate(vc.edges) if vc.dom[u].K == vc.dom[x].K][:{edges!r}]
for e in edges:
    u, x = vc.edges[e]
    for side, n, reduce in (("producer", u, vc.reduce_producer), ("consumer", x, vc.reduce_consumer)):
        rows = _rows_in_flight(vc.dom[n])
        T = rng.integers(0, 1 << 40, (rows, vc.dom[n].V), dtype=np.int64)
        laps = []
        for _ in range(3):
            t = time.perf_counter()
            reduce(T, e)
            laps.append(time.perf_counter() - t)
        times[side] += statistics.median(laps)
print(json.dumps({{"edges": len(edges), **times}}))
"""


def ratio(name: str, levels: int, edges: int = 40) -> dict:
    done = subprocess.run([sys.executable, "-c", RATIO_CHILD.format(name=name, levels=levels, edges=edges)],
                          capture_output=True, text=True)
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1][:80]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main_ratio(nets: list[str], levels: list[int]) -> None:
    print(f"{'network':<16}{'H':>3}{'edges':>7}{'producer s':>12}{'consumer s':>12}{'ratio':>7}")
    for name in nets:
        for h in levels:
            r = ratio(name, h)
            if "error" in r:
                print(f"{name:<16}{h:>3} error: {r['error']}", flush=True)
                continue
            print(f"{name:<16}{h:>3}{r['edges']:>7}{r['producer']:>12.3f}{r['consumer']:>12.3f}"
                  f"{r['producer'] / r['consumer']:>7.2f}", flush=True)


NETS = ["resnet50", "bert-base", "gpt2-small", "vit-b16", "mobilenet-v2", "efficientnet-b0", "llama-7b"]


def run(name: str, levels: int, limit: float) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD.format(name=name, levels=levels, limit=limit)],
                          capture_output=True, text=True)
    if done.returncode:
        return {"error": done.stderr.strip().splitlines()[-1][:80]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nets", default=",".join(NETS))
    ap.add_argument("--levels", default="8,9,10")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--ratio", action="store_true", help="the producer direction's cost per element over the consumer's")
    ap.add_argument("--resume", type=float, default=None, metavar="DUAL_S", help="before/after the dual's resumption")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if args.resume is not None:
        main_resume(args.nets.split(","), [int(x) for x in args.levels.split(",")], args.time_limit, args.resume, args.repeat)
        return
    if args.ratio:
        main_ratio(args.nets.split(","), [int(x) for x in args.levels.split(",")])
        return
    print(f"{'network':<16}{'H':>3} {'step':<8}{'work':>10}{'est s':>8}{'wall s':>8}{'cpu s':>8}{'ratio':>7}  note")
    for name in args.nets.split(","):
        for levels in (int(x) for x in args.levels.split(",")):
            r = run(name, levels, args.time_limit)
            if "error" in r:
                print(f"{name:<16}{levels:>3} error: {r['error']}", flush=True)
                continue
            info = r["info"]
            if info.get("method") == "block-chain":  # a chain of blocks: exact per piece, no dual, no thresholds
                bc = info["block_chain"]
                print(f"{name:<16}{levels:>3} {'total':<8}{bc['table_entries']:>10.2e}{'':>8}{r['wall']:>8.2f}{r['cpu']:>8.2f}"
                      f"{'':>7}  {r['status']} (block chain: {bc['pieces']} pieces, {bc['tables']} tables)", flush=True)
                continue
            print(f"{name:<16}{levels:>3} {'start':<8}{'':>10}{'':>8}{info['start_s']:>8.2f}")
            resumed = f", resumed {info['resumed']}x with the time the search could not use" if info.get("resumed") else ""
            print(f"{name:<16}{levels:>3} {'dual':<8}{'':>10}{'':>8}{info['dual_s']:>8.2f}{'':>8}{'':>7}  "
                  f"{info['dual_rounds']} rounds{resumed}")
            for k, e in enumerate(info["eliminations"] or []):
                ratio = e["wall_s"] / e["estimate_s"] if e["estimate_s"] else float("nan")
                note = ("" if e["done"] else "cut at the deadline") + f" {e['level_steps']} level steps"
                print(f"{name:<16}{levels:>3} {'elim ' + str(k + 1):<8}{e['work']:>10.2e}{e['estimate_s']:>8.2f}"
                      f"{e['wall_s']:>8.2f}{e['cpu_s']:>8.2f}{ratio:>7.2f}  {note}")
            gap = f" (gap {100 * r['gap']:.3f}%)" if r.get("gap") else ""
            print(f"{name:<16}{levels:>3} {'total':<8}{'':>10}{'':>8}{r['wall']:>8.2f}{r['cpu']:>8.2f}{'':>7}  "
                  f"{r['status']}{gap} {info.get('reason') or ''}", flush=True)


if __name__ == "__main__":
    main()
