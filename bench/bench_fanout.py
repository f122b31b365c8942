"""Time ``fanout.level_amounts`` (k-way levels, integer sums) on the LLM zoo, in-process.

Prints, per model: nodes, the fan-outs (pipeline, data, tensor levels top first), the time of
``level_amounts`` (best of N), of the term-by-term Fraction reference ``level_amounts_rational``
(the baseline, run in the same process; the results are checked equal) and their ratio. Rows:
data level I everywhere, tensor level Megatron's types (QKV/Q/K/V/fc1/gate/up III, attention
and the rest II, embeddings III, joins II); the pipeline level is I (the planner cuts stages
instead; here it only makes a third level).

    python bench/bench_fanout.py            # the whole LLM zoo
    python bench/bench_fanout.py --quick    # three models
"""

from __future__ import annotations

import argparse

from explorer.core.fanout import level_amounts, level_amounts_rational
from explorer.core.network import LayerKind
from explorer.core.partition import PartitionType as T
from explorer.frontends import load_model
from timing import best_of  # bench/timing.py (this folder is on sys.path when run as a script)

MODELS = ["gpt3-1.7b", "gpt3-18.4b", "gpt3-175b", "gpt3-1t", "llama3-8b", "llama3-70b", "llama3-405b"]
COLUMN = ("c_attn", "mlp_fc", "_q", "_k", "_v", "_gate", "_up")  # column-parallel (III) node names


def tensor_type(x) -> T:
    if x.kind is LayerKind.EMBEDDING or (not x.is_join and x.name.endswith(COLUMN)):
        return T.III
    return T.II


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    models = MODELS[::3] if args.quick else MODELS
    print(f"{'model':>12} {'nodes':>6} {'fan-outs':>12} {'integer ms':>11} {'fraction ms':>12} {'ratio':>7}")
    for name in models:
        net = load_model(name)
        fanouts = (8, 16, 8)
        rows = [tuple(T.I for _ in net.layers)] * 2 + [tuple(tensor_type(x) for x in net.layers)]
        fast = level_amounts(net, 16, fanouts, rows)
        assert fast == level_amounts_rational(net, 16, fanouts, rows)
        t_fast = best_of(lambda: level_amounts(net, 16, fanouts, rows), args.repeat)
        t_ref = best_of(lambda: level_amounts_rational(net, 16, fanouts, rows), max(1, args.repeat // 2))
        print(f"{name:>12} {len(net.layers):>6} {'x'.join(map(str, fanouts)):>12} {t_fast * 1e3:>11.2f} "
              f"{t_ref * 1e3:>12.1f} {t_ref / t_fast:>6.1f}x")


if __name__ == "__main__":
    main()
