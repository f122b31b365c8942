"""The LLM search on the zoo's mixtures of experts with and without the tensor level in its time
bound (``llm_search.block_floor``: Megatron's block and the routed tokens' extra copies), back to
back in one process: "before" is the bound with a mixture's tensor term 0 (as it was), "after"
today's. Prints the layouts scored, the least wall of ``--repeat`` runs each, the plan and
whether both find the same step time.

    python bench/bench_moe_bound.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction

from explorer.frontends import load_cluster
from explorer.frontends.transformer_problem import llm_problem
from explorer.frontends.transformer_source import load_transformer
from explorer.solvers import llm_search
from explorer.solvers.llm_space import LlmSpace

ROWS = [("mixtral-8x7b", "dgx-h100", 64, 256), ("mixtral-8x22b", "dgx-h100", 256, None),
        ("mixtral-8x7b", "dgx-h100", 256, 1024)]
TODAY = llm_search.block_floor


def before(problem, cand, types):
    return Fraction(0) if problem.dims.moe else TODAY(problem, cand, types)


def timed(p, floor, repeat: int):
    llm_search.block_floor = floor  # a bench: both bounds in one process
    try:
        best = None
        for _ in range(repeat):
            t0 = time.perf_counter()
            r = llm_search.search(p, LlmSpace())
            wall = time.perf_counter() - t0
            best = wall if best is None else min(best, wall)
        return r, best
    finally:
        llm_search.block_floor = TODAY


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{'model':<14}{'GPUs':>5}{'layouts':>8}{'scored before':>14}{'after':>7}{'wall before s':>14}"
          f"{'after s':>8}  {'status':<8} plan (after)                         same")
    for model, cluster, gpus, batch in ROWS:
        src = load_transformer(model)
        p = llm_problem(src.shape, load_cluster(cluster, gpus), batch or src.batch, src.sequence, src.name)
        a, wa = timed(p, before, args.repeat)
        b, wb = timed(p, TODAY, args.repeat)
        same = "yes" if (a.best is None) == (b.best is None) and (
            a.best is None or a.best.step_time_s == b.best.step_time_s) else "NO"
        c = b.best.candidate if b.best else None
        plan = "-" if c is None else (f"t={c.degrees.tensor} p={c.degrees.pipeline} v={c.virtual} d={c.degrees.data} "
                                      f"e={c.degrees.expert} b={c.micro_batch} {c.recompute.value} z{c.zero.value}")
        print(f"{model:<14}{gpus:>5}{b.candidates:>8}{a.scored:>14}{b.scored:>7}{wa:>14.2f}{wb:>8.2f}  "
              f"{b.status.value:<8} {plan:<36} {same}", flush=True)


if __name__ == "__main__":
    main()
