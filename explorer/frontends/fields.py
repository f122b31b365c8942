"""Field validation helpers shared by the spec parsers; they collect errors with paths."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..core.errors import shown
from ..core.network_check import MAX_INT, check_pos_int  # noqa: F401  (the spec parsers' import)
from ..core.units import format_count

# Ranges that keep every derived figure finite as a float and every exact one printable:
# a size, count or batch up to 2^40; a real quantity (bandwidth, TFLOPS, GiB, pJ) in
# [1e-30, 1e100]. A limit beyond any plan's reach is still no limit (1e12 GiB is fine).
MIN_NUMBER, MAX_NUMBER = Fraction(1, 10**30), Fraction(10**100)


# a name prints as itself on one line (``str.isprintable``: letters, marks, symbols, punctuation, the ASCII space)
NAME_RULE = "must be printable (no control, format or separator characters but the ASCII space)"
SPEC_VERSION = 1  # the version of the network, array and cluster specs this explorer reads


def is_version(v: Any, expected: int = SPEC_VERSION) -> bool:
    """Whether a file's ``version`` is ``expected``: an integer, not ``true`` or ``1.0`` (equal
    to 1 in Python, but not a version this explorer reads), as every file's checks take it."""
    return isinstance(v, int) and not isinstance(v, bool) and v == expected


class Fields:
    """Reads typed fields out of a raw mapping, collecting every problem with its path."""

    def __init__(self, data: dict, path: str, errors: list[str], allowed: set[str], required: set[str] = frozenset()):
        self.data = data
        self.path = path
        self.errors = errors
        for key in data:
            if key not in allowed:
                self.errors.append(f"{self._p(str(key))}: unknown key (allowed: {', '.join(sorted(allowed))})")
        for key in sorted(required):
            if key not in data:
                self.errors.append(f"{self._p(key)}: missing")

    def _p(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def error(self, key: str, msg: str) -> None:
        self.errors.append(f"{self._p(key)}: {msg}")

    def version(self) -> None:
        """A spec's ``version`` other than ``SPEC_VERSION`` is an error (a missing one: ``required``)."""
        if "version" in self.data and not is_version(self.data["version"]):
            self.error("version", f"unsupported version {shown(self.data['version'])} (this explorer reads version "
                                  f"{SPEC_VERSION})")

    def pos_int(self, key: str, default: int | None = None) -> int | None:
        if key not in self.data:
            return default
        return check_pos_int(self.data[key], self._p(key), self.errors)

    def string(self, key: str, default: str | None = None) -> str | None:
        if key not in self.data:
            return default
        v = self.data[key]
        if not isinstance(v, str) or not v.strip():
            self.error(key, "must be a non-empty string")
            return default
        return v

    def name(self, key: str, default: str | None = None) -> str | None:
        """A name printed in reports: a non-empty string of printable characters (no newline,
        tab, bell, bidirectional override or other control and format characters)."""
        v = self.string(key, None)
        if v is None:
            return default
        if not v.isprintable():
            self.error(key, f"{NAME_RULE}, got {shown(v)}")
            return default
        return v

    def pos_number(self, key: str, default: Fraction | None = None) -> Fraction | None:
        if key not in self.data:
            return default
        return check_pos_number(self.data[key], self._p(key), self.errors)

    def pair(self, key: str, default: tuple[int, int] | None = None) -> tuple[int, int] | None:
        """An int ``n`` (meaning n x n) or a list ``[h, w]`` of positive ints."""
        if key not in self.data:
            return default
        v = self.data[key]
        if isinstance(v, list):
            if len(v) != 2:
                self.error(key, f"must be an integer or a list [h, w], got a list of {len(v)}")
                return default
            n0 = len(self.errors)
            a = check_pos_int(v[0], self._p(key) + "[0]", self.errors)
            b = check_pos_int(v[1], self._p(key) + "[1]", self.errors)
            return (a, b) if len(self.errors) == n0 else default
        n0 = len(self.errors)
        a = check_pos_int(v, self._p(key), self.errors)
        return (a, a) if len(self.errors) == n0 else default


def check_pos_number(v: Any, path: str, errors: list[str]) -> Fraction | None:
    """A positive int or float, kept exact as a Fraction of its decimal spelling."""
    x, problem = _pos_number(v)
    if problem:
        errors.append(f"{path}: {problem}")
        return None
    return x


def pos_number_problem(v: Any) -> str | None:
    """Why ``v`` is not a positive number in [1e-30, 1e100] (every spec's real quantities:
    bandwidth, TFLOPS, GiB, pJ), or None; a YAML ``2e3`` read as text gets the hint."""
    return _pos_number(v)[1]


def _pos_number(v: Any) -> tuple[Fraction | None, str | None]:
    """(``v`` as an exact Fraction, None) or (None, ``pos_number_problem``'s words): the Fraction
    made once (an array of 100,000 kinds: 200,000 numbers)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, Fraction)):  # a Fraction: a built spec's (the API's)
        return None, f"must be a positive number, got {shown(v)}{_exponent_hint(v)}"
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return None, f"must be a finite number, got {shown(v)}"
    if v <= 0:
        return None, f"must be > 0, got {v}"
    x = Fraction(str(v)) if isinstance(v, float) else Fraction(v)
    if not MIN_NUMBER <= x <= MAX_NUMBER:
        text = f"{v:.3g}" if isinstance(v, float) else format_count(v)
        return None, f"must be between 1e-30 and 1e100, got {text}"
    return x, None


def _exponent_hint(v: Any) -> str:
    """The hint for a number YAML read as text: PyYAML wants a dot and a signed exponent. Given
    only when the number, so written, would be taken (positive, in [1e-30, 1e100]); else the range
    (``1e400`` spelled ``1.0e+400`` is infinite: refused again)."""
    if isinstance(v, str) and "e" in v.lower():
        try:
            x = float(v)
        except ValueError:
            return ""
        if x == x and x not in (float("inf"), float("-inf")) and MIN_NUMBER <= Fraction(str(x)) <= MAX_NUMBER:
            return f" (YAML reads a bare {v.strip()} as text: write {_yaml_float(v)})"
        return " (a number between 1e-30 and 1e100, written as YAML reads a float, such as 2.0e+3)"
    return ""


def _yaml_float(text: str) -> str:
    """``text`` (a number PyYAML read as a string, such as 2e3) spelled as PyYAML reads a float: 2.0e+3."""
    mant, _, exp = text.strip().lower().partition("e")
    if "." not in mant:
        mant += ".0"
    if exp[:1] not in "+-":
        exp = "+" + exp
    return f"{mant}e{exp}"
