"""Graph networks (issues 5, 11): time to a proven optimum for the zoo's graphs (ResNets, transformers,
MobileNetV2, EfficientNet-B0; no memory limit), and the
hierarchical DP's gap, at 16 and 128 accelerators in both spaces.

The DP on graphs is the per-level frontier elimination (exact per level); CP-SAT proves the
joint optimum; the exact solver's variable elimination over type vectors runs where its
tables fit (else "refused") and must agree; every plan is re-scored by the evaluator.
Prints a Markdown table.

    python bench/bench_graphs.py [--time-limit S] [--workers N] [--models a,b] [--arrays hypar-16,accpar-128]
"""

from __future__ import annotations

import argparse
import time

from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.app.run import rescore
from explorer.frontends import load_array, load_model
from explorer.core.errors import Refused
from explorer.solvers import cpsat, dp, exact
from explorer.core.solution import SolveOptions, Status


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--models", default="resnet18,resnet34,resnet50,bert-base,gpt2-small,vit-b16,llama-7b,mobilenet-v2,"
                    "efficientnet-b0")
    ap.add_argument("--arrays", default="hypar-16,accpar-128")
    args = ap.parse_args()
    t0 = time.perf_counter()
    print("| network | nodes (weighted) | accelerators | space | DP ms | DP gap | CP-SAT vars | CP-SAT | CP-SAT s | exact s |")
    print("|---|---:|---:|---|---:|---:|---:|---|---:|---:|")
    for arr in args.arrays.split(","):
        for space in (Space.HYPAR, Space.ACCPAR):
            for m in args.models.split(","):
                p = Problem(load_model(m), load_array(arr), space)
                d = dp.solve(p)
                c = cpsat.solve(p, SolveOptions(workers=args.workers, time_limit_s=args.time_limit))
                rescore(p, d)
                rescore(p, c)
                try:
                    e = exact.solve(p)
                    rescore(p, e)
                    if c.status is Status.OPTIMAL and e.objective != c.objective:
                        raise SystemExit(f"{m}: exact {e.objective} != cpsat {c.objective}")
                    ex = f"{e.wall_s:.2f}"
                except Refused:
                    ex = "refused"
                w = sum(not L.is_join for L in p.network.layers)
                if c.status is Status.OPTIMAL:
                    gap = f"{100 * (d.objective - c.objective) / c.objective:.3f}%"
                else:
                    gap = f"<= {100 * (d.objective - c.bound) / max(1, c.bound):.3f}%"
                print(f"| {m} | {p.num_layers} ({w}) | {p.array.accelerators} | {space.value} | {d.wall_s * 1e3:.1f} | {gap} | "
                      f"{c.info['variables']:,} | {c.status.value} | {c.wall_s:.2f} | {ex} |", flush=True)
    print(f"\n(total {time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
