"""The uneven exact DP's early-end bounds: the separable bound (before) against the convex-combination
bound (after, ``solvers.uneven_bound.convex_bound``) on trial 13 and zoo chains (docs/benchmarks.md,
"The early ends' bound").

Each case runs ``explore --model M --array mix-4 --space accpar --split optimal --solver exact
--alpha-grid G --time-limit T --format json`` as a process (what a user sees: status, plan, bound,
gap, whole wall time), then, in this process, both bounds on the same columns with their CPU
times: the run's bound is the higher of them (the convex one under the time objective).

    python bench/bench_uneven_bound.py                       # sfc (trial 13), alexnet, vgg-a, lenet-c at 5 and 30 s
    python bench/bench_uneven_bound.py --models sfc --limits 5
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bench_whole_runs import explore_command  # noqa: E402

# trial 13's mix-4.yaml (one TPU-v2, three v3; two levels)
MIX4 = Path(tempfile.gettempdir()) / "bench-uneven-bound-mix-4.yaml"
MIX4.write_text("version: 1\nname: mix-4\nlevels: 2\ndtype_bytes: 2\nkinds:\n  v2: {peak_TFLOPS: 45, memory_GiB: 16}\n"
                "  v3: {peak_TFLOPS: 123, memory_GiB: 32}\naccelerators: [v2, v3, v3, v3]\nlink_bandwidth_GBps: [70, 50]\n")


def run(model: str, grid: int, limit: float) -> tuple[dict, float]:
    args = ["--model", model, "--array", str(MIX4), "--space", "accpar", "--split", "optimal", "--solver", "exact",
            "--alpha-grid", str(grid), "--time-limit", str(limit), "--format", "json"]
    t0 = time.perf_counter()
    out = subprocess.run([*explore_command(), *args], capture_output=True, text=True)
    return json.loads(out.stdout), time.perf_counter() - t0


def bounds(model: str, grid: int) -> tuple[Fraction, float, Fraction, float]:
    """(separable bound s, its CPU s, convex bound s, its CPU s beyond the separable pass)."""
    from explorer.core.partition import Space
    from explorer.core.uneven import alpha_grid, alpha_space
    from explorer.frontends import load_array, load_model
    from explorer.solvers.uneven import _chain_columns
    from explorer.solvers.uneven_bound import convex_bound, separable_bound
    from explorer.solvers.uneven_prune import time_score

    arr, net = load_array(str(MIX4)), load_model(model)
    _H, _L, costs, cols = _chain_columns(net, arr, Space.ACCPAR, alpha_space(arr, alpha_grid(grid)), "exact")
    score = time_score(arr, costs)
    rows: list = []
    t0 = time.process_time()
    sep = Fraction(separable_bound(costs, cols, score, keep=rows), score.scale)
    t1 = time.process_time()
    cvx = convex_bound(arr, costs, cols, rows=rows)
    return sep, t1 - t0, cvx, time.process_time() - t1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="*", default=["sfc", "alexnet", "vgg-a", "lenet-c"])
    ap.add_argument("--limits", nargs="*", type=float, default=[5.0, 30.0])
    ap.add_argument("--grid", type=int, default=16)
    a = ap.parse_args()
    print(f"load {open('/proc/loadavg').read().split()[:3]}")
    print("| model | limit s | status | wall s | plan ms | separable ms (gap) | convex ms (gap) | "
          "separable CPU s | convex CPU s |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for model in a.models:
        sep, sep_s, cvx, cvx_s = bounds(model, a.grid)
        for limit in a.limits:
            got, wall = run(model, a.grid, limit)
            value = Fraction(got["objective_value"]) if got.get("objective_value") else None
            bound = Fraction(got["bound"]) if got.get("bound") else None
            assert bound is None or cvx is None or bound >= cvx or value == bound, (model, bound, cvx)

            def gap(b):
                return "-" if b is None or value is None else f"{float(b) * 1e3:.4f} ({float(1 - b / value):.1%})"
            print(f"| {model} | {limit:g} | {got['status']} | {wall:.2f} | "
                  f"{'-' if value is None else f'{float(value) * 1e3:.4f}'} | {gap(sep)} | {gap(cvx)} | "
                  f"{sep_s:.2f} | {cvx_s:.2f} |")


if __name__ == "__main__":
    main()
