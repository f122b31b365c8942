"""Predicted against published LLM training measurements (issue 21, item 8).

    python bench/validate_llm.py [--markdown]

For every row of spaces/llm-validation/*.yaml: the step model's prediction
(explorer/core/llm_step.py, the A100 efficiency calibrated on Korthikanti et al.'s Table 5;
H100 uncalibrated) in the row's measure, the measured value and the error (predicted /
measured - 1). Korthikanti Table 5 (iteration time, both recompute modes; the calibration rows,
and the 530B run with 8-way data parallelism kept aside), Megatron-LM SC21 Table 1 (TFLOP/s per
GPU, Megatron's count) and Llama 3 Table 4 (model TFLOP/s per GPU), kept aside. Where a source
leaves the micro-batch or recompute mode open the model picks the fastest that fits, as
``--layout megatron`` does. ``--markdown`` prints the table as docs/llm-training.md has it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from explorer.frontends.llm_validation import load_validation, predict, validation_files  # noqa: E402

TABLES = ("korthikanti-table5", "megatron-sc21-table1", "llama3-table4")
UNITS = {"iteration_time_s": "s", "tflops_per_gpu": "TFLOP/s", "model_tflops_per_gpu": "model TFLOP/s"}


def table_rows():
    """(row, prediction or None) for every row of every table, in order."""
    out = []
    for name in TABLES:
        for row in load_validation(name):
            out.append((row, None if row.role == "unsupported" else predict(row)))
    return out


def _fmt(x) -> str:
    return f"{float(x):.2f}" if x < 100 else f"{float(x):.1f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args(argv)
    assert set(TABLES) <= set(validation_files())
    t0 = time.perf_counter()
    rows = table_rows()
    wall = time.perf_counter() - t0
    head = ["table", "model", "GPUs", "t", "p", "d", "b", "v", "recompute", "role", "measure", "measured", "predicted",
            "error", "bubble", "fits"]
    lines = []
    for row, pr in rows:
        par = row.parallelism
        if pr is None:
            lines.append([row.table, row.model, f"{row.gpus:,}", par.tensor, par.pipeline, par.data, "", "", "", row.role,
                          UNITS[row.measure], _fmt(row.measured), "not modelled", "", "", ""])
            continue
        ev, lay = pr.evaluation, pr.layout
        lines.append([row.table, row.model, f"{row.gpus:,}", par.tensor, par.pipeline, par.data, lay.micro_batch,
                      lay.virtual_stages, lay.recompute.value, row.role + ("" if row.verified else " (unverified)"), UNITS[row.measure],
                      _fmt(row.measured), _fmt(pr.value), f"{float(pr.error):+.1%}", f"{float(ev.bubble_fraction):.1%}",
                      "yes" if ev.fits else "NO"])
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---" if i < 2 or i in (8, 9, 10) else "---:" for i in range(len(head))) + "|")
        for cells in lines:
            print("| " + " | ".join(str(c) for c in cells) + " |")
    else:
        widths = [max(len(str(c)) for c in col) for col in zip(head, *lines)]
        for cells in [head, *lines]:
            print("  ".join(str(c).rjust(w) for c, w in zip(cells, widths)))
    errs = {}
    for row, pr in rows:
        if pr is not None:
            errs.setdefault(row.table, []).append(abs(float(pr.error)))
    print()
    for name, e in errs.items():
        print(f"{name}: {len(e)} rows, mean |error| {sum(e) / len(e):.1%}, max |error| {max(e):.1%}")
    print(f"wall time {wall:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
