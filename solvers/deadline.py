"""A solve's deadline: a ``time.perf_counter()`` value, or None for none."""

from __future__ import annotations

import time

from explorer.core.solution import SolveOptions

MIN_LEFT_SHARE = 0.02  # of the limit a solve gets when what came before it (start-up, imports) took it all


def past(deadline: float | None) -> bool:
    """Whether ``deadline`` has passed (never, when None)."""
    return deadline is not None and time.perf_counter() > deadline


def check_deadline(deadline: float | None, error: type[Exception]) -> None:
    """Raise ``error`` (each solver its own: ``BuildTimeout``, ``TimeUp`` ...) once ``deadline`` has passed."""
    if past(deadline):
        raise error


def origin(options: SolveOptions) -> float:
    """The ``time.perf_counter()`` value a solve's ``time_limit_s`` counts from: ``options.started``
    (``explore`` passes its process's start, so that start-up and imports count), else now."""
    return options.started if options.started is not None else time.perf_counter()
