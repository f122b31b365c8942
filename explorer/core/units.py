"""Amounts with units on the command line and in YAML: '2GB', '1.5GiB', '500MB', '3ms'."""

from __future__ import annotations

import re
from fractions import Fraction

BYTE_UNITS = {
    "B": 1, "kB": 10**3, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
    "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40,
}
TIME_UNITS = {"s": Fraction(1), "ms": Fraction(1, 10**3), "us": Fraction(1, 10**6), "ns": Fraction(1, 10**9)}
_AMOUNT = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]+)\s*$")


def parse_amount(text: str) -> tuple[Fraction, str]:
    """'2GB' -> (2e9, 'bytes'); '3ms' -> (3/1000, 'seconds'). ValueError names the problem."""
    m = _AMOUNT.match(str(text))
    if not m:
        raise ValueError(f"cannot read {text!r} as an amount with a unit (e.g. 2GB, 512MiB, 3ms)")
    value, unit = Fraction(m.group(1)), m.group(2)
    if value <= 0:
        raise ValueError(f"{text!r} must be > 0")
    if unit in BYTE_UNITS:
        return value * BYTE_UNITS[unit], "bytes"
    if unit in TIME_UNITS:
        return value * TIME_UNITS[unit], "seconds"
    known = ", ".join(list(BYTE_UNITS) + list(TIME_UNITS))
    raise ValueError(f"unknown unit {unit!r} in {text!r} (known: {known})")
