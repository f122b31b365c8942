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


class InstanceTooLarge(ValueError):
    """A solver refuses an instance beyond its documented size limit."""


class SolverError(RuntimeError):
    """A solver failed for a reason other than the instance (e.g. a model rejected by CP-SAT)."""
