"""Load time of the LLM zoo: the short ``transformer:`` specs (built on load by
explorer/frontends/transformer.py) against the same networks written out as ``layers:`` YAML
(what bench/make_graph_zoo.py writes for llama-7b), loaded in the same process.

    python bench/bench_llm_zoo.py [--repeat 3]

Prints, per network, its nodes, the two files' sizes and the median load times with their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from explorer.core.network import LayerKind, Network  # noqa: E402
from explorer.frontends import load_model  # noqa: E402
from explorer.frontends.network_yaml import load_network_text  # noqa: E402
from explorer.frontends.zoo import zoo_files  # noqa: E402


def as_layers_yaml(net: Network) -> str:
    """The network as a ``layers:`` spec (fc, embedding, add and attention nodes)."""
    inputs: dict[int, list[str]] = {}
    for u, v in net.edges:
        inputs.setdefault(v, []).append(net.layers[u].name)
    lines = [f"version: 1\nname: {net.name}\nbatch: {net.batch}\nsequence: {net.sequence}\nlayers:"]
    for i, L in enumerate(net.layers):
        src = ", ".join(inputs.get(i, []))
        if L.kind is LayerKind.EMBEDDING:
            lines.append(f"  - {{name: {L.name}, kind: embedding, vocab: {L.in_channels}, hidden: {L.out_channels}}}")
        elif L.kind is LayerKind.FC:
            lines.append(f"  - {{name: {L.name}, kind: fc, in_features: {L.in_channels}, out_features: {L.out_channels}, "
                         f"inputs: [{src}]}}")
        elif L.kind is LayerKind.ATTENTION:
            kv = f", kv_heads: {L.kv_heads}, channels: {L.out_channels}" if L.kv_heads else ""
            lines.append(f"  - {{name: {L.name}, kind: attention, inputs: [{src}], heads: {L.heads}{kv}}}")
        else:
            lines.append(f"  - {{name: {L.name}, kind: {L.kind.value}, inputs: [{src}]}}")
    return "\n".join(lines) + "\n"


def median_s(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    files = zoo_files()
    names = [n for n, p in files.items() if "\ntransformer:" in p.read_text()]
    print(f"{'network':<13} {'nodes':>6} {'spec':>8} {'layers YAML':>12} {'spec load':>10} {'YAML load':>10} {'ratio':>6}")
    for name in names:
        net = load_model(name)
        text = as_layers_yaml(net)
        back = load_network_text(text, name)
        assert (back.layers, back.edges, back.edge_shares) == (net.layers, net.edges, net.edge_shares), name
        t_spec = median_s(lambda: load_model(name), args.repeat)
        t_yaml = median_s(lambda: load_network_text(text, name), args.repeat)
        print(f"{name:<13} {len(net.layers):>6} {files[name].stat().st_size:>7}B {len(text.encode()):>11}B "
              f"{t_spec * 1e3:>8.1f}ms {t_yaml * 1e3:>8.1f}ms {t_yaml / t_spec:>5.1f}x")


if __name__ == "__main__":
    main()
