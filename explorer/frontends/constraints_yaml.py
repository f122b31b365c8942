"""Build the Constraints of a problem from the array spec, a constraints file and CLI options.

The file's format (version 1) and the precedence of the sources: docs/constraints.md, "Constraints file".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from fractions import Fraction

from ..core.array import ArraySpec
from ..core.constraints import Cap, Constraints, Forbid, Pin, tighten
from ..core.errors import SpecError, first_problems, is_int, shown
from ..core.names import given_as
from .fields import Fields, MAX_INT, check_pos_number, is_version
from ..core.network import Network
from ..core.partition import JOIN_TYPES, Space, parse_type
from ..core.units import format_count, parse_amount
from .yamlio import load_yaml_file


@dataclass(frozen=True)
class ConstraintOptions:
    caps: tuple[str, ...] = ()  # "LEVEL=AMOUNT"
    memory_GiB: float | None = None
    weight_copies: int | None = None
    pins: tuple[str, ...] = ()  # "LAYER@LEVEL=TYPE"
    forbids: tuple[str, ...] = ()  # "LAYER=TYPE"
    constraints_file: str | None = None


def _layer_index(net: Network, name: str, where: str, errors: list[str]) -> int | None:
    names = net.layer_names
    if name in names:
        return names.index(name)
    listed = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
    errors.append(f"{where}: unknown layer {shown(name)} (layers: {listed})")
    return None


def _type(text: str, space: Space, where: str, errors: list[str]):
    try:
        t = parse_type(text)
    except ValueError as err:
        errors.append(f"{where}: {err}")
        return None
    if t not in space.types:
        errors.append(f"{where}: type {t} is not in the {space} space ({', '.join(map(str, space.types))})")
        return None
    return t


def _level(text: str, levels: int, where: str, errors: list[str], star: bool) -> int | None | bool:
    """Level number, None for '*' when allowed; False on error."""
    text = str(text).strip()
    if star and text == "*":
        return None
    if not re.fullmatch(r"-?[0-9]+", text):  # ASCII digits: int() would read '０' (full-width) or '1_0' too
        errors.append(f"{where}: level must be an integer{' or *' if star else ''} (digits 0-9), got {shown(text)}")
        return False
    h = int(text)
    if not 0 <= h < levels:
        errors.append(f"{where}: level {h} is out of range 0..{levels - 1}")
        return False
    return h


def _not_a_string(text, form: str, where: str, errors: list[str]) -> bool:
    """A pin or forbid must be a string: a list or mapping (an anchor bomb's expansion too) is
    refused by a cut repr, never turned into text whole."""
    if isinstance(text, str):
        return False
    errors.append(f"{where}: must be a {form} string, got {shown(text)}")
    return True


def parse_pin(text: str, net: Network, space: Space, levels: int, where: str, errors: list[str]) -> Pin | None:
    if _not_a_string(text, "LAYER@LEVEL=TYPE", where, errors):
        return None
    try:
        lhs, typ = str(text).rsplit("=", 1)
        layer, level = lhs.rsplit("@", 1)
    except ValueError:
        errors.append(f"{where}: {shown(text)} is not LAYER@LEVEL=TYPE (e.g. fc6@*=II)")
        return None
    n = len(errors)
    l = _layer_index(net, layer.strip(), where, errors)  # noqa: E741
    h = _level(level, levels, where, errors, star=True)
    t = _type(typ, space, where, errors)
    if len(errors) > n:
        return None
    node = net.layers[l]
    if node.is_join and t not in JOIN_TYPES:
        errors.append(f"{where}: {shown(node.name)} is a join node ({node.kind.value}), which takes only "
                      f"{', '.join(map(str, JOIN_TYPES))}, not {t}")
        return None
    return Pin(l, h, t, f"pin {layer.strip()}@{'*' if h is None else h}={t}")


def check_pins(pins: list[tuple[Pin, str]], net: Network) -> None:
    """SpecError for two pins that fix one layer at one level to different types (``fc6@0=I`` and
    ``fc6@0=II``, or ``fc6@*=II`` and ``fc6@0=III``), from a file, the options or both: contradictory
    input, named both, never an infeasible problem. The same pin twice is fine. ``pins``: each pin
    with where it was given (a file's ``pins[1]``, an option's text), in the order given."""
    every: dict[int, tuple[Pin, str]] = {}  # layer -> its first pin at every level (@*)
    at: dict[int, dict[int, tuple[Pin, str]]] = {}  # layer -> level -> its first pin there
    for pin, where in pins:
        levels = at.setdefault(pin.layer, {})
        earlier = [every[pin.layer]] if pin.layer in every else []
        earlier += list(levels.values()) if pin.level is None else [levels[pin.level]] if pin.level in levels else []
        clash = next((e for e in earlier if e[0].type is not pin.type), None)
        if clash is not None:
            other, other_where = clash
            level = other.level if pin.level is None else pin.level
            in_file = other_where.startswith("pins[")  # else an option's text: the option says where
            said = (other_where if other.origin == pin.origin else f"{other.origin} {other_where}") if in_file \
                else other.origin
            at_level = "every level" if level is None else f"level {level}"
            raise SpecError(pin.origin, f"{where}: {pin.name} contradicts {other.name} ({said}): layer "
                                        f"{shown(net.layers[pin.layer].name)} takes one type at {at_level}, not both "
                                        f"{other.type} and {pin.type}")
        if pin.level is None:
            every.setdefault(pin.layer, (pin, where))
        else:
            levels.setdefault(pin.level, (pin, where))


def parse_forbid(text: str, net: Network, space: Space, where: str, errors: list[str]) -> Forbid | None:
    if _not_a_string(text, "LAYER=TYPE", where, errors):
        return None
    try:
        layer, typ = str(text).rsplit("=", 1)
    except ValueError:
        errors.append(f"{where}: {shown(text)} is not LAYER=TYPE (e.g. fc8=III)")
        return None
    if "@" in layer and layer.strip() not in net.layer_names:  # the pin form LAYER@LEVEL=TYPE
        errors.append(f"{where}: {shown(text)} is not LAYER=TYPE (a forbid has no level: it holds at every level; "
                      "LAYER@LEVEL=TYPE is a pin's form)")
        return None
    n = len(errors)
    l = _layer_index(net, layer.strip(), where, errors)  # noqa: E741
    t = _type(typ, space, where, errors)
    if len(errors) > n:
        return None
    return Forbid(l, t, f"forbid {layer.strip()}={t}")


def parse_cap(level_text, amount, array: ArraySpec, where: str, origin: str, errors: list[str]) -> Cap | None:
    h = _level(level_text, array.levels, where, errors, star=False)
    if h is False:
        return None
    try:  # a bare number is refused here as everywhere: an amount carries its unit
        value, kind = parse_amount(amount)
    except ValueError as err:
        errors.append(f"{where}: {err}")
        return None
    if kind == "seconds":
        return Cap(h, value * array.bandwidth_Bps(h), origin, seconds=value)
    return Cap(h, value, origin)


def _first(errors: list[str]) -> list[str]:
    """The first distinct problems, each with its count, and a count of the rest (``core.errors.first_problems``)."""
    return first_problems(errors)


_FILE_KEYS = {"version", "caps", "memory_GiB", "weight_copies", "pins", "forbids"}


def _from_file(path: str, net: Network, array: ArraySpec, space: Space):
    data = load_yaml_file(path)
    errors: list[str] = []
    Fields(data, "", errors, _FILE_KEYS)  # unknown keys
    if not is_version(data.get("version")):
        errors.append("version: missing (must be 1)" if "version" not in data else
                      f"version: must be 1, got {shown(data.get('version'))}")
    caps, pins, forbids = [], [], []
    raw_caps = data.get("caps") or {}
    if not isinstance(raw_caps, dict):
        errors.append("caps: must be a mapping LEVEL: AMOUNT")
        raw_caps = {}
    for lv, amount in raw_caps.items():
        c = parse_cap(lv, amount, array, f"caps.{lv}", path, errors)
        if c:
            caps.append(c)
    for key, parse, out in (("pins", lambda s, w: parse_pin(s, net, space, array.levels, w, errors), pins),
                            ("forbids", lambda s, w: parse_forbid(s, net, space, w, errors), forbids)):
        raw = data.get(key) or []
        if not isinstance(raw, list):
            errors.append(f"{key}: must be a list of strings")
            continue
        for i, item in enumerate(raw):
            x = parse(item, f"{key}[{i}]")
            if x:
                out.append((x, f"{key}[{i}]"))
    memory = None
    if "memory_GiB" in data:
        memory = check_pos_number(data["memory_GiB"], "memory_GiB", errors)
    copies = data.get("weight_copies")
    if copies is not None and (not is_int(copies) or not 0 <= copies <= MAX_INT):
        errors.append(f"weight_copies: must be a non-negative integer up to 2^40, got {shown(copies) if not is_int(copies) else format_count(copies)}")
        copies = None
    if errors:
        raise SpecError(path, _first(errors))
    return caps, pins, [f for f, _ in forbids], memory, copies


def build_constraints(net: Network, array: ArraySpec, space: Space, opts: ConstraintOptions) -> Constraints:
    caps = [Cap(h, c, "array") for h, c in enumerate(array.cap_bytes) if c is not None]
    pins: list[tuple[Pin, str]] = []  # each with where it was given (pins[0], '--pin' 'fc6@0=II'), for check_pins
    forbids: list[Forbid] = []
    memory_GiB = array.memory_GiB
    memory_set = False
    memory_origin = ""
    copies = 0
    if opts.constraints_file:
        fcaps, fpins, fforbids, fmem, fcopies = _from_file(opts.constraints_file, net, array, space)
        caps += fcaps
        pins += [(replace(p, origin=opts.constraints_file), where) for p, where in fpins]
        forbids += [replace(f, origin=opts.constraints_file) for f in fforbids]
        memory_GiB = fmem if fmem is not None else memory_GiB
        memory_set = fmem is not None
        memory_origin = opts.constraints_file if memory_set else ""
        copies = fcopies if fcopies is not None else copies
    for flag, items in (("--cap", opts.caps), ("--pin", opts.pins), ("--forbid", opts.forbids)):
        errors: list[str] = []
        for item in items:
            if flag == "--cap":
                if "=" not in item:
                    errors.append(f"{shown(item)} is not LEVEL=AMOUNT (e.g. 0=2GB or 1=5ms)")
                    continue
                lv, amount = item.split("=", 1)
                c = parse_cap(lv, amount.strip(), array, repr(item), given_as("--cap"), errors)
                if c:
                    caps.append(c)
            elif flag == "--pin":
                p = parse_pin(item, net, space, array.levels, repr(item), errors)
                if p:
                    pins.append((replace(p, origin=given_as("--pin")), repr(item)))
            else:
                f = parse_forbid(item, net, space, repr(item), errors)
                if f:
                    forbids.append(replace(f, origin=given_as("--forbid")))
        if errors:
            raise SpecError(flag, _first(errors))
    check_pins(pins, net)
    if opts.memory_GiB is not None:
        errors = []
        m = check_pos_number(opts.memory_GiB, "--memory", errors)
        if errors:
            raise SpecError("--memory", errors[0].split(": ", 1)[1])
        memory_GiB = m
        memory_set, memory_origin = True, given_as("--memory")
    if opts.weight_copies is not None:
        if opts.weight_copies < 0:
            raise SpecError("--weight-copies", f"must be >= 0, got {opts.weight_copies}")
        if opts.weight_copies > MAX_INT:
            raise SpecError("--weight-copies", f"must be at most 2^40 = {MAX_INT:,}, got {format_count(opts.weight_copies)}")
        copies = opts.weight_copies
    return Constraints(tuple(p for p, _ in pins), tuple(forbids), tuple(tighten(caps)), Fraction(memory_GiB) * 2**30, copies, memory_set,
                       memory_origin)
