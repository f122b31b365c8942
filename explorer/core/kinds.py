"""Kinds of run the command line offers as choices, and their defaults: the objective, which
alpha classes are free, the paper accounting, the alpha grid and the time limits (split or not).

Defined here, with no dependency, so that ``explore``'s option declarations (``app.cli``) do
not import the modules that use them (``core.objective``, ``core.uneven``,
``core.paper_accounting`` and what they import): a run on a GPU cluster never needs those.
Each of those modules re-exports its own names from here.
"""

from __future__ import annotations

import enum

MIN_ALPHA_GRID, MAX_ALPHA_GRID, DEFAULT_ALPHA_GRID = 2, 1024, 16  # --alpha-grid N: alphas are multiples of 1/N
SPLIT_TIME_LIMIT = 10.0  # seconds a split's solver takes unless --time-limit (then its best plan, bound and gap)
SOLVE_TIME_LIMIT = 60.0  # seconds a run without --split takes unless --time-limit: CP-SAT's, pruned's and the exact
#                           solve's under caps or memory (then the best plan, the bound and the gap)


class Objective(enum.Enum):
    TRAFFIC = "traffic"  # HyPar's total communication: sum_h 2^h c_h elements
    TIME = "time"  # step time: step_time(compute_s, sum_h c_h * dtype_bytes / b_h) seconds (core.timing)

    def __str__(self) -> str:
        return self.value


class FreeAlphas(enum.Enum):
    """Which group classes choose their alpha from the grid (the others split 1/2)."""

    UNLIKE = "unlike"  # classes whose two subgroups are not identical subtrees (AccPar's choice)
    ALL = "all"  # every class (a larger space: small cases)

    def __str__(self) -> str:
        return self.value


class Accounting(enum.Enum):
    MODEL = "model"  # model.md: the default
    HYPAR_FIGURES = "hypar-figures"  # what HyPar's Figs. 5 and 8 imply (module docstring)

    def __str__(self) -> str:
        return self.value


CAPPED = ("cpsat", "pruned")  # the solvers with a time limit by default (``SOLVE_TIME_LIMIT``)
# explore check's joint solvers (``app.check``, which re-exports them; here so that ``explorer.api``, which
# every run imports, does not import the checker): run by default, exact first (the fastest proof, then
# CP-SAT's hint); what --solvers takes (pruned: on request, or with the default set where exact refuses a
# graph: ``app.check.pruned_instead``)
JOINT_SOLVERS = ("exact", "cpsat", "brute")
CHECK_SOLVERS = (*JOINT_SOLVERS, "pruned")


def solve_limit(solver: str, time_limit: float | None, coupled: bool) -> float | None:
    """The limit a run without ``--split`` keeps: the one given, else ``SOLVE_TIME_LIMIT`` for
    CP-SAT (``app.run.solve_with``), pruned (``solvers.pruned``) and exact when caps or memory couple the
    layers (``solvers.constrained``); None: no limit (the command line's time bar then shows the
    time alone). One place that says which solvers keep the default."""
    if time_limit is not None:
        return float(time_limit)
    if solver in CAPPED or (solver == "exact" and coupled):
        return SOLVE_TIME_LIMIT
    return None
