"""What the ONNX importer's bounds cost and save (hostile-input round 4; docs/benchmarks.md,
"Bounded shape inference").

    python bench/bench_onnx_bounds.py
    python bench/bench_onnx_bounds.py --baseline OLD [--baseline OLD2]   # part 1 against older trees

Part 1, the cost on ordinary models: each model imported with the bound ("after": the
shapes-only folding rounds first, ``fold_shapes``' ``infer_plain``, and the shapes-only pass
before each propagating one, ``onnx_bounds.check_propagation``) and with both switched off
("before", as the importer was), in alternating rounds in this process; medians and their ratio.
Part 2, hostile files: each imported in a fresh process (a Range of 2^40 elements cast into an
activation, with the propagation bound on and switched off; 40 nested model-local functions
each calling the one before twice), wall time and peak RSS (VmHWM), under a 4 GB address-space
limit so a run without the bound ends instead of taking the machine.

``--baseline DIR`` (repeatable; DIR holds an older ``explorer/`` package, e.g. ``git archive
e26d230 explorer | tar -x -C DIR``) replaces part 1's in-process comparison by whole trees: per
round, one fresh process per tree (this one first) imports each model once untimed and then
``IMPORTS`` times; the round's median per tree, then the median of ``ROUNDS`` rounds, CPU time
(``time.process_time``: what the import used, steadier on a shared machine) and wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ROUNDS = 7
IMPORTS = 5  # timed imports per process with --baseline


def _same(model):
    """"before"'s shapes-only pass: none (the model as it is; its folding rounds see the
    inputs' and initializers' shapes only, and the propagating rounds after fold the rest)."""
    return model


def ordinary(folder: Path) -> None:
    import onnx

    import explorer.frontends.onnx_bounds as bounds
    from explorer.frontends.onnx import load_onnx
    from tests.onnx_nets import hf_bert, resnet18

    models = {"bert-24-layers": (hf_bert(layers=24, hidden=256, heads=4, ffn=1024), {"batch": 2, "sequence": 64}),
              "resnet18": (resnet18(), {})}
    import explorer.frontends.onnx_fold as fold

    real, real_fold = bounds.check_propagation, fold.fold_shapes
    print("| model | before s | after s | after / before | CPU before s | CPU after s | CPU after / before |\n"
          "|---|---|---|---|---|---|---|")
    for name, (model, kw) in models.items():
        path = folder / f"{name}.onnx"
        onnx.save(model, path)
        times: dict[str, list[float]] = {"before": [], "after": []}
        cpu: dict[str, list[float]] = {"before": [], "after": []}
        for _ in range(ROUNDS):
            for k in ("before", "after"):
                bounds.check_propagation = real if k == "after" else (lambda *a: None)
                fold.fold_shapes = real_fold if k == "after" else (lambda m, infer, plain: real_fold(m, infer, _same))
                t, c = time.perf_counter(), time.process_time()
                load_onnx(path, **kw)
                times[k].append(time.perf_counter() - t)
                cpu[k].append(time.process_time() - c)
        bounds.check_propagation, fold.fold_shapes = real, real_fold
        b, a = statistics.median(times["before"]), statistics.median(times["after"])
        cb, ca = statistics.median(cpu["before"]), statistics.median(cpu["after"])
        print(f"| {name} | {b:.3f} | {a:.3f} | {a / b:.2f} | {cb:.4f} | {ca:.4f} | {ca / cb:.2f} |")


TIMED = """
import json, statistics, sys, time
sys.path.insert(0, {root!r})
from explorer.frontends.onnx import load_onnx
kw = {kw!r}
load_onnx({path!r}, **kw)
cpu, wall = [], []
for _ in range({n}):
    t, c = time.perf_counter(), time.process_time()
    load_onnx({path!r}, **kw)
    cpu.append(time.process_time() - c)
    wall.append(time.perf_counter() - t)
print(json.dumps([statistics.median(cpu), statistics.median(wall)]))
"""


def trees(folder: Path, baselines: list[Path]) -> None:
    """Part 1 across trees: this one and each baseline, fresh processes in alternating rounds."""
    import onnx

    from tests.onnx_nets import hf_bert, resnet18

    models = {"bert-24-layers": (hf_bert(layers=24, hidden=256, heads=4, ffn=1024), {"batch": 2, "sequence": 64}),
              "resnet18": (resnet18(), {})}
    roots = [ROOT] + baselines
    print("| model | tree | CPU s | wall s | CPU / this tree |\n|---|---|---|---|---|")
    for name, (model, kw) in models.items():
        path = folder / f"{name}.onnx"
        onnx.save(model, path)
        got: dict[Path, list] = {r: [] for r in roots}
        for _ in range(ROUNDS):
            for root in roots:
                code = TIMED.format(root=str(root), path=str(path), kw=kw, n=IMPORTS)
                run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                     cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
                got[root].append(json.loads(run.stdout.strip().splitlines()[-1]))
        mine = statistics.median(c for c, _ in got[ROOT])
        for root in roots:
            cpu, wall = (statistics.median(x[i] for x in got[root]) for i in (0, 1))
            label = "this tree" if root == ROOT else root.name
            print(f"| {name} | {label} | {cpu:.4f} | {wall:.4f} | {cpu / mine:.2f} |")


CHILD = """
import resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
sys.path.insert(0, {root!r})
from explorer.core.errors import SpecError
from explorer.frontends.onnx import load_onnx
if {off!r}:
    import explorer.frontends.onnx_bounds as bounds
    bounds.check_propagation = lambda *a: None
t = time.perf_counter()
try:
    load_onnx({path!r})
    out = "imported"
except SpecError as err:
    out = "refused: " + str(err).split(": ", 1)[1][:70]
except MemoryError:
    out = "MemoryError at the 4 GB limit"
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(f"{{time.perf_counter() - t:.2f}}|{{hwm // 1024}}|{{out}}")
"""


def hostile(folder: Path) -> None:
    from tests.test_hostile_round4 import nested_net, range_net

    files = {"Range(0, 2^40) cast, added": (range_net(folder, 2 ** 40), True),
             "Range(0, 2^24) cast, added": (range_net(folder, 2 ** 24), True),
             "40 nested functions (2^39 nodes)": (nested_net(folder, 40), False)}
    print("\n| file | propagation bound | wall s | peak MB | result |\n|---|---|---|---|---|")
    for name, (path, also_off) in files.items():
        for off in (False, True) if also_off else (False,):
            run = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT), path=path, off=off)],
                                 capture_output=True, text=True, timeout=600)
            line = (run.stdout.strip().splitlines() or [f"-|-|crashed: {run.stderr.strip()[-80:]}"])[-1]
            print(f"| {name} | {'off' if off else 'on'} | " + " | ".join(line.split("|", 2)) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description="What the ONNX importer's bounds cost and save.")
    ap.add_argument("--baseline", action="append", type=Path, default=[],
                    help="a directory holding an older explorer/ package (repeatable): part 1 across trees")
    a = ap.parse_args()
    print(f"load {os.getloadavg()[0]:.2f} (1-minute average), {resource.getpagesize()}-byte pages")
    with tempfile.TemporaryDirectory() as tmp:
        if a.baseline:
            trees(Path(tmp), [b.resolve() for b in a.baseline])
        else:
            ordinary(Path(tmp))
        hostile(Path(tmp))
    print(f"load {os.getloadavg()[0]:.2f} (1-minute average) at the end")


if __name__ == "__main__":
    main()
