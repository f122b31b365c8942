"""The same 0-1 formulation as CP-SAT, solved as a MIP by HiGHS (bench-only peer; ``pip install -e '.[bench]'``).

HiGHS works in doubles: coefficients above 2^53 are rounded, so its plan is re-scored exactly
by the evaluator and compared with the proven optimum rather than trusted.
"""

from __future__ import annotations

import time

import numpy as np

from explorer.core.problem import Problem
from explorer.core.solution import Solution, Status, plan_solution
from explorer.solvers.formulation import build, extract_plan


def solve_highs(problem: Problem, time_limit_s: float = 60.0, threads: int = 1) -> Solution:
    import highspy

    t0 = time.perf_counter()
    f = build(problem)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 0.0)
    h.setOptionValue("time_limit", float(time_limit_s))
    h.setOptionValue("threads", threads)
    n = f.num_vars
    upper = np.ones(n)
    for v in f.fixed_zero + [v for sc in f.side for v in sc.zero_vars]:
        upper[v] = 0.0
    h.addVars(n, np.zeros(n), upper)
    idx = np.arange(n, dtype=np.int32)
    g = f.objective_gcd
    h.changeColsCost(n, idx, np.array([c / g for c in f.objective], dtype=np.float64))
    h.changeColsIntegrality(n, idx, np.array([highspy.HighsVarType.kInteger] * n))
    rows = [(vars_, coefs, rhs, rhs) for vars_, coefs, rhs in f.eq_rows]
    rows += [(g_, [1] * len(g_), 1, 1) for g_ in f.exactly_one]
    rows += [(vars_, coefs, -highspy.kHighsInf, rhs) for sc in f.side for vars_, coefs, rhs in sc.le_rows]
    starts, indices, values, lower, upper_r = [], [], [], [], []
    for vars_, coefs, lo, hi in rows:
        starts.append(len(indices))
        indices += vars_
        values += coefs
        lower.append(lo)
        upper_r.append(hi)
    h.addRows(len(rows), np.array(lower, dtype=np.float64), np.array(upper_r, dtype=np.float64), len(indices),
              np.array(starts, dtype=np.int32), np.array(indices, dtype=np.int32), np.array(values, dtype=np.float64))
    h.run()
    wall = time.perf_counter() - t0
    status = h.getModelStatus()
    info = {"highs_status": h.modelStatusToString(status)}
    sol_values = h.getSolution().col_value
    if len(sol_values) != n or h.getInfo().primal_solution_status == 0:
        return Solution("highs", Status.UNKNOWN, None, None, None, None, wall, info)
    plan = extract_plan(problem, f, lambda v: sol_values[v])
    bound = int(np.ceil(h.getInfo().mip_dual_bound - 1e-6)) * g
    optimal = status == highspy.HighsModelStatus.kOptimal
    return plan_solution("highs", problem, plan, Status.OPTIMAL if optimal else Status.FEASIBLE, wall, bound, info)
