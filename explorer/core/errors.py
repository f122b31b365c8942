"""Errors the explorer raises for bad input (specs, options) and refused instances."""

from __future__ import annotations

from .names import given_as


class SpecError(ValueError):
    """Bad input: a spec file or an option that cannot be used.

    ``str(err)`` is one line naming the file (or option), the field and the problem; a problem
    repeated (100,000 identical bad pins) is said once with its count: ``... (x100,000)``.
    """

    def __init__(self, source: str, problems: list[str] | str):
        if isinstance(problems, str):
            problems = [problems]
        self.source = source
        self.problems = list(problems)
        super().__init__(f"{source}: " + "; ".join(counted(self.problems)))


MAX_SHOWN_PROBLEMS = 10  # distinct problems listed in one message; the rest are counted


def first_problems(problems: list[str], most: int = MAX_SHOWN_PROBLEMS) -> list[str]:
    """The first ``most`` distinct problems (``counted``) and a count of the rest: a list of
    300,000 bad pins is one short line."""
    distinct = counted(problems)
    if len(distinct) <= most:
        return distinct
    counts: dict[str, int] = {}
    for p in problems:
        counts[p] = counts.get(p, 0) + 1
    rest = sum(list(counts.values())[most:])
    return distinct[:most] + [f"and {format_count(rest)} more problems"]


def counted(problems: list[str]) -> list[str]:
    """Each distinct problem once, in first-seen order, with ``(xN)`` where it came N > 1 times."""
    counts: dict[str, int] = {}
    for p in problems:
        counts[p] = counts.get(p, 0) + 1
    return [p if n == 1 else f"{p} (x{format_count(n)})" for p, n in counts.items()]


class EvaluatorMismatch(AssertionError):
    """A solver's claimed cost or status disagrees with the independent evaluator: a bug, never
    input (``app.run.rescore`` raises it; ``explore`` reports it in one line, exit status 1)."""


class Refused(ValueError):
    """A solver declines an instance it cannot solve exactly; the message says why and what to use."""


class InstanceTooLarge(Refused):
    """A solver refuses an instance beyond its documented size limit."""


def refusal_reason(err: Refused) -> str:
    """A solver's refusal without its closing '; use --solver ...' (what to run instead), as the
    running front end names the option (``core.names``)."""
    return str(err).split(f"; use {given_as('--solver')}")[0]


SHOWN_CHARS = 80  # the most of a user's value an error message shows
SHOWN_DIGITS = 20  # an integer of more digits is shown as format_count shows it: 1.000e+400


def is_int(value: object) -> bool:
    """An integer a user gave (YAML, JSON, the API): a bool is not one."""
    return isinstance(value, int) and not isinstance(value, bool)


def format_count(n: int) -> str:
    """An integer for a message: '1,234,567' up to 10^12, else '9.874e+86' computed without
    float overflow (and without the decimal string Python refuses beyond 4,300 digits)."""
    import math

    n = int(n)
    if abs(n) < 10**12:
        return f"{n:,}"
    sign = "-" if n < 0 else ""
    n = abs(n)
    e = int(math.log10(n))  # math.log10 takes integers of any size
    m = n / 10**e  # integer true division: a correctly rounded float in [1, 10) (up to log10 rounding)
    while m >= 10:
        e, m = e + 1, m / 10
    while m < 1:
        e, m = e - 1, m * 10
    text = f"{m:.3f}"
    if text.startswith("10."):
        e, text = e + 1, "1.000"
    return f"{sign}{text}e+{e}"


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """A user's value for an error message: its repr, cut to ``limit`` characters; an integer
    of more than SHOWN_DIGITS digits (in a list too) abbreviated: ``10**400`` is 1.000e+400.

    ``reprlib`` bounds the work too (a few items per list, a few levels deep), so a value built
    by YAML anchors (a "billion laughs" structure) costs nothing to show."""
    import reprlib

    class _Repr(reprlib.Repr):
        def repr_int(self, x, level):
            return format_count(x) if abs(x) >= 10**SHOWN_DIGITS else super().repr_int(x, level)

    r = _Repr()
    r.maxstring = r.maxother = r.maxlong = limit
    r.maxlist = r.maxtuple = r.maxdict = r.maxset = 8
    r.maxlevel = 3
    text = r.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
