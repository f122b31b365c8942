"""Amounts with units on the command line and in YAML: '2GB', '1.5GiB', '500MB', '3ms'.

One rule everywhere (``--cap``, a constraints file's ``caps``, an array's
``cap_bytes_per_step``/``cap_seconds_per_step``): an amount is a number *with a unit*; a
bare number is refused, so ``2`` never silently means 2 bytes in one place and an error in
another. Also: counts and amounts formatted for messages without converting huge integers
to float (which overflows beyond 1e308), and memory's one written form (``memory_text``:
binary units in every report; bytes over links stay decimal, as bandwidth is in GB/s).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

from .errors import format_count, shown  # format_count: a message's integer, imported from here too

GiB = 2**30  # the unit of memory (--memory, memory_GiB)
TERA = 10**12  # FLOP/s in a TFLOP/s (peak_TFLOPS)
BYTE_UNITS = {
    "B": 1, "kB": 10**3, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15, "EB": 10**18,
    "KiB": 2**10, "MiB": 2**20, "GiB": GiB, "TiB": 2**40,
}
# bytes over links (traffic, a cap) in decimal units, as bandwidth is in GB/s; largest first
TRAFFIC_UNITS = (("EB", 10**18), ("PB", 10**15), ("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3))
TIME_UNITS = {"s": Fraction(1), "ms": Fraction(1, 10**3), "us": Fraction(1, 10**6), "ns": Fraction(1, 10**9)}
_AMOUNT = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]+)\s*$")
_NUMBER = re.compile(r"^\s*[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?\s*$")
_ZERO = re.compile(r"^\s*0+(?:\.0*)?(?:[eE][+-]?[0-9]+)?\s*$")  # a bare zero ('0', '0.0', '0e5'): no unit makes it an amount
MAX_EXPONENT = 100  # '1e400000000B' would build a 400-million-digit integer: refused
MAX_DIGITS = 40  # nor may '0.000...0001B' spell one out


def parse_amount(text: str) -> tuple[Fraction, str]:
    """'2GB' -> (2e9, 'bytes'); '3ms' -> (3/1000, 'seconds'). ValueError names the problem."""
    if isinstance(text, bool):
        raise ValueError(f"cannot read {shown(text)} as an amount with a unit (e.g. 2GB, 512MiB, 3ms)")
    if not isinstance(text, (str, int, float)):  # a list or mapping (an anchor bomb too): never str() it
        raise ValueError(f"cannot read {shown(text)} as an amount with a unit (e.g. 2GB, 512MiB, 3ms)")
    if (isinstance(text, float) and not math.isfinite(text) or isinstance(text, (int, float)) and text <= 0
            or isinstance(text, str) and _ZERO.match(text)):
        raise ValueError(f"{shown(text)} is not an amount: write a finite number > 0 with a unit (e.g. 2GB, 512MiB, 3ms)")
    if isinstance(text, (int, float)) or _NUMBER.match(str(text)):
        raise ValueError(f"{shown(text)} has no unit: write e.g. {text}B for bytes or {text}ms for a time budget")
    m = _AMOUNT.match(str(text))
    negative = re.match(r"^\s*-", str(text)) and _AMOUNT.match(str(text).replace("-", "", 1))
    if negative:
        raise ValueError(f"{shown(text)} must be > 0")
    if not m:
        raise ValueError(f"cannot read {shown(text)} as an amount with a unit (e.g. 2GB, 512MiB, 3ms)")
    number, unit = m.group(1), m.group(2)
    if len(number) > MAX_DIGITS:
        raise ValueError(f"{shown(text)} has too many digits (at most {MAX_DIGITS})")
    exponent = int(number.lower().split("e")[1]) if "e" in number.lower() else 0
    if abs(exponent) > MAX_EXPONENT:
        raise ValueError(f"{shown(text)} is out of range (exponent beyond +-{MAX_EXPONENT})")
    value = Fraction(number)
    if value <= 0:
        raise ValueError(f"{shown(text)} must be > 0")
    if unit in BYTE_UNITS:
        return value * BYTE_UNITS[unit], "bytes"
    if unit in TIME_UNITS:
        return value * TIME_UNITS[unit], "seconds"
    known = ", ".join(list(BYTE_UNITS) + list(TIME_UNITS))
    raise ValueError(f"unknown unit {shown(unit)} in {shown(text)} (known: {known})")


def decimal_text(q: Fraction | int) -> str | None:
    """``q`` as an exact decimal ('89.774848', '-1.5', '3'), or None when its expansion does not end."""
    q = Fraction(q)
    d, twos, fives = q.denominator, 0, 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    if d != 1:
        return None
    places = max(twos, fives)
    digits = str(abs(q.numerator) * 10**places // q.denominator).rjust(places + 1, "0")
    whole, frac = digits[:len(digits) - places], digits[len(digits) - places:]
    return ("-" if q < 0 else "") + (f"{whole}.{frac}" if frac else whole)


def _exponent(q: Fraction) -> int:
    """e with 10^e <= q < 10^(e+1), for q > 0, exactly."""
    e = len(str(q.numerator)) - len(str(q.denominator))
    return e - 1 if Fraction(10)**e > q else e + 1 if Fraction(10)**(e + 1) <= q else e


def _ceil_digits(q: Fraction, digits: int) -> Fraction:
    """``q`` (> 0) rounded up to ``digits`` significant digits, exactly."""
    step = Fraction(10)**(_exponent(q) - digits + 1)
    return math.ceil(q / step) * step


def exact_amount(value: Fraction | int, units: tuple[tuple[str, Fraction | int], ...],
                 digits: int | None = None) -> tuple[str, str]:
    """``value`` (> 0) as (a number, a unit) that ``parse_amount`` reads back as exactly the value
    shown: in the largest of ``units`` ((name, scale), largest first) it reaches, else the last;
    exact when the number is a terminating decimal ('89.774848', 'MB'), or with ``digits`` (and
    where it does not terminate, or is longer than ``MAX_DIGITS``) rounded *up* to that many
    significant digits, so that a limit suggested as feasible stays feasible ('1.49625', 'ms')."""
    name, scale = next(((n, s) for n, s in units if value >= s), units[-1])
    q = Fraction(value) / scale
    text = decimal_text(q if digits is None else _ceil_digits(q, digits))
    if text is None or len(text) > MAX_DIGITS:
        q = _ceil_digits(q, min(digits or 15, 15))
        text = decimal_text(q)
        if len(text) > MAX_DIGITS:  # far from 1 in every unit: e-notation, still exact
            e = _exponent(q)
            text = f"{decimal_text(q / Fraction(10)**e)}e{e}"
    return text, name


def progress_value(x: float, unit: str) -> str:
    """A solver's progress line's value: elements as a count with separators ('705,706,000'; the
    e-notation '7.05706e+08' read badly), seconds to 6 significant digits."""
    return format_count(round(x)) if unit == "elements" else f"{x:.6g}"


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 point', '2 points', '1,234 points' (``many``: the plural when it is not ``word`` + 's')."""
    return f"{format_count(n)} {word if n == 1 else (many or word + 's')}"


def safe_float(x: Fraction | int | float) -> float:
    """float(x), or +-inf when x is beyond the double range (instead of OverflowError)."""
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


MEMORY_UNITS = (("TiB", 2**40), ("GiB", GiB), ("MiB", 2**20), ("KiB", 2**10), ("B", 1))  # binary, largest first


def memory_text(x: Fraction | int | float | None) -> str:
    """Memory (a capacity, a limit, a footprint) in binary units, the one form of every report:
    '4 GiB', '504.7 MiB', '1023.9 KiB', '1 MiB'. Four significant digits, trailing zeros dropped;
    from 1000 of a unit up one decimal, so 1023.9 KiB is not shown as 1024 KiB (what rounds to
    1024 is the next unit's 1). Traffic stays decimal (``core.constraints.format_bytes``)."""
    if x is None:
        return "-"
    if isinstance(x, float) and not math.isfinite(x):
        return f"{x} B"
    v = Fraction(x)
    sign = "-" if v < 0 else ""
    if abs(v) >= 2**50:  # from 1024 TiB: whole TiB, e-notation from 10^12 TiB (no float overflow)
        return f"{sign}{format_count(round(abs(v) / 2**40))} TiB"
    for i, (unit, scale) in enumerate(MEMORY_UNITS):
        if abs(v) >= scale:
            n = safe_float(abs(v) / scale)
            text = f"{n:.1f}".removesuffix(".0") if n >= 1000 else f"{n:.4g}"
            if i > 0 and float(text) >= 1024:  # 1023.96 KiB: the next unit's 1
                unit, text = MEMORY_UNITS[i - 1][0], "1"
            elif i == 0 and n >= 1000:  # TiB, the largest unit: grouped as from 1024 TiB ('1,024 TiB' either side of 2^50)
                text = f"{n:,.1f}".removesuffix(".0")
            return f"{sign}{text} {unit}"
    return f"{sign}{safe_float(abs(v)):.3g} B"  # under a byte (a batch split finer than a sample): never '0 B'


def count_words(n: int) -> str:
    """A parameter count for reading: 175.0B, 1,000.0B, 125.0M, 12,345."""
    if n >= 10**9:
        return f"{n / 10**9:,.1f}B"
    return f"{n / 10**6:,.1f}M" if n >= 10**6 else f"{n:,}"
