"""Where the numpy paths start paying off: whole ``explore`` processes with every numpy path forced
off (plain Python integers) and forced on, on chains of growing length and on the large zoo nets,
at H = 4 (hypar-16, the default array) and H = 10 (array-1024, accpar). Each process sets
``explorer.core.thresholds.NUMPY_FROM_LAYERS`` (the one threshold of the cost tables, the plan
scoring and the DP's chain scan) before it runs; rounds alternate the two modes; medians.

    python bench/bench_numpy_threshold.py --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_whole_runs import child_env, run_once, write_chain  # noqa: E402

RUN = ("import sys; import explorer.core.thresholds as t; t.NUMPY_FROM_LAYERS = int(sys.argv[1]); "
       "sys.argv = ['explore'] + sys.argv[2:]; from explorer.app.cli import main; main()")
MODES = (("python", 10**9), ("numpy", 0))
ARRAYS = (("H=4 hypar-16", []), ("H=10 accpar", ["--array", "array-1024", "--space", "accpar"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--layers", default="128,256,512,1000,2000,3000,5000")
    ap.add_argument("--models", default="gpt3-1.7b,llama-7b,gpt3-1t,llama3-405b")
    args = ap.parse_args()
    env = child_env(True)
    with tempfile.TemporaryDirectory() as tmp:
        nets = [(f"chain {n}", str(write_chain(Path(tmp), 1, int(n)))) for n in args.layers.split(",")]
        nets += [(m, m) for m in args.models.split(",") if m]
        cases = [(f"{label} {where}", ["--model", model] + extra) for label, model in nets for where, extra in ARRAYS]
        times = {(c, m): [] for c, _ in cases for m, _ in MODES}
        for r in range(args.repeat + 1):  # round 0: warm-up
            for label, cmd in cases:
                for mode, threshold in MODES:
                    wall = run_once([sys.executable, "-c", RUN, str(threshold)] + cmd, env)[0]
                    if r:
                        times[(label, mode)].append(wall)
    print(f"{'case':<32}{'python s':>10}{'numpy s':>10}{'py/np':>8}")
    for label, _ in cases:
        p, n = (statistics.median(times[(label, m)]) for m, _ in MODES)
        print(f"{label:<32}{p:>10.3f}{n:>10.3f}{p / n:>8.2f}")


if __name__ == "__main__":
    main()
