"""What a solver returns, and the one solver interface: ``solve(problem, options) -> Solution``.

One ``Solution`` for the even and the uneven split. An even-split solver reports its objective
and bound in the problem's weighted integer units (``objective``, ``bound``, ``level_units``);
a solver of plans with split fractions reports the exact step time of the slowest accelerator
and its proven bound in seconds (``step_time_s``, ``bound_s``; ``split_solution``), with what it
explored, the best equal-split step time and its phases in ``info``."""

from __future__ import annotations

import enum
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

from .errors import shown

if TYPE_CHECKING:  # annotations only: the LLM planner reads Status without the accelerator array's problem
    from .plan import Plan
    from .problem import Problem


class Status(enum.Enum):
    OPTIMAL = "optimal"  # proven joint optimum for the objective (objective == bound)
    FEASIBLE = "feasible"  # a valid plan, optimality not proven; bound and gap reported
    LEVEL_OPTIMAL = "level-optimal"  # hierarchical DP: each level optimal given the levels above
    INFEASIBLE = "infeasible"  # proven: no plan satisfies the constraints (never a plan that breaks one)
    UNKNOWN = "unknown"  # no plan found within the limits
    INTERRUPTED = "interrupted"  # stopped by the user (Ctrl-C): the best plan so far, if any, with its bound
    REFUSED = "refused"  # in reports only (a check's row, a sweep's status): the solver declined the instance; no solver returns it

    def __str__(self) -> str:
        return self.value


INTERRUPTED_WITH_PLAN = "stopped by Ctrl-C; the best plan so far, optimality not proven"  # (the reason)


# A heuristic's plan that breaks a cap, pin, forbid or memory limit (the DP enforces only pins
# and forbids) keeps the solver's status: it is not proven infeasible. Reports say so with
# ``ok`` false, the violations, this note by the status, and exit status 1 in the CLI.
BROKEN_PLAN_NOTE = "its plan breaks a rule; not proven infeasible"


# The least --time-limit (seconds) of every command, split or not (explore, explore split, explore
# check, --uneven, the LLM planner, sweeps, the API): below it the uneven joint solver's phases
# cannot start (its search and bound take ~0.1 s on tiny inputs), and no solver gives anything useful.
MIN_TIME_LIMIT_S = 0.1
FLOAT_MAX = sys.float_info.max


def time_limit_problem(value: Any) -> str | None:
    """What is wrong with a wall-clock limit (None when fine): the one check and message of
    ``--time-limit``, ``time_limit=`` and a sweep's ``time_limit``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not MIN_TIME_LIMIT_S <= value <= FLOAT_MAX:
        # nan compares false; an int beyond the largest float is no finite time (math.isfinite overflows)
        return f"must be a finite number of seconds >= {MIN_TIME_LIMIT_S:g}, got {shown(value)}"
    return None


@dataclass(frozen=True)
class SolveOptions:
    time_limit_s: float | None = None
    deterministic_time_limit: float | None = None  # CP-SAT's reproducible work budget
    presolve: bool = False  # CP-SAT presolve: off by default, 2-3x faster on this model (bench)
    workers: int | None = None
    seed: int = 0
    dump_model: str | None = None
    hint: Plan | None = None
    max_plans: int | None = None  # brute force: refuse above this many plans
    max_states: int | None = None  # exact: refuse above this many per-layer states
    progress: Callable[[str], None] | None = None
    lower_bound: int | None = None  # cpsat: a lower bound another method proved (weighted units), a constraint
    lower_bound_by: str | None = None  # the method that proved ``lower_bound`` (reported as the bound's method)
    started: float | None = None  # the ``time.perf_counter()`` value ``time_limit_s`` counts from (``explore``: its
    # process's start); None: the solve's own start. Solvers read it through ``solvers.deadline.origin``


@dataclass(frozen=True)
class Solution:
    solver: str
    status: Status
    plan: Plan | None
    objective: int | None  # sum_h w_h c_h in the problem's weighted units (problem.weights)
    bound: int | None  # proven lower bound on the joint optimum, same units, if any
    level_units: tuple[int, ...] | None  # c_h in units of 1/(4*2^H) element, from the cost tables
    wall_s: float
    info: dict[str, Any] = field(default_factory=dict)
    step_time_s: Fraction | None = None  # split solvers: the plan's exact step time (``evaluate_split``)
    bound_s: Fraction | None = None  # split solvers: a proven lower bound on it, if any

    @property
    def split_value(self) -> Fraction | None:
        """A split solver's objective value: its step time, or its traffic (elements) under that objective."""
        return self.info.get("value", self.step_time_s)

    @property
    def split_bound(self) -> Fraction | None:
        return self.info.get("bound", self.bound_s)

    @property
    def explored(self) -> int | None:
        """Split solvers: plans (brute), kept states (exact), columns (cpsat) or grid probes (search)."""
        return self.info.get("explored")

    @property
    def equal_best_s(self) -> Fraction | None:
        """The joint split solver: the best plan's step time with every alpha 1/2."""
        return self.info.get("equal_best_s")

    @property
    def phases(self) -> tuple[tuple[str, float], ...]:
        """The joint split solver: (phase, seconds)."""
        return self.info.get("phases", ())

    @property
    def violations(self) -> tuple[str, ...]:
        """What the plan breaks, as the solver names it (a heuristic that does not enforce every rule)."""
        return tuple(self.info.get("violations") or ())

    @property
    def gap(self) -> float | None:
        """On the weighted units; what is reported is ``Problem.gap`` (on step times for the time objective)."""
        if self.objective is None or self.bound is None:
            return None
        return (self.objective - self.bound) / max(1, abs(self.objective))


class Solver(Protocol):
    name: str

    def __call__(self, problem: Problem, options: SolveOptions) -> Solution: ...


def plan_solution(
    solver: str,
    problem: Problem,
    plan: Plan,
    status: Status,
    wall_s: float,
    bound: int | None = None,
    info: dict[str, Any] | None = None,
    level_units: Sequence[int] | None = None,
) -> Solution:
    """A Solution for a plan, with its objective summed from the shared cost tables (or from
    ``level_units``, the solver's own c_h in units, when it has them: the plan is not summed
    twice; ``app.run.rescore`` compares them with the evaluator's)."""
    if level_units is None:
        from .costs import plan_level_units

        level_units = plan_level_units(problem.tables, plan.types)
    level_units = tuple(level_units)
    return Solution(
        solver=solver,
        status=status,
        plan=plan,
        objective=problem.weights.value(level_units),
        bound=bound,
        level_units=level_units,
        wall_s=wall_s,
        info=dict(info or {}),
    )


def split_solution(solver: str, status: Status, plan: Plan | None, step_time_s: Fraction | None, bound_s: Fraction | None,
                   wall_s: float, explored: int, equal_best_s: Fraction | None = None,
                   phases: tuple[tuple[str, float], ...] = (), objective=None) -> Solution:
    """A split solver's Solution: the plan's exact step time and bound in seconds (no weighted units).
    Under the traffic objective (``objective``, an ``Objective``) the two are the plan's traffic
    and its bound in elements, kept as ``info["value"]`` and ``info["bound"]`` (``split_value``)."""
    info: dict[str, Any] = {"explored": explored}
    if objective is not None and objective.value == "traffic":
        info["value"], info["bound"] = step_time_s, bound_s
        step_time_s = bound_s = None
    if equal_best_s is not None:
        info["equal_best_s"] = equal_best_s
    if phases:
        info["phases"] = tuple(phases)
    return Solution(solver=solver, status=status, plan=plan, objective=None, bound=None, level_units=None,
                    wall_s=wall_s, info=info, step_time_s=step_time_s, bound_s=bound_s)
