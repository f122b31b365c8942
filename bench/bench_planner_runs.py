"""Whole ``explore`` runs of the LLM planner (issue 23, item 1 and the short limits): the two
GPU-cluster runs of ``bench_whole_runs.py`` as ratios to ``python -c "import numpy"``, and the
time-limited runs, whose wall time is set against their ``--time-limit``.

Every case is a separate process, round robin (one run of each case per round), median of N
rounds after an untimed warm-up round, wall and CPU (user + system) time. ``--before EXPLORE``
also runs another installed ``explore`` (e.g. one built from main in its own venv) in the same
rounds and adds its columns.

    python bench/bench_planner_runs.py                          # median of 5
    python bench/bench_planner_runs.py --before /tmp/base/.venv/bin/explore --repeat 3
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_whole_runs import CLUSTER_RUNS, child_env, explore_command, run_once  # noqa: E402

LIMITED = (  # (arguments, the limit): trial 11 #12
    (("--model", "gpt3-175b", "--array", "dgx-a100", "--gpus", "1024", "--batch", "1536", "--time-limit", "0.5"), 0.5),
    (("--model", "mixtral-8x22b", "--array", "dgx-h100", "--gpus", "512", "--batch", "1024", "--time-limit", "1"), 1.0),
    # issue 23 item 2: the order up to the first score (0.1-0.25 s here) under the clock too
    (("--model", "mixtral-8x22b", "--array", "dgx-h100", "--gpus", "1024", "--batch", "1024", "--time-limit", "0.3"),
     0.3),
    (("--model", "gpt3-175b", "--array", "dgx-a100", "--gpus", "1024", "--batch", "1536", "--time-limit", "0.2"), 0.2),
)


def cases() -> list[tuple[str, tuple[str, ...], float | None]]:
    out = [("explore --model alexnet", ("--model", "alexnet"), None)]
    out += [(f"explore --model {m} --array {a}", ("--model", m, "--array", a), None) for m, a in CLUSTER_RUNS]
    out += [("explore " + " ".join(args), args, limit) for args, limit in LIMITED]
    return out


def status_of(explore: list[str], args: tuple[str, ...], env) -> str:
    """The run's status and layouts scored, from one more run."""
    out = subprocess.run([*explore, *args], capture_output=True, text=True, env=env).stdout
    line = next((x for x in out.splitlines() if x.startswith("status:")), "")
    scored = re.search(r"([\d,]+) scored", line)
    return line.split()[1].rstrip(",") + (f", {scored.group(1)} scored" if scored else "") if line else "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--before", metavar="EXPLORE", help="another explore script, timed alongside")
    args = ap.parse_args()
    env = child_env(True)
    explore = explore_command()
    commands = [("import numpy", [sys.executable, "-c", "import numpy"], None, "")]
    for name, argv, limit in cases():
        commands.append((name, [*explore, *argv], limit, "after"))
        if args.before:
            commands.append((name, [args.before, *argv], limit, "before"))
    times: dict[int, list[tuple[float, float]]] = {i: [] for i in range(len(commands))}
    for r in range(args.repeat + 1):
        for i, (_n, cmd, _l, _w) in enumerate(commands):
            got = run_once(cmd, env)
            if r:
                times[i].append(got)
    med = {i: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for i, v in times.items()}
    base_w, base_c = med[0]
    print(f"baseline: python -c 'import numpy' wall {base_w:.3f} s, cpu {base_c:.3f} s (median of {args.repeat})")
    print(f"{'case':78s} {'which':6s} {'wall':>7s} {'ratio':>6s} {'cpu':>7s} {'ratio':>6s}  limit / status")
    for i, (name, cmd, limit, which) in enumerate(commands[1:], 1):
        w, c = med[i]
        extra = ""
        if limit is not None:
            extra = f"{w / limit:.2f}x its {limit:g} s limit; " + status_of([cmd[0]], tuple(cmd[1:]), env)
        print(f"{name:78s} {which:6s} {w:7.3f} {w / base_w:5.2f}x {c:7.3f} {c / base_c:5.2f}x  {extra}")
    print("load:", os.getloadavg())


if __name__ == "__main__":
    main()
