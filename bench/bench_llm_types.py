"""What proving the block's tensor-level types costs the LLM planner: the search with the types
searched and proven (``LlmSpace()``) against the same search with Megatron's types only
(``search_types=False``, the baseline), in the same process, and whether the types change the plan.

    python bench/bench_llm_types.py
    python bench/bench_llm_types.py --rows 2     # the issue's two speed targets only

Columns: wall seconds of each (the least of ``--repeat`` runs), ratio = proven / Megatron-only, the status, whether the plan's types
are proven (``tensor_types_proven``: the plan's types bound equals its step and every block is at
its own least exchange), the step of each and the plan's types against Megatron's pattern.
"""

from __future__ import annotations

import argparse

from explorer.frontends import load_cluster
from explorer.frontends.transformer_problem import llm_problem
from explorer.frontends.transformer_source import load_transformer
from explorer.solvers.llm_search import search, tensor_types_proven
from explorer.solvers.llm_space import LlmSpace
from timing import best_of  # bench/timing.py (this folder is on sys.path when run as a script)

ROWS = [  # model, cluster, GPUs, batch (None: the zoo's)
    ("gpt3-175b", "dgx-a100", 1024, 1536),
    ("llama3-405b", "dgx-h100", 16384, None),
    ("gpt3-1.7b", "dgx-a100", 16, None),
    ("llama3-8b", "dgx-h100", 64, None),
    ("gpt3-18.4b", "dgx-a100", 256, None),
]


def plan_text(r) -> str:
    c = r.best.candidate
    v = f" v={c.virtual}" if c.virtual > 1 else ""
    return f"t={c.degrees.tensor} p={c.degrees.pipeline}{v} d={c.degrees.data} b={c.micro_batch} {c.recompute.value} z{c.zero.value}"


def timed(p, space, repeat: int):
    """The search's result and its least wall time of ``repeat`` runs (the machine is shared)."""
    out = []
    wall = best_of(lambda: out.append(search(p, space)), repeat)
    return out[-1], wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=len(ROWS), help="the first N rows only")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each search; the least wall time is shown")
    args = ap.parse_args()
    head = (f"{'model':<12} {'GPUs':>6} {'proven s':>8} {'megatron s':>10} {'ratio':>6} {'status':<8} {'types':<7} "
            f"{'plan':<34} {'step s':>9} {'megatron step s':>15} types")
    print(head)
    print("-" * len(head))
    for model, cluster, gpus, batch in ROWS[:args.rows]:
        src = load_transformer(model)
        p = llm_problem(src.shape, load_cluster(cluster, gpus), batch or src.batch, src.sequence, src.name)
        base, wb = timed(p, LlmSpace(search_types=False), args.repeat)
        r, w = timed(p, LlmSpace(), args.repeat)
        same = "Megatron's" if r.best.layout.tensor_types is None else "other"
        print(f"{model:<12} {gpus:>6} {w:>8.2f} {wb:>10.2f} {w / wb:>5.2f}x {r.status.value:<8} "
              f"{'proven' if tensor_types_proven(r) else 'no':<7} {plan_text(r):<34} {float(r.best.step_time_s):>9.4f} "
              f"{float(base.best.step_time_s):>15.4f} {same}", flush=True)


if __name__ == "__main__":
    main()
