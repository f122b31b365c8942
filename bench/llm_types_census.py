"""Census of the block types' proof over the GPT-3 and LLaMA-3 zoo blocks (docs/llm-training.md,
"Tensor-level types"): per (model, t, sequence parallelism, recompute, attention batch split),
whether the across-blocks certificate holds with one last type best on both counts, and
whether the minimiser's pick differs from Megatron's pattern.

    python bench/llm_types_census.py
"""

from __future__ import annotations

import time
from pathlib import Path

from explorer.core.llm_memory import Recompute
from explorer.frontends import load_cluster
from explorer.frontends.transformer_problem import llm_problem
from explorer.frontends.transformer_source import load_transformer
from explorer.solvers.llm_types import block_types

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    models = sorted(p.stem for p in (ROOT / "models").glob("*.yaml") if p.stem.startswith(("gpt3-", "llama3-")))
    configs = certified = differ = 0
    by_model = []
    t0 = time.perf_counter()
    for name in models:
        src = load_transformer(name, 512)
        pr = llm_problem(src.shape, load_cluster("dgx-a100", 8), 64, src.sequence, src.name)
        n = d = 0
        for t in (2, 4, 8):
            if pr.dims.heads % t:
                continue
            for sp in (True, False):
                for rc in Recompute:
                    for split in (True, False):
                        bt = block_types(pr, t, split, sp, rc)
                        best = min(bt.options, key=lambda o: (o.best.amount, o.post))
                        one = all(best.best.amount <= o.best.amount and best.post <= o.post for o in bt.options)
                        configs += 1
                        n += 1
                        certified += one and bt.blocks_certified(best.last)
                        if best.best.types != bt.megatron:
                            differ += 1
                            d += 1
        by_model.append((name, n, d))
    print("| model | configurations | pick differs from Megatron's |")
    print("|---|---:|---:|")
    for name, n, d in by_model:
        print(f"| {name} | {n} | {d} |")
    print(f"\n{configs} configurations: certificate with one last type best on both counts in {certified}, "
          f"the pick differs from Megatron's pattern in {differ} ({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
