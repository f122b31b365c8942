"""Exact figures as text and JSON numbers, for every report: ``exact_number`` (results' JSON),
``fmt_seconds`` (render's tables) and ``exact_count`` (element counts). Kept apart from
``results`` and ``render`` so that the LLM planner's report (``llm_report``) does not import the
accelerator-array results and their evaluator.
"""

from __future__ import annotations

from fractions import Fraction

from ..core.units import format_count, safe_float


def _sci(x: Fraction | float) -> str:
    """e-notation without float overflow: 1.235e+100 for any size."""
    v = safe_float(x)
    if v not in (float("inf"), float("-inf")):
        return f"{v:.3e}"
    digits = str(abs(int(x)))
    return f"{'-' if x < 0 else ''}{digits[0]}.{digits[1:4].ljust(3, '0')}e+{len(digits) - 1}"


def _prefixed(v: float, unit: str) -> tuple[float, str] | None:
    """``v`` from a millionth up (or 0) as (a number, ``unit`` or its milli- or micro-unit); None
    below a millionth or negative."""
    if v >= 1:
        return v, unit
    if v >= 1e-3:
        return v * 1e3, "m" + unit
    if v >= 1e-6 or v == 0:
        return v * 1e6, "u" + unit
    return None


def _milli_micro(v: float, unit: str, micro_digits: int) -> str | None:
    """``v`` from a millionth up (or 0) in ``unit``, its milli- or its micro-unit; None below a
    millionth or negative (each caller writes those its own way)."""
    if (p := _prefixed(v, unit)) is None:
        return None
    n, u = p
    return f"{n:.{3 if u == unit else 2 if u[0] == 'm' else micro_digits}f} {u}"


def fmt_seconds(x: Fraction | float, digits: int | None = None) -> str:
    """Seconds in the unit that suits them (s, ms, us, ns): 3 decimals in s, 2 in ms, none in us;
    ``digits``: that many significant digits instead (a check's table, where the solvers' values
    are compared side by side: ``23.3741 us``)."""
    v = safe_float(x)
    if v >= 1e6:  # a million seconds and more: e-notation keeps the column narrow
        return f"{_sci(x)} s"
    if digits is not None:
        n, u = _prefixed(v, "s") or ((v * 1e9, "ns") if v >= 1e-9 else (v, "s"))
        return f"{n:.{digits}g} {u}"
    if (text := _milli_micro(v, "s", 0)) is not None:
        return text
    if v >= 1e-9:  # below a microsecond: 3 significant digits, never a rounded-off "0 us"
        return f"{v * 1e9:.3g} ns"
    return f"{v:.3g} s"  # 11 characters at most, so the table columns stay aligned


def exact_number(x: Fraction | int | None) -> int | float | str | None:
    """An exact JSON number: int when integral, float when the float is exact, else 'p/q' (None: null)."""
    if x is None:
        return None
    x = Fraction(x)
    if x.denominator == 1:
        return int(x)
    f = safe_float(x)
    return f if Fraction(f) == x else f"{x.numerator}/{x.denominator}"


# a count of elements with a fraction, where a report shows one (``exact_count``)
FRACTION_NOTE = ("element counts are exact: an alpha gives a side a fraction of a tensor's elements "
                 "(12+3/4 one count; ~: rounded)")
SHORT_FRACTION = 11  # characters of a count's fraction shown exactly ("12345/67890"); longer: rounded, after ~


def exact_count(x: Fraction | int) -> str:
    """A count of elements as text: '2,200,380', or with its fraction, '2,555,213+33/49' (an uneven
    split's alphas give a side a fraction of a tensor's elements: ``FRACTION_NOTE``; joined by '+',
    never a space, so that it cannot be read as two numbers; '1/2' below one); a fraction longer
    than ``SHORT_FRACTION`` is rounded and marked: '~2,555,213.67' (as ``split._alpha``)."""
    whole, rest = divmod(Fraction(x), 1)
    if not rest:
        return format_count(whole)
    if len(text := f"{rest.numerator}/{rest.denominator}") <= SHORT_FRACTION:
        return text if whole == 0 else f"{format_count(whole)}+{text}"
    return f"~{safe_float(x):,.2f}" if abs(whole) < 10**12 else f"~{format_count(whole)}"


def has_fraction(*counts: Fraction | int | None) -> bool:
    """Whether any of ``counts`` is not a whole number (a report then adds ``FRACTION_NOTE``)."""
    return any(c is not None and Fraction(c).denominator != 1 for c in counts)
