"""Side constraints on plans: pins, forbids, per-level link caps, per-accelerator memory.

- A pin fixes a layer's type at one level or at every level; a forbid removes a type
  from a layer at every level. Both act cell by cell.
- A cap bounds the bytes one link carries per direction per training step at a level:
  c_h * dtype_bytes <= cap_h (model.md section 4: c_h is what each sibling group sends).
- Memory bounds the per-accelerator footprint (see ``explorer.core.comm.footprint_elements``):
  sum over layers of (2 + weight_copies) * weight share + input-activation share, in bytes.

Caps and memory couple all layers of a level (or all levels): CP-SAT, brute force and the
exact solver (``solvers/constrained.py``) enforce them; the hierarchical DP reports what its
plan violates.
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field
from fractions import Fraction

from .names import is_option, setting
from .partition import PartitionType
from .units import TIME_UNITS, TRAFFIC_UNITS, GiB, exact_amount, format_count, memory_text, safe_float


@dataclass(frozen=True, slots=True)
class Pin:
    layer: int
    level: int | None  # None: every level
    type: PartitionType
    label: str = ""
    origin: str = ""  # where it came from (--pin, a constraints file)

    @property
    def name(self) -> str:
        return self.label or f"pin layer {self.layer}@{'*' if self.level is None else self.level}={self.type}"


@dataclass(frozen=True, slots=True)
class Forbid:
    layer: int
    type: PartitionType
    label: str = ""
    origin: str = ""  # where it came from (--forbid, a constraints file)

    @property
    def name(self) -> str:
        return self.label or f"forbid layer {self.layer}={self.type}"


@dataclass(frozen=True, slots=True)
class Cap:
    level: int
    bytes: Fraction  # per link, per direction, per training step
    origin: str = ""  # where it came from (array spec, --cap, constraints file)
    seconds: Fraction | None = None  # given as a time budget (5ms): bytes = seconds x the level's bandwidth

    @property
    def name(self) -> str:
        """The one text of a cap, in every report, constraints line and conflict line, even split or
        uneven: 'cap level 0 <= 20 MB (--cap)', 'cap level 0 <= 1 ms (60 MB at 60 GB/s) (--cap)'."""
        return f"cap level {self.level} <= {self.amount()}" + (f" ({self.origin})" if self.origin else "")

    def amount(self) -> str:
        """The cap in bytes, or as given: '1 ms (60 MB at 60 GB/s)'."""
        if not self.seconds:
            return format_bytes(self.bytes)
        return f"{format_seconds(self.seconds)} ({format_bytes(self.bytes)} at {format_bytes(self.bytes / self.seconds)}/s)"


@dataclass(frozen=True)
class Constraints:
    pins: tuple[Pin, ...] = field(default=())
    forbids: tuple[Forbid, ...] = field(default=())
    caps: tuple[Cap, ...] = field(default=())  # at most one per level (the tightest)
    memory_bytes: Fraction | None = None  # per accelerator
    weight_copies: int = 0  # extra weight-sized buffers per layer (optimizer state)
    memory_set: bool = False  # memory_bytes was given (--memory, a constraints file), not the array's
    memory_origin: str = ""  # where a set memory came from: "--memory" or the constraints file's path

    @property
    def empty(self) -> bool:
        return not self.pins and not self.forbids

    def cap_at(self, level: int) -> Cap | None:
        for c in self.caps:
            if c.level == level:
                return c
        return None

    def allowed(self, level: int, layer: int, space_types: tuple[PartitionType, ...]) -> tuple[PartitionType, ...]:
        out = list(space_types)
        for f in self.forbids:
            if f.layer == layer and f.type in out:
                out.remove(f.type)
        for p in self.pins:
            if p.layer == layer and (p.level is None or p.level == level):
                out = [t for t in out if t is p.type]
        return tuple(out)

    def without(self, name: str) -> "Constraints":
        """These constraints less the one called ``name`` (see ``side_names``)."""
        return Constraints(
            tuple(p for p in self.pins if p.name != name),
            tuple(f for f in self.forbids if f.name != name),
            tuple(c for c in self.caps if c.name != name),
            None if name == self.memory_name else self.memory_bytes,
            self.weight_copies,
            self.memory_set and name != self.memory_name,
            self.memory_origin if name != self.memory_name else "",
        )

    @property
    def memory_name(self) -> str:
        return f"memory <= {memory_text(self.memory_bytes)} per accelerator" if self.memory_bytes is not None else ""

    @property
    def memory_source(self) -> str:
        """Where the memory limit came from, as a cap's name says it: the option ("--memory", or
        the API's "memory_GiB"), a constraints file's field, or the array's field ("" unknown)."""
        if not self.memory_set:
            return "array memory_GiB"
        if not self.memory_origin or is_option(self.memory_origin, "--memory"):
            return self.memory_origin
        return f"{self.memory_origin} memory_GiB"

    def with_sources(self, names) -> list[str]:
        """Constraint names (``side_names``) with where each pin and forbid came from ("pin fc6@*=II
        (cp.yaml); pin fc6@0=III (--pin)") when one came from a file, and where the memory limit came
        from ("memory <= 1 GiB per accelerator (--memory)"); a cap's name says it already."""
        origin = {p.name: p.origin for p in self.pins} | {f.name: f.origin for f in self.forbids}
        if self.memory_name and self.memory_source:
            origin[self.memory_name] = self.memory_source
        options = ("--pin", "--forbid")
        if all(n == self.memory_name or any(is_option(origin.get(n, ""), o) for o in options) for n in names):
            origin = {n: o for n, o in origin.items() if n == self.memory_name}  # pins, forbids: the options say which
        return [f"{n} ({origin[n]})" if origin.get(n) else n for n in names]

    def side_names(self) -> list[str]:
        names = [p.name for p in self.pins] + [f.name for f in self.forbids] + [c.name for c in self.caps]
        if self.memory_bytes is not None:
            names.append(self.memory_name)
        return names


def tighten(caps: list[Cap]) -> list[Cap]:
    """One cap per level: the smallest."""
    best: dict[int, Cap] = {}
    for c in caps:
        if c.level not in best or c.bytes < best[c.level].bytes:
            best[c.level] = c
    return [best[h] for h in sorted(best)]


def format_bytes(x: Fraction | int | float | None) -> str:
    """Bytes over links (a cap, a traffic bound) in decimal units, as bandwidth is in GB/s:
    '55 MB'. Memory is binary: ``units.memory_text``."""
    if x is None:
        return "-"
    v = safe_float(x)
    if v >= 1e21:  # 1000 EB, beyond any plan: e-notation (no float overflow, no '1e+07 EB')
        return f"{format_count(int(x))} B"
    for unit, scale in TRAFFIC_UNITS:
        if abs(v) >= scale:
            return f"{v / scale:.4g} {unit}"
    return f"{v:.4g} B"


def limit_suggestion(level: int | None, need_bytes: Fraction, kinds_differ: bool = False, cap: Cap | None = None) -> str:
    """What an infeasible run suggests for a limit that conflicts: the smallest feasible cap at
    ``level``, or with ``level`` None the smallest feasible memory per accelerator (GiB, four
    significant digits rounded up); the even and uneven splits alike. The cap is suggested as an
    option that reads back as exactly the value it names (``cap_suggestion``).
    ``kinds_differ``: the run keeps each kind's own memory, unequal, which one ``--memory`` replaces."""
    if level is not None:
        amount, given = cap_suggestion(need_bytes, cap)
        return (f"the smallest feasible cap at level {level} is {format_bytes(need_bytes)} "
                f"({float(need_bytes):.0f} bytes{given}): try {setting('--cap', f'{level}={amount}', listed=True)}")
    gib = float(need_bytes) / GiB
    digits = max(0, 3 - math.floor(math.log10(gib)))  # four significant digits, rounded up
    least = math.ceil(gib * 10**digits)
    shown = str(least / 10**digits) if digits else str(least)  # 0.6061, 2483 (not 2483.0)
    return (f"the smallest feasible memory is {memory_text(need_bytes)} per accelerator: "
            f"try {setting('--memory', shown)}"
            + (" (one limit for every kind, the larger kinds' too)" if kinds_differ else ""))


def cap_suggestion(need_bytes: Fraction, cap: Cap | None) -> tuple[str, str]:
    """The least feasible cap as an amount to write ('89.774848MB': the bytes rounded up to a whole
    byte, in the largest decimal unit, exactly), and as the conflicting ``cap`` was given: a time
    budget ('1.49625ms': the bytes' time at the level's bandwidth, 6 significant digits rounded up,
    so the cap it sets admits the plan), with a note for the message ('; 1.49625 ms at 60 GB/s')."""
    if cap is None or not cap.seconds:
        number, unit = exact_amount(math.ceil(need_bytes), TRAFFIC_UNITS + (("B", 1),))
        return number + unit, ""
    bandwidth = cap.bytes / cap.seconds
    number, unit = exact_amount(Fraction(need_bytes) / bandwidth, tuple(TIME_UNITS.items()), digits=6)
    rounded = "" if Fraction(number) * TIME_UNITS[unit] * bandwidth == need_bytes else ", rounded up"
    return number + unit, f"; {number} {unit} at {format_bytes(bandwidth)}/s{rounded}"


def format_seconds(x: Fraction) -> str:
    """A time budget as a user writes one: '1 ms', '2.5 us', '3 s'."""
    v = safe_float(x)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if v >= scale:
            return f"{v / scale:.4g} {unit}"
    return f"{v / 1e-9:.4g} ns"
