"""Split modes on huge arrays of two kinds (the hostile trial's alternating v2, v3 arrays of 2^H
leaves, model sfc): does ``--time-limit`` hold? Each case runs ``explore --model sfc --array
ALT-H --split MODE --time-limit T`` as a process and prints its wall time, its CPU time (user +
system: on a loaded machine far below the wall time), the ratio of each to the limit, the run's
status and the load average before each row. ``--before EXPLORE`` times another installed
``explore`` (e.g. one built from an older commit) in the same rounds, one run after the other.

    python bench/bench_split_scale.py                          # H = 12, 14, 16; every mode; limit 2 s
    python bench/bench_split_scale.py --levels 16 --modes search --before /tmp/base/.venv/bin/explore
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

MODES = ("equal", "proportional", "search", "optimal", "levels")


def alternating(levels: int) -> Path:
    """The array file: 2^levels leaves alternating v2, v3 (written once per size)."""
    path = Path(tempfile.gettempdir()) / f"bench-split-scale-alt-{levels}.yaml"
    if not path.exists():
        leaves = ", ".join(["v2, v3"] * 2 ** (levels - 1))
        path.write_text(f"version: 1\nname: alt-{levels}\nlevels: {levels}\ndtype_bytes: 4\nkinds:\n"
                        "  v2: {peak_TFLOPS: 45, memory_GiB: 16}\n  v3: {peak_TFLOPS: 123, memory_GiB: 32}\n"
                        f"accelerators: [{leaves}]\nlink_bandwidth_GBps: [{', '.join(['70'] * levels)}]\n")
    return path


def timed(explore: str, args: list[str]) -> tuple[float, float, str]:
    """(wall s, CPU s, status) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([explore, *args, "--format", "json"], capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    try:
        status = json.loads(out.stdout).get("status", "?")
    except json.JSONDecodeError:
        status = f"rc {out.returncode}: {out.stderr.strip().splitlines()[-1][:60] if out.stderr.strip() else ''}"
    return wall, cpu, status


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--levels", type=int, nargs="+", default=[12, 14, 16])
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    ap.add_argument("--limit", type=float, default=2.0)
    ap.add_argument("--before", help="another explore script, timed in the same rounds")
    a = ap.parse_args()
    scripts = [("this", shutil.which("explore") or "explore")] + ([("before", a.before)] if a.before else [])
    print(f"{'H':>3} {'mode':<13} {'build':<7} {'wall s':>7} {'/limit':>7} {'cpu s':>6} {'/limit':>7}  load   status")
    for levels in a.levels:
        array = alternating(levels)
        for mode in a.modes:
            for name, explore in scripts:
                load = os.getloadavg()[0]
                wall, cpu, status = timed(explore, ["--model", "sfc", "--array", str(array), "--split", mode,
                                                    "--time-limit", str(a.limit)])
                print(f"{levels:>3} {mode:<13} {name:<7} {wall:7.2f} {wall / a.limit:6.2f}x {cpu:6.2f} "
                      f"{cpu / a.limit:6.2f}x  {load:4.1f}  {status}", flush=True)


if __name__ == "__main__":
    main()
