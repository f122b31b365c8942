"""Do the memory guards hold? Each solver's estimate against the memory it measurably uses (issue 23, item 5).

Every case runs in its own process. The guards and what is measured:

- ``exact`` (even splits): ``exact.memory_estimate``, compared with ``exact.MAX_MEMORY`` before
  anything is allocated; measured: the rise of the process's peak resident memory over the solve,
  after the problem is built (``VmHWM``, reset just before the solve through ``clear_refs``).
  ``--beyond`` also runs cases the guard refuses (with its limit lifted) to measure them.
- ``pruned``: each elimination's plan (``survivor_elim.plan``: 8 bytes an entry), compared with
  ``survivor_elim.MAX_ENTRIES`` before the elimination runs; measured: the peak of the memory
  the elimination allocates (``tracemalloc``, numpy's arrays included), the largest plan shown.
- ``constrained``: ``exact`` (even splits) under a binding memory limit or cap (a share of the free
  optimum's, found in another process): ``exact.constrained_estimate`` (the Lagrangian phase's
  arrays, compared with ``exact.MAX_MEMORY`` before anything is allocated), raised to the most a
  label pass or the restricted CP-SAT search was let hold (``_Chain.fits``: the label passes and
  the CP-SAT fallback check their bytes before they build); measured as for ``exact``.
- ``dp``: ``dp.frontier_bytes`` (every step's back-pointers, the states and the new ones) of
  one level of ``graph_level`` (``dp.MAX_FRONTIER_BYTES``, checked before the level runs);
  measured: the rise of the peak resident memory over that level, as for ``exact``. Case kind
  ``dense``: a DenseNet-like block of that many concats (every output stays alive).
- ``exact`` (uneven splits): ``uneven_prune.memory_estimate`` at the most live states the DP's
  guard saw (``uneven.EXACT_MAX_BYTES``), its column tables as held (int64, or Python ints:
  ``uneven_prune.table_entry_bytes``); measured: the rise of the peak resident memory, as for
  ``exact``. Case names ``network:space[:mix4]``: on trial 13's mix-4 (else ``tpu-mix-16``), where
  sfc's tables are Python ints (int64 sums not proven safe; at 1/16, 96 M entries, minutes to build).

- ``joint`` (uneven splits, ``--split optimal``'s solver): two rows a case. ``tables``:
  ``joint_memory.solver_bytes`` (checked against ``joint_columns.MAX_BYTES`` before any table is
  built: the column tables, and on graphs the block and nested-link tables of the weightings alive
  at once and a pass's largest temporary); measured: the peak of the memory the run allocates before
  its label passes (``tracemalloc``: the tables' build and the bounding passes, numpy's arrays and
  the Python objects the coefficients leave). ``labels``: ``joint_labels.label_bytes`` at the most
  live labels the passes' guard saw (``check_labels``, against the same limit); measured: the peak
  the label passes allocate (``tracemalloc``, from their start). Case names ``network:space[:mix]``,
  on ``tpu-mix-16`` (or ``mix``: a 2-level mix as ``bench_time_limit.py``'s MIX4 but each half one
  kind, two v2 and two v3: the joint solver's scope),
  ``onnx-bert``: ``tests/onnx_nets.hf_bert`` (an exporter-style graph, 2 layers) imported;
  ``H/grid`` the alpha grid; its time limit 120 s. Rows with a cap (``cap1``: the accelerators' own memory
  too, as the CLI's rules) or a memory limit (``memory``): the estimate counts their tables and terms
  (``joint_memory.limit_bytes``).

The guard holds where measured / estimate stays within [0.67, 1.5] (at most 1.5 for the joint rows on graphs:
their block tables are an upper bound, a pass with a cap keeps fewer rows).

    python bench/bench_memory_guard.py            # all cases (8 minutes quiet; the joint graph rows add ~20)
    python bench/bench_memory_guard.py --quick    # small cases only (about 30 s)
    python bench/bench_memory_guard.py --beyond   # add ResNet-50 and BERT-base at H = 9 (4 GiB, minutes)
    python bench/bench_memory_guard.py --only mix4   # the uneven exact DP's tables as Python ints
    python bench/bench_memory_guard.py --solver joint   # the joint solver's rows only (about 20 minutes)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

PRELUDE = r"""
import json, sys, time, tracemalloc
sys.path.insert(0, {bench!r})
from bench_hpartition import network, random_chain
from explorer.core.array import synthetic_array
from explorer.core.errors import Refused
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.randnet import random_dag_spec
from explorer.core.solution import SolveOptions
from explorer.frontends import load_model
from explorer.frontends.network_yaml import parse_network

kind, name, levels, beyond = {kind!r}, {name!r}, {levels!r}, {beyond!r}
if kind == "chain":
    net = network("chain", random_chain(1, int(name)), 32)
elif kind == "split":
    net = load_model(name.split(":")[0])
elif kind == "onnx":  # built by the solver's part (joint: "onnx-bert")
    net = None
elif kind == "dag":
    seed, nodes = map(int, name.split("x"))
    net = parse_network(random_dag_spec(seed, nodes, batch=8), "dag")
elif kind == "dense":  # DenseNet-like: every concat reads the stem and every earlier block's output
    layers = [{{"name": "c0", "kind": "conv", "in_channels": 3, "out_channels": 16, "kernel": 3, "in_size": 8, "out_size": 8}}]
    for i in range(1, int(name) + 1):
        prev = "c0" if i == 1 else f"cat{{i - 1}}"
        layers.append({{"name": f"c{{i}}", "kind": "conv", "in_channels": 8 + 8 * i, "out_channels": 8, "kernel": 3,
                       "in_size": 8, "out_size": 8, "inputs": [prev]}})
        layers.append({{"name": f"cat{{i}}", "kind": "concat", "inputs": ["c0"] + [f"c{{j}}" for j in range(1, i + 1)]}})
    net = parse_network({{"version": 1, "name": "dense", "batch": 8, "layers": layers}}, "dense")
else:
    net = load_model(name)
def _status(key):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))
def mark():  # resident bytes now, the peak reset to them (ru_maxrss would start at the parent's
    # size: Linux keeps it across fork and exec; VmHWM is this process's own)
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _status("VmRSS:")
    except OSError:
        return _status("VmHWM:")
def peak():
    return _status("VmHWM:")
"""

EXACT = r"""
from explorer.solvers import exact
problem = Problem(net, synthetic_array(levels), Space.ACCPAR)
problem.tables.level_rows
try:
    estimate = exact.memory_estimate(problem)
except Refused as err:  # no elimination order within the table limit
    print(json.dumps({"estimate": 0, "used": 0, "status": "refused: " + str(err), "guard": False, "wall": 0}))
    sys.exit()
refused = estimate > exact.MAX_MEMORY
if beyond:
    exact.MAX_MEMORY = 1 << 40
before, t0 = mark(), time.perf_counter()
try:
    status = exact.solve(problem).status.value
except Refused as err:
    status = "refused: " + str(err)
print(json.dumps({"estimate": estimate, "used": peak() - before, "status": status, "guard": refused,
                  "wall": time.perf_counter() - t0}))
"""

PRUNED = r"""
from explorer.solvers import pruned, survivor_elim
problem = Problem(net, synthetic_array(levels), Space.ACCPAR)
problem.tables.level_rows
seen = []
run = survivor_elim.eliminate
def spy(vc, domains, max_entries=survivor_elim.MAX_ENTRIES, deadline=None, steps=None, workers=1):
    steps = steps or survivor_elim.plan(vc, [len(d) for d in domains], max_entries)
    tracemalloc.start()
    found = run(vc, domains, max_entries, deadline, steps, workers)
    if found is not None:  # (one the deadline stopped never reached its peak)
        seen.append((8 * steps.peak, tracemalloc.get_traced_memory()[1]))
    tracemalloc.stop()
    return found
pruned.eliminate = spy
t0 = time.perf_counter()
sol = pruned.solve(problem, SolveOptions(time_limit_s=30.0))
est, used = max(seen) if seen else (0, 0)
ratios = [u / e for e, u in seen if e]
print(json.dumps({"estimate": est, "used": used, "status": f"{sol.status.value}, {len(seen)} eliminations finished, "
                  f"used/est {min(ratios, default=0):.2f}-{max(ratios, default=0):.2f}", "guard": False,
                  "wall": time.perf_counter() - t0}))
"""

LIMIT = r"""
from fractions import Fraction
from explorer.core.evaluate import evaluate
from explorer.solvers import exact
base = Problem(net, synthetic_array(levels), Space.ACCPAR)
free = exact.solve(base)
what, share = beyond
if what == "memory":
    print(evaluate(base.network, base.array, Space.ACCPAR, free.plan).memory_bytes * Fraction(share))
else:
    print(Fraction(free.level_units[int(what[3:])]) * Fraction(share) * 4 / Fraction(base.tables.unit_per_element))
"""

CONSTRAINED = r"""
from fractions import Fraction
from explorer.core.constraints import Cap, Constraints
from explorer.solvers import exact
from explorer.solvers.lagrangian import _Chain
what, share, limit = beyond
base = Problem(net, synthetic_array(levels), Space.ACCPAR)
if what == "memory":
    problem = base.with_constraints(Constraints(memory_bytes=Fraction(limit)))
else:
    problem = base.with_constraints(Constraints(caps=(Cap(int(what[3:]), Fraction(limit), "bench"),)))
problem.tables.level_rows
if hasattr(exact, "constrained_estimate"):
    estimate = exact.constrained_estimate(problem)
    fits = _Chain.fits
    def spy(self, need):  # the most a label pass was let hold
        ok = fits(self, need)
        if ok:
            most[0] = max(most[0], self.held + need)
        return ok
    _Chain.fits = spy
else:  # (before it: the plain solve's estimate guarded the constrained one)
    estimate = exact.memory_estimate(problem)
most = [estimate]
before, t0 = mark(), time.perf_counter()
try:
    sol = exact.solve(problem, SolveOptions(time_limit_s=60.0, workers=1, seed=0))
    status = sol.status.value + ", " + sol.info.get("method", "") + (", labels " + sol.info["labels"] if "labels" in sol.info else "")
except Refused as err:
    status = "refused: " + str(err)
print(json.dumps({"estimate": most[0], "used": peak() - before, "status": status, "guard": estimate > exact.MAX_MEMORY,
                  "wall": time.perf_counter() - t0}))
"""

DP = r"""
from explorer.core.comm import zero_counts
from explorer.solvers import dp
problem = Problem(net, synthetic_array(levels), Space.ACCPAR)
counts = zero_counts(problem.num_layers)
problem.tables.level_tuples(counts)
estimate = dp.frontier_bytes([s[:3] for s in dp._frontier_steps(problem, 0)])
guard = dp.too_wide(problem, 0)
dp.MAX_FRONTIER_STATES, dp.MAX_FRONTIER_BYTES = 1 << 60, 1 << 60  # measured whatever the guard says
before, t0 = mark(), time.perf_counter()
dp.graph_level(problem, 0, counts)
print(json.dumps({"estimate": estimate, "used": peak() - before, "status": "level 0", "guard": guard is not None,
                  "wall": time.perf_counter() - t0}))
"""

UNEVEN = r"""
import tempfile
from pathlib import Path
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array
from explorer.solvers import uneven
parts = name.split(":")
space, grid = Space(parts[1]), levels
if "mix4" in parts:  # trial 13's mix-4 (one v2, three v3; two levels)
    path = Path(tempfile.mkdtemp()) / "mix-4.yaml"
    path.write_text("version: 1\nname: mix-4\nlevels: 2\ndtype_bytes: 2\nkinds:\n  v2: {peak_TFLOPS: 45, memory_GiB: 16}\n"
                    "  v3: {peak_TFLOPS: 123, memory_GiB: 32}\naccelerators: [v2, v3, v3, v3]\nlink_bandwidth_GBps: [70, 50]\n")
    arr = load_array(str(path))
else:
    arr = load_array("tpu-mix-16")
aspace = alpha_space(arr, alpha_grid(grid))
most, ints = [0], [None]
def spy(self, states):
    need = self.estimate(states)
    most[0], ints[0] = max(most[0], need), self.int_bits
    if need > self.max_bytes:
        raise Refused("refused by the guard")
uneven._Run.check_memory = spy
before, t0 = mark(), time.perf_counter()
try:
    status = uneven.exact_uneven(net, arr, space, aspace, time_limit_s=60.0).status.value
except Refused as err:
    status = "refused: " + str(err)
status += "" if ints[0] is None else f", tables of Python ints ({ints[0]} bits)"
print(json.dumps({"estimate": most[0], "used": peak() - before, "status": status, "guard": False,
                  "wall": time.perf_counter() - t0}))
"""

JOINT = r"""
import tempfile
from pathlib import Path
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array
from explorer.solvers import joint_close_graph, joint_columns, joint_labels, joint_memory, uneven_joint as uj
from explorer.solvers.joint_columns import JointOptions
parts = name.split(":")
tmp = Path(tempfile.mkdtemp())
if parts[0] == "onnx-bert":  # an exporter-style graph (tests/onnx_nets.hf_bert: 2 layers), imported
    sys.path.insert(0, str(Path(sys.path[0]).parent))  # (the prelude's: bench/)
    from tests.onnx_nets import hf_bert
    from explorer.frontends.onnx import load_onnx
    import onnx
    onnx.save(hf_bert(), str(tmp / "bert.onnx"))
    net = load_onnx(str(tmp / "bert.onnx"), batch=8, sequence=64)
if "mix" in parts:  # a 2-level mix as bench_time_limit.py's MIX4, each half one kind (two v2, two v3)
    (tmp / "mix-4.yaml").write_text("version: 1\nname: mix-2x2\nlevels: 2\ndtype_bytes: 2\nkinds:\n"
                                    "  v2: {peak_TFLOPS: 45, memory_GiB: 16}\n  v3: {peak_TFLOPS: 123, memory_GiB: 32}\n"
                                    "accelerators: [v2, v2, v3, v3]\nlink_bandwidth_GBps: [70, 50]\n")
    arr = load_array(str(tmp / "mix-4.yaml"))
else:
    arr = load_array("tpu-mix-16")
space, aspace = Space(parts[1]), alpha_space(arr, alpha_grid(levels))
rules = None
if isinstance(beyond, (tuple, list)):  # a cap ("cap<h>", bytes; the accelerators' own memory too, as the CLI's
    # rules) or a memory limit ("memory", bytes per accelerator: ``--memory``)
    from fractions import Fraction
    from explorer.core.constraints import Cap, Constraints
    from explorer.core.split_rules import SplitRules, leaf_memory_limits
    what, value = beyond
    caps = () if what == "memory" else (Cap(int(what[3:]), Fraction(value), "bench"),)
    rules = SplitRules(constraints=Constraints(caps=caps),
                       leaf_memory_bytes=leaf_memory_limits(arr, Fraction(value) if what == "memory" else None))
seen = {"tables": [0, 0], "labels": [0, 0], "whole": [0, 0]}  # estimate, used ("whole": the run's peak)
solver_bytes, check_labels, label_passes = uj.solver_bytes, joint_labels.check_labels, uj._label_passes
def spy_tables(m, blocks, *limits):
    seen["tables"][0] = need = solver_bytes(m, blocks, *limits)
    return need
def spy_passes(*a, **k):  # the tables and bounding passes' peak so far; the label passes' own from here
    seen["tables"][1] = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    try:
        return label_passes(*a, **k)
    finally:
        seen["labels"][1] = tracemalloc.get_traced_memory()[1] - base
        seen["whole"][1] = max(seen["tables"][1], tracemalloc.get_traced_memory()[1])
def spy_labels(*a):
    seen["labels"][0] = max(seen["labels"][0], joint_labels.label_bytes(*a))
    check_labels(*a)
uj.solver_bytes, uj._label_passes = spy_tables, spy_passes
joint_labels.check_labels = joint_close_graph.check_labels = spy_labels
t0 = time.perf_counter()
tracemalloc.start()
sol = uj.joint_uneven(net, arr, space, aspace, JointOptions(time_limit_s=120.0), rules=rules)
seen["tables"][1] = seen["tables"][1] or tracemalloc.get_traced_memory()[1]  # (no label pass: the whole run)
seen["whole"][1] = seen["whole"][1] or seen["tables"][1]
tracemalloc.stop()
status = sol.status.value + (", " + sol.info["reason"] if "reason" in sol.info else "")
limit = joint_columns.MAX_BYTES
peak = {"tables": f" (the run's peak {seen['whole'][1] / 2**20:,.1f} MiB)", "labels": ""}
print(json.dumps({"rows": [{"estimate": seen[k][0], "used": seen[k][1], "status": k + peak[k] + ": " + status,
                            "guard": seen[k][0] > limit, "wall": time.perf_counter() - t0} for k in ("tables", "labels")]}))
"""

JOINT_CASES = [("joint", "split", "alexnet:accpar", 16), ("joint", "split", "alexnet:accpar", 64),
               ("joint", "split", "resnet18:accpar", 16), ("joint", "split", "alexnet:accpar", 256),
               ("joint", "split", "resnet18:accpar", 64), ("joint", "split", "resnet50:accpar", 16),
               ("joint", "split", "mobilenet-v2:accpar", 16), ("joint", "split", "efficientnet-b0:accpar", 16),
               ("joint", "split", "bert-base:accpar", 16), ("joint", "split", "gpt2-small:accpar", 16),
               ("joint", "onnx", "onnx-bert:accpar", 16), ("joint", "onnx", "onnx-bert:accpar", 64),
               ("joint", "split", "resnet18:accpar:mix", 64), ("joint", "split", "resnet18:accpar:mix", 128),
               ("joint", "split", "bert-base:accpar:mix", 64), ("joint", "split", "bert-base:accpar:mix", 256)]
# joint under a cap on level 1 (bytes a side sends; about 0.9 of the free optimum's busiest side at 1/16, the
# accelerators' own memory too, as the CLI's rules) or ``--memory`` (bytes per accelerator, below the free optimum's)
JOINT_CASES += [("joint", "split", "alexnet:accpar", g, ("cap1", "26000000")) for g in (16, 64)] + \
    [("joint", "split", "alexnet:accpar", g, ("memory", "55000000")) for g in (16, 64)] + \
    [("joint", "split", "resnet18:accpar", g, ("cap1", "20000000")) for g in (16, 64)] + \
    [("joint", "split", "resnet18:accpar", g, ("memory", "200000000")) for g in (16, 64)]

# constrained: (..., (limit, share)): a memory limit ("memory") or a cap on a level ("cap<h>") at that
# share of the free optimum's
CONSTRAINED_CASES = [
    ("constrained", "chain", "200", 8, ("memory", "9/10")), ("constrained", "chain", "200", 8, ("cap3", "7/10")),
    ("constrained", "chain", "1000", 7, ("memory", "9/10")), ("constrained", "chain", "60", 9, ("memory", "9/10")),
    ("constrained", "zoo", "resnet18", 6, ("memory", "9/10")), ("constrained", "zoo", "resnet18", 6, ("cap2", "8/10")),
    ("constrained", "dag", "4x10", 6, ("memory", "9/10")), ("constrained", "dag", "5x14", 7, ("memory", "9/10")),
]
# (solver, kind, name, levels): kind "chain" (name: layers), "dag" (name: seed x nodes), "zoo",
# "split" (name: network:space, levels: the alpha grid)
CASES = [
    ("exact", "chain", "200", 11), ("exact", "chain", "2000", 9), ("exact", "chain", "60", 11),
    ("exact", "chain", "1000", 8),
    ("exact", "zoo", "resnet18", 8), ("exact", "zoo", "mobilenet-v2", 7), ("exact", "zoo", "bert-base", 7),
    ("exact", "zoo", "resnet50", 8), ("exact", "zoo", "vit-b16", 7), ("exact", "zoo", "llama-7b", 7),
    ("exact", "dag", "4x10", 7), ("exact", "dag", "5x14", 7), ("exact", "dag", "9x8", 8), ("exact", "dag", "11x14", 7),
    ("exact", "zoo", "resnet18", 9),
    ("pruned", "zoo", "resnet50", 9), ("pruned", "zoo", "bert-base", 9), ("pruned", "zoo", "llama-7b", 8),
    ("uneven", "split", "lenet-c:hypar", 8), ("uneven", "split", "alexnet:hypar", 4), ("uneven", "split", "alexnet:accpar", 2),
    ("uneven", "split", "sfc:accpar:mix4", 4), ("uneven", "split", "sfc:accpar:mix4", 8),
    ("dp", "dense", "8", 2), ("dp", "dense", "10", 2),
] + CONSTRAINED_CASES + JOINT_CASES
QUICK = [("exact", "chain", "200", 9), ("exact", "chain", "1000", 7), ("exact", "zoo", "resnet18", 6),
         ("exact", "zoo", "mobilenet-v2", 6), ("exact", "dag", "4x10", 6), ("pruned", "zoo", "bert-base", 8),
         ("uneven", "split", "lenet-c:hypar", 4), ("constrained", "chain", "200", 8, ("cap3", "7/10")),
         ("constrained", "dag", "4x10", 6, ("memory", "9/10")), ("dp", "dense", "8", 2)]
BEYOND = [("exact", "zoo", "resnet50", 9), ("exact", "zoo", "bert-base", 9)]
CHILDREN = {"exact": EXACT, "constrained": CONSTRAINED, "pruned": PRUNED, "uneven": UNEVEN, "dp": DP, "joint": JOINT}


def measure(solver: str, kind: str, name: str, levels: int, beyond: bool = False) -> dict:
    """One case in a fresh process: estimate and used (bytes), status, whether the guard refuses it, wall."""
    bench = str(Path(__file__).resolve().parent)
    if solver == "constrained":  # the limit (a share of the free optimum's), from another process
        what, share = beyond
        code = PRELUDE.format(bench=bench, kind=kind, name=name, levels=levels, beyond=beyond) + LIMIT
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if proc.returncode:
            return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
        beyond = (what, share, proc.stdout.strip())
    code = PRELUDE.format(bench=bench, kind=kind, name=name, levels=levels, beyond=beyond) + CHILDREN[solver]
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if proc.returncode:
        return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(proc.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--beyond", action="store_true", help="also cases the guard refuses, with its limit lifted")
    ap.add_argument("--only", metavar="TEXT", help="only the cases whose name contains TEXT (e.g. mix4)")
    ap.add_argument("--solver", help="only that solver's cases (e.g. joint)")
    args = ap.parse_args()
    cases = QUICK if args.quick else CASES + (BEYOND if args.beyond else [])
    cases = [c for c in cases if (args.only is None or args.only in c[2]) and args.solver in (None, c[0])]
    print(f"{'solver':<12}{'case':<26}{'H/grid':>7}{'estimate MiB':>14}{'used MiB':>10}{'used/est':>10}{'wall s':>8}  status")
    for solver, kind, name, levels, *limit in cases:
        got = measure(solver, kind, name, levels, limit[0] if limit else args.beyond)
        for r in got.get("rows", [got]):
            _row(solver, kind, name, levels, limit, r)


def _row(solver: str, kind: str, name: str, levels: int, limit: list, r: dict) -> None:
    """One row of the table (a case's measure; the joint solver's: each of its two)."""
    label = f"chain {int(name):,}" if kind == "chain" else f"dag {name}" if kind == "dag" else \
        f"dense {name} concats" if kind == "dense" else name
    if limit:
        label += f", {limit[0][0]} {limit[0][1]}"
    if "error" in r:
        print(f"{solver:<12}{label:<26}{levels:>7}  {r['error']}")
        return
    est, used = r["estimate"] / 2**20, r["used"] / 2**20
    ratio = f"{used / est:>9.2f}x" if est and used else f"{'-':>10}"
    status = r["status"] + (" (the guard refuses it)" if r["guard"] else "")
    print(f"{solver:<12}{label:<26}{levels:>7}{est:>14,.1f}{used:>10,.1f}{ratio}{r['wall']:>8.2f}  {status[:80]}",
          flush=True)


if __name__ == "__main__":
    main()
