"""Does ``--time-limit`` bound the whole process? (issue 23, item 2: within 10%, start-up, imports and build included.)

Each case runs ``explore ... --time-limit T --format json`` as a process, ``--repeat`` times, and
prints the limit, the whole process's wall time (median, and the range), its ratio to the limit,
the solver's reported ``wall_s`` (median; since ``explore`` counts the limit from its process's
start, the start-up is in it) and every status seen. ``--before EXPLORE`` times another
installed ``explore`` script (e.g. one built from an older commit) in the same rounds, one run of
each after the other, so that both see the same load.

First the floor: the median wall time of ``explore --version`` (the interpreter and the
command-line module), of a trivial run (lenet-c, the default DP) and of a trivial split (lenet-c
``--split equal`` on tpu-mix-16). Each case's line then gives its ratio to the limit, whole
("/limit": the user's wall clock, the claim) and less its kind's floor ("floor", timed once in
each of the case's rounds, as the load changes; "-floor": the trivial split's for ``--split`` and
``check --uneven``, else the trivial run's; reported apart, never in place of the whole), its median CPU time (user + system: far below the wall time, the run waited
for a core of a loaded machine), and a verdict: "within" (the whole process within 1.10x the
limit), "floor" (only less the floor) or "OVER". The load average is printed before the floor and
after each group. ``bench/trace_run.py`` shows where one run's time goes.

The floors come with references, the steps under them (``python -c pass``, ``-c "import click,
yaml"``, ``-c "import explorer.app.cli"``) and ``python -c "import numpy"``, and with ``--before``
each floor of both scripts in the same rounds. The processes
run as an installed package does, with their bytecode cached (``PYTHONDONTWRITEBYTECODE`` taken out
of their environment, as ``bench_whole_runs.py`` does; an untimed run of each floor first writes the
caches): with it set and no cache written before (Python still reads one), every process compiles
the project's ~100 modules again (0.03-0.1 s of CPU, a third to a half of the floor under
``--time-limit 0.1``); ``--no-bytecode-cache`` keeps it as it is.

    python bench/bench_time_limit.py                                  # every group, 5 runs each
    python bench/bench_time_limit.py --groups exact pruned --repeat 5 --before /tmp/base-venv/bin/explore
    python bench/bench_time_limit.py --groups cpsat --repeat 1        # ResNet-50 and BERT-base at H=10, 5 s and 20 s
    python bench/bench_time_limit.py --groups cap --limit 60          # exact under a cap, each case at 60 s
    python bench/bench_time_limit.py --groups uneven --repeat 3       # ResNet-50 on tpu-mix-16, 1 GiB, split optimal
    python bench/bench_time_limit.py --groups split check-uneven --repeat 3   # the uneven split (arrays of kinds)
    python bench/bench_time_limit.py --groups trial13 levels --repeat 3        # exact's column tables; levels, limit spent
    python bench/bench_time_limit.py --groups split-caps --repeat 3 --before /tmp/base/.venv/bin/explore  # caps, split optimal
    python bench/bench_time_limit.py --groups levels-grid many-kinds --repeat 3  # grid 1/1024, 1024 kinds (every route)
    python bench/bench_time_limit.py --groups tenth --repeat 9 --before /tmp/base/.venv/bin/explore  # the floors, 0.1 s cases
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bench_whole_runs import child_env, explore_command  # noqa: E402

H10 = ["--array", "array-1024", "--space", "accpar"]
H12 = ["--array", "array-1024", "--levels", "12", "--space", "accpar", "--solver", "pruned"]
MEM = ["--model", "resnet50", "--array", "accpar-128", "--space", "accpar", "--solver", "exact"]
CAP = ["--model", "resnet18", "--levels", "5", "--space", "accpar", "--solver", "exact", "--cap", "4=5MB"]
UNEVEN_MEM = ["--model", "resnet50", "--array", "tpu-mix-16", "--space", "accpar", "--split", "optimal",
              "--memory", "1", "--weight-copies", "2"]
SPLIT = ["--model", "resnet50", "--array", "tpu-mix-16", "--space", "accpar", "--split", "optimal"]
UNEVEN = ["check", "--uneven", "--model", "resnet50", "--array", "tpu-mix-16", "--space", "accpar"]
# trial 13's mix-4.yaml (one TPU-v2, three v3; two levels), written once for the runs
MIX4 = Path(tempfile.gettempdir()) / "bench-time-limit-mix-4.yaml"
MIX4.write_text("version: 1\nname: mix-4\nlevels: 2\ndtype_bytes: 2\nkinds:\n  v2: {peak_TFLOPS: 45, memory_GiB: 16}\n"
                "  v3: {peak_TFLOPS: 123, memory_GiB: 32}\naccelerators: [v2, v3, v3, v3]\nlink_bandwidth_GBps: [70, 50]\n")
TRIAL13 = ["--model", "sfc", "--array", str(MIX4), "--space", "accpar", "--split", "optimal", "--solver", "exact",
           "--alpha-grid", "16"]  # 15.9 M column pairs: past the ends-at-once estimate (26.8 s), tables 40-100 s
LEVELS = ["--model", "resnet50", "--array", "tpu-mix-16", "--space", "accpar", "--split", "levels"]
# the hostile trial's grid: alexnet on tpu-mix-16 at --alpha-grid 1024 (the level DP: > 90 s at 5 s, 848 MB)
GRID = ["--model", "alexnet", "--array", "tpu-mix-16", "--space", "accpar", "--alpha-grid", "1024"]
# an array of 1024 kinds (each accelerator its own peak: every group of every level a free class), written once
KINDS = Path(tempfile.gettempdir()) / "bench-time-limit-kinds-1024.yaml"
KINDS.write_text("version: 1\nname: kinds-1024\nlevels: 10\ndtype_bytes: 2\nkinds:\n"
                 + "".join(f"  k{i}: {{peak_TFLOPS: {40 + i / 8}, memory_GiB: 32}}\n" for i in range(1024))
                 + f"accelerators: [{', '.join(f'k{i}' for i in range(1024))}]\nlink_bandwidth_GBps: [{', '.join(['70'] * 10)}]\n")
MANY = ["--model", "alexnet", "--array", str(KINDS), "--space", "accpar"]


def MIX_CAP(model: str, cap: str) -> list[str]:  # noqa: N802
    return ["--model", model, "--array", "tpu-mix-16", "--space", "accpar", "--split", "optimal", "--cap", cap]


# group -> (label, limit s, arguments)
GROUPS = {
    "exact": [  # resnet50 under memory, 7 levels: a limit no plan meets (proven), one the solve cannot settle in time
        ("resnet50 mem 0.05 exact", 3.0, MEM + ["--memory", "0.05"]),
        ("resnet50 mem 0.2 exact", 3.0, MEM + ["--memory", "0.2"]),
    ],
    "cap": [  # trial 10, finding 16: a graph label pass under a cap and the memory limit (two resources)
        ("resnet18 H5 cap time", 10.0, CAP + ["--objective", "time"]),
        ("resnet18 H5 cap traffic", 5.0, CAP),
    ],
    "pruned": [  # 3^12 type vectors per layer
        ("lenet-c H12 pruned", 2.0, ["--model", "lenet-c"] + H12),
        ("alexnet H12 pruned", 2.0, ["--model", "alexnet"] + H12),
        ("alexnet H12 pruned", 4.0, ["--model", "alexnet"] + H12),
    ],
    "uneven": [  # the uneven joint solver under memory (its penalised passes ~4 s each)
        ("resnet50 mix mem 1 joint", 10.0, UNEVEN_MEM),
        ("resnet50 mix mem 1 joint", 2.0, UNEVEN_MEM),
    ],
    "cpsat": [
        ("resnet50 cpsat", 5.0, ["--model", "resnet50", "--solver", "cpsat"] + H10),
        ("resnet50 cpsat", 20.0, ["--model", "resnet50", "--solver", "cpsat"] + H10),
        ("bert-base cpsat", 5.0, ["--model", "bert-base", "--solver", "cpsat"] + H10),
        ("bert-base cpsat", 20.0, ["--model", "bert-base", "--solver", "cpsat"] + H10),
    ],
    "split": [  # resnet50 on two kinds (tpu-mix-16): the joint solver, then each --solver (brute refuses it)
        *(("resnet50 split optimal", t, SPLIT) for t in (0.1, 2.0, 5.0)),
        *((f"resnet50 split {s}", t, SPLIT + ["--solver", s]) for s in ("exact", "cpsat", "dp") for t in (2.0, 5.0)),
    ],
    "check-uneven": [("resnet50 check --uneven", t, UNEVEN) for t in (0.1, 2.0, 5.0)],
    "trial13": [("sfc mix-4 1/16 exact", t, TRIAL13) for t in (27.0, 30.0, 35.0)],
    "levels": [("resnet50 split levels", t, LEVELS) for t in (0.1, 1.0, 5.0)],  # 0.1, 1 s: spent by the set-up
    "tenth": [("resnet50 split optimal", 0.1, SPLIT), ("resnet50 check --uneven", 0.1, UNEVEN),  # below the floor
              ("resnet50 split levels", 0.1, LEVELS)],
    "levels-grid": [  # every uneven route at grid 1/1024 (brute refuses it at once)
        ("alexnet g1024 levels", 2.0, GRID + ["--split", "levels"]),
        ("alexnet g1024 levels", 5.0, GRID + ["--split", "levels"]),
        *((f"alexnet g1024 {s}", 5.0, GRID + ["--split", "optimal"] + (["--solver", s] if s else []))
          for s in ("", "dp", "exact", "cpsat")),
        ("alexnet g1024 search", 5.0, GRID + ["--split", "search"]),
        ("alexnet g1024 check", 5.0, ["check", "--uneven"] + GRID),
    ],
    "many-kinds": [  # 1024 kinds: the level DP and the proving solvers (refused at once: 10^1237 columns)
        ("1024 kinds levels", 5.0, MANY + ["--split", "levels"]),
        *((f"1024 kinds {s}", 5.0, MANY + ["--split", "optimal", "--solver", s]) for s in ("dp", "exact", "cpsat", "brute")),
        ("1024 kinds proportional", 5.0, MANY + ["--split", "proportional"]),  # one exact evaluation (was 9-17 s of bigints)
        ("1024 kinds proportional dp", 5.0, MANY + ["--split", "proportional", "--solver", "dp"]),  # the DP over types
    ],
    "split-caps": [  # trial findings: caps under --split optimal (the cap floor, the labels' clock, the suggestion search)
        ("alexnet mix cap 1=1MB", 10.0, MIX_CAP("alexnet", "1=1MB")),
        ("alexnet mix cap 0=10MB g2", 5.0, MIX_CAP("alexnet", "0=10MB") + ["--alpha-grid", "2"]),
        ("alexnet mix cap 0=18.5MB", 5.0, MIX_CAP("alexnet", "0=18.5MB")),  # above its floor (18.01 MB): the labels
        ("vgg-a mix cap 0=30MB", 10.0, MIX_CAP("vgg-a", "0=30MB")),
        ("alexnet check cap 0=10MB", 10.0, ["check", "--uneven"] + MIX_CAP("alexnet", "0=10MB")[:-4] + ["--cap", "0=10MB"]),
    ],
}


class Run(NamedTuple):
    process: float  # the whole process's wall time, s (the parent's clock)
    cpu: float  # its user + system CPU time, s (a run given a small share of a loaded machine's cores shows it)
    wall_s: float  # the run's own report
    status: str  # with the gap


KILL_AFTER = 120.0  # s: a run still going then is killed (the grid-1024 level DP before the fix ran for minutes)


ENV: dict[str, str] = child_env(True)  # the processes' environment (``main``: with or without the bytecode cache)


def timed(cmd: list[str]) -> tuple[subprocess.CompletedProcess, float, float]:
    """``cmd`` run to its end (killed after ``KILL_AFTER``: return code None): the process, its wall
    time and its CPU time (user + system), s."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=KILL_AFTER, env=ENV)
    except subprocess.TimeoutExpired as err:
        proc = subprocess.CompletedProcess(cmd, None, err.stdout or "", err.stderr or "")
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return proc, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_once(explore: list[str], args: list[str], limit: float) -> Run:
    """One run of ``explore args --time-limit limit --format json``."""
    cmd = explore + args + ["--time-limit", str(limit), "--format", "json"]
    proc, process, cpu = timed(cmd)
    if proc.returncode is None:
        return Run(process, cpu, 0.0, f"killed at {KILL_AFTER:g} s")
    if proc.returncode == 2 and "error:" in proc.stderr:  # refused in one line (e.g. cpsat's uneven form: chains only)
        return Run(process, cpu, 0.0, "refused (exit 2)")
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()}")
    out = json.loads(proc.stdout)
    if "status" not in out:  # check --uneven: proven or not, and how many rows the limit left unrun
        late = sum("spent before it" in r.get("reason", "") for r in out["solvers"].values())
        return Run(process, cpu, out["wall_s"],
                   ("optimum" if out["optimum"] else "no optimum") + (f", {late} not run" if late else ""))
    gap = "" if out.get("gap") is None else f" {100 * out['gap']:.0f}%"
    return Run(process, cpu, out["wall_s"], out["status"] + gap)


# the fixed start-up cost, reported apart: the interpreter and the command-line module's imports, and a
# trivial run of each kind (the smallest zoo network: a run's imports, the network and its tables; the
# even split's default DP, and the uneven split's equal split on two kinds), the floor of its cases
FLOORS = {"--version": ["--version"], "trivial run": ["--model", "lenet-c", "--format", "json"],
          "trivial split": ["--model", "lenet-c", "--array", "tpu-mix-16", "--space", "accpar", "--split", "equal",
                            "--format", "json"]}


def floor_of(case: list[str]) -> str:
    """The floor a case is measured against: the trivial split's for ``--split`` and ``check --uneven``."""
    return "trivial split" if "--split" in case or "--uneven" in case else "trivial run"


# the steps under every run, each a process of this interpreter: its start (with site), then click and
# yaml (what any command line and spec reader here needs), then the command-line module (``explore
# --version`` less its parsing); and numpy's import (a run that needs it)
REFERENCES = {"interpreter": ["-c", "pass"], "click, yaml": ["-c", "import click, yaml"],
              "the CLI module": ["-c", "import explorer.app.cli"], "import numpy": ["-c", "import numpy"]}


def floor_runs(scripts: list[tuple[str, list[str]]], repeat: int) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """(wall, CPU) of ``repeat`` rounds of the references and of each of ``FLOORS`` with each of
    ``scripts``, one run of each per round (an untimed round first: it writes the bytecode caches)."""
    runs = {("", name): [sys.executable, *args] for name, args in REFERENCES.items()}
    runs.update({(who, name): explore + args for name, args in FLOORS.items() for who, explore in scripts})
    for cmd in runs.values():
        timed(cmd)
    out: dict[tuple[str, str], list[tuple[float, float]]] = {key: [] for key in runs}
    for _ in range(repeat):
        for key, cmd in runs.items():
            out[key].append(timed(cmd)[1:])
    return out


def print_floors(floors: dict[tuple[str, str], list[tuple[float, float]]]) -> None:
    """Each floor's median wall time, its range and its median CPU time."""
    for (who, name), runs in floors.items():
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        what = f"python {' '.join(REFERENCES[name])}" if name in REFERENCES else f"explore {' '.join(FLOORS[name])}"
        print(f"floor{f' ({who})' if who else ''}: {what}: {statistics.median(walls):.3f} s "
              f"({min(walls):.3f}-{max(walls):.3f}), cpu {statistics.median(cpus):.3f} s")


HEADER = (f"{'case':<26}{'limit':>6}{'':>7}{'process':>9}{'range':>13}{'/limit':>8}{'floor':>7}{'-floor':>8}{'cpu':>7}"
          f"{'wall_s':>8}  verdict  status")
WITHIN = 1.10  # issue 23: the whole process within 10% of its limit


def row(label: str, limit: float, who: str, runs: list[Run], floor: float) -> str:
    """A case's line: the median process time and its range, its ratio to the limit (whole, and less
    ``floor``: its kind's, timed in the same rounds), the median CPU time, the run's own wall_s,
    the verdict and the statuses."""
    walls = [r.process for r in runs]
    med = statistics.median(walls)
    statuses = ", ".join(sorted({r.status for r in runs}))
    verdict = "within" if med <= WITHIN * limit else ("floor" if med - floor <= WITHIN * limit else "OVER")
    return (f"{label:<26}{limit:>6g}{who:>7}{med:>9.2f}{min(walls):>7.2f}-{max(walls):<5.2f}{med / limit:>7.2f}x"
            f"{floor:>7.2f}{max(med - floor, 0.0) / limit:>7.2f}x{statistics.median(r.cpu for r in runs):>7.2f}"
            f"{statistics.median(r.wall_s for r in runs):>8.2f}  {verdict:<7}  {statuses}")


def load() -> str:
    with open("/proc/loadavg", encoding="ascii") as f:
        return " ".join(f.read().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", nargs="+", choices=list(GROUPS), default=list(GROUPS))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--before", metavar="EXPLORE", help="another explore script, timed in the same rounds")
    ap.add_argument("--limit", type=float, help="every case at this limit instead of its own")
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="keep PYTHONDONTWRITEBYTECODE (no cache is written: with none written before, "
                         "every process compiles the explorer's modules again)")
    args = ap.parse_args()
    global ENV
    ENV = child_env(not args.no_bytecode_cache)
    scripts = [("after" if args.before else "", explore_command())] + ([("before", [args.before])] if args.before else [])
    cache = "on" if "PYTHONDONTWRITEBYTECODE" not in ENV else "not written (PYTHONDONTWRITEBYTECODE; one written before is read)"
    print(f"load {load()}; bytecode cache {cache}")
    print_floors(floor_runs(scripts, args.repeat))
    print(f"load {load()}")
    print(HEADER)
    for group in args.groups:
        for label, limit, case in GROUPS[group]:
            limit = args.limit or limit
            runs: dict[str, list[Run]] = {who: [] for who, _ in scripts}
            floor: list[float] = []  # its kind's floor, once a round (the load changes)
            for _ in range(args.repeat):
                for who, explore in scripts:
                    runs[who].append(run_once(explore, case, limit))
                floor.append(timed(scripts[0][1] + FLOORS[floor_of(case)])[1])
            for who, _ in scripts:
                print(row(label, limit, who, runs[who], statistics.median(floor)), flush=True)
        print(f"  (after {group}: load {load()})", flush=True)


if __name__ == "__main__":
    main()
