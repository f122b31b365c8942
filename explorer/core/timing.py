"""How a training step is timed and what it costs in energy: the one place for these formulas.

The full derivation is in the manual: docs/derivations.md, "Time and energy".
"""

from __future__ import annotations

import enum
from fractions import Fraction
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from .array import ArraySpec


class Communication(enum.Enum):
    PER_LEVEL = "per-level"  # each level's pairs on their own links, in parallel
    SHARED = "shared"  # one medium every transfer crosses

    def __str__(self) -> str:
        return self.value


class Topology(enum.Enum):
    HTREE = "htree"
    TORUS = "torus"

    def __str__(self) -> str:
        return self.value


class BandwidthBeyond(enum.Enum):
    """How link bandwidth continues when ``--levels`` adds levels below the listed ones."""

    REPEAT = "repeat"  # the last entry again
    HALVE = "halve"  # each added level half the one above (upper links carry more)
    DOUBLE = "double"  # each added level twice the one above

    def __str__(self) -> str:
        return self.value


_FACTOR = {BandwidthBeyond.REPEAT: Fraction(1), BandwidthBeyond.HALVE: Fraction(1, 2), BandwidthBeyond.DOUBLE: Fraction(2)}


def extend_bandwidths(bw: Sequence[Fraction], levels: int, beyond: BandwidthBeyond) -> tuple[Fraction, ...]:
    """The first ``levels`` entries; past the list, each new level is the one above times the factor."""
    out = list(bw[:levels])
    while len(out) < levels:
        out.append(out[-1] * _FACTOR[beyond])
    return tuple(out)


def shared_level_bandwidths(shared_GBps: Fraction, levels: int) -> tuple[Fraction, ...]:
    """The effective level bandwidths (GB/s) of one shared medium: B / 2^(h+1)."""
    return tuple(shared_GBps / 2 ** (h + 1) for h in range(levels))


def torus_dims(levels: int) -> tuple[int, int]:
    """X x Y of the 2-D torus of 2^levels accelerators: X = 2^ceil(H/2), Y = 2^floor(H/2)."""
    return 2 ** ((levels + 1) // 2), 2 ** (levels // 2)


def torus_ring(levels: int, h: int) -> tuple[int, int]:
    """(ring size n, partner distance d) of level h: levels alternate x, y, top bit first."""
    X, Y = torus_dims(levels)
    axis_levels = {0: [], 1: []}
    for lv in range(levels):
        axis_levels[lv % 2].append(lv)
    axis = h % 2
    n = X if axis == 0 else Y
    k = axis_levels[axis].index(h)  # 0 = this axis's top bit
    return n, n >> (k + 1)


def ring_load(n: int, d: int) -> Fraction:
    """Shares on the busiest directed link when every node of an n-ring sends one share to the
    node whose index differs in bit d (shortest path; a tie, d = n/2, split evenly both ways)."""
    return Fraction(d, 2) if 2 * d == n else Fraction(d)


def even_link_load(levels: int, h: int) -> Fraction:
    """The part of a side's amount at level h of a torus on the busiest directed link when every
    accelerator of the side sends an equal part (every split below h at 1/2): ring_load(n, d) /
    2^(levels-h-1)."""
    return ring_load(*torus_ring(levels, h)) / 2 ** (levels - h - 1)


def level_bandwidth_Bps(array: "ArraySpec", h: int) -> Fraction:
    """The effective bandwidth b_h (bytes/s) one sibling group of level h sends to the other at."""
    link = array.bandwidth_GBps[h] * 10**9
    if array.topology is Topology.TORUS:
        return link / even_link_load(array.levels, h)
    return link  # per-level H-tree, or the shared medium's b_h = B / 2^(h+1) stored per level


def level_times(level_cost: Sequence[Fraction], array: "ArraySpec") -> tuple[Fraction, ...]:
    """Seconds per level: c_h * dtype_bytes / b_h."""
    return tuple(c * array.dtype_bytes / array.bandwidth_Bps(h) for h, c in enumerate(level_cost))


def compute_time_s(flops: int, array: "ArraySpec") -> Fraction:
    """Seconds the slowest accelerator computes under an equal split: its FLOPs / 2^H at the
    array's peak_TFLOPS (the slowest kind's on an array of kinds)."""
    return Fraction(flops) / (array.accelerators * array.peak_TFLOPS * 10**12)


def step_time(compute_s: Fraction, comm_s: Fraction, overlap: bool) -> Fraction:
    return max(compute_s, comm_s) if overlap else compute_s + comm_s


def energy_J(flops: int, traffic_bytes: Fraction, step_s: Fraction, array: "ArraySpec") -> Fraction | None:
    """Dynamic compute + link energy, plus static power over the step; None unless the array
    gives both per-FLOP and per-byte figures."""
    if array.energy_pJ_per_FLOP is None or array.link_energy_pJ_per_byte is None:
        return None
    dynamic = (flops * array.energy_pJ_per_FLOP + traffic_bytes * array.link_energy_pJ_per_byte) / 10**12
    static = (array.static_power_W or 0) * array.accelerators * step_s
    return dynamic + static
