"""The joint optimum with OR-Tools CP-SAT, over the 0-1 formulation of ``solvers.formulation``.

Hinted with the hierarchical DP's plan (a complete hint: every variable). The objective is
the integer formulation objective divided by the gcd of its coefficients; a model whose
worst-case objective could still overflow int64 is refused. Status ``optimal`` only when
CP-SAT reports OPTIMAL *and* the plan's exact objective equals the proven integer bound
(``inner_objective_lower_bound``, an exact int64) with no gap limit in force; otherwise
``feasible`` with that bound and the relative gap. Deterministic with ``workers=1`` and a
fixed seed; with more workers the plan among equal optima may vary, the optimum does not.

Presolve is off by default: on the zoo at 16 and 128 accelerators it made proofs 2-3x
slower (VGG-E, accpar, 128: 4.5 s with, 1.7 s without), and without it the DP hint is the
first solution, so a time-limited run always has a plan to report.
"""

from __future__ import annotations

import os
import time

from ortools.sat.python import cp_model

from explorer.errors import InstanceTooLarge
from explorer.problem import Problem

from . import dp
from .base import Solution, SolveOptions, Status, plan_solution
from .formulation import Formulation, assignment, build, extract_plan

INT64_SAFE = 2**62


def to_cp_model(f: Formulation) -> tuple[cp_model.CpModel, list]:
    m = cp_model.CpModel()
    xs = [m.new_bool_var(name) for name in f.names]
    for vars_, coefs, rhs in f.eq_rows:
        m.add(sum(c * xs[v] for v, c in zip(vars_, coefs)) == rhs)
    for vars_, coefs, rhs, _name in f.le_rows:
        m.add(sum(c * xs[v] for v, c in zip(vars_, coefs)) <= rhs)
    for group in f.exactly_one:
        m.add_exactly_one(xs[v] for v in group)
    for v in sorted(f.fixed_zero):
        m.add(xs[v] == 0)
    g = f.objective_gcd
    worst = sum(abs(c) for c in f.objective) // g
    if worst >= INT64_SAFE:
        raise InstanceTooLarge(
            f"cpsat: the objective can reach {worst:.3e} after dividing by the coefficients' gcd {g}, "
            f"beyond CP-SAT's int64 range (2^62); use fewer levels or a smaller batch"
        )
    m.minimize(sum((c // g) * xs[v] for v, c in enumerate(f.objective) if c))
    return m, xs


def solve(problem: Problem, options: SolveOptions | None = None, weights: tuple[int, ...] | None = None) -> Solution:
    options = options or SolveOptions()
    t0 = time.perf_counter()
    f = build(problem, weights)
    model, xs = to_cp_model(f)
    hint = options.hint
    if hint is None and not problem.constraints_need_coupling():
        dsol = dp.solve(problem)
        hint = dsol.plan
    if hint is not None:
        values = assignment(problem, f, hint)
        for var, val in zip(xs, values):
            model.add_hint(var, val)
    if options.dump_model:
        model.export_to_file(options.dump_model)
    solver = cp_model.CpSolver()
    p = solver.parameters
    p.num_workers = options.workers or max(1, os.cpu_count() or 1)
    p.random_seed = options.seed
    p.cp_model_presolve = options.presolve
    p.relative_gap_limit = 0.0
    p.absolute_gap_limit = 0.0
    if options.time_limit_s is not None:
        p.max_time_in_seconds = float(options.time_limit_s)
    if options.deterministic_time_limit is not None:
        p.max_deterministic_time = float(options.deterministic_time_limit)
    status = solver.solve(model)
    wall = time.perf_counter() - t0
    g = f.objective_gcd
    info = {"cpsat_status": solver.status_name(status), "variables": f.num_vars,
            "constraints": len(f.eq_rows) + len(f.le_rows) + len(f.exactly_one), "workers": p.num_workers}
    if status == cp_model.INFEASIBLE:
        return Solution("cpsat", Status.INFEASIBLE, None, None, None, None, wall, info)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Solution("cpsat", Status.UNKNOWN, None, None, None, None, wall, info)
    plan = extract_plan(problem, f, lambda v: solver.value(xs[v]))
    inner = sum((c // g) * solver.value(xs[v]) for v, c in enumerate(f.objective) if c)
    bound = solver.response_proto.inner_objective_lower_bound * g
    sol = plan_solution("cpsat", problem, plan, Status.FEASIBLE, wall, info=info)
    w = weights if weights is not None else problem.weights.weights
    objective = sum(wh * c for wh, c in zip(w, sol.level_units))
    if objective != inner * g:
        raise AssertionError(f"cpsat: model objective {inner * g} != table re-score {objective}")
    bound = min(bound, objective)  # a bound never exceeds a found plan's value
    proven = status == cp_model.OPTIMAL and objective == bound
    return Solution("cpsat", Status.OPTIMAL if proven else Status.FEASIBLE, plan, objective, bound,
                    sol.level_units, wall, info)
