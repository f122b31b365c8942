"""Sweep keys that change the mix of accelerator kinds of an array written with kinds:
``mix: "8 v2 + 8 v3"`` and ``accelerators_<kind>: K``, read against the point's array (its kind
table stays; only the leaves change). Described in the manual: docs/sweeps.md.
"""

from __future__ import annotations

import re
from dataclasses import replace
from fractions import Fraction
from functools import lru_cache
from typing import Any

from ...core.array import AcceleratorKind, ArraySpec, check_levels
from ...core.errors import SpecError, is_int, shown
from ...frontends import load_array

MIX_KEY = "mix"
COUNT_PREFIX = "accelerators_"
# COUNT [x|*] KIND: the kind is the rest of the term (any name without '+'; spaces inside it allowed);
# "x" separates only when a space follows it ("8 xla" is 8 of kind xla, "8 x v3" 8 of v3)
_TERM = re.compile(r"^\s*(\d+)\s*(?:x\s+|\*\s*)?(\S.*?)\s*$")


def is_count_key(key: Any) -> bool:
    return isinstance(key, str) and key.startswith(COUNT_PREFIX) and len(key) > len(COUNT_PREFIX)


def parse_mix(text: Any) -> tuple[tuple[str, int], ...]:
    """'8 v2 + 8 v3' -> (('v2', 8), ('v3', 8)); ValueError (the problem) when malformed."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"must be a string like '8 v2 + 8 v3' (count, kind; tree order), got {shown(text)}")
    out: list[tuple[str, int]] = []
    for term in text.split("+"):
        m = _TERM.match(term)
        if not m:
            raise ValueError(f"{shown(term.strip())} is not COUNT KIND (e.g. '8 v3') in {shown(text)}")
        kind, count = m.group(2), int(m.group(1))
        if kind in dict(out):
            raise ValueError(f"kind {kind!r} written twice in {shown(text)}")
        out.append((kind, count))
    return tuple(out)


def check_mix(value: Any) -> str | None:
    try:
        parse_mix(value)
    except ValueError as err:
        return str(err)
    return None


def check_count(value: Any) -> str | None:
    if not is_int(value) or value < 0:
        return f"must be a non-negative integer (a number of accelerators), got {shown(value)}"
    return None


def mix_keys(params: dict[str, Any]) -> list[str]:
    """The mix keys a point sets, in its order."""
    return [k for k in params if (k == MIX_KEY or is_count_key(k)) and params[k] is not None]


def _kind_table(array: ArraySpec, key: str, kinds: tuple[AcceleratorKind, ...] | None = None) -> dict[str, AcceleratorKind]:
    kinds = array.kinds if kinds is None else kinds
    if not kinds:
        raise SpecError(key, f"array {array.name!r} has no kinds (a mix needs an array written with kinds: and "
                             "accelerators:, e.g. tpu-mix-16)")
    return {k.name: k for k in kinds}


def _counts(array: ArraySpec, params: dict[str, Any], keys: list[str],
            table: dict[str, AcceleratorKind]) -> tuple[str, list[tuple[str, int]]]:
    """(the key to blame, [(kind, count)] in tree order) for the point's mix keys."""
    if MIX_KEY in keys:
        if len(keys) > 1:
            raise SpecError(MIX_KEY, f"give the mix once: mix or accelerators_<kind>, not both ({', '.join(keys)})")
        return MIX_KEY, list(parse_mix(params[MIX_KEY]))
    given = {k[len(COUNT_PREFIX):]: params[k] for k in keys}
    for key in keys:
        if key[len(COUNT_PREFIX):] not in table:
            raise SpecError(key, f"unknown kind {key[len(COUNT_PREFIX):]!r} (array {array.name!r} has kinds "
                                 f"{', '.join(table)})")
    rest = [k for k in table if k not in given]
    if len(rest) > 1:
        raise SpecError(keys[0], f"array {array.name!r} has kinds {', '.join(table)}: give the count of every kind "
                                 f"but one (the one left takes the rest), not of {', '.join(given)} only")
    if rest:
        given[rest[0]] = array.accelerators - sum(given.values())
        if given[rest[0]] < 0:
            raise SpecError(keys[0], f"{sum(given.values()) - given[rest[0]]} accelerators of "
                                     f"{', '.join(k for k in given if k != rest[0])} exceed the array's "
                                     f"{array.accelerators} (2^{array.levels})")
    return keys[0], [(k, given[k]) for k in table if k in given]


def with_mix(array: ArraySpec, params: dict[str, Any], kinds: tuple[AcceleratorKind, ...] | None = None) -> ArraySpec:
    """The array with its leaves set by the point's mix keys (unchanged without them); ``kinds``:
    the kind table, when ``array`` is a copy cut to other levels (default: its own kinds)."""
    keys = mix_keys(params)
    if not keys:
        return array
    table = _kind_table(array, keys[0], kinds)
    key, counts = _counts(array, params, keys, table)
    unknown = [k for k, _ in counts if k not in table]
    if unknown:
        raise SpecError(key, f"unknown kind {unknown[0]!r} (array {array.name!r} has kinds {', '.join(table)})")
    total = sum(c for _, c in counts)
    if total != array.accelerators:
        raise SpecError(key, f"{' + '.join(f'{c} {k}' for k, c in counts)} is {total} accelerators, the array has "
                             f"{array.accelerators} (2^{array.levels})")
    leaves = tuple(table[k] for k, c in counts for _ in range(c))
    return replace(array, leaves=leaves, peak_TFLOPS=min(k.peak_TFLOPS for k in leaves),
                   memory_GiB=min(k.memory_GiB for k in leaves))


def one_kind(array: ArraySpec) -> ArraySpec:
    """The array with every leaf of its first kind (so its levels can change before a mix sets the leaves)."""
    if not array.leaves:
        return array
    first = array.leaves[0]
    return replace(array, leaves=(first,) * len(array.leaves), peak_TFLOPS=first.peak_TFLOPS, memory_GiB=first.memory_GiB)


@lru_cache(maxsize=64)
def _array(ref: str) -> ArraySpec:
    return load_array(ref)


def _numbers(value: Any) -> tuple[Fraction, ...]:
    return tuple(Fraction(str(x)) for x in (value if isinstance(value, (list, tuple)) else [value]))


def point_array(params: dict[str, Any]) -> ArraySpec:
    """The point's array: the named one, cut to ``levels``, with the bandwidth and peak overrides
    and the mix of kinds (``mix``, ``accelerators_<kind>``: ``sweep.mix``)."""
    arr = _array(params["array"])
    kinds = arr.kinds
    if mix_keys(params):
        arr = one_kind(arr)  # the mix sets the leaves: the levels may change first
    if params.get("levels") is not None:
        arr = arr.with_levels(check_levels(params["levels"], "levels"))
    bw = params.get("link_bandwidth_GBps")
    if bw is not None:
        values = _numbers(bw)
        if len(values) == 1:
            values = values * arr.levels
        if len(values) != arr.levels:
            raise SpecError("link_bandwidth_GBps", f"{len(values)} values for {arr.levels} levels")
        arr = replace(arr, bandwidth_GBps=values)
    if params.get("peak_TFLOPS") is not None:
        if kinds:
            raise SpecError("peak_TFLOPS", f"array {arr.name!r} gives its peaks per kind (kinds:), so it takes no "
                                           "peak_TFLOPS override; set the kinds' peaks in the array file")
        arr = replace(arr, peak_TFLOPS=_numbers(params["peak_TFLOPS"])[0])
    return with_mix(arr, params, kinds)
