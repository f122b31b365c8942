"""Redraw every figure of the docs (docs/sweeps/*.png, docs/figures/hypar/) from the shipped files.

Each figure is one `explore plot` of one `explore sweep` (the commands the pages show, in
docs/sweeps.md and docs/reproducing.md); HyPar's paper figures (`--only hypar`) are
`explore reproduce hypar` under both accountings, copied into docs/figures/hypar/. Sweeps run into --runs (default runs/), cached there,
so a second run only redraws; the images are written into docs/sweeps/ under the names the
pages link to. Needs the plot extra (matplotlib).

    python bench/make_doc_figures.py                      # every sweep, every figure
    python bench/make_doc_figures.py --only scalability   # one sweep's figures
    python bench/make_doc_figures.py --list               # what it would run

Measured on the shared 2-core machine: scalability 100 points in about 11 s, dp-gap 224 points
and bandwidth-batch 72 CP-SAT points in a few minutes each, accpar-mix 260 points in 150-200 s.
Look at every image it writes before committing it.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = "docs/sweeps"

# sweep name -> the plot commands of its figures (each: arguments after `explore plot RUN`)
FIGURES: dict[str, list[list[str]]] = {
    "scalability": [
        ["--x", "accelerators", "--y", "step_time_s", "--hue", "model", "--where", "solver=cpsat", "--logx", "--logy",
         "--title", "Step time of the traffic-optimal plan (CP-SAT, proven), 2 to 1,024 accelerators",
         "--out", f"{OUT}/scalability-step-time.png"],
        ["--x", "accelerators", "--y", "dp_gap", "--hue", "model", "--where", "solver=dp", "--logx",
         "--title", "HyPar DP's traffic over the proven optimum (dp_gap)",
         "--out", f"{OUT}/scalability-dp-gap.png"],
        ["--pareto", "--x", "accelerators", "--y", "step_time_s", "--where", "model=resnet50", "--hue", "solver",
         "--logx", "--logy", "--title", "ResNet-50: accelerators vs step time, Pareto front",
         "--out", f"{OUT}/scalability-pareto-resnet50.png"],
    ],
    "bandwidth-batch": [
        ["--kind", "heatmap", "--x", "batch", "--y", "link_bandwidth_GBps", "--z", "speedup_over_all_I",
         "--where", "model=vgg-a", "--title", "VGG-A, 16 accelerators: speedup of the optimal plan over data parallelism",
         "--out", f"{OUT}/bandwidth-batch-vgg-a.png"],
        ["--kind", "heatmap", "--x", "batch", "--y", "link_bandwidth_GBps", "--z", "speedup_over_all_I",
         "--where", "model=resnet50",
         "--title", "ResNet-50, 16 accelerators: speedup of the optimal plan over data parallelism",
         "--out", f"{OUT}/bandwidth-batch-resnet50.png"],
    ],
    "dp-gap": [
        ["--kind", "heatmap", "--x", "levels", "--y", "model", "--z", "dp_gap", "--where", "solver=dp",
         "--where", "space=accpar", "--title", "DP gap to the proven optimum, AccPar space (I, II, III)",
         "--out", f"{OUT}/dp-gap-accpar.png"],
        ["--kind", "heatmap", "--x", "levels", "--y", "model", "--z", "dp_gap", "--where", "solver=dp",
         "--where", "space=hypar", "--title", "DP gap to the proven optimum, HyPar space (I, II)",
         "--out", f"{OUT}/dp-gap-hypar.png"],
        ["--plan", "183", "--out", f"{OUT}/plan-vgg-a-accpar-16.png"],
    ],
    "accpar-mix": [
        ["--x", "accelerators_v3", "--y", "speedup_over_hypar_equal", "--hue", "model", "--where", "split=search",
         "--title", "uneven split (search) vs HyPar's plan with an equal split, 16 TPU chips",
         "--out", f"{OUT}/accpar-mix-speedup.png"],
        ["--x", "accelerators_v3", "--y", "speedup_over_all_I_equal", "--hue", "model", "--where", "split=search",
         "--title", "uneven split (search) vs data parallelism with an equal split, 16 TPU chips",
         "--out", f"{OUT}/accpar-mix-speedup-all-I.png"],
        ["--x", "accelerators_v3", "--y", "idle_s", "--hue", "model", "--where", "split=search",
         "--title", "idle time of the faster top-level group (search split)", "--out", f"{OUT}/accpar-mix-idle.png"],
        ["--x", "accelerators_v3", "--y", "speedup_over_hypar_equal", "--hue", "split", "--where", "model=vgg-a",
         "--title", "VGG-A: the split methods vs HyPar's plan with an equal split",
         "--out", f"{OUT}/accpar-mix-splits-vgg-a.png"],
    ],
}


# HyPar's paper figures (docs/reproducing.md, "The figures"): drawn by explore reproduce hypar
# into --runs (with its point cache), then copied where the page links them
PAPER = {"hypar": [("model", ("5", "6", "7", "8", "9", "10", "11", "12", "13"), "docs/figures/hypar"),
                   ("hypar-figures", ("5", "6", "7", "8", "12"), "docs/figures/hypar/hypar-figures")]}


def paper_commands(runs: str) -> list[list[str]]:
    out = []
    for accounting, numbers, dest in PAPER["hypar"]:
        run = f"{runs}/hypar-{accounting}"
        out.append(["explore", "reproduce", "hypar", *(a for n in numbers for a in ("--figure", n)),
                    "--accounting", accounting, "--out", run])
        out.append(["cp", *(f"{run}/hypar-fig{n}.png" for n in numbers), dest])
    return out


def commands(name: str, runs: str, workers: int | None) -> list[list[str]]:
    if name in PAPER:
        return paper_commands(runs)
    run = f"{runs}/{name}"
    sweep = ["explore", "sweep", f"spaces/{name}.yaml", "--out", run]
    if workers:
        sweep += ["--workers", str(workers)]
    return [sweep, *(["explore", "plot", run, *args] for args in FIGURES[name])]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", choices=sorted(FIGURES | PAPER), help="one sweep's figures (repeatable)")
    ap.add_argument("--runs", default="runs", help="folder of the sweeps' outputs and caches (default runs/)")
    ap.add_argument("--workers", type=int, default=None, help="sweep workers (default: one per core)")
    ap.add_argument("--list", action="store_true", help="print the commands, run nothing")
    args = ap.parse_args()
    for name in args.only or [*FIGURES, *PAPER]:
        for cmd in commands(name, args.runs, args.workers):
            print("$", shlex.join(cmd), flush=True)
            if args.list:
                continue
            t = time.perf_counter()
            r = subprocess.run(cmd, cwd=ROOT)
            if r.returncode != 0:
                print(f"failed (exit {r.returncode})", file=sys.stderr)
                return 1
            print(f"  {time.perf_counter() - t:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
