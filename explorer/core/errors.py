"""Errors the explorer raises for bad input (specs, options) and refused instances."""

from __future__ import annotations


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


class Refused(ValueError):
    """A solver declines an instance it cannot solve exactly; the message says why and what to use."""


class InstanceTooLarge(Refused):
    """A solver refuses an instance beyond its documented size limit."""


class CannotEnforce(Refused):
    """A solver cannot enforce a constraint of the instance exactly."""


class SolverError(RuntimeError):
    """A solver failed for a reason other than the instance (e.g. a model rejected by CP-SAT)."""
