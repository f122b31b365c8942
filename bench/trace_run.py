"""Where a whole ``explore`` process spends its wall time: a timeline from the process's start.

    python bench/trace_run.py -- --model alexnet --array tpu-mix-16 --space accpar --split optimal --time-limit 5
    python bench/trace_run.py --depth 3 --min-ms 20 -- check --uneven --model resnet50 --array tpu-mix-16

Runs ``explore ARGS`` in a child interpreter whose sampling thread records, every ``--every-ms``,
the main thread's stack: the imports under way (the outermost module being imported) or the
outermost ``--depth`` functions of the project's own code (``explorer/``, ``solvers/``). Runs of
equal samples become the timeline's steps, each with its start and its length in seconds since the
process's start (its start time in ``/proc``, as ``explore --time-limit`` counts it); steps
shorter than ``--min-ms`` are folded into the next. The first line is the interpreter's start-up
before the first sample; the last is the process's exit (``os._exit``, timed in the child) and
the parent's wall clock. Sampling costs about 1% (a thread waking every 5 ms); the traced
process's own output is discarded.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import os, sys, threading, time
def _since_start():
    with open("/proc/self/stat") as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as f:
        up = float(f.read().split()[0])
    return up - ticks / os.sysconf("SC_CLK_TCK")
OFFSET = _since_start() - time.perf_counter()
OUT, EVERY, DEPTH = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
sys.argv = ["explore"] + sys.argv[4:]
MAIN = threading.get_ident()
samples = [(time.perf_counter() + OFFSET, time.process_time(), "start-up (interpreter, site)")]
OWN = ("/explorer/", "/solvers/")
SKIP = ("cli_common.py", "/click/")

def label(frame):
    own, imported = [], None
    while frame is not None:
        code = frame.f_code
        if code.co_name == "_find_and_load" and "importlib" in code.co_filename:
            imported = frame.f_locals.get("name", "?")  # (the outermost one wins: the walk goes outwards)
            own = []  # (the project's frames inside the import do not count)
        if any(p in code.co_filename for p in OWN) and not any(p in code.co_filename for p in SKIP):
            own.append(code.co_filename.rsplit("/", 1)[1][:-3] + "." + code.co_name)
        frame = frame.f_back
    if imported is not None:  # (and the project's innermost function that asked for it)
        name = imported if imported.startswith("explorer") else imported.split(".")[0]
        return f"import {name}" + (f" (in {own[0]})" if own else "")
    return " > ".join(list(reversed(own))[:DEPTH]) or "(outside the project)"

def sample():
    while True:
        time.sleep(EVERY)
        frame = sys._current_frames().get(MAIN)
        if frame is not None:
            samples.append((time.perf_counter() + OFFSET, time.process_time(), label(frame)))

threading.Thread(target=sample, daemon=True).start()
_exit = os._exit
def traced_exit(code):
    samples.append((time.perf_counter() + OFFSET, time.process_time(), "exit"))
    with open(OUT, "w") as f:
        for t, cpu, what in samples:
            f.write(f"{t:.4f}\t{cpu:.4f}\t{what}\n")
    _exit(code)
os._exit = traced_exit
from explorer.app.cli import main
try:
    main()
finally:
    traced_exit(0)
"""


def steps(samples: list[tuple[float, float, str]], min_s: float) -> list[tuple[float, float, float, str]]:
    """(start, length, CPU seconds, label) of each run of equal labels; runs under ``min_s`` folded
    into the next."""
    runs: list[list] = []
    for t, cpu, what in samples:
        if runs and runs[-1][3] == what:
            continue
        runs.append([t, cpu, 0.0, what])
    for i, r in enumerate(runs):  # (start, CPU at start) -> (start, length, CPU spent)
        nxt = runs[i + 1] if i + 1 < len(runs) else r
        r[2] = nxt[1] - r[1]
        r[1] = nxt[0] - r[0]
    out: list[list] = []
    for r in runs:
        if out and out[-1][1] < min_s:  # too short to show: its time goes to this step
            r = [out[-1][0], out[-1][1] + r[1], out[-1][2] + r[2], r[3]]
            out.pop()
        if out and out[-1][3] == r[3]:
            out[-1][1] += r[1]
            out[-1][2] += r[2]
            continue
        out.append(r)
    return [tuple(r) for r in out]


def trace(args: list[str], every_ms: float, depth: int, min_ms: float) -> tuple[list, float]:
    """The timeline of one traced run of ``explore args`` and the parent's wall clock of it."""
    with tempfile.NamedTemporaryFile(suffix=".trace") as f:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", CHILD, f.name, str(every_ms / 1000), str(depth)] + args,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        rows = (ln.rstrip("\n").split("\t", 2) for ln in open(f.name) if ln.strip())
        samples = [(float(t), float(cpu), what) for t, cpu, what in rows]
    return steps(samples, min_ms / 1000), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every-ms", type=float, default=5.0)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--min-ms", type=float, default=30.0)
    ap.add_argument("--json", action="store_true", help="the steps as JSON")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    timeline, wall = trace(args, a.every_ms, a.depth, a.min_ms)
    if a.json:
        print(json.dumps({"wall_s": wall, "load": load, "steps": timeline}))
        return
    print(f"explore {' '.join(args)}   (load {load})")
    print(f"{'start':>8} {'wall':>7} {'cpu':>6}  step (s since the process's start)")
    for start, length, cpu, what in timeline:
        print(f"{start:8.3f} {length:7.3f} {cpu:6.3f}  {what}")
    print(f"process wall (parent's clock): {wall:.3f} s")


if __name__ == "__main__":
    main()
