"""Uneven splits of the zoo's transformers (attention and embedding nodes) on ``tpu-mix-16``.

For vit-b16 (the ImageNet transformer), bert-base and gpt2-small (and llama-7b with ``--llama``),
space accpar, alpha grid 1/16: ``explore split --split equal | proportional | search | levels``
(``app.split.split_run``, run in the same process): wall time, the step time (the evaluator's,
slowest accelerator) and its ratio to the equal split's; then the speedups of the best of them
over data parallelism, the trick and HyPar's plan (all three with an equal split), and what
``--split optimal`` (the joint solver, ``--time-limit`` 60 s) does: its status, wall time, step
time and gap, or its one-line refusal (graph shapes it does not cover).

    python bench/bench_uneven_attention.py
    python bench/bench_uneven_attention.py --llama   # also llama-7b (slower)
"""

from __future__ import annotations

import argparse
import time

from explorer.app.split import Split, split_run
from explorer.core.errors import SpecError
from explorer.core.partition import Space
from explorer.frontends import load_array, load_model

NETWORKS = ("vit-b16", "bert-base", "gpt2-small")
SPLITS = (Split.EQUAL, Split.PROPORTIONAL, Split.SEARCH, Split.LEVELS)


def table(names, time_limit_s: float) -> None:
    arr = load_array("tpu-mix-16")
    print("tpu-mix-16 (8 TPU-v2 | 8 TPU-v3), space accpar, alpha grid 1/16; wall s / step ms (/ equal)")
    print("| network | " + " | ".join(str(s.value) for s in SPLITS) + " | best vs DP | vs trick | vs HyPar | optimal |")
    print("|---|" + "---|" * (len(SPLITS) + 4))
    for name in names:
        net = load_model(name)
        runs, cells = {}, []
        for s in SPLITS:
            t0 = time.perf_counter()
            r = split_run(net, arr, Space.ACCPAR, s)
            runs[s] = (r, time.perf_counter() - t0)
        eq = runs[Split.EQUAL][0].step_time_s
        for s in SPLITS:
            r, wall = runs[s]
            cells.append(f"{wall:.2f} s / {float(r.step_time_s) * 1e3:.4g} ({float(r.step_time_s / eq):.3f})")
        best = min((r for r, _ in runs.values()), key=lambda r: r.step_time_s)
        t0 = time.perf_counter()
        try:
            o = split_run(net, arr, Space.ACCPAR, Split.OPTIMAL, time_limit_s=time_limit_s)
            opt = (f"{o.status} in {time.perf_counter() - t0:.1f} s, {float(o.step_time_s) * 1e3:.4g} ms, "
                   f"gap {float(o.gap) * 100:.3f}%")
        except SpecError as err:
            opt = f"refused in {time.perf_counter() - t0:.1f} s: {str(err).split(': ', 1)[-1][:90]}"
        print(f"| {name} | " + " | ".join(cells) + f" | {float(best.speedup('all-I')):.3f} | "
              f"{float(best.speedup('trick')):.3f} | {float(best.speedup('hypar')):.3f} | {opt} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama", action="store_true")
    ap.add_argument("--time-limit", type=float, default=60.0, help="the joint solver's limit (s)")
    args = ap.parse_args()
    table(NETWORKS + (("llama-7b",) if args.llama else ()), args.time_limit)


if __name__ == "__main__":
    main()
