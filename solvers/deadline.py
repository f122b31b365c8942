"""A solve's deadline: a ``time.perf_counter()`` value, or None for none."""

from __future__ import annotations

import math
import time
from enum import Enum

from explorer.core.solution import SolveOptions

MIN_LEFT_SHARE = 0.02  # of the limit a solve gets when what came before it (start-up, imports) took it all


LATE = (math.inf,)  # the rank of a move scored past its deadline: above every rank, never kept


class Cut(Enum):
    """What a heuristic's deadline cut: ``Solution.info["cut"]`` (absent when it ran to its end), its
    best plan so far then; ``info["explored"]`` counts the plans it scored by then (none after)."""

    SEARCH = "search"  # the alpha search's moves (``uneven.search_level_alphas``)
    LEVEL_DP = "level DP"  # the level DP itself: the equal split stands in for its plan (``uneven_levels``)
    BLOCK_MOVES = "block moves"  # the level DP's block moves: its plan without the remaining moves


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


# Of a limit, what a solve's own deadline keeps back at its end (at most END_MARGIN_MAX_S): its last
# step overruns the deadline by one slice (an elimination's row block, a dual round) and the plan's
# re-scoring and the report follow (pruned at 12 levels, load 8: 0.1-0.3 s past a 4 s limit, then
# 0.1 s of report; whole process 4.3-4.4 s)
END_MARGIN, END_MARGIN_MAX_S = 0.06, 0.5


def solve_end(t0: float, limit_s: float) -> float:
    """The ``time.perf_counter()`` value a solve limited to ``limit_s`` from ``t0`` stops by (``END_MARGIN``)."""
    return t0 + limit_s - min(END_MARGIN * limit_s, END_MARGIN_MAX_S)
