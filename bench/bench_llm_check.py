"""How long ``explore check`` on a GPU cluster takes (the search against scoring every layout), as
whole processes, against an older tree in the same rounds.

Each case runs ``--repeat`` times, after and before interleaved (one run after the other); printed:
the median wall and CPU time (user + system of the child) of each, their range, the ratio after /
before, and the check's verdict (``agree``) and scored counts, which must be the same on both
sides. ``--before DIR``: a tree whose ``explorer`` package holds the older commit, its
``solvers``, ``models`` and ``spaces`` linked inside it (as for ``bench_check_limits.py``); without
it only the current install runs. The load average is printed before and after.

    python bench/bench_llm_check.py --repeat 5 --before /tmp/old-tree
    python bench/bench_llm_check.py --cases gpt3-175b
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import tempfile
import time

from timing import add_before_options, explore_runs

CASES = {  # name: the check's arguments (the README's GPT-3 175B and the manual's examples)
    "gpt3-175b": ["--model", "gpt3-175b", "--array", "dgx-a100", "--gpus", "1024", "--batch", "1536"],
    "llama3-405b": ["--model", "llama3-405b", "--array", "dgx-h100", "--gpus", "16384"],
    "mixtral-8x7b": ["--model", "mixtral-8x7b", "--array", "dgx-h100", "--gpus", "16", "--batch", "64", "--seq",
                     "1024"],
    "gpt3-1.7b": ["--model", "gpt3-1.7b", "--array", "dgx-a100", "--gpus", "8", "--batch", "32", "--seq", "512"],
}


def run_once(cmd: list[str], env: dict | None, args: list[str]) -> tuple[float, float, str]:
    """(wall s, CPU s, what the check said) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    # from a temporary folder: run from a checkout, ``-m`` would put its ``explorer`` before PYTHONPATH's
    proc = subprocess.run(cmd + ["check", *args, "--format", "json"], capture_output=True, text=True, env=env,
                          cwd=tempfile.gettempdir())
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
    out = json.loads(proc.stdout)
    said = (f"agree={out['agree']} search {out['search']['scored']}/{out['search']['candidates']} "
            f"exhaustive {out['exhaustive']['scored']} {out['exhaustive']['step_time_s']}")
    return wall, cpu, said


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    add_before_options(ap)
    args = ap.parse_args()
    runs = explore_runs(args.before)
    print(f"load before: {os.getloadavg()[0]:.1f}")
    print(f"{'case':<14}{'run':<8}{'wall':>8}{'range':>15}{'CPU':>8}{'range':>15}{'wall x':>8}{'CPU x':>7}  said")
    for case in args.cases:
        seen: dict[str, tuple[list[float], list[float], set[str]]] = {name: ([], [], set()) for name, _, _ in runs}
        for _ in range(args.repeat):
            for name, cmd, env in runs:
                wall, cpu, said = run_once(cmd, env, CASES[case])
                seen[name][0].append(wall)
                seen[name][1].append(cpu)
                seen[name][2].add(said)
        base = seen.get("before")
        for name, (walls, cpus, said) in seen.items():
            w, c = statistics.median(walls), statistics.median(cpus)
            ratio = (f"{w / statistics.median(base[0]):>8.2f}{c / statistics.median(base[1]):>7.2f}"
                     if base is not None else f"{'':>8}{'':>7}")
            print(f"{case:<14}{name:<8}{w:>7.2f}s {min(walls):>6.2f}-{max(walls):<6.2f}{c:>7.2f}s "
                  f"{min(cpus):>6.2f}-{max(cpus):<6.2f}{ratio}  {'; '.join(sorted(said))}")
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
