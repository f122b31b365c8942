"""Run one solver on a problem and assemble its result (the library side of ``explore``)."""

from __future__ import annotations

import time
from dataclasses import replace

from ..core.errors import EvaluatorMismatch
from ..core.evaluate import Evaluation
from ..core.kinds import SOLVE_TIME_LIMIT, solve_limit
from ..core.plan import Plan
from ..core.problem import Problem
from ..core.solution import Solution, SolveOptions, Status, plan_solution
from ..solvers import get_solver
from ..solvers.deadline import MIN_LEFT_SHARE, origin
from .baselines import BASELINES, baseline_plan
from .results import Explanation, Inputs, PlanFigures, RunResult, StepTerms, plan_figures




def rescore(problem: Problem, sol: Solution) -> tuple[Evaluation, PlanFigures]:
    """Re-score a solution's plan with the evaluator; raise if the solver's claim disagrees,
    including a plan that breaks a constraint other than those the solver names
    (``Solution.violations``: a heuristic's plan keeps its status, ``BROKEN_PLAN_NOTE``)."""
    ev, figs = plan_figures(problem, sol.plan)
    if sol.status is Status.INFEASIBLE:
        raise EvaluatorMismatch(f"{sol.solver}: a plan marked infeasible (proven: no plan)")
    broken = [v.constraint for v in figs.violations]
    if broken != list(sol.violations):
        said = "; ".join(sol.violations) or "nothing"
        raise EvaluatorMismatch(f"{sol.solver}: plan marked {sol.status} breaks {'; '.join(broken) or 'nothing'}, "
                                f"the solver says {said}")
    tables = problem.tables
    claimed = [tables.to_elements(u) for u in sol.level_units]
    if list(ev.level_cost) != claimed:
        raise EvaluatorMismatch(f"{sol.solver}: level costs {claimed} != evaluator {list(ev.level_cost)}")
    value = ev.objective_value(problem.objective)
    if problem.custom_weights is None and problem.real(sol.objective) != value:
        raise EvaluatorMismatch(f"{sol.solver}: objective {sol.objective} does not re-score to {value}")
    return ev, figs


def baseline_figures(problem: Problem, scored: list[tuple[Plan, PlanFigures]]) -> tuple[tuple[str, PlanFigures], ...]:
    """Each baseline's figures; a plan already evaluated (in ``scored``: the solver's, or an earlier
    baseline: conv-only networks' trick is all-I) is not evaluated again. Plans compare as tuples
    of types (identity first, in C; hashing them would call ``Enum.__hash__`` per entry)."""
    out = []
    for name in BASELINES:
        plan = baseline_plan(problem, name)
        figs = next((f for p, f in scored if p == plan), None)
        if figs is None:
            figs = plan_figures(problem, plan)[1]
            scored.append((plan, figs))
        out.append((name, figs))
    return tuple(out)


def _bound_method(sol: Solution) -> str | None:
    """The method that proved the reported bound, when the solver does not name it itself."""
    if sol.bound is None:
        return None
    if sol.solver == "exact":
        return f"exact:{sol.info.get('method', 'dp')}"
    return sol.solver


# modules a solver imports on first use: imported before its clock starts (the API's ``wall_s`` counts
# from ``solve_with``'s call, explore's from the process's start: the import is counted there anyway;
# a first DP solve otherwise counted ~60-130 ms of numpy import inside the DP)
SOLVER_IMPORTS = {"dp": ("numpy",)}


def warm_imports(solver: str, problem: Problem | None = None) -> None:
    """Import ``SOLVER_IMPORTS[solver]``; for the DP only when the problem is large enough for its
    numpy paths (from ``thresholds.NUMPY_FROM_LAYERS`` layers): below, the DP, the cost tables and the
    plan scoring run in Python integers and a run never imports numpy (a third of a zoo run's time)."""
    import importlib

    from ..core import thresholds

    if solver == "dp" and problem is not None and problem.num_layers < thresholds.NUMPY_FROM_LAYERS:
        return
    for name in SOLVER_IMPORTS.get(solver, ()):
        importlib.import_module(name)


EXACT_SHARE = 0.5  # of --time-limit that the exact method may take before CP-SAT runs (caps, memory)


def exact_first(problem: Problem, options: SolveOptions) -> tuple[SolveOptions, Solution | None]:
    """Before CP-SAT on a problem with caps or memory: the exact constrained method (within
    ``EXACT_SHARE`` of the time limit), whose plan becomes CP-SAT's hint and whose proven bound
    becomes a constraint on CP-SAT's objective (and the reported bound's method); CP-SAT gets
    the time left. The options unchanged (and None) when the exact method cannot take the problem."""
    from ..core.errors import InstanceTooLarge
    from ..solvers import exact

    if not exact.coupled(problem) or options.lower_bound is not None:
        return options, None
    share = None if options.time_limit_s is None else options.time_limit_s * EXACT_SHARE
    try:
        pre = exact.solve(problem, replace(options, time_limit_s=share, progress=None, started=None))  # (share: of what is left)
    except (InstanceTooLarge, NotImplementedError, OverflowError):  # CP-SAT alone (it names sizes beyond int64 itself)
        return options, None
    if pre.bound is None:  # infeasible or no bound: CP-SAT on its own (from the exact method's plan, if it met one)
        return (options if pre.plan is None or options.hint is not None else replace(options, hint=pre.plan)), pre
    left = None if options.time_limit_s is None else max(options.time_limit_s - pre.wall_s, 0.1 * options.time_limit_s)
    method = f"exact:{pre.info.get('method', 'dp')}"
    return replace(options, hint=pre.plan if pre.plan is not None else options.hint, lower_bound=pre.bound,
                   lower_bound_by=method, time_limit_s=left), pre


def _suggest_exact(problem: Problem, sol: Solution) -> Solution:
    """A CP-SAT plan with no bound proven: its reason names ``--solver exact`` when the exact
    method takes an instance of this size (its up-front check, no solve; it often proves what
    CP-SAT could not bound)."""
    from ..core.errors import InstanceTooLarge
    from ..core.names import given_as
    from ..solvers import exact

    if sol.plan is None or sol.bound is not None or not sol.info.get("reason"):
        return sol
    try:
        exact.check_size(problem)
    except InstanceTooLarge:
        return sol
    reason = sol.info["reason"] + f"; the exact solver takes this instance and may prove it: try {given_as('--solver')} exact"
    return replace(sol, info=dict(sol.info, reason=reason))


def seed_fallback(problem: Problem, sol: Solution) -> Solution:
    """An ``unknown`` answer without a plan (a limit stopped the solver first): the cheapest of
    the seeds at hand that keeps every rule (the baselines the report lists; ``Problem.plan_breaks``),
    ``feasible`` with the solver's bound (``optimal`` only when the bound meets it); unchanged when
    none keeps them. (CP-SAT's own fallback, the DP's plan, is taken inside ``cpsat.solve``.)"""
    if sol.plan is not None or sol.status is not Status.UNKNOWN:
        return sol
    best = None
    for name in BASELINES:
        plan = baseline_plan(problem, name)
        if problem.plan_breaks(plan):
            continue
        seeded = plan_solution(sol.solver, problem, plan, Status.FEASIBLE, sol.wall_s, bound=sol.bound, info=sol.info)
        if best is None or seeded.objective < best[1].objective:
            best = (name, seeded)
    if best is None:
        return sol
    name, seeded = best
    if sol.bound is not None and sol.bound > seeded.objective:
        raise EvaluatorMismatch(f"{sol.solver}: bound {sol.bound} above the value {seeded.objective} of the {name} plan")
    why = sol.info.get("reason") or "no plan found within the limit"
    info = dict(sol.info, seed=name, reason=f"{why}; yet the {name} baseline keeps every limit: it is the plan shown, not proven optimal")
    status = Status.OPTIMAL if sol.bound == seeded.objective else Status.FEASIBLE
    return replace(seeded, status=status, info=info)


def solve_with(problem: Problem, solver: str, options: SolveOptions) -> Solution:
    """The solver's answer; CP-SAT on a problem with caps or memory runs after ``exact_first``
    (its wall time includes the exact method's). ``--time-limit`` counts from ``options.started``
    (``explore``: its process's start), else from here: the solver's import (OR-Tools takes about a
    second), the exact method and CP-SAT's build and search; every solver's ``wall_s`` is all of it
    (the DP's too: what ``--time-limit`` counts, ``docs/solvers.md``).
    CP-SAT without a limit gets ``SOLVE_TIME_LIMIT``, as exact and pruned do (unless a
    deterministic limit is its budget)."""
    t0 = origin(options)
    options = replace(options, started=t0)
    if solver == "cpsat" and options.time_limit_s is None and options.deterministic_time_limit is None:
        options = replace(options, time_limit_s=solve_limit(solver, None, False))
    limit = options.time_limit_s
    solve = get_solver(solver)
    pre = None
    if solver == "cpsat":
        if limit is not None:
            options = replace(options, time_limit_s=max(limit - (time.perf_counter() - t0), MIN_LEFT_SHARE * limit))
        options, pre = exact_first(problem, options)
        if pre is not None and pre.status is Status.INTERRUPTED:  # Ctrl-C during the exact method
            return replace(pre, wall_s=time.perf_counter() - t0)
        if limit is not None:
            options = replace(options, time_limit_s=max(limit - (time.perf_counter() - t0), MIN_LEFT_SHARE * limit))
    # every solver's wall time: the whole of what --time-limit bounds, from ``t0`` (the DP's and the
    # unconstrained exact solve's own clocks started later: their solve alone)
    sol = seed_fallback(problem, solve(problem, options))
    sol = replace(sol, wall_s=time.perf_counter() - t0)
    if solver == "cpsat":
        sol = _suggest_exact(problem, sol)
    if pre is None:
        return sol
    info = dict(sol.info, exact_first={"status": pre.status.value, "method": pre.info.get("method"),
                                       "bound": pre.bound, "wall_s": round(pre.wall_s, 6)})
    if sol.status is Status.INFEASIBLE and pre.status is Status.INFEASIBLE and pre.info.get("conflict"):
        info.update(conflict=pre.info["conflict"], suggestion=pre.info.get("suggestion"))  # the exact method named it
    return replace(sol, info=info)


EXPLAIN_MIN_SHARE = 0.1  # the explanation's least share of the limit when the solve used it all


def explain_deadline(options: SolveOptions, spent_s: float) -> float:
    """When an infeasible run's explanation (``cpsat.explain_infeasible``) stops, as a
    ``perf_counter`` value: what the limit (``--time-limit``, else the constrained solve's default)
    leaves after the solve's ``spent_s`` seconds, and at least ``EXPLAIN_MIN_SHARE`` of it."""
    limit = options.time_limit_s if options.time_limit_s is not None else SOLVE_TIME_LIMIT
    return time.perf_counter() + max(limit - spent_s, EXPLAIN_MIN_SHARE * limit)


def _explain(problem: Problem, options: SolveOptions, spent_s: float) -> dict:
    from ..solvers.cpsat import explain_infeasible

    return explain_infeasible(problem, options.seed, explain_deadline(options, spent_s))


def run(problem: Problem, solver: str, options: SolveOptions | None = None) -> RunResult:
    """Solve, re-score with the evaluator, and compare with the baselines."""
    options = options or SolveOptions()
    warm_imports(solver, problem)
    sol = solve_with(problem, solver, options)
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
        bound_method=info.get("bound_method") or _bound_method(sol),
    )
    if sol.plan is None:
        if sol.status is Status.INFEASIBLE:
            # the exact solver names a lone infeasible limit itself; else CP-SAT finds the conflict
            # (imported only then: OR-Tools and pandas take 0.5-1.3 s)
            why = ({"infeasible": True, "conflict": info["conflict"], "suggestion": info.get("suggestion")}
                   if info.get("conflict") else _explain(problem, options, sol.wall_s))
            if why.get("infeasible"):
                named = why if not why.get("conflict") else {**why, "conflict": problem.constraints.with_sources(why["conflict"])}
                return replace(base, explanation=Explanation.of(named))
        return base
    ev, figs = rescore(problem, sol)
    baselines = baseline_figures(problem, [(sol.plan, figs)])
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
