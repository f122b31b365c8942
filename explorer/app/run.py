"""Run one solver on a problem and assemble its result (the library side of ``explore``)."""

from __future__ import annotations

from dataclasses import replace

from ..core.evaluate import Evaluation
from ..core.problem import Problem
from ..core.solution import Solution, SolveOptions, Status
from ..solvers import get_solver
from .baselines import BASELINES, baseline_plan
from .results import Explanation, Inputs, PlanFigures, RunResult, StepTerms, plan_figures


class EvaluatorMismatch(AssertionError):
    """A solver's claimed cost disagrees with the independent evaluator: a bug, never input."""


def rescore(problem: Problem, sol: Solution) -> tuple[Evaluation, PlanFigures]:
    """Re-score a solution's plan with the evaluator; raise if the solver's claim disagrees,
    including a plan that breaks a constraint without the solver saying so."""
    ev, figs = plan_figures(problem, sol.plan)
    if figs.violations and sol.status is not Status.INFEASIBLE:
        names = "; ".join(v.constraint for v in figs.violations)
        raise EvaluatorMismatch(f"{sol.solver}: plan marked {sol.status} breaks {names}")
    if not figs.violations and sol.status is Status.INFEASIBLE:
        raise EvaluatorMismatch(f"{sol.solver}: plan marked infeasible satisfies every constraint")
    tables = problem.tables
    claimed = [tables.to_elements(u) for u in sol.level_units]
    if list(ev.level_cost) != claimed:
        raise EvaluatorMismatch(f"{sol.solver}: level costs {claimed} != evaluator {list(ev.level_cost)}")
    value = ev.objective_value(problem.objective)
    if problem.custom_weights is None and problem.real(sol.objective) != value:
        raise EvaluatorMismatch(f"{sol.solver}: objective {sol.objective} does not re-score to {value}")
    return ev, figs


# modules a solver imports on first use: imported before its clock starts, so that the wall
# time it reports is the solve (a first DP solve otherwise counted ~60-130 ms of numpy import)
SOLVER_IMPORTS = {"dp": ("numpy",)}


def warm_imports(solver: str) -> None:
    import importlib

    for name in SOLVER_IMPORTS.get(solver, ()):
        importlib.import_module(name)


def run(problem: Problem, solver: str, options: SolveOptions | None = None) -> RunResult:
    """Solve, re-score with the evaluator, and compare with the baselines."""
    options = options or SolveOptions()
    warm_imports(solver)
    sol = get_solver(solver)(problem, options)
    info = sol.info
    base = RunResult(
        inputs=Inputs.of(problem),
        solver=solver,
        status=sol.status,
        wall_s=round(sol.wall_s, 6),
        bound=problem.real(sol.bound),
        gap=problem.gap(sol.objective, sol.bound),
        reason=info.get("reason"),
        cpsat_status=info.get("cpsat_status"),
        limit=info.get("limit"),
        time_terms=StepTerms.of(problem, sol.objective if sol.plan is not None else None, sol.bound),
    )
    if sol.plan is None:
        if sol.status is Status.INFEASIBLE:
            from ..solvers.cpsat import explain_infeasible

            # the exact solver names a lone infeasible limit itself; else CP-SAT finds the conflict
            why = ({"infeasible": True, "conflict": info["conflict"], "suggestion": info.get("suggestion")}
                   if info.get("conflict") else explain_infeasible(problem, options.seed))
            if why.get("infeasible"):
                return replace(base, explanation=Explanation.of(why))
        return base
    ev, figs = rescore(problem, sol)
    baselines = tuple((name, plan_figures(problem, baseline_plan(problem, name))[1]) for name in BASELINES)
    return replace(
        base,
        plan=sol.plan,
        level_cost_elements=tuple(ev.level_cost),
        level_cost_units=tuple(sol.level_units),
        unit_per_element=problem.tables.unit_per_element,
        objective_value=ev.objective_value(problem.objective),
        figures=figs,
        baselines=baselines,
    )
