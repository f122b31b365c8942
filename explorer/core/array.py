"""Accelerator arrays: a binary hierarchy of 2^H accelerators (HyPar's H-tree), identical or of kinds.

The full derivation is in the manual: docs/derivations.md, "Arrays".
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from .errors import SpecError, is_int, shown
from .timing import BandwidthBeyond, Communication, Topology, extend_bandwidths, level_bandwidth_Bps, shared_level_bandwidths

MIN_LEVELS = 1
# 2^20 accelerators. The exact unit is 1/(4*2^H) element (model.md section 7); beyond this the
# unit-scaled traffic of large networks no longer fits the int64 arithmetic of the solvers.
MAX_LEVELS = 20


@dataclass(frozen=True, slots=True)
class AcceleratorKind:
    """One kind of accelerator of a heterogeneous array."""

    name: str
    peak_TFLOPS: Fraction
    memory_GiB: Fraction
    description: str = ""
    source: str = ""


def leaf_objects(leaves) -> tuple:
    """The distinct objects among ``leaves`` (by identity, in order of first appearance): every
    kind at least once, cheaply (a kind's leaves share one object; equal kinds may repeat), for
    minima and sets of figures that need each kind once, not each of 2^H leaves."""
    return tuple({id(k): k for k in leaves}.values())


@dataclass(frozen=True, slots=True)
class ArraySpec:
    name: str
    levels: int
    dtype_bytes: int
    bandwidth_GBps: tuple[Fraction, ...]  # one per level, top first, bytes/s each way / 1e9
    peak_TFLOPS: Fraction
    memory_GiB: Fraction
    description: str = ""
    source: str = ""
    cap_bytes: tuple[Fraction | None, ...] = ()  # per level (empty: no caps)
    energy_pJ_per_FLOP: Fraction | None = None
    link_energy_pJ_per_byte: Fraction | None = None
    static_power_W: Fraction | None = None  # per accelerator
    communication: Communication = Communication.PER_LEVEL
    shared_bandwidth_GBps: Fraction | None = None  # the medium, with Communication.SHARED
    overlap: bool = False
    topology: Topology = Topology.HTREE
    bandwidth_beyond: BandwidthBeyond = BandwidthBeyond.REPEAT
    # The leaves' kinds in tree order (2^levels entries), when the spec gives kinds; empty when
    # it gives one peak_TFLOPS and memory_GiB. peak_TFLOPS and memory_GiB are then the minimum.
    leaves: tuple[AcceleratorKind, ...] = ()
    # The batch this array's evaluation was made at (e.g. the paper's 256): the default when no
    # batch is given on the command line; None: the network's own default batch.
    batch: int | None = None
    # The levels the array file lists bandwidths for, when --levels went beyond them (0: no level
    # is beyond): the levels below took bandwidth_beyond's rule (input_warnings says so).
    listed_levels: int = 0

    def __post_init__(self) -> None:
        if len(self.bandwidth_GBps) != self.levels:
            raise ValueError("one bandwidth per level")
        if self.leaves:
            if len(self.leaves) != 2**self.levels:
                raise ValueError("one kind per accelerator (2^levels leaves)")
            distinct = leaf_objects(self.leaves)  # (the leaves of a kind share its object: 2^17 leaves, 100,000 kinds)
            if self.peak_TFLOPS != min(k.peak_TFLOPS for k in distinct):
                raise ValueError("peak_TFLOPS of an array of kinds is the slowest leaf's")
            if self.memory_GiB != min(k.memory_GiB for k in distinct):
                raise ValueError("memory_GiB of an array of kinds is the smallest leaf's")
        if self.cap_bytes and len(self.cap_bytes) != self.levels:
            raise ValueError("one cap entry per level")
        if (self.communication is Communication.SHARED) != (self.shared_bandwidth_GBps is not None):
            raise ValueError("a shared medium needs shared_bandwidth_GBps, and only it")
        if self.communication is Communication.SHARED and self.topology is not Topology.HTREE:
            raise ValueError("a shared medium has no topology")

    @property
    def accelerators(self) -> int:
        return 2**self.levels

    @property
    def kinds(self) -> tuple[AcceleratorKind, ...]:
        """The distinct kinds of the leaves, in order of first appearance (empty: old-style spec)."""
        return tuple(dict.fromkeys(self.leaves))

    @property
    def is_heterogeneous(self) -> bool:
        """More than one kind of accelerator (by their figures, not their names)."""
        if not self.leaves:
            return False
        return len({(k.peak_TFLOPS, k.memory_GiB) for k in leaf_objects(self.leaves)}) > 1

    def leaf_figures(self) -> tuple[tuple[Fraction, Fraction], ...]:
        """Each leaf's (peak_TFLOPS, memory_GiB), in tree order: every figure of a kind that makes
        its leaves' cost or feasibility differ (bandwidths, caps and energy are per level or per
        array). Two subtrees of equal figures are identical (``core.uneven.alpha_space``)."""
        if self.leaves:
            return tuple((k.peak_TFLOPS, k.memory_GiB) for k in self.leaves)
        return ((self.peak_TFLOPS, self.memory_GiB),) * self.accelerators

    def leaf_peaks_TFLOPS(self) -> tuple[Fraction, ...]:
        """Each leaf's peak compute, in tree order (all equal on an old-style spec)."""
        if self.leaves:
            return tuple(k.peak_TFLOPS for k in self.leaves)
        return (self.peak_TFLOPS,) * self.accelerators

    def bandwidth_Bps(self, h: int) -> Fraction:
        """The effective bandwidth b_h of level h (explorer.core.timing): time_h = c_h * dtype / b_h."""
        return level_bandwidth_Bps(self, h)

    def with_levels(self, levels: int) -> "ArraySpec":
        check_levels(levels, "--levels")
        leaves = self.leaves
        if leaves and levels != self.levels:
            if len(set(leaves)) > 1:
                raise SpecError("--levels", f"array {self.name!r} lists its {len(leaves)} accelerators by kind, "
                                f"so its levels ({self.levels}) cannot be overridden; write an array of 2^{levels} leaves")
            leaves = (leaves[0],) * 2**levels
        if self.shared_bandwidth_GBps is not None:
            bw = list(shared_level_bandwidths(self.shared_bandwidth_GBps, levels))
        else:
            bw = list(extend_bandwidths(self.bandwidth_GBps, levels, self.bandwidth_beyond))
        caps = list(self.cap_bytes[:levels])
        if caps:
            caps += [None] * (levels - len(caps))
        listed = self.listed_levels or self.levels
        beyond = listed if levels > listed and self.shared_bandwidth_GBps is None else 0
        return replace(self, levels=levels, bandwidth_GBps=tuple(bw), cap_bytes=tuple(caps), leaves=leaves,
                       listed_levels=beyond)


def check_levels(levels: object, source: str) -> int:
    if not is_int(levels):
        raise SpecError(source, f"must be an integer number of levels, got {levels!r}")
    if not MIN_LEVELS <= levels <= MAX_LEVELS:
        raise SpecError(
            source,
            f"must be between {MIN_LEVELS} and {MAX_LEVELS} (2 to {2**MAX_LEVELS} accelerators), got {shown(levels)}; "
            f"beyond {MAX_LEVELS} the exact cost unit 1/(4*2^H) element no longer fits the solvers' int64 arithmetic",
        )
    return levels



def synthetic_array(levels: int, bandwidth_GBps: list | None = None, dtype_bytes: int = 4, peak_TFLOPS=1, memory_GiB=16) -> ArraySpec:
    """An array for tests and benchmarks: by default bandwidth 10*(h+1) GB/s at level h."""
    bw = bandwidth_GBps or [10 * (h + 1) for h in range(levels)]
    return ArraySpec(
        "synthetic", levels, dtype_bytes, tuple(Fraction(str(b)) for b in bw), Fraction(str(peak_TFLOPS)), Fraction(str(memory_GiB))
    )
