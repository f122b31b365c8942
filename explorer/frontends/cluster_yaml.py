"""The YAML GPU cluster spec (version 1, ``kind: gpu-cluster``) -> ``explorer.core.cluster.ClusterSpec``.

Described in the manual: docs/specs.md, "GPU clusters" (the keys, per-GPU bandwidths each way,
the tiers). Bad input is one ``SpecError`` naming the file, the field and the problem.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from ..core.cluster import ClusterSpec, GpuKind, Tier, gpu_count_problem
from ..core.errors import SpecError, shown
from .fields import Fields
from .yamlio import load_yaml_file

KIND = "gpu-cluster"
NODE_TIER, NETWORK_TIER = "nvlink", "network"

_KEYS = {"version", "kind", "name", "description", "gpu", "gpus_per_node", "gpus", "nvlink_GBps",
         "nic_GBps", "tiers"}
_REQUIRED = {"version", "kind", "name", "gpu", "gpus_per_node", "gpus", "nvlink_GBps", "nic_GBps"}
_GPU_KEYS = {"name", "peak_TFLOPS", "memory_GiB", "source", "description"}
_TIER_KEYS = {"name", "size", "bandwidth_GBps"}


def _gpu(data: dict, errors: list[str]) -> GpuKind | None:
    raw = data.get("gpu")
    if raw is None:
        return None  # reported as missing
    if not isinstance(raw, dict):
        errors.append(f"gpu: must be a mapping with name, peak_TFLOPS and memory_GiB, got {shown(raw)}")
        return None
    n0 = len(errors)
    f = Fields(raw, "gpu", errors, _GPU_KEYS, {"name", "peak_TFLOPS", "memory_GiB"})
    name, peak, mem = f.name("name"), f.pos_number("peak_TFLOPS"), f.pos_number("memory_GiB")
    source = f.string("source", "")
    f.string("description", "")
    return GpuKind(name, peak, mem, source) if len(errors) == n0 else None


def _tiers(data: dict, per_node: int | None, errors: list[str]) -> list[Tier] | None:
    """The optional middle tiers, checked: names, sizes (multiples of the node, increasing)."""
    raw = data.get("tiers", [])
    if not isinstance(raw, list):
        errors.append(f"tiers: must be a list of {{name, size, bandwidth_GBps}}, got {shown(raw)}")
        return None
    out: list[Tier] = []
    names = {NODE_TIER, NETWORK_TIER}
    n0 = len(errors)
    for i, body in enumerate(raw):
        path = f"tiers[{i}]"
        if not isinstance(body, dict):
            errors.append(f"{path}: must be a mapping {{name, size, bandwidth_GBps}}, got {shown(body)}")
            continue
        f = Fields(body, path, errors, _TIER_KEYS, _TIER_KEYS)
        name, size, bw = f.name("name"), f.pos_int("size"), f.pos_number("bandwidth_GBps")
        if name is not None and name in names:
            f.error("name", f"{name!r} is taken (tier names are distinct; {NODE_TIER} and {NETWORK_TIER} are the node's and the network's)")
        names.add(name)
        if size is not None and per_node is not None:
            if size <= per_node or size % per_node:
                f.error("size", f"must be a multiple of gpus_per_node ({per_node}) larger than one node, got {size}")
            elif out and size <= out[-1].size:
                f.error("size", f"must be larger than the tier inside it (tiers[{i - 1}].size = {out[-1].size}), got {size}")
        if name is not None and size is not None and bw is not None:
            out.append(Tier(name, size, bw))
    return out if len(errors) == n0 else None


def _outward(nvlink: Fraction | None, middle: list[Tier] | None, nic: Fraction | None, errors: list[str]) -> None:
    """Bandwidths never grow outward: a GPU's traffic to a wider domain leaves through the narrower one's links."""
    if nvlink is None or middle is None or nic is None:
        return
    chain = [("nvlink_GBps", nvlink)] + [(f"tiers[{i}].bandwidth_GBps", t.bandwidth_GBps) for i, t in enumerate(middle)]
    chain.append(("nic_GBps", nic))
    for (inner, a), (outer, b) in zip(chain, chain[1:]):
        if b > a:
            errors.append(f"{outer}: {float(b):g} GB/s exceeds {inner} {float(a):g} GB/s (per GPU bandwidth cannot grow outward)")


def parse_cluster(data: dict, source: str) -> ClusterSpec:
    errors: list[str] = []
    f = Fields(data, "", errors, _KEYS, _REQUIRED)
    f.version()
    if "kind" in data and data["kind"] != KIND:
        errors.append(f"kind: must be {KIND}, got {shown(data['kind'])}")
    name = f.name("name", "?")
    description = f.string("description", "")
    gpu = _gpu(data, errors)
    per_node = f.pos_int("gpus_per_node")
    gpus = f.pos_int("gpus")
    if gpus is not None and per_node is not None and (problem := gpu_count_problem(gpus, per_node)):
        errors.append(f"gpus: {problem}")
    nvlink, nic = f.pos_number("nvlink_GBps"), f.pos_number("nic_GBps")
    middle = _tiers(data, per_node, errors)
    _outward(nvlink, middle, nic, errors)
    if errors:
        raise SpecError(source, errors)
    tiers = (Tier(NODE_TIER, per_node, nvlink), *middle, Tier(NETWORK_TIER, gpus, nic))
    try:
        return ClusterSpec(name, gpu, per_node, gpus, tiers, description, source)
    except ValueError as err:  # the core's invariants, all checked above: a backstop
        raise SpecError(source, str(err)) from None


def load_cluster_file(path: str | Path) -> ClusterSpec:
    return parse_cluster(load_yaml_file(path), str(path))


def says_cluster(data: dict) -> bool:
    """Whether a spec's top level says ``kind: gpu-cluster``, or means it (``gpus_per_node``, a key no
    accelerator array has: a misspelt or missing ``kind`` is then reported by the cluster loader)."""
    return isinstance(data, dict) and (data.get("kind") == KIND or "gpus_per_node" in data)
