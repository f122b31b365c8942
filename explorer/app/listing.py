"""``explore list``: the network zoo, the shipped arrays and the GPU clusters, as a table or one
JSON object; and where each zoo model is planned (accelerator arrays, GPU clusters or both)."""

from __future__ import annotations

import json
from typing import Any

from ..core.array import ArraySpec
from ..core.cluster import ClusterSpec
from ..core.network import Network
from ..core.units import memory_text
from ..frontends import zoo

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
        gpu = f"{c.gpu.name} {float(c.gpu.peak_TFLOPS):g} TFLOPS {memory_text(c.gpu.memory_bytes)}"
        lines.append(f"  {c.name:<{width}} {c.gpus:>6,} GPUs ({c.gpus_per_node} per node)  {gpu}  {tiers} GB/s")
    return lines


def list_text(fmt: str) -> str:
    """``explore list``'s report: the zoo's models, the shipped arrays and clusters (``fmt``: table or json)."""
    from ..frontends.array_yaml import load_array_file
    from ..frontends.cluster_yaml import load_cluster_file
    from ..frontends.network_yaml import parse_network
    from ..frontends.yamlio import load_yaml_file

    specs = [(load_yaml_file(p), str(p)) for p in zoo.zoo_files().values()]
    nets = [parse_network(data, src) for data, src in specs]
    where = [planned_on(data, n) for (data, _), n in zip(specs, nets)]
    arrs = [load_array_file(p) for p in zoo.array_files().values()]
    clusters = [load_cluster_file(p) for p in zoo.cluster_files().values()]
    if fmt == "json":
        out = {
            "models": [{"name": n.name, "nodes": len(n.layers), "weighted_layers": sum(not L.is_join for L in n.layers),
                        "graph": not n.is_chain, "batch": n.batch, "planned_on": list(w), "file": n.source}
                       for n, w in zip(nets, where)],
            "aliases": dict(zoo.ALIASES),
            "arrays": [
                {"name": a.name, "levels": a.levels, "accelerators": a.accelerators, "communication": a.communication.value,
                 "topology": a.topology.value, "overlap": a.overlap, "file": a.source,
                 **({"kinds": {k.name: a.leaves.count(k) for k in a.kinds}} if a.leaves else {})} for a in arrs
            ],
            "clusters": [cluster_json(c) for c in clusters],
        }
        return json.dumps(out, indent=2) + "\n"
    return "\n".join(model_lines(nets, where) + array_lines(arrs) + cluster_lines(clusters)) + "\n"


def model_lines(nets: list[Network], where: list[tuple[str, ...]]) -> list[str]:
    """``models`` and one aligned line per zoo model: weighted layers, joins, batch, where planned."""
    lines = ["models (weighted layers, joins, default batch; planned on accelerator arrays unless marked):"]
    width = max((len(n.name) for n in nets), default=0)  # long names keep the columns aligned
    for n, w in zip(nets, where):
        joins = sum(L.is_join for L in n.layers)
        shape = f"{joins:>3} joins" if joins else "  chain  "
        mark = f"  {PLANNED_WORDS[w]}" if w in PLANNED_WORDS else ""
        lines.append(f"  {n.name:<{width}} {len(n.layers) - joins:>4} layers {shape}  batch {n.batch:<5}{mark}".rstrip())
    return lines + ["  aliases: " + ", ".join(f"{k} = {v}" for k, v in zoo.ALIASES.items())]


def array_lines(arrs: list[ArraySpec]) -> list[str]:
    """``arrays:`` and one aligned line per shipped array: levels, accelerators, links, kinds."""
    lines = ["arrays:"]
    awidth = max((len(a.name) for a in arrs), default=0)
    for a in arrs:
        if a.shared_bandwidth_GBps is not None:
            links = f"one shared medium {float(a.shared_bandwidth_GBps):g} GB/s"
        else:
            links = f"{a.topology} links " + "/".join(f"{float(b):g}" for b in a.bandwidth_GBps) + " GB/s"
        kinds = (", kinds " + " ".join(f"{k.name} x{a.leaves.count(k)}" for k in a.kinds)) if a.is_heterogeneous else ""
        lines.append(f"  {a.name:<{awidth}} H={a.levels:<2} {a.accelerators:>5} accelerators  {links}"
                     + (", overlapped" if a.overlap else "") + kinds)
    return lines
