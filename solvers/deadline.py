"""A solve's deadline: a ``time.perf_counter()`` value, or None for none."""

from __future__ import annotations

import time


def past(deadline: float | None) -> bool:
    """Whether ``deadline`` has passed (never, when None)."""
    return deadline is not None and time.perf_counter() > deadline


def check_deadline(deadline: float | None, error: type[Exception]) -> None:
    """Raise ``error`` (each solver its own: ``BuildTimeout``, ``TimeUp`` ...) once ``deadline`` has passed."""
    if past(deadline):
        raise error
