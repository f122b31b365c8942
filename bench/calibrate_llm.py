"""Recompute the A100 efficiency of the LLM step model from Korthikanti et al.'s Table 5.

    python bench/calibrate_llm.py

Prints the exact root of "mean over the 8 rows of predicted / measured iteration time = 1"
(explorer/core/llm_calibration.py), its rounding, the stored constant, and each row's
predicted time at the stored constant.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from explorer.core.llm_calibration import DIGITS, EFFICIENCY_A100, calibrate_efficiency, rounded  # noqa: E402
from explorer.core.llm_step import evaluate_llm  # noqa: E402
from explorer.frontends.llm_validation import calibration_rows  # noqa: E402


def main() -> int:
    t0 = time.perf_counter()
    rows = calibration_rows()
    exact = calibrate_efficiency(rows)
    wall = time.perf_counter() - t0
    print(f"exact root        {float(exact):.10f}  ({exact.numerator.bit_length()}-bit numerator)")
    print(f"rounded ({DIGITS} dp)   {rounded(exact)} = {float(rounded(exact))}")
    print(f"stored constant   {EFFICIENCY_A100} = {float(EFFICIENCY_A100)}  "
          f"({'equal' if rounded(exact) == EFFICIENCY_A100 else 'DIFFERENT: update llm_calibration.py'})")
    print(f"calibration time  {wall:.2f} s\n")
    print(f"{'model':>6} {'recompute':>9} {'t':>2} {'p':>3} {'measured s':>10} {'predicted s':>11} {'error':>7}")
    for problem, layout, measured in rows:
        ev = evaluate_llm(problem, layout)
        err = ev.step_time_s / measured - 1
        print(f"{problem.network.name:>6} {layout.recompute.value:>9} {layout.parallelism.tensor:>2} "
              f"{layout.parallelism.pipeline:>3} {float(measured):>10.2f} {float(ev.step_time_s):>11.2f} {float(err):>+7.1%}")
    return 0 if rounded(exact) == EFFICIENCY_A100 else 1


if __name__ == "__main__":
    raise SystemExit(main())
