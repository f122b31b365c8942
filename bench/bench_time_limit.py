"""Does ``--time-limit`` bound the whole CP-SAT solve? (issue 23, item 2: within 10%, the model's build included.)

Each case runs ``explore --solver cpsat --time-limit T --format json`` as a process and prints
the limit, the solver's reported wall time (from the solve's start: the OR-Tools import, the
exact method on constrained problems, the model's build, the hint and the search), its ratio to
the limit, and the whole process's wall time (start-up, loading and the output on top).

    python bench/bench_time_limit.py                      # ResNet-50 and BERT-base at H=10, 5 s and 20 s
    python bench/bench_time_limit.py --limits 60 --models resnet50
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bench_whole_runs import explore_command  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["resnet50", "bert-base"])
    ap.add_argument("--limits", nargs="+", type=float, default=[5.0, 20.0])
    ap.add_argument("--array", default="array-1024")
    args = ap.parse_args()
    print(f"{'model':<12}{'limit s':>9}{'solve s':>9}{'/ limit':>9}{'process s':>11}  status")
    for model in args.models:
        for limit in args.limits:
            cmd = explore_command() + ["--model", model, "--array", args.array, "--space", "accpar", "--solver", "cpsat",
                                       "--time-limit", str(limit), "--format", "json"]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True)
            process = time.perf_counter() - t0
            if proc.returncode not in (0, 1):
                raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()}")
            out = json.loads(proc.stdout)
            gap = "" if out.get("gap") is None else f", gap {100 * out['gap']:.1f}%"
            print(f"{model:<12}{limit:>9g}{out['wall_s']:>9.2f}{out['wall_s'] / limit:>8.2f}x{process:>11.2f}  {out['status']}{gap}")


if __name__ == "__main__":
    main()
