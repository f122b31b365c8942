"""The cross-checker behind ``explore check``: is the DP level-optimal, what is the joint
optimum, do the exact solvers agree, and how far is the DP from it?"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

from ..solvers import get_solver
from ..core.solution import Solution, SolveOptions, Status

from ..core.constraints import Constraints, Pin
from ..core.errors import Refused
from ..core.problem import Problem
from .report import exact_number, header, plan_figures
from .run import EvaluatorMismatch, rescore

JOINT_SOLVERS = ("cpsat", "exact", "brute")


@dataclass(frozen=True)
class CheckOptions:
    solve: SolveOptions = SolveOptions()
    solvers: tuple[str, ...] = JOINT_SOLVERS
    level_brute_max_rows: int = 50_000  # per-level check by enumeration up to this many rows


def _real(problem: Problem, units: int | None) -> float | int | str | None:
    return None if units is None else exact_number(problem.weights.scale * units)


def _solution_report(problem: Problem, sol: Solution, problems_found: list[str]) -> dict[str, Any]:
    r: dict[str, Any] = {"status": sol.status.value, "wall_s": round(sol.wall_s, 6)}
    if sol.plan is not None:
        try:
            _, figs = rescore(problem, sol)
        except EvaluatorMismatch as err:
            problems_found.append(f"evaluator disagrees with {err}")
            _, figs = plan_figures(problem, sol.plan)
        r.update(objective=_real(problem, sol.objective), **figs, plan=sol.plan.to_lists())
    r["bound"] = _real(problem, sol.bound)
    r["gap"] = sol.gap
    for k in ("cpsat_status", "variables", "reason"):
        if k in sol.info:
            r[k] = sol.info[k]
    return r


def level_optimum(problem: Problem, plan_rows, h: int, options: CheckOptions, lookup=get_solver) -> tuple[int, str]:
    """min c_h (units) with every other level pinned to plan_rows: by enumeration when small, else CP-SAT."""
    L = problem.num_layers
    # the DP enforces pins and forbids only: its level optimum is over that relaxation
    pins = tuple(Pin(l, hh, plan_rows[hh][l]) for hh in range(problem.levels) if hh != h for l in range(L))  # noqa: E741
    constraints = Constraints(pins=problem.constraints.pins + pins, forbids=problem.constraints.forbids,
                              weight_copies=problem.constraints.weight_copies)
    weights = tuple(1 if hh == h else 0 for hh in range(problem.levels))
    sub = problem.with_constraints(constraints).with_weights(weights)
    rows = 1
    for l in range(L):  # noqa: E741
        rows *= len(sub.allowed(h, l))
    if rows <= options.level_brute_max_rows:
        sol = lookup("brute")(sub, SolveOptions(max_plans=options.level_brute_max_rows))
        method = "enumeration"
    else:
        sol = lookup("cpsat")(sub, SolveOptions(workers=options.solve.workers, seed=options.solve.seed))
        method = "cpsat"
        if sol.status is not Status.OPTIMAL:
            raise RuntimeError(f"level {h}: CP-SAT did not prove the level optimum ({sol.status})")
    rescore(sub, sol)  # the level optimum's plan, too, is re-scored by the evaluator
    return sol.objective, method


def check(
    problem: Problem,
    options: CheckOptions | None = None,
    progress: Callable[[str], None] | None = None,
    lookup: Callable[[str], Callable] = get_solver,
) -> dict[str, Any]:
    """Run the cross-checks; ``lookup`` maps a solver name to its solve function."""
    options = options or CheckOptions()
    say = progress or (lambda msg: None)
    t0 = time.perf_counter()
    report: dict[str, Any] = header(problem)
    names = problem.network.layer_names

    say("hierarchical DP")
    dsol = lookup("dp")(problem, options.solve)
    problems_found: list[str] = []
    report["dp"] = _solution_report(problem, dsol, problems_found)

    levels = []
    if dsol.plan is not None:
        for h in range(problem.levels):
            say(f"level {h}: level-wise optimum given the DP's levels above")
            opt, method = level_optimum(problem, dsol.plan.types, h, options, lookup)
            ok = opt == dsol.level_units[h]
            if not ok:
                problems_found.append(f"DP is not level-optimal at level {h}")
            levels.append({
                "level": h,
                "dp_cost_elements": exact_number(problem.tables.to_elements(dsol.level_units[h])),
                "level_optimum_elements": exact_number(problem.tables.to_elements(opt)),
                "method": method,
                "dp_is_level_optimal": ok,
            })
    report["levels"] = levels

    solutions: dict[str, Solution] = {}
    report["solvers"] = {}
    for name in options.solvers:
        say(f"joint optimum: {name}")
        try:
            sol = lookup(name)(problem, options.solve)
        except Refused as err:
            report["solvers"][name] = {"status": "refused", "reason": str(err)}
            continue
        solutions[name] = sol
        report["solvers"][name] = _solution_report(problem, sol, problems_found)

    proven = {n: s for n, s in solutions.items() if s.status is Status.OPTIMAL}
    values = {s.objective for s in proven.values()}
    if len(values) > 1:
        problems_found.append("exact solvers disagree: " + ", ".join(f"{n}={_real(problem, s.objective)}" for n, s in proven.items()))
    optimum = min(values) if values else None
    for n, s in solutions.items():
        if optimum is not None and s.objective is not None and s.objective < optimum:
            problems_found.append(f"{n} found {s.objective} below the proven optimum {optimum}")
        if optimum is not None and s.bound is not None and s.bound > optimum:
            problems_found.append(f"{n} claims a bound {s.bound} above the proven optimum {optimum}")
    infeasible = [n for n, s in solutions.items() if s.status is Status.INFEASIBLE]
    if infeasible and any(s.plan is not None and s.status is not Status.INFEASIBLE for s in solutions.values()):
        problems_found.append(f"{', '.join(infeasible)} report infeasible but {', '.join(proven)} found a plan")

    report["optimum"] = None
    if optimum is not None and dsol.plan is not None:
        ref_name = next(n for n in ("exact", "brute", "cpsat") if n in proven)
        ref = proven[ref_name]
        diff = dsol.plan.diff(ref.plan)
        gap_units = dsol.objective - optimum
        report["optimum"] = {
            "objective": _real(problem, optimum),
            "proven_by": sorted(proven),
            "plan_from": ref_name,
            "dp_objective": _real(problem, dsol.objective),
            "dp_gap": _real(problem, gap_units),
            "dp_gap_percent": float(Fraction(100 * gap_units, optimum)) if optimum else 0.0,
            "cells_differing": [
                {"level": h, "layer": names[l], "dp": dsol.plan.at(h, l).value, "optimum": ref.plan.at(h, l).value}
                for h, l in diff  # noqa: E741
            ],
        }
        report["optimum"]["dp_satisfies_constraints"] = dsol.status is not Status.INFEASIBLE
        if gap_units < 0 and dsol.status is not Status.INFEASIBLE:
            problems_found.append("the DP beats the proven optimum")
    report["infeasible"] = infeasible
    if infeasible and not problems_found:
        from ..solvers.cpsat import explain_infeasible

        why = explain_infeasible(problem, options.solve.seed)
        report["conflict"] = why.get("conflict")
        report["suggestion"] = why.get("suggestion")
    report["agree"] = not problems_found
    report["problems"] = problems_found
    report["wall_s"] = round(time.perf_counter() - t0, 6)
    return report


def render_check(problem: Problem, r: dict[str, Any]) -> str:
    arr = problem.array
    unit = "elements" if r["objective"] == "traffic" else "s"
    lines = [
        f"check: {r['model']} on {arr.name} ({arr.accelerators} accelerators, {arr.levels} levels), "
        f"space {r['space']}, objective {r['objective']}, batch {r['batch']}",
        "",
        "DP level by level (each level must be optimal given the levels above):",
        f"  {'level':<6}{'DP c_h':>20}{'level optimum':>20}  {'method':<12} ok",
    ]
    for lv in r["levels"]:
        lines.append(
            f"  {lv['level']:<6}{float(Fraction(lv['dp_cost_elements'])):>20,.2f}"
            f"{float(Fraction(lv['level_optimum_elements'])):>20,.2f}  {lv['method']:<12} {'yes' if lv['dp_is_level_optimal'] else 'NO'}"
        )
    lines += ["", f"joint optimum ({unit}):", f"  {'solver':<8}{'status':<15}{'objective':>22}{'bound':>22}{'wall':>12}"]
    rows = [("dp", r["dp"])] + list(r["solvers"].items())
    for name, s in rows:
        if s["status"] == "refused":
            lines.append(f"  {name:<8}{'refused':<15}  {s['reason']}")
            continue
        obj = _fmt(r, s.get("objective"))
        bnd = _fmt(r, s.get("bound"))
        lines.append(f"  {name:<8}{s['status']:<15}{obj:>22}{bnd:>22}{s['wall_s']:>11.3f}s")
    o = r["optimum"]
    lines.append("")
    if o is None and r.get("infeasible"):
        lines.append("no plan satisfies the constraints (proven by " + ", ".join(r["infeasible"]) + ")")
        if r.get("conflict"):
            lines.append("these conflict: " + "; ".join(r["conflict"]))
        if r.get("suggestion"):
            lines.append(r["suggestion"])
    elif o is None:
        lines.append("no solver proved the joint optimum within its limits")
    else:
        lines.append(
            f"proven optimum {_fmt(r, o['objective'])} {unit} ({', '.join(o['proven_by'])}); "
            f"DP {_fmt(r, o['dp_objective'])}: gap {_fmt(r, o['dp_gap'])} {unit} "
            f"({o['dp_gap_percent']:.3f}%)"
        )
        if not o["dp_satisfies_constraints"]:
            lines.append("the DP's plan breaks the constraints (it enforces only pins and forbids): "
                         + r["dp"].get("reason", ""))
        if o["cells_differing"]:
            cells = ", ".join(f"{c['layer']}@{c['level']} {c['dp']}->{c['optimum']}" for c in o["cells_differing"])
            lines.append(f"cells where the DP differs from the optimum (layer@level dp->optimum): {cells}")
        else:
            lines.append("the DP's plan is the optimum")
    lines.append("verdict: " + ("everything agrees with the model" if r["agree"] else "MISMATCH: " + "; ".join(r["problems"])))
    return "\n".join(lines) + "\n"


def _fmt(r: dict[str, Any], value) -> str:
    if value is None:
        return "-"
    v = float(Fraction(value))
    if r["objective"] == "traffic":
        return f"{v:,.0f}" if Fraction(value).denominator == 1 else f"{v:,.2f}"
    return f"{v:.6e}"
