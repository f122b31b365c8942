"""A GPU cluster: GPUs in nodes, nodes in bandwidth tiers (issue 21, item 3).

What a cluster and its tiers are, and which tier a collective of ``span`` consecutive ranks runs
at (``ClusterSpec.bandwidth_Bps``): docs/specs.md, "GPU clusters". Everything is exact
(``Fraction``); GB/s is 10^9 bytes/s and GiB is 2^30 bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from .errors import SpecError, is_int
from .units import GiB, format_count

GB = 10**9   # bandwidths: GB/s = 10^9 bytes/s
MAX_GPUS = 10**9  # a cluster's GPUs: the bound --gpus keeps too (llm_options)


@dataclass(frozen=True, slots=True)
class GpuKind:
    name: str                 # "A100-SXM4-80GB"
    peak_TFLOPS: Fraction     # dense BF16/FP16, per GPU
    memory_GiB: Fraction      # per GPU
    source: str = ""

    @property
    def memory_bytes(self) -> Fraction:
        return Fraction(self.memory_GiB) * GiB


@dataclass(frozen=True, slots=True)
class Tier:
    name: str                 # "nvswitch", "infiniband", "spine" ...
    size: int                 # GPUs in one domain of this tier (8 for a DGX node); the outermost tier: all GPUs
    bandwidth_GBps: Fraction  # per GPU, each way, for traffic between GPUs whose smallest common domain is this tier

    @property
    def bandwidth_Bps(self) -> Fraction:
        return self.bandwidth_GBps * GB


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """``gpus`` GPUs of kind ``gpu``, ``gpus_per_node`` to a node, bandwidth ``tiers`` innermost first.

    Invariants (checked on construction, ``ValueError``): ``gpus`` a whole number of nodes or a
    divisor of ``gpus_per_node`` (part of one node); ``tiers[0].size == gpus_per_node``; the
    tiers between the node and the outermost strictly increasing multiples of ``gpus_per_node``;
    bandwidths non-increasing outward; the outermost tier (when there are two or more) of size ``gpus``. An inner tier may be larger
    than ``gpus`` (a small instance inside one spine domain): spans within it never reach the
    outermost tier, as ``bandwidth_Bps`` takes the first tier large enough.
    """

    name: str
    gpu: GpuKind
    gpus_per_node: int
    gpus: int                 # total GPUs of this instance (default from the YAML; --gpus N overrides)
    tiers: tuple[Tier, ...]   # innermost first; tiers[0].size == gpus_per_node
    description: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        problem = gpu_count_problem(self.gpus, self.gpus_per_node) or tiers_problem(self.tiers, self.gpus_per_node)
        if problem is None and len(self.tiers) > 1 and self.tiers[-1].size != self.gpus:
            problem = f"the outermost tier's size must be the GPU count {self.gpus}, got {self.tiers[-1].size}"
        if problem is not None:
            raise ValueError(f"cluster {self.name}: {problem}")

    @property
    def nodes(self) -> int:
        """Nodes of this instance (1 for part of a node)."""
        return max(1, self.gpus // self.gpus_per_node)

    def tier(self, span: int) -> Tier:
        """The tier a collective among ``span`` consecutive ranks runs on: the first whose size >= span."""
        if not is_int(span) or span < 1:
            raise ValueError(f"span must be a positive integer, got {span!r}")
        for t in self.tiers:
            if t.size >= span:
                return t
        return self.tiers[-1]

    def bandwidth_Bps(self, span: int) -> Fraction:
        """bytes/s per GPU each way for a collective among GPUs that lie within `span` consecutive
        ranks (ranks fill a node first): the first tier whose size >= span."""
        return self.tier(span).bandwidth_Bps

    def with_gpus(self, n: int) -> ClusterSpec:
        """This cluster with ``n`` GPUs (``--gpus N``): a whole number of nodes, or a divisor of
        ``gpus_per_node`` (part of one node). The outermost tier spans the ``n`` GPUs; a bad ``n``
        is a ``SpecError`` naming ``--gpus``."""
        problem = gpu_count_problem(n, self.gpus_per_node)
        if problem is not None:
            raise SpecError("--gpus", f"{problem} (cluster {self.name})")
        if len(self.tiers) == 1:
            return replace(self, gpus=n)
        return replace(self, gpus=n, tiers=self.tiers[:-1] + (replace(self.tiers[-1], size=n),))


def gpu_count_problem(n: object, gpus_per_node: int) -> str | None:
    """Why ``n`` GPUs cannot be an instance with ``gpus_per_node`` to a node (None when it can)."""
    if not is_int(n):
        return f"must be a positive integer, got {n!r}"
    if n < 1:
        return f"must be >= 1, got {n}"
    if n > MAX_GPUS:
        return f"must be at most {MAX_GPUS:,}, got {format_count(n)}"
    if n % gpus_per_node == 0 or (n < gpus_per_node and gpus_per_node % n == 0):
        return None
    per = gpus_per_node
    if n < per:
        divisors = ", ".join(str(k) for k in range(1, per + 1) if per % k == 0)
        return f"{n} GPUs is not a part of one {per}-GPU node (a part must divide {per}: {divisors})"
    lo, hi = n // per * per, (n // per + 1) * per
    return (f"{format_count(n)} is not a whole number of {per}-GPU nodes "
            f"(nearest: {format_count(lo)} = {per} x {lo // per} or {format_count(hi)} = {per} x {hi // per})")


def tiers_problem(tiers: tuple[Tier, ...], gpus_per_node: int) -> str | None:
    """Why ``tiers`` cannot describe nodes of ``gpus_per_node`` GPUs (None when they can)."""
    if not is_int(gpus_per_node) or gpus_per_node < 1:
        return f"gpus_per_node must be a positive integer, got {gpus_per_node!r}"
    if not tiers:
        return "needs at least one tier (the node)"
    if tiers[0].size != gpus_per_node:
        return f"the first tier ({tiers[0].name}) is the node: its size must be {gpus_per_node}, got {tiers[0].size}"
    for t in tiers:
        if isinstance(t.bandwidth_GBps, bool) or not isinstance(t.bandwidth_GBps, Fraction | int) or t.bandwidth_GBps <= 0:
            return f"tier {t.name}: bandwidth must be a positive exact number, got {t.bandwidth_GBps!r}"
    for a, b in zip(tiers, tiers[1:]):
        if b.bandwidth_GBps > a.bandwidth_GBps:  # a GPU's traffic to a wider domain leaves through the narrower one's links
            return (f"tier {b.name}: bandwidth {float(b.bandwidth_GBps):g} GB/s exceeds the {float(a.bandwidth_GBps):g} GB/s of {a.name} "
                    "inside it (per GPU bandwidth cannot grow outward)")
    inner = tiers[:-1] if len(tiers) > 1 else tiers
    for a, b in zip(inner, inner[1:]):
        if b.size <= a.size:
            return f"tier sizes must increase outward: {b.name} ({b.size}) after {a.name} ({a.size})"
        if b.size % gpus_per_node:
            return f"tier {b.name}: size {b.size} is not a multiple of the {gpus_per_node}-GPU node"
    return None
