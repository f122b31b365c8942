"""The YAML array spec (version 1); its format is documented in ``explorer.core.array``."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

from ..core.array import AcceleratorKind, ArraySpec, check_levels, leaf_objects
from ..core.timing import BandwidthBeyond, Communication, Topology, shared_level_bandwidths
from ..core.errors import SpecError, shown
from ..core.units import parse_amount
from .fields import NAME_RULE, Fields, check_pos_int, check_pos_number
from .yamlio import load_yaml_file

_KEYS = {"version", "name", "description", "levels", "dtype_bytes", "link_bandwidth_GBps", "peak_TFLOPS", "memory_GiB",
         "cap_bytes_per_step", "cap_seconds_per_step", "energy_pJ_per_FLOP", "link_energy_pJ_per_byte",
         "static_power_W", "communication", "shared_bandwidth_GBps", "overlap", "topology", "bandwidth_beyond",
         "kinds", "accelerators", "batch"}
_KIND_KEYS = {"peak_TFLOPS", "memory_GiB", "description", "source"}


def _choice(data: dict, key: str, enum_type, default, errors: list[str]):
    if key not in data:
        return default
    try:
        return enum_type(data[key])
    except ValueError:
        errors.append(f"{key}: must be one of {', '.join(m.value for m in enum_type)}, got {shown(data[key])}")
        return default


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
                errors.append(f"{key}[{i}]: {shown(v)} is in {got}, this key takes {kind}")
            out.append(amount)
    return out


def _kinds(data: dict, errors: list[str]) -> dict[str, AcceleratorKind]:
    raw = data["kinds"]
    if not isinstance(raw, dict) or not raw:
        errors.append("kinds: must be a mapping of kind name -> {peak_TFLOPS, memory_GiB}")
        return {}
    out = {}
    for name, body in raw.items():
        if not isinstance(name, str) or not name.strip():
            errors.append(f"kinds: a kind's name must be a non-empty string, got {shown(name)}")
            continue
        if not name.isprintable():
            errors.append(f"kinds: a kind's name {NAME_RULE}, got {shown(name)}")
            continue
        if not isinstance(body, dict):
            errors.append(f"kinds.{name}: must be a mapping with peak_TFLOPS and memory_GiB")
            continue
        n0 = len(errors)
        f = Fields(body, f"kinds.{name}", errors, _KIND_KEYS, {"peak_TFLOPS", "memory_GiB"})
        peak, mem = f.pos_number("peak_TFLOPS"), f.pos_number("memory_GiB")
        desc, src = f.string("description", ""), f.string("source", "")
        if len(errors) == n0:
            out[name] = AcceleratorKind(name, peak, mem, desc, src)
    return out


def _hashable_in(name: object, table: dict) -> bool:
    """Whether ``name`` is a key of ``table`` (False for an unhashable name such as a list)."""
    try:
        return name in table
    except TypeError:
        return False


def _leaves(data: dict, kinds: dict[str, AcceleratorKind], levels: int | None,
            errors: list[str]) -> tuple[AcceleratorKind, ...]:
    """The ``accelerators`` list: 2^levels names of ``kinds``, the leaves in tree order."""
    raw = data.get("accelerators")
    if raw is None:
        errors.append("accelerators: missing (the kind of each of the 2^levels accelerators, in tree order)")
        return ()
    if not isinstance(raw, list):
        errors.append(f"accelerators: must be a list of kind names, got {type(raw).__name__}")
        return ()
    if levels is not None and len(raw) != 2**levels:
        errors.append(f"accelerators: needs one kind per accelerator (2^{levels} = {2**levels}), got {len(raw)}")
        return ()
    declared = data.get("kinds") if isinstance(data.get("kinds"), dict) else {}
    out = []
    for i, name in enumerate(raw):
        if not isinstance(name, str) or name not in kinds:
            if (isinstance(name, str) and not kinds) or _hashable_in(name, declared):
                return ()  # the kinds table (or this kind's entry) is already reported
            known = _first_few(sorted(kinds)) or "none"
            errors.append(f"accelerators[{i}]: unknown kind {name!r} (kinds: {known})")
            return ()
        out.append(kinds[name])
    unused = sorted(set(kinds) - {k.name for k in out})
    if out and unused:
        errors.append(f"kinds: {_first_few(unused)} not used by any accelerator")
    return tuple(out)


def _first_few(names: list[str], few: int = 8) -> str:
    """Names for a one-line error: the first ``few``, then how many more (1,000 kinds stay one short line)."""
    return ", ".join(names[:few]) + (f" and {len(names) - few:,} more" if len(names) > few else "")


def parse_array(data: dict, source: str) -> ArraySpec:
    errors: list[str] = []
    shared = data.get("communication") == Communication.SHARED.value
    with_kinds = "kinds" in data or "accelerators" in data
    f = Fields(data, "", errors, _KEYS, _required_keys(shared, with_kinds))
    medium = _medium(data, shared, errors)
    f.version()
    name = f.name("name", "?")
    description = f.string("description", "")
    levels = _levels(data, errors)
    dtype = f.pos_int("dtype_bytes", 4)
    bw = _link_bandwidths(data, levels, errors)
    peak, mem, leaves = _compute(data, f, levels, with_kinds, errors)
    e_flop = f.pos_number("energy_pJ_per_FLOP")
    e_byte = f.pos_number("link_energy_pJ_per_byte")
    static = f.pos_number("static_power_W")
    batch = f.pos_int("batch")
    shared_bw = f.pos_number("shared_bandwidth_GBps") if shared else None
    if shared_bw is not None and levels is not None:
        bw = list(shared_level_bandwidths(shared_bw, levels))
    cap_b = _cap_list(data, "cap_bytes_per_step", "bytes", levels, errors)
    cap_s = _cap_list(data, "cap_seconds_per_step", "seconds", levels, errors)
    _energy_pair(e_flop, e_byte, static, errors)
    if errors:
        raise SpecError(source, errors)
    spec = ArraySpec(name, levels, dtype, tuple(bw), peak, mem, description, source, (), e_flop, e_byte, static,
                     medium.communication, shared_bw, medium.overlap, medium.topology, medium.beyond, leaves)
    return replace(spec, cap_bytes=_merged_caps(spec, levels, cap_b, cap_s), batch=batch)


def _energy_pair(e_flop, e_byte, static, errors: list[str]) -> None:
    """Energy is reported with both per-unit energies: one alone (or static power alone) would
    silently give no energy, so the missing one is named."""
    if (e_flop is None) != (e_byte is None):
        given, missing = ("energy_pJ_per_FLOP", "link_energy_pJ_per_byte")[:: 1 if e_byte is None else -1]
        errors.append(f"{missing}: missing (energy is reported with both {given} and {missing})")
    elif static is not None and e_flop is None:
        errors.append("static_power_W: energy is reported with energy_pJ_per_FLOP and link_energy_pJ_per_byte "
                      "given too (static power alone gives no energy)")


def check_built_array(arr: ArraySpec) -> ArraySpec:
    """A built ArraySpec (the API's, perhaps ``dataclasses.replace``d) checked with the checks the
    YAML loader runs on each numeric, enum and level field (named as the dataclass names them;
    name, description and source are not checked) and returned with its numbers exact as a
    file's are (``bandwidth_GBps=(0.1, ...)`` becomes Fraction('1/10')): callers use the
    returned array. SpecError naming the array's file (or name) and every bad field."""
    errors: list[str] = []
    check_pos_int(arr.dtype_bytes, "dtype_bytes", errors)
    exact = _exact_numbers(arr, errors)
    if arr.batch is not None:
        check_pos_int(arr.batch, "batch", errors)
    for key, enum_type in (("communication", Communication), ("topology", Topology), ("bandwidth_beyond", BandwidthBeyond)):
        if not isinstance(getattr(arr, key), enum_type):
            errors.append(f"{key}: must be a {enum_type.__name__} ({', '.join(m.value for m in enum_type)}), "
                          f"got {shown(getattr(arr, key))}")
    if not isinstance(arr.overlap, bool):
        errors.append(f"overlap: must be true or false, got {shown(arr.overlap)}")
    _levels({"levels": arr.levels}, errors)
    _energy_pair(arr.energy_pJ_per_FLOP, arr.link_energy_pJ_per_byte, arr.static_power_W, errors)
    if errors:
        raise SpecError(arr.source or f"array {shown(arr.name)}", errors)
    return replace(arr, **exact)


def _exact_numbers(arr: ArraySpec, errors: list[str]) -> dict:
    """``replace`` keywords: arr's real quantities (tuples and kinds too) as the Fractions
    check_pos_number returns, each checked (a bad one named in ``errors``)."""
    def num(v, key):
        return check_pos_number(v, key, errors)

    out = {k: num(getattr(arr, k), k) for k in ("peak_TFLOPS", "memory_GiB")}
    out["bandwidth_GBps"] = tuple(num(b, f"bandwidth_GBps[{h}]") for h, b in enumerate(arr.bandwidth_GBps))
    out["cap_bytes"] = tuple(c if c is None else num(c, f"cap_bytes[{h}]") for h, c in enumerate(arr.cap_bytes))
    out |= {k: num(getattr(arr, k), k) for k in ("energy_pJ_per_FLOP", "link_energy_pJ_per_byte", "static_power_W",
                                                 "shared_bandwidth_GBps") if getattr(arr, k) is not None}
    kinds = {}
    for kind in arr.kinds:
        kinds[kind] = replace(kind, peak_TFLOPS=num(kind.peak_TFLOPS, f"kinds.{kind.name}.peak_TFLOPS"),
                              memory_GiB=num(kind.memory_GiB, f"kinds.{kind.name}.memory_GiB"))
    if arr.leaves:
        out["leaves"] = tuple(kinds[k] for k in arr.leaves)
    return out


@dataclass(frozen=True)
class _Medium:
    """How the levels communicate: the spec's communication, topology, bandwidth_beyond and overlap."""
    communication: Communication
    topology: Topology
    beyond: BandwidthBeyond
    overlap: bool


def _required_keys(shared: bool, with_kinds: bool) -> set[str]:
    required = {"version", "name", "levels"} | ({"kinds", "accelerators"} if with_kinds else {"peak_TFLOPS", "memory_GiB"})
    required.add("shared_bandwidth_GBps" if shared else "link_bandwidth_GBps")
    return required


def _medium(data: dict, shared: bool, errors: list[str]) -> _Medium:
    """The communication settings, checked against the bandwidth keys a shared medium (or not) takes."""
    communication = _choice(data, "communication", Communication, Communication.PER_LEVEL, errors)
    topology = _choice(data, "topology", Topology, Topology.HTREE, errors)
    beyond = _choice(data, "bandwidth_beyond", BandwidthBeyond, BandwidthBeyond.REPEAT, errors)
    overlap = data.get("overlap", False)
    if not isinstance(overlap, bool):
        errors.append(f"overlap: must be true or false, got {shown(overlap)}")
        overlap = False
    if shared and "link_bandwidth_GBps" in data:
        errors.append("link_bandwidth_GBps: not used with communication: shared (give shared_bandwidth_GBps only)")
    if not shared and "shared_bandwidth_GBps" in data:
        errors.append("shared_bandwidth_GBps: only with communication: shared")
    if shared and topology is not Topology.HTREE:
        errors.append("topology: a shared medium has no topology (use communication: per-level with a torus)")
    return _Medium(communication, topology, beyond, overlap)


def _levels(data: dict, errors: list[str]) -> int | None:
    if "levels" not in data:
        return None
    try:
        return check_levels(data["levels"], "levels")
    except SpecError as err:
        errors.append("levels: " + "; ".join(err.problems))
        return None


def _link_bandwidths(data: dict, levels: int | None, errors: list[str]) -> list[Fraction]:
    """``link_bandwidth_GBps``: one per level, or one for every level."""
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
    return bw


def _compute(data: dict, f: Fields, levels: int | None, with_kinds: bool, errors: list[str]
             ) -> tuple[Fraction | None, Fraction | None, tuple[AcceleratorKind, ...]]:
    """Peak TFLOPS and memory (the least over the leaves when they have kinds) and the leaves' kinds."""
    if not with_kinds:
        return f.pos_number("peak_TFLOPS"), f.pos_number("memory_GiB"), ()
    for key in ("peak_TFLOPS", "memory_GiB"):
        if key in data:
            errors.append(f"{key}: give it per kind under kinds: (not with kinds and accelerators)")
    kinds = _kinds(data, errors) if "kinds" in data else {}
    leaves: tuple[AcceleratorKind, ...] = ()
    if "accelerators" in data and "kinds" in data:
        leaves = _leaves(data, kinds, levels, errors)
    distinct = leaf_objects(leaves)
    peak = min((k.peak_TFLOPS for k in distinct), default=None)
    mem = min((k.memory_GiB for k in distinct), default=None)
    return peak, mem, leaves


def _merged_caps(spec: ArraySpec, levels: int, cap_b: list[Fraction | None] | None,
                 cap_s: list[Fraction | None] | None) -> tuple[Fraction | None, ...]:
    """Per level, the tighter of the bytes cap and the seconds cap (in bytes at the level's bandwidth)."""
    if cap_b is None and cap_s is None:
        return ()
    merged = []
    for h in range(levels):
        options = []
        if cap_b is not None and cap_b[h] is not None:
            options.append(cap_b[h])
        if cap_s is not None and cap_s[h] is not None:
            options.append(cap_s[h] * spec.bandwidth_Bps(h))
        merged.append(min(options) if options else None)
    return tuple(merged)


def load_array_file(path: str | Path) -> ArraySpec:
    return parse_array(load_yaml_file(path), str(path))


