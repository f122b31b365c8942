"""The YAML array spec (version 1); its format is documented in ``explorer.core.array``."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from ..core.array import ArraySpec, check_levels
from ..core.errors import SpecError
from ..core.units import parse_amount
from .fields import Fields, check_pos_number
from .yamlio import load_yaml_file

SPEC_VERSION = 1

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
        else:  # an amount with its unit, as for --cap and a constraints file's caps
            try:
                amount, got = parse_amount(v)
            except ValueError as err:
                errors.append(f"{key}[{i}]: {err}")
                out.append(None)
                continue
            if got != kind:
                errors.append(f"{key}[{i}]: {v!r} is in {got}, this key takes {kind}")
            out.append(amount)
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


