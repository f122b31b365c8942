"""The GPU clusters in ``explore list``: one table line and one JSON object per shipped cluster;
and where each zoo model is planned (accelerator arrays, GPU clusters or both)."""

from __future__ import annotations

from typing import Any

from ..core.cluster import ClusterSpec
from ..core.network import Network

ARRAY, CLUSTER = "accelerator-array", "gpu-cluster"
# the table's mark of a zoo model by where it is planned (none: accelerator arrays only)
PLANNED_WORDS = {(ARRAY, CLUSTER): "also on GPU clusters", (CLUSTER,): "GPU clusters only"}


def planned_on(data: dict, net: Network) -> tuple[str, ...]:
    """Where a zoo model is planned: a spec with a ``transformer:`` block also on a GPU cluster (the
    LLM planner takes its shape); a mixture of experts only there (``frontends.load_model`` refuses
    it on an accelerator array)."""
    from ..frontends.transformer import MOE_NOTE

    moe = any(note.startswith(MOE_NOTE) for note in net.approximations)
    return (() if moe else (ARRAY,)) + ((CLUSTER,) if isinstance(data, dict) and "transformer" in data else ())


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
