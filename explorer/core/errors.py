"""Errors the explorer raises for bad input (specs, options) and refused instances."""

from __future__ import annotations

from .names import given_as


class SpecError(ValueError):
    """Bad input: a spec file or an option that cannot be used.

    ``str(err)`` is one line naming the file (or option), the field and the problem.
    """

    def __init__(self, source: str, problems: list[str] | str):
        if isinstance(problems, str):
            problems = [problems]
        self.source = source
        self.problems = list(problems)
        super().__init__(f"{source}: " + "; ".join(self.problems))


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


def is_int(value: object) -> bool:
    """An integer a user gave (YAML, JSON, the API): a bool is not one."""
    return isinstance(value, int) and not isinstance(value, bool)


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """A user's value for an error message: its repr, cut to ``limit`` characters.

    ``reprlib`` bounds the work too (a few items per list, a few levels deep), so a value built
    by YAML anchors (a "billion laughs" structure) costs nothing to show."""
    import reprlib

    r = reprlib.Repr()
    r.maxstring = r.maxother = limit
    r.maxlist = r.maxtuple = r.maxdict = r.maxset = 8
    r.maxlevel = 3
    text = r.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
