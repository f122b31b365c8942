"""The joint optimum with OR-Tools CP-SAT, over the 0-1 formulation of ``solvers.formulation``.

The derivation: docs/derivations.md, "CP-SAT".
"""

from __future__ import annotations

import math
import os
import time
from fractions import Fraction

from ortools.sat.python import cp_model

from explorer.core.constraints import limit_suggestion
from explorer.core.errors import InstanceTooLarge, SpecError
from explorer.core.names import given_as
from explorer.core.problem import Problem
from explorer.core.units import format_count, progress_value

from . import dp
from explorer.core.solution import INTERRUPTED_WITH_PLAN, Solution, SolveOptions, Status, plan_solution
from . import cpsat_run
from .cpsat_run import new_solver, proven, proven_bound, run_solver, search_seconds
from .cpsat_run import hint as _hint
from .deadline import check_deadline
from .dp_wide import INT64_SAFE
from .formulation import BuildTimeout, Formulation, assignment, build, extract_plan, memory_coefs, memory_row_reach


# the search's margin for CP-SAT's overrun (``cpsat_run.search_seconds``), under the names callers read
SEARCH_MARGIN, SEARCH_MARGIN_MAX_S = cpsat_run.SEARCH_MARGIN, cpsat_run.SEARCH_MARGIN_MAX_S


def to_cp_model(f: Formulation, guarded: bool = False, objective: bool = True,
                deadline: float | None = None) -> tuple[cp_model.CpModel, list, list]:
    """The CP-SAT model; with ``guarded`` every side constraint is enforced only under its own
    assumption literal (returned as the third item, in ``f.side`` order). ``deadline`` (a
    ``time.perf_counter()`` value): ``BuildTimeout`` once it has passed (checked between parts)."""
    m = cp_model.CpModel()
    xs = []
    for i in range(0, len(f.names), 16384):
        xs += [m.new_bool_var(name) for name in f.names[i:i + 16384]]
        check_deadline(deadline, BuildTimeout)
    weighted = cp_model.LinearExpr.weighted_sum  # builds the same rows as sum(c * x), 2-3x faster
    for i, (vars_, coefs, rhs) in enumerate(f.eq_rows):
        m.add(weighted([xs[v] for v in vars_], coefs) == rhs)
        if i % 2048 == 0:
            check_deadline(deadline, BuildTimeout)
    for i, group in enumerate(f.exactly_one):
        m.add_exactly_one(xs[v] for v in group)
        if i % 2048 == 0:
            check_deadline(deadline, BuildTimeout)
    for v in f.fixed_zero:
        m.add(xs[v] == 0)
    guards = []
    for sc in f.side:
        lit = m.new_bool_var(f"use[{sc.name}]") if guarded else None
        guards.append(lit)
        for v in sc.zero_vars:
            ct = m.add(xs[v] == 0)
            if lit is not None:
                ct.only_enforce_if(lit)
        for vars_, coefs, rhs in sc.le_rows:
            _check_row_range(sc.name, sum(abs(c) for c in coefs))
            ct = m.add(weighted([xs[v] for v in vars_], coefs) <= rhs)
            if lit is not None:
                ct.only_enforce_if(lit)
    if not objective:
        return m, xs, guards
    g = f.objective_gcd
    worst = sum(abs(c) for c in f.objective) // g
    if worst >= INT64_SAFE:
        raise InstanceTooLarge(
            f"cpsat: the objective can reach {format_count(worst)} after dividing by the coefficients' gcd {g}, "
            f"beyond CP-SAT's int64 range (2^62); use fewer levels or a smaller batch"
        )
    used = [v for v, c in enumerate(f.objective) if c]
    m.minimize(weighted([xs[v] for v in used], [f.objective[v] // g for v in used]))
    return m, xs, guards


def _check_row_range(name: str, worst: int) -> None:
    if worst >= INT64_SAFE:
        raise InstanceTooLarge(f"cpsat: the row of {name!r} can reach {format_count(worst)}, beyond CP-SAT's int64 range "
                               "(2^62); use fewer levels or a smaller batch")


class _Progress(cp_model.CpSolverSolutionCallback):
    """Reports each improving solution and the bound (a few calls per solve: cheap)."""

    def __init__(self, say, scale: float, unit: str, t0: float):
        super().__init__()
        self.say, self.scale, self.unit, self.t0 = say, scale, unit, t0

    def on_solution_callback(self) -> None:
        plan, bound = (progress_value(x * self.scale, self.unit) for x in (self.objective_value, self.best_objective_bound))
        self.say(f"cpsat: plan at {plan} {self.unit}, bound {bound}, {time.perf_counter() - self.t0:.1f} s")


def _check_int32(options: SolveOptions) -> None:
    """CP-SAT's seed and worker count are int32 parameters: out of range is bad input, not a TypeError."""
    if not 0 <= options.seed < 2**31:
        raise SpecError(given_as("--seed"), f"must be between 0 and {2**31 - 1}, got {format_count(options.seed)}")
    if options.workers is not None and not 1 <= options.workers < 2**31:
        raise SpecError(given_as("--workers"), f"must be between 1 and {2**31 - 1}, got {format_count(options.workers)}")


def solve(problem: Problem, options: SolveOptions | None = None) -> Solution:
    options = options or SolveOptions()
    _check_int32(options)
    t0 = time.perf_counter()
    limit = options.time_limit_s
    deadline = None if limit is None else t0 + limit
    if problem.constraints.memory_bytes is not None:  # refused before the build (seconds at 20 levels), as to_cp_model would
        _check_row_range(problem.constraints.memory_name, memory_row_reach(problem))
    try:  # --time-limit bounds the whole solve: the model's build, the hint and the search
        f = build(problem, deadline)
        model, xs, _ = to_cp_model(f, deadline=deadline)
        hint = _add_bound_and_hint(problem, options, f, model, xs)
        check_deadline(deadline, BuildTimeout)
    except BuildTimeout:
        return _out_of_time(problem, options, t0)
    if options.dump_model and not model.export_to_file(options.dump_model):
        raise SpecError(given_as("--dump-model"), f"CP-SAT could not write the model to {options.dump_model}")
    solver = new_solver(options.workers or max(1, os.cpu_count() or 1), options.seed, limit,
                        options.deterministic_time_limit, options.presolve)
    if deadline is not None:  # the search gets what the build left, less what CP-SAT overruns its own limit by
        solver.parameters.max_time_in_seconds = search_seconds(limit, deadline - time.perf_counter())
    callback = None
    if options.progress:
        # the time objective's solver value is the communication; the step time adds the compute
        unit = "elements" if problem.objective.value == "traffic" or problem.custom_weights is not None else "s of communication"
        callback = _Progress(options.progress, float(problem.weights.scale) * f.objective_gcd, unit, t0)
    status, interrupted = run_solver(solver, model, callback)
    wall = time.perf_counter() - t0
    info = {"cpsat_status": solver.status_name(status), "variables": f.num_vars,
            "constraints": len(f.eq_rows) + len(f.exactly_one) + sum(len(sc.zero_vars) + len(sc.le_rows) for sc in f.side),
            "workers": solver.parameters.num_workers}
    if interrupted and status not in (cp_model.OPTIMAL, cp_model.INFEASIBLE):  # a proof stands
        return _interrupted(problem, f, solver, xs, status, wall, info)
    if status == cp_model.INFEASIBLE:
        return Solution("cpsat", Status.INFEASIBLE, None, None, None, None, wall, info)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        if status == cp_model.UNKNOWN and hint is not None:  # (the hint keeps every rule: ``_add_bound_and_hint``)
            return _hint_solution(problem, options, f, hint, wall, info)
        info["reason"] = no_plan_reason(solver.status_name(status), deadline is not None,
                                        options.deterministic_time_limit is not None)
        bound = _given_bound(options, f, info)  # (the bound handed over stands: a fallback plan reports it)
        return Solution("cpsat", Status.UNKNOWN, None, None, bound, None, wall, info)
    return _found(problem, options, f, solver, xs, status, wall, info, hint)


def _hint_solution(problem: Problem, options: SolveOptions, f: Formulation, hint, wall: float, info: dict) -> Solution:
    """CP-SAT ended UNKNOWN (a limit stopped it before it loaded or bettered its hint): the hint
    (the DP's plan or the one given, which keeps every rule), ``feasible`` with the bound handed
    to CP-SAT when there is one (rounded up to the objective's gcd, as CP-SAT's own), else none."""
    bound = _given_bound(options, f, info)
    unlimited = options.time_limit_s is None and options.deterministic_time_limit is None
    if bound is None and unlimited:  # (no limit of the user's stopped it)
        info["reason"] = "CP-SAT stopped (status UNKNOWN) with no plan better than its hint and no bound"
    elif bound is None:
        info["reason"] = no_bound_reason(problem, from_hint=options.hint is None, searched=True,
                                         deterministic=options.time_limit_s is None)
    sol = plan_solution("cpsat", problem, hint, Status.FEASIBLE, wall, info=info)
    if bound is not None and bound > sol.objective:
        raise AssertionError(f"cpsat: bound {bound} above the value {sol.objective} of its hint")
    status = Status.OPTIMAL if bound == sol.objective else Status.FEASIBLE
    return Solution("cpsat", status, hint, sol.objective, bound, sol.level_units, wall, sol.info)


def _given_bound(options: SolveOptions, f: Formulation, info: dict) -> int | None:
    """The proven bound handed to CP-SAT (``options.lower_bound``), rounded up to the objective's
    gcd as CP-SAT's own (every plan's value is a multiple of it), its method in ``info``; else None."""
    if options.lower_bound is None:
        return None
    info["bound_method"] = options.lower_bound_by or "given"
    return -((-options.lower_bound) // f.objective_gcd) * f.objective_gcd


def no_bound_reason(problem: Problem, from_hint: bool, searched: bool, deterministic: bool = False) -> str:
    """Why a time-limited CP-SAT run's plan has no bound (the one text of ``explore`` and a sweep's
    row): its hint (the DP's plan) or the best plan it met (``app.run.solve_with`` adds
    ``--solver exact`` when the exact method takes an instance of this size)."""
    raise_it = given_as("--time-limit")
    if not searched:
        text = f"CP-SAT found no plan in the time the build left: its hint (the DP's plan), no bound (raise {raise_it} for a search)"
    else:
        plan = "no plan better than its hint (the DP's plan)" if from_hint else "a plan (not shown optimal)"
        text = (f"CP-SAT found {plan} and proved no bound within "
                + ("its deterministic time limit (raise that limit)" if deterministic else f"the time limit (raise {raise_it})"))
    return text


def no_plan_reason(status_name: str, time_limited: bool, deterministic: bool = False) -> str:
    """Why CP-SAT returned no plan: its time limit (raising it may help) only when one was set and
    the status is UNKNOWN; an invalid model is a bug, and without a time limit the limit is not why."""
    if status_name == "UNKNOWN" and time_limited:
        return f"CP-SAT found no plan within the time limit (status UNKNOWN); raise {given_as('--time-limit')}"
    if status_name == "UNKNOWN" and deterministic:
        return "CP-SAT found no plan within its deterministic time limit (status UNKNOWN); raise that limit"
    if status_name == "MODEL_INVALID":
        return "CP-SAT rejected the model (status MODEL_INVALID): a bug in the formulation, not a limit; please report it"
    return (f"CP-SAT found no plan (status {status_name}) and no time limit stopped it: a longer "
            f"{given_as('--time-limit')} would not help")


def _out_of_time(problem: Problem, options: SolveOptions, t0: float) -> Solution:
    """The time limit ran out before the search could start: the hint (or the DP's plan when it
    satisfies every constraint) as a ``feasible`` plan without a bound, else no plan."""
    plan = _kept_hint(problem, options)
    wall = time.perf_counter() - t0
    why = "the time limit ran out while building the CP-SAT model"
    if plan is None:
        info = {"reason": why + f", before any plan: raise {given_as('--time-limit')}"}
        return Solution("cpsat", Status.UNKNOWN, None, None, None, None, wall, info)
    info = {"reason": why + f": the DP's plan, no bound (raise {given_as('--time-limit')} for a search)"}
    return plan_solution("cpsat", problem, plan, Status.FEASIBLE, wall, info=info)


def _dp_plan(problem: Problem):
    """The DP's plan when it satisfies every constraint, else None; None too for a graph whose
    frontier is too wide for the DP's elimination (the DP would hand levels to CP-SAT, for
    seconds each: CP-SAT then solves without a hint)."""
    if not problem.network.is_chain and dp.wide_levels(problem):
        return None
    try:
        dsol = dp.solve(problem)
    except (InstanceTooLarge, NotImplementedError):
        return None
    return dsol.plan if dsol.status is not Status.INFEASIBLE and not problem.plan_breaks(dsol.plan) else None


def _kept_hint(problem: Problem, options: SolveOptions):
    """The given hint when it keeps every rule (caps, memory, pins, forbids), else the DP's plan
    when it does (``_dp_plan``), else None: a hint or fallback that breaks a rule is no plan."""
    if options.hint is not None and not problem.plan_breaks(options.hint):
        return options.hint
    return _dp_plan(problem)


def _add_bound_and_hint(problem: Problem, options: SolveOptions, f: Formulation, model, xs):
    """A proven lower bound (``options.lower_bound``) as a constraint, and a hint: the given plan,
    else the DP's when it satisfies every constraint (none for a graph too wide for the DP)."""
    hint = _kept_hint(problem, options)
    if options.lower_bound is not None:  # a proven bound: no plan lies below it, so CP-SAT need not look there
        g = f.objective_gcd
        model.add(sum((c // g) * xs[v] for v, c in enumerate(f.objective) if c) >= -((-options.lower_bound) // g))
    if hint is not None:
        _hint(model, xs, assignment(problem, f, hint))
    return hint


def _found(problem: Problem, options: SolveOptions, f: Formulation, solver, xs, status, wall: float,
           info: dict, hint=None) -> Solution:
    """The plan CP-SAT found, re-scored on the tables (which must agree with the model's
    objective), with its bound: OPTIMAL only when CP-SAT proved it and the bound equals it."""
    g = f.objective_gcd
    plan = extract_plan(problem, f, lambda v: solver.value(xs[v]))
    inner = sum((c // g) * solver.value(xs[v]) for v, c in enumerate(f.objective) if c)
    bound = proven_bound(solver, g)
    info["bound_method"] = _bound_method(options, bound, g)
    sol = plan_solution("cpsat", problem, plan, Status.FEASIBLE, wall, info=info)
    objective = sol.objective
    if objective != inner * g:
        raise AssertionError(f"cpsat: model objective {inner * g} != table re-score {objective}")
    if bound > objective:
        raise AssertionError(f"cpsat: bound {bound} above the value {objective} of a plan it found")
    optimal = proven(status, objective, bound)
    if not optimal and bound <= 0 < objective and problem.real(bound) <= 0:  # every plan costs >= 0: nothing proven
        # (under the time objective the compute time is a bound by itself: kept)
        info.pop("bound_method")
        info["reason"] = no_bound_reason(problem, from_hint=plan == hint and options.hint is None, searched=True,
                                         deterministic=options.time_limit_s is None)
        return Solution("cpsat", Status.FEASIBLE, plan, objective, None, sol.level_units, wall, info)
    return Solution("cpsat", Status.OPTIMAL if optimal else Status.FEASIBLE, plan, objective, bound,
                    sol.level_units, wall, info)


def _bound_method(options: SolveOptions, bound: int, g: int) -> str:
    """Which method proved ``bound``: the one that handed CP-SAT its lower bound (rounded up to the
    objective's gcd ``g``, as every plan's value is a multiple of it) when CP-SAT did not raise
    it, else CP-SAT."""
    if options.lower_bound is not None and bound <= -((-options.lower_bound) // g) * g:
        return options.lower_bound_by or "given"
    return "cpsat"


def _interrupted(problem: Problem, f: Formulation, solver, xs, status, wall: float, info: dict) -> Solution:
    """The best plan found before Ctrl-C (if any) with its proven bound, status ``interrupted``."""
    found = status == cp_model.FEASIBLE
    info["reason"] = INTERRUPTED_WITH_PLAN if found else "stopped by Ctrl-C before any plan was found"
    if not found:
        return Solution("cpsat", Status.INTERRUPTED, None, None, None, None, wall, info)
    plan = extract_plan(problem, f, lambda v: solver.value(xs[v]))
    sol = plan_solution("cpsat", problem, plan, Status.INTERRUPTED, wall, info=info)
    bound = min(proven_bound(solver, f.objective_gcd), sol.objective)
    return Solution("cpsat", Status.INTERRUPTED, plan, sol.objective, bound, sol.level_units, wall, info)


def run_fresh(model: cp_model.CpModel, workers: int, seed: int, seconds: float | None = None) -> tuple[cp_model.CpSolver, int]:
    """A new CP-SAT solver with these workers, seed and time limit on ``model`` (``run_solver``):
    (the solver, its status); ``KeyboardInterrupt`` once a Ctrl-C has stopped it."""
    solver = new_solver(workers, seed, seconds)
    status, interrupted = run_solver(solver, model)
    if interrupted:
        raise KeyboardInterrupt
    return solver, status


def _feasible(model: cp_model.CpModel, lits: list, seed: int = 0,
              deadline: float | None = None) -> tuple[cp_model.CpSolver | None, int]:
    """CP-SAT (one worker) on ``model`` under the assumptions ``lits``; with ``deadline`` (a
    ``perf_counter`` value) it stops there (status UNKNOWN, no solver, at once if it has passed)."""
    model.clear_assumptions()
    model.add_assumptions(lits)
    left = None if deadline is None else deadline - time.perf_counter()
    if left is not None and left <= 0:
        return None, cp_model.UNKNOWN
    return run_fresh(model, 1, seed, left)


def explain_infeasible(problem: Problem, seed: int = 0, deadline: float | None = None) -> dict:
    """A small set of side constraints that cannot hold together, and (when it is a single cap or
    the memory limit) the nearest limit that would be feasible.

    Every side constraint is guarded by an assumption literal; CP-SAT's
    ``sufficient_assumptions_for_infeasibility`` gives a core (one worker), which a deletion
    pass then shrinks to a minimal one (each member is needed for the conflict). ``deadline`` (a
    ``perf_counter`` value) bounds the whole: a step it stops leaves its part unsettled, and
    ``note`` says what (``wall_s``: the explanation's own time).
    """
    t0, missing = time.perf_counter(), []
    out = _explain(problem, seed, deadline, missing)
    if missing:
        out["note"] = "cut short by the time limit: " + "; ".join(missing)
    out["wall_s"] = round(time.perf_counter() - t0, 6)
    return out


def _explain(problem: Problem, seed: int, deadline: float | None, missing: list[str]) -> dict:
    try:
        f = build(problem, deadline)
        model, _, guards = to_cp_model(f, guarded=True, objective=False, deadline=deadline)
    except BuildTimeout:
        missing.append("no conflicting set named")
        return {"infeasible": True, "conflict": None, "suggestion": None}
    names = [sc.name for sc in f.side]
    solver, status = _feasible(model, guards, seed=seed, deadline=deadline)
    if status == cp_model.UNKNOWN:
        missing.append("no conflicting set named")
        return {"infeasible": True, "conflict": None, "suggestion": None}
    if status != cp_model.INFEASIBLE:
        return {"infeasible": False}
    core = list(solver.sufficient_assumptions_for_infeasibility())
    index = {g.index: i for i, g in enumerate(guards)}
    members = _deletion_filter(model, guards, [index[c] for c in core if c in index] or list(range(len(guards))),
                               seed, deadline, missing)
    conflict = [names[j] for j in members]
    others = [g for j, g in enumerate(guards) if j not in members]
    _, st = _feasible(model, others, seed=seed, deadline=deadline)
    more = None if st == cp_model.UNKNOWN else st == cp_model.INFEASIBLE
    out: dict = {"infeasible": True, "conflict": conflict, "suggestion": None, "more_conflicts": more}
    if more is None:
        missing.append("whether the other constraints conflict among themselves too is not settled")
    elif len(conflict) == 1 and not more:
        out["suggestion"] = _nearest_limit(problem, conflict[0], seed, deadline)
        if out["suggestion"] is None and deadline is not None and time.perf_counter() >= deadline:
            missing.append("the nearest feasible limit was not found")
    elif more:
        out["suggestion"] = "the other constraints conflict among themselves too: relaxing these alone is not enough"
    return out


def _deletion_filter(model, guards: list, members: list[int], seed: int, deadline: float | None,
                     missing: list[str]) -> list[int]:
    """Drop any member the conflict does not need; one the deadline leaves unsettled stays (the set
    is then a conflict, maybe not a minimal one)."""
    i, unsettled = 0, False
    while i < len(members):
        trial = members[:i] + members[i + 1 :]
        _, st = _feasible(model, [guards[j] for j in trial], seed=seed, deadline=deadline)
        if st == cp_model.INFEASIBLE:
            members = trial
        else:
            unsettled |= st == cp_model.UNKNOWN
            i += 1
    if unsettled:
        missing.append("the conflicting set may not be minimal")
    return members


def _nearest_limit(problem: Problem, name: str, seed: int, deadline: float | None = None) -> str | None:
    """For a lone cap (or memory limit) in conflict: the least value that would be feasible."""
    cons = problem.constraints
    relaxed = problem.with_constraints(cons.without(name))
    left = None if deadline is None else deadline - time.perf_counter()
    if left is not None and left <= 0:
        return None
    for cap in cons.caps:
        if cap.name == name:
            weights = tuple(1 if h == cap.level else 0 for h in range(problem.levels))
            sol = solve(relaxed.with_weights(weights), SolveOptions(workers=1, seed=seed, time_limit_s=left))
            if sol.status is not Status.OPTIMAL:
                return None
            need = Fraction(sol.level_units[cap.level] * problem.array.dtype_bytes, problem.tables.unit_per_element)
            return limit_suggestion(cap.level, need, cap=cap)
    if name == cons.memory_name:
        need = _least_memory(relaxed, seed, left)
        return None if need is None else limit_suggestion(None, need)
    return None


def _least_memory(problem: Problem, seed: int, time_limit_s: float | None = None) -> Fraction | None:
    """The least per-accelerator memory (bytes) any plan needs under the problem's constraints."""
    f = build(problem)
    model, xs, _ = to_cp_model(f, objective=False)
    keys, units = memory_coefs(problem)
    coefs = [(c, xs[f.x[key]]) for key, c in zip(keys, units)]
    g = math.gcd(*(c for c, _ in coefs)) or 1
    if sum(c for c, _ in coefs) // g >= INT64_SAFE:
        return None  # beyond CP-SAT's int64: no suggestion rather than a wrong one
    model.minimize(sum((c // g) * x for c, x in coefs))
    solver, status = run_fresh(model, 1, seed, time_limit_s)
    if status != cp_model.OPTIMAL:
        return None
    # the proven bound equals the optimum here, and is an exact int64 (objective_value is a double)
    units = solver.response_proto.inner_objective_lower_bound * g
    return Fraction(units * problem.array.dtype_bytes, problem.tables.unit_per_element)
