"""The GPU clusters in ``explore list``: one table line and one JSON object per shipped cluster."""

from __future__ import annotations

from typing import Any

from ..core.cluster import ClusterSpec


def _num(x) -> float | int:
    """An exact figure for JSON: an int when whole, else the float of the spec's decimal."""
    return int(x) if x == int(x) else float(x)


def cluster_json(c: ClusterSpec) -> dict[str, Any]:
    return {
        "name": c.name, "gpus": c.gpus, "gpus_per_node": c.gpus_per_node, "nodes": c.nodes,
        "gpu": {"name": c.gpu.name, "peak_TFLOPS": _num(c.gpu.peak_TFLOPS), "memory_GiB": _num(c.gpu.memory_GiB)},
        "tiers": [{"name": t.name, "size": t.size, "bandwidth_GBps": _num(t.bandwidth_GBps)} for t in c.tiers],
        "file": c.source,
    }


def cluster_lines(clusters: list[ClusterSpec]) -> list[str]:
    """``clusters:`` and one aligned line per cluster: GPUs, nodes, GPU kind, tier bandwidths."""
    width = max((len(c.name) for c in clusters), default=0)
    lines = ["clusters (bandwidth per GPU each way; --gpus N sets the size):"]
    for c in clusters:
        tiers = " / ".join(f"{t.name} {float(t.bandwidth_GBps):g}" for t in c.tiers)
        gpu = f"{c.gpu.name} {float(c.gpu.peak_TFLOPS):g} TFLOPS {float(c.gpu.memory_GiB):g} GiB"
        lines.append(f"  {c.name:<{width}} {c.gpus:>6,} GPUs ({c.gpus_per_node} per node)  {gpu}  {tiers} GB/s")
    return lines
