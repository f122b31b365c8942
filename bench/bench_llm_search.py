"""Wall time of the LLM planner (``solvers.llm_search``) on the issue's speed targets and a few zoo
models, against exhaustive scoring of the same space in the same process (the baseline: every
candidate through ``evaluate_llm``, no pruning).

    python bench/bench_llm_search.py            # the two targets and the zoo rows, with the baseline
    python bench/bench_llm_search.py --no-baseline
    python bench/bench_llm_search.py --model mixtral-8x7b --model mixtral-8x22b   # some rows only

Targets (issue 21, "Speed"): GPT-3 175B on 1,024 A100 (dgx-a100), batch 1,536: proven or <= 2% gap
in <= 60 s on 2 cores; LLaMA-3 405B on 16,384 H100 (dgx-h100) answered in <= 120 s.
"""

from __future__ import annotations

import argparse
import time

from explorer.frontends import load_cluster
from explorer.frontends.transformer_problem import llm_problem
from explorer.frontends.transformer_source import load_transformer
from explorer.solvers.llm_search import search
from explorer.solvers.llm_space import LlmSpace

ROWS = [  # model, cluster, GPUs, batch (None: the zoo's), target seconds (None: no target)
    ("gpt3-175b", "dgx-a100", 1024, 1536, 60),
    ("llama3-405b", "dgx-h100", 16384, None, 120),
    ("gpt3-1.7b", "dgx-a100", 16, None, None),
    ("gpt3-18.4b", "dgx-a100", 256, None, None),
    ("llama3-70b", "dgx-h100", 1024, None, None),
    ("gpt3-1t", "dgx-a100", 3072, None, None),
    ("mixtral-8x7b", "dgx-h100", 64, 256, None),  # mixture of experts: the expert degree searched too
    ("mixtral-8x22b", "dgx-h100", 256, None, None),
]


def plan_text(r) -> str:
    if r.best is None:
        return "-"
    c = r.best.candidate
    v = f" v={c.virtual}" if c.virtual > 1 else ""
    e = f" e={c.degrees.expert}" if c.degrees.expert > 1 else ""
    return (f"t={c.degrees.tensor} p={c.degrees.pipeline}{v} d={c.degrees.data}{e} b={c.micro_batch} "
            f"{c.recompute.value} z{c.zero.value}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-baseline", action="store_true", help="skip exhaustive scoring (the baseline)")
    ap.add_argument("--model", action="append", default=None, help="only these rows' models (repeatable)")
    args = ap.parse_args()
    head = (f"{'model':<12} {'cluster':<9} {'GPUs':>6} {'layouts':>7} {'scored':>6} {'status':<9} {'gap':>5} "
            f"{'plan':<35} {'step s':>8} {'MFU':>6} {'wall s':>7} {'target':>6} {'exhaustive s':>12} {'ratio':>6} same")
    print(head)
    print("-" * len(head))
    for model, cluster, gpus, batch, target in ROWS:
        if args.model and model not in args.model:
            continue
        src = load_transformer(model)
        p = llm_problem(src.shape, load_cluster(cluster, gpus), batch or src.batch, src.sequence, src.name)
        t0 = time.perf_counter()
        r = search(p, LlmSpace())
        wall = time.perf_counter() - t0
        base, ratio, same = "-", "-", "-"
        if not args.no_baseline:
            t1 = time.perf_counter()
            full = search(p, LlmSpace(), prune=False)
            bw = time.perf_counter() - t1
            base, ratio = f"{bw:.1f}", f"{bw / wall:.1f}x"
            same = "yes" if (full.best is None) == (r.best is None) and (
                r.best is None or full.best.step_time_s == r.best.step_time_s) else "NO"
        gap = "-" if r.gap is None else f"{float(r.gap) * 100:.1f}%"
        ev = r.best.evaluation if r.best else None
        print(f"{model:<12} {cluster:<9} {gpus:>6} {r.candidates:>7} {r.scored:>6} {r.status.value:<9} {gap:>5} "
              f"{plan_text(r):<35} {float(ev.step_time_s) if ev else float('nan'):>8.3f} "
              f"{float(ev.mfu) * 100 if ev else float('nan'):>5.1f}% {wall:>7.2f} {target or '-':>6} {base:>12} "
              f"{ratio:>6} {same}", flush=True)


if __name__ == "__main__":
    main()
