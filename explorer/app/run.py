"""Run one solver on a problem and assemble its report (the library side of ``explore``)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from ..solvers import get_solver
from ..core.solution import Solution, SolveOptions, Status
from .baselines import BASELINES, baseline_plan

from ..core.objective import Objective
from ..core.plan import Plan
from ..core.problem import Problem
from .report import exact_number, fmt_bytes, fmt_seconds, header, objective_real, plan_figures, render_plan_grid


class EvaluatorMismatch(AssertionError):
    """A solver's claimed cost disagrees with the independent evaluator: a bug, never input."""


def rescore(problem: Problem, sol: Solution):
    """Re-score a solution's plan with the evaluator; raise if the solver's claim disagrees,
    including a plan that breaks a constraint without the solver saying so."""
    ev, figs = plan_figures(problem, sol.plan)
    if figs["violations"] and sol.status is not Status.INFEASIBLE:
        names = "; ".join(v["constraint"] for v in figs["violations"])
        raise EvaluatorMismatch(f"{sol.solver}: plan marked {sol.status} breaks {names}")
    if not figs["violations"] and sol.status is Status.INFEASIBLE:
        raise EvaluatorMismatch(f"{sol.solver}: plan marked infeasible satisfies every constraint")
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
        if sol.status is Status.INFEASIBLE:
            from ..solvers.cpsat import explain_infeasible

            why = explain_infeasible(problem, options.seed)
            if why.get("infeasible"):
                result["conflict"] = why["conflict"]
                result["suggestion"] = why["suggestion"]
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
        base[name]["speedup_over_all_I"] = _ratio(all_i.step_time_s, base[name]["step_time_s"])
    result["baselines"] = base
    result["traffic_ratio_to_all_I"] = _ratio(ev.traffic_elements, all_i.traffic_elements)
    result["speedup_over_all_I"] = _ratio(all_i.step_time_s, ev.step_time_s)
    result["comm_speedup_over_all_I"] = _ratio(all_i.comm_time_s, ev.comm_time_s)
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
    cons = result["constraints"]
    parts = [f"cap level {c['level']} {fmt_bytes(Fraction(c['bytes']))}" for c in cons["caps"]]
    if cons["memory_bytes"] is not None:
        parts.append(f"memory {float(Fraction(cons['memory_bytes'])) / 2**30:g} GiB/accelerator (weight copies {cons['weight_copies']})")
    parts += cons["pins"] + cons["forbids"]
    lines.append("constraints: " + ", ".join(parts))
    if result["plan"] is None:
        if result.get("conflict"):
            lines.append("no plan satisfies the constraints; these conflict: " + "; ".join(result["conflict"]))
            if result.get("suggestion"):
                lines.append(result["suggestion"])
        elif result.get("reason"):
            lines.append(f"reason: {result['reason']}")
        return "\n".join(lines) + "\n"
    if result["violations"]:
        lines.append("PLAN BREAKS: " + "; ".join(
            f"{v['constraint']} by {fmt_bytes(Fraction(v['excess_bytes']))}" if Fraction(v["limit_bytes"]) else v["constraint"]
            for v in result["violations"]) + " (use --solver cpsat to enforce caps and memory)")
    if result.get("bound") is not None and result["status"] != Status.OPTIMAL.value:
        unit = "elements" if problem.objective is Objective.TRAFFIC else "s"
        lines.append(f"bound {result['bound']:.6g} {unit}, gap {100 * result['gap']:.3f}%")
    lines.append("")
    level_cost = tuple(Fraction(c) for c in result["level_cost_elements"])
    lines += render_plan_grid(problem, Plan.from_lists(result["plan"]), level_cost)
    lines.append("")
    lines.append(f"{'plan':<10}{'traffic':>13}{'vs all-I':>10}{'comm time':>12}{'step time':>12}{'speedup':>9}{'memory/acc':>12}  ok")
    rows = [(result["solver"], result)] + [(k, v) for k, v in result["baselines"].items()]
    for name, r in rows:
        lines.append(
            f"{name:<10}{fmt_bytes(Fraction(r['traffic_bytes'])):>13}{r['traffic_ratio_to_all_I']:>9.3f}x"
            f"{fmt_seconds(r['comm_time_s']):>12}{fmt_seconds(r['step_time_s']):>12}{r['speedup_over_all_I']:>8.3f}x"
            f"{fmt_bytes(Fraction(r['memory_bytes_per_accelerator'])):>12}  {'no' if r['violations'] else 'yes'}"
        )
    return "\n".join(lines) + "\n"
