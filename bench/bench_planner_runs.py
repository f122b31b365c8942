"""Whole ``explore`` runs of the LLM planner (issue 23, item 1 and the short limits): the two
GPU-cluster runs of ``bench_whole_runs.py`` as ratios to ``python -c "import numpy"``, and the
time-limited runs, whose wall time is set against their ``--time-limit``.

Every case is a separate process, round robin (one run of each case per round), median of N
rounds after an untimed warm-up round, wall and CPU (user + system) time. ``--before EXPLORE``
also runs another installed ``explore`` (e.g. one built from main in its own venv) in the same
rounds and adds its columns.

    python bench/bench_planner_runs.py                          # median of 5
    python bench/bench_planner_runs.py --before /tmp/base/.venv/bin/explore --repeat 3
    python bench/bench_planner_runs.py --order --before-tree /tmp/old-tree   # the search alone at 0.02 s
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
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


ORDER_CHILD = r"""
import sys, time
from explorer.app.llm_options import LlmRequest
from explorer.app.llm_run import build
from explorer.solvers import llm_search as S
problem, space, _ = build(LlmRequest({m!r}, {a!r}, {g!r}, {b!r}, None, None, None, None, None, None, None, None, 1.0))
res = S.search(problem, space, time_limit_s={limit!r})
print(res.wall_s, res.status.value, res.scored)
"""
ORDER_CASES = (("mixtral-8x22b", "dgx-h100", 1024, 1024), ("gpt3-175b", "dgx-a100", 1024, 1536))


def order_table(repeat: int, before_tree: str | None, limit: float = 0.02) -> None:
    """``--order``: the search's own wall (from its start) at a ``limit`` shorter than its order up to
    the first score, in process, one fresh process a run (``--before-tree DIR``: also with
    ``PYTHONPATH=DIR``, a tree whose ``explorer`` package holds an older commit), medians."""
    sides = [("after", None)] + ([("before", before_tree)] if before_tree else [])
    for m, a, g, b in ORDER_CASES:
        code = ORDER_CHILD.format(m=m, a=a, g=g, b=b, limit=limit)
        for which, tree in sides:
            env = dict(os.environ, **({"PYTHONPATH": tree} if tree else {}))
            runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                                   cwd=tempfile.gettempdir()).stdout.split() for _ in range(repeat)]  # not this tree
            wall = statistics.median(float(r[0]) for r in runs)
            print(f"{m} on {g:,} {a}, limit {limit:g} s: {which:6s} search {wall:.3f} s ({wall / limit:.1f}x), "
                  f"{runs[-1][1]}, {runs[-1][2]} scored", flush=True)
    print("load:", os.getloadavg())


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
    ap.add_argument("--order", action="store_true", help="the search alone at a limit shorter than its order")
    ap.add_argument("--before-tree", metavar="DIR", help="--order: also with PYTHONPATH=DIR")
    args = ap.parse_args()
    if args.order:
        return order_table(args.repeat, args.before_tree)
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
