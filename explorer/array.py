"""Accelerator arrays: a binary hierarchy of 2^H identical accelerators (HyPar's H-tree).

Spec (version 1)::

    version: 1
    name: hypar-htree-16
    levels: 4                       # H: 2^H accelerators; level 0 splits the whole array
    dtype_bytes: 4                  # element width (HyPar reports 32-bit traffic)
    link_bandwidth_GBps: [25, 50, 100, 100]   # per level, top first, each way (or one number for all)
    peak_TFLOPS: 0.5                # per accelerator
    memory_GiB: 8                   # per accelerator
    # optional:
    cap_bytes_per_step: [2GB, null, null, null]    # per level: bytes per link per direction per step
    cap_seconds_per_step: [null, 5ms, null, null]  # per level: a time budget, bytes = seconds * bandwidth
    energy_pJ_per_FLOP: 1.0         # compute energy
    link_energy_pJ_per_byte: 10     # link energy (both directions counted)

Caps are numbers (bytes, seconds) or strings with units ("2GB", "512MiB", "5ms"); ``null``
means no cap at that level; where both keys cap a level the tighter wins.

Overriding ``levels`` (``--levels H``) keeps the first H bandwidths and, when H is larger
than the list, repeats the last one for the extra (lower) levels.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

from .errors import SpecError
from .fields import Fields, check_pos_number
from .units import parse_amount
from .yamlio import load_yaml_file

SPEC_VERSION = 1
MIN_LEVELS = 1
# 2^20 accelerators. The exact unit is 1/(4*2^H) element (model.md section 7); beyond this the
# unit-scaled traffic of large networks no longer fits the int64 arithmetic of the solvers.
MAX_LEVELS = 20


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

    def __post_init__(self) -> None:
        if len(self.bandwidth_GBps) != self.levels:
            raise ValueError("one bandwidth per level")
        if self.cap_bytes and len(self.cap_bytes) != self.levels:
            raise ValueError("one cap entry per level")

    @property
    def memory_bytes(self) -> Fraction:
        return self.memory_GiB * 2**30

    @property
    def accelerators(self) -> int:
        return 2**self.levels

    def bandwidth_Bps(self, h: int) -> Fraction:
        return self.bandwidth_GBps[h] * 10**9

    def with_levels(self, levels: int) -> "ArraySpec":
        check_levels(levels, "--levels")
        bw = list(self.bandwidth_GBps[:levels])
        bw += [bw[-1]] * (levels - len(bw))
        caps = list(self.cap_bytes[:levels])
        if caps:
            caps += [None] * (levels - len(caps))
        return replace(self, levels=levels, bandwidth_GBps=tuple(bw), cap_bytes=tuple(caps))


def check_levels(levels: object, source: str) -> int:
    if isinstance(levels, bool) or not isinstance(levels, int):
        raise SpecError(source, f"must be an integer number of levels, got {levels!r}")
    if not MIN_LEVELS <= levels <= MAX_LEVELS:
        raise SpecError(
            source,
            f"levels must be between {MIN_LEVELS} and {MAX_LEVELS} (2 to {2**MAX_LEVELS} accelerators), got {levels}; "
            f"beyond {MAX_LEVELS} the exact cost unit 1/(4*2^H) element no longer fits the solvers' int64 arithmetic",
        )
    return levels


_KEYS = {"version", "name", "description", "levels", "dtype_bytes", "link_bandwidth_GBps", "peak_TFLOPS", "memory_GiB",
         "cap_bytes_per_step", "cap_seconds_per_step", "energy_pJ_per_FLOP", "link_energy_pJ_per_byte"}


def _cap_list(data: dict, key: str, kind: str, levels: int | None, errors: list[str]) -> list[Fraction | None] | None:
    raw = data.get(key)
    if raw is None:
        return None
    if not isinstance(raw, list):
        errors.append(f"{key}: must be a list with one entry per level (null for no cap)")
        return None
    if levels is not None and len(raw) != levels:
        errors.append(f"{key}: needs one entry per level ({levels}), got {len(raw)}")
        return None
    out: list[Fraction | None] = []
    for i, v in enumerate(raw):
        if v is None:
            out.append(None)
        elif isinstance(v, str):
            try:
                amount, got = parse_amount(v)
            except ValueError as err:
                errors.append(f"{key}[{i}]: {err}")
                out.append(None)
                continue
            if got != kind:
                errors.append(f"{key}[{i}]: {v!r} is in {got}, this key takes {kind}")
            out.append(amount)
        else:
            out.append(check_pos_number(v, f"{key}[{i}]", errors))
    return out


def parse_array(data: dict, source: str) -> ArraySpec:
    errors: list[str] = []
    f = Fields(data, "", errors, _KEYS, {"version", "name", "levels", "link_bandwidth_GBps", "peak_TFLOPS", "memory_GiB"})
    if "version" in data and data["version"] != SPEC_VERSION:
        errors.append(f"version: unsupported version {data['version']!r} (this explorer reads version {SPEC_VERSION})")
    name = f.string("name", "?")
    description = f.string("description", "")
    levels = None
    if "levels" in data:
        try:
            levels = check_levels(data["levels"], "levels")
        except SpecError as err:
            errors.append("levels: " + "; ".join(err.problems))
    dtype = f.pos_int("dtype_bytes", 4)
    bw_raw = data.get("link_bandwidth_GBps")
    bw: list[Fraction] = []
    if isinstance(bw_raw, list):
        if levels is not None and len(bw_raw) != levels:
            errors.append(f"link_bandwidth_GBps: needs one entry per level ({levels}), got {len(bw_raw)}")
        for i, v in enumerate(bw_raw):
            x = check_pos_number(v, f"link_bandwidth_GBps[{i}]", errors)
            if x is not None:
                bw.append(x)
    elif bw_raw is not None:
        x = check_pos_number(bw_raw, "link_bandwidth_GBps", errors)
        if x is not None and levels is not None:
            bw = [x] * levels
    peak = f.pos_number("peak_TFLOPS")
    mem = f.pos_number("memory_GiB")
    e_flop = f.pos_number("energy_pJ_per_FLOP")
    e_byte = f.pos_number("link_energy_pJ_per_byte")
    cap_b = _cap_list(data, "cap_bytes_per_step", "bytes", levels, errors)
    cap_s = _cap_list(data, "cap_seconds_per_step", "seconds", levels, errors)
    if errors:
        raise SpecError(source, errors)
    caps: tuple[Fraction | None, ...] = ()
    if cap_b is not None or cap_s is not None:
        merged = []
        for h in range(levels):
            options = []
            if cap_b is not None and cap_b[h] is not None:
                options.append(cap_b[h])
            if cap_s is not None and cap_s[h] is not None:
                options.append(cap_s[h] * bw[h] * 10**9)
            merged.append(min(options) if options else None)
        caps = tuple(merged)
    return ArraySpec(name, levels, dtype, tuple(bw), peak, mem, description, source, caps, e_flop, e_byte)


def load_array_file(path: str | Path) -> ArraySpec:
    return parse_array(load_yaml_file(path), str(path))


def synthetic_array(levels: int, bandwidth_GBps: list | None = None, dtype_bytes: int = 4, peak_TFLOPS=1, memory_GiB=16) -> ArraySpec:
    """An array for tests and benchmarks: by default bandwidth 10*(h+1) GB/s at level h."""
    bw = bandwidth_GBps or [10 * (h + 1) for h in range(levels)]
    return ArraySpec(
        "synthetic", levels, dtype_bytes, tuple(Fraction(str(b)) for b in bw), Fraction(str(peak_TFLOPS)), Fraction(str(memory_GiB))
    )
