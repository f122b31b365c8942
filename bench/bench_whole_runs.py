"""Time what a user waits for: whole ``explore`` processes, as ratios to ``python -c "import numpy"``.

Every case runs as a separate process, round robin (one run of each case per round, so load
from other processes hits every case alike), the median (or ``--stat best``: the best) of N rounds, wall-clock
time and CPU time (user + system: what the process itself used, less sensitive to other load on the
machine). The baseline is the same interpreter importing numpy. One untimed warm-up round comes
first, and the processes may write bytecode caches (``PYTHONDONTWRITEBYTECODE`` is taken out of
their environment), as an installed package has them: with it set, every run of an editable
install compiled each of its ~100 modules again (numpy, installed with its caches, did not), about
0.1 s a run. ``--no-bytecode-cache`` keeps the variable as it is. Cases and targets (issue 8, item 5; tightened by issue 23,
item 1), judged on wall time:

- ``explore --help`` and ``explore list``: <= 3x the baseline;
- ``explore --model NAME`` (table output, dp, the default array) on every zoo network: <= 2x;
- ``explore --model NAME --array CLUSTER`` (the LLM planner) on two zoo transformers: <= 2x;
- a 1,000-layer chain on 1,024 accelerators (H = 10) in the accpar space: <= 3x;
- a 10,000-layer chain, same array and space: <= 10x (and <= 2 s wall on a quiet machine).

``--before EXPLORE`` names another installed ``explore`` script (e.g. one built from an older
commit in its own venv); every ``explore`` case then also runs it in the same rounds, and the
table adds its wall and CPU times, their ratios to the baseline and the speedups (before / after).

The chains are seeded random networks with consistent shapes, written as YAML network specs
to a temporary directory (``write_chain``), so the YAML loader is part of what is timed.

    python bench/bench_whole_runs.py              # median of 5
    python bench/bench_whole_runs.py --repeat 3 --quick   # skip the 10,000-layer chain
    python bench/bench_whole_runs.py --before /tmp/base-venv/bin/explore   # before/after columns
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from explorer.frontends import zoo

BIG_ARRAY = "array-1024"  # H = 10
# LLM training plans on a GPU cluster (the planner's search over t, p, d, micro-batch, ...)
CLUSTER_RUNS = (("gpt3-1.7b", "dgx-a100"), ("llama3-8b", "dgx-h100"))


def chain_spec(seed: int, layers: int, batch: int = 32) -> str:
    """A YAML network spec of a random chain whose shapes are consistent layer to layer.

    Convolutions keep or halve the spatial size; once it is 1, fc layers may follow (features =
    the previous layer's channels) and convolutions after them read a 1x1 map."""
    rng = random.Random(seed)
    lines = ["version: 1", f"name: chain-{seed}-{layers}", f"batch: {batch}", "layers:"]
    ch, size = rng.randint(1, 16), 16
    for i in range(layers):
        dout = rng.randint(1, 64)
        if size == 1 and rng.random() < 0.5:
            lines.append(f"  - {{name: fc{i}, kind: fc, in_features: {ch}, out_features: {4 * dout}}}")
            ch = 4 * dout
            continue
        out = size // 2 if size > 1 and rng.random() < 0.1 else size
        k = rng.choice([1, 3, 5]) if size > 1 else 1
        lines.append(f"  - {{name: conv{i}, kind: conv, in_channels: {ch}, out_channels: {dout}, "
                     f"kernel: {k}, in_size: {size}, out_size: {out}}}")
        ch, size = dout, out
    return "\n".join(lines) + "\n"


def write_chain(directory: Path, seed: int, layers: int) -> Path:
    path = directory / f"chain-{layers}.yaml"
    path.write_text(chain_spec(seed, layers), encoding="utf-8")
    return path


def explore_command() -> list[str]:
    """The installed ``explore`` script next to this interpreter, else the same entry point via -c."""
    script = Path(sys.executable).parent / "explore"
    if script.exists():
        return [str(script)]
    found = shutil.which("explore")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; sys.argv[0] = 'explore'; from explorer.app.cli import main; main()"]


def array_models() -> list[str]:
    """The zoo's networks that ``explore --model NAME`` plans on the default array: not the
    mixtures of experts, which it refuses (they are planned on a GPU cluster only)."""
    from explorer.frontends import load_model
    from explorer.frontends.transformer import MOE_NOTE

    return [name for name in zoo.zoo_files()
            if not any(note.startswith(MOE_NOTE) for note in load_model(name).approximations)]


def child_env(bytecode_cache: bool) -> dict[str, str]:
    """The processes' environment: ours, without PYTHONDONTWRITEBYTECODE unless told to keep it."""
    env = dict(os.environ)
    if bytecode_cache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_once(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # 1: a plan was printed but breaks a limit (LLaMA-7B's memory); a traceback is a broken run
    # (an install missing a module also exits 1), never a time
    if proc.returncode not in (0, 1) or "Traceback (most recent call last)" in proc.stderr:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="rounds; each case's median (or best) is kept")
    ap.add_argument("--stat", choices=("median", "best"), default="median", help="what of the rounds is shown")
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="keep PYTHONDONTWRITEBYTECODE (every run then compiles the explorer's modules again)")
    ap.add_argument("--quick", action="store_true", help="skip the 10,000-layer chain")
    ap.add_argument("--before", metavar="EXPLORE", help="another explore script, timed alongside (before/after)")
    args = ap.parse_args()
    explore = explore_command()
    before = [args.before] if args.before else None
    with tempfile.TemporaryDirectory(prefix="bench-whole-") as tmp:
        d = Path(tmp)
        # (label, explore arguments or a full command, target kind, target value): "x" = ratio to baseline
        cases: list[tuple[str, list[str], str, float]] = [
            ("baseline: import numpy", [sys.executable, "-c", "import numpy"], "", 0.0),
            ("explore --help", ["--help"], "x", 3),
            ("explore list", ["list"], "x", 3),
        ]
        for name in array_models():
            cases.append((f"explore --model {name}", ["--model", name], "x", 2))
        for model, cluster in CLUSTER_RUNS:
            cases.append((f"{model} on {cluster}", ["--model", model, "--array", cluster], "x", 2))
        c1k = write_chain(d, 1, 1000)
        cases.append(("chain 1,000 x H=10 accpar", ["--model", str(c1k), "--array", BIG_ARRAY, "--space", "accpar"], "x", 3))
        if not args.quick:
            c10k = write_chain(d, 2, 10000)
            cases.append(("chain 10,000 x H=10 accpar", ["--model", str(c10k), "--array", BIG_ARRAY, "--space", "accpar"], "x", 10))
        commands = [cmd if i == 0 else explore + cmd for i, (_, cmd, _, _) in enumerate(cases)]
        old = [None] + [before + cmd for _, cmd, _, _ in cases[1:]] if before else [None] * len(cases)
        walls, cpus, walls_old, cpus_old = rounds(commands, old, args.repeat, child_env(not args.no_bytecode_cache))
    pick = statistics.median if args.stat == "median" else min
    best, cpu = [pick(w) for w in walls], [pick(c) for c in cpus]
    best_old = [(pick(w), pick(c)) if w else (float("inf"), float("inf")) for w, c in zip(walls_old, cpus_old)]
    print_table(cases, best, cpu, best_old if before else None)


def rounds(commands: list[list[str]], old: list, repeat: int, env: dict[str, str]):
    """Per case, its wall and CPU times over the rounds (and the ``--before`` script's), after one
    untimed warm-up round."""
    for cmd in commands + [c for c in old if c is not None]:
        run_once(cmd, env)
    walls, cpus, walls_old, cpus_old = ([[] for _ in commands] for _ in range(4))
    for _ in range(repeat):
        for i, cmd in enumerate(commands):
            wall, used = run_once(cmd, env)
            walls[i].append(wall)
            cpus[i].append(used)
            if old[i] is not None:
                wall, used = run_once(old[i], env)
                walls_old[i].append(wall)
                cpus_old[i].append(used)
    return walls, cpus, walls_old, cpus_old


def print_table(cases, best, cpu, best_old) -> None:
    base, base_cpu = best[0], cpu[0]
    extra = f"{'before s':>10}{'ratio':>8}{'speedup':>9}{'b. cpu':>8}{'ratio':>8}{'speedup':>9}" if best_old else ""
    print(f"{'case':<30}{'wall s':>8}{'ratio':>8}{'cpu s':>8}{'ratio':>8}{extra}{'target':>10}  met (wall)")
    for i, ((label, _, kind, target), t, c) in enumerate(zip(cases, best, cpu)):
        cells = f"{label:<30}{t:>8.3f}{t / base:>7.2f}x{c:>8.3f}{c / base_cpu:>7.2f}x"
        if best_old:
            o, oc = best_old[i]
            cells += f"{'':>10}{'':>8}{'':>9}{'':>8}{'':>8}{'':>9}" if i == 0 else \
                f"{o:>10.3f}{o / base:>7.2f}x{o / t:>8.2f}x{oc:>8.3f}{oc / base_cpu:>7.2f}x{oc / c:>8.2f}x"
        if not kind:
            print(cells)
            continue
        want = f"<= {target:g}x"
        print(f"{cells}{want:>10}  {'yes' if t / base <= target else 'NO'}")


if __name__ == "__main__":
    main()
