"""Run one solver on a problem and assemble its report (the library side of ``explore``)."""

from __future__ import annotations

from typing import Any

from solvers import get_solver
from solvers.base import Solution, SolveOptions, Status
from solvers.baselines import BASELINES, baseline_plan

from .objective import Objective
from .problem import Problem
from .report import exact_number, fmt_bytes, fmt_seconds, header, objective_real, plan_figures, render_plan_grid


class EvaluatorMismatch(AssertionError):
    """A solver's claimed cost disagrees with the independent evaluator: a bug, never input."""


def rescore(problem: Problem, sol: Solution):
    """Re-score a solution's plan with the evaluator; raise if the solver's claim disagrees."""
    ev, figs = plan_figures(problem, sol.plan)
    tables = problem.tables
    claimed = [tables.to_elements(u) for u in sol.level_units]
    if list(ev.level_cost) != claimed:
        raise EvaluatorMismatch(f"{sol.solver}: level costs {claimed} != evaluator {list(ev.level_cost)}")
    value = ev.objective_value(problem.objective)
    if problem.custom_weights is None and problem.weights.scale * sol.objective != value:
        raise EvaluatorMismatch(f"{sol.solver}: objective {sol.objective} does not re-score to {value}")
    return ev, figs


def run(problem: Problem, solver: str, options: SolveOptions | None = None) -> tuple[dict[str, Any], Solution]:
    """Solve, re-score with the evaluator, and compare with the baselines."""
    options = options or SolveOptions()
    sol = get_solver(solver)(problem, options)
    result: dict[str, Any] = header(problem)
    result["solver"] = solver
    result["status"] = sol.status.value
    result["wall_s"] = round(sol.wall_s, 6)
    result["bound"] = objective_real(problem, sol.bound)
    result["gap"] = sol.gap
    result.update({k: v for k, v in sol.info.items() if k in ("reason", "cpsat_status", "limit")})
    if sol.plan is None:
        result["plan"] = None
        return result, sol
    ev, figs = rescore(problem, sol)
    result["plan"] = sol.plan.to_lists()
    result["level_cost_elements"] = [exact_number(c) for c in ev.level_cost]
    result["level_cost_units"] = list(sol.level_units)
    result["unit_elements"] = f"1/{problem.tables.unit_per_element}"
    result.update(figs)
    result["objective_value"] = exact_number(ev.objective_value(problem.objective))
    base = {}
    all_i = None
    for name in BASELINES:
        bev, bfig = plan_figures(problem, baseline_plan(problem, name))
        if name == "all-I":
            all_i = bev
        base[name] = bfig
    for name in BASELINES:
        bev_traffic = base[name]["traffic_elements"]
        base[name]["traffic_ratio_to_all_I"] = _ratio(bev_traffic, all_i.traffic_elements)
    result["baselines"] = base
    result["traffic_ratio_to_all_I"] = _ratio(ev.traffic_elements, all_i.traffic_elements)
    result["speedup_comm_time_over_all_I"] = _ratio(all_i.comm_time_s, ev.comm_time_s)
    return result, sol


def _ratio(a, b) -> float | None:
    a, b = float(a), float(b)
    return None if b == 0 else a / b


def render_table(problem: Problem, result: dict[str, Any]) -> str:
    arr = problem.array
    lines = [
        f"{result['model']} on {arr.name} ({arr.accelerators} accelerators, {arr.levels} levels), "
        f"space {result['space']}, batch {result['batch']}, {arr.dtype_bytes}-byte elements",
        f"solver {result['solver']}: {result['status']} (objective {result['objective']}), "
        f"wall {fmt_seconds(result['wall_s'])}",
    ]
    if result.get("reason"):
        lines.append(f"reason: {result['reason']}")
    if result["plan"] is None:
        return "\n".join(lines) + "\n"
    if result.get("bound") is not None and result["status"] != Status.OPTIMAL.value:
        unit = "elements" if problem.objective is Objective.TRAFFIC else "s"
        lines.append(f"bound {result['bound']:.6g} {unit}, gap {100 * result['gap']:.3f}%")
    lines.append("")
    from .plan import Plan
    from fractions import Fraction

    level_cost = tuple(Fraction(c) for c in result["level_cost_elements"])
    lines += render_plan_grid(problem, Plan.from_lists(result["plan"]), level_cost)
    lines.append("")
    lines.append(f"{'plan':<10}{'traffic':>14}{'elements':>22}{'vs all-I':>10}{'comm time':>14}")
    rows = [(result["solver"], result)] + [(k, v) for k, v in result["baselines"].items()]
    for name, r in rows:
        lines.append(
            f"{name:<10}{fmt_bytes(Fraction(r['traffic_bytes'])):>14}{float(Fraction(r['traffic_elements'])):>22,.0f}"
            f"{r['traffic_ratio_to_all_I']:>9.3f}x{fmt_seconds(r['comm_time_s']):>14}"
        )
    return "\n".join(lines) + "\n"
