"""Reports: a self-describing result (JSON-ready dict) and a readable table for people."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from .. import __version__
from ..core.evaluate import Evaluation, evaluate, violations
from ..core.plan import Plan
from ..core.problem import Problem


def exact_number(x: Fraction | int) -> int | float | str:
    """An exact JSON number: int when integral, float when the float is exact, else 'p/q'."""
    x = Fraction(x)
    if x.denominator == 1:
        return int(x)
    f = float(x)
    return f if Fraction(f) == x else f"{x.numerator}/{x.denominator}"


def fmt_bytes(x: Fraction | float) -> str:
    v = float(x)
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.3f} {unit}"
    return f"{v:.0f} B"


def fmt_seconds(x: Fraction | float) -> str:
    v = float(x)
    if v >= 1:
        return f"{v:.3f} s"
    if v >= 1e-3:
        return f"{v * 1e3:.2f} ms"
    return f"{v * 1e6:.0f} us"


def plan_figures(problem: Problem, plan: Plan) -> tuple[Evaluation, dict[str, Any]]:
    """Evaluate a plan (the independent evaluator) and the figures every report shows for it."""
    ev = evaluate(problem.network, problem.array, problem.space, plan, problem.constraints.weight_copies)
    broken = violations(ev, problem.constraints, problem.array, plan)
    figs = {
        "traffic_elements": exact_number(ev.traffic_elements),
        "traffic_bytes": exact_number(ev.traffic_bytes),
        "comm_time_s": float(ev.comm_time_s),
        "compute_s": float(ev.compute_s),
        "step_time_s": float(ev.step_time_s),
        "memory_bytes_per_accelerator": exact_number(ev.memory_bytes),
        "violations": [
            {"constraint": v.constraint, "limit_bytes": exact_number(v.limit_bytes), "actual_bytes": exact_number(v.actual_bytes),
             "excess_bytes": exact_number(v.excess_bytes)}
            for v in broken
        ],
    }
    if ev.energy_J is not None:
        figs["energy_J"] = float(ev.energy_J)
    return ev, figs


def constraints_summary(problem: Problem) -> dict[str, Any]:
    c = problem.constraints
    return {
        "caps": [{"level": cap.level, "bytes": exact_number(cap.bytes), "from": cap.origin} for cap in c.caps],
        "memory_bytes": None if c.memory_bytes is None else exact_number(c.memory_bytes),
        "weight_copies": c.weight_copies,
        "pins": [p.name for p in c.pins],
        "forbids": [f.name for f in c.forbids],
    }


def header(problem: Problem) -> dict[str, Any]:
    net, arr = problem.network, problem.array
    return {
        "explorer_version": __version__,
        "model": net.name,
        "model_source": net.source,
        "array": arr.name,
        "array_source": arr.source,
        "space": problem.space.value,
        "objective": problem.objective.value,
        "batch": net.batch,
        "levels": arr.levels,
        "accelerators": arr.accelerators,
        "dtype_bytes": arr.dtype_bytes,
        "layers": net.layer_names,
        "constraints": constraints_summary(problem),
    }


def objective_real(problem: Problem, units: int | None) -> float | None:
    """A weighted-unit objective or bound in elements (traffic) or seconds (time)."""
    return None if units is None else float(problem.weights.scale * units)


WIDE = 16  # more layers than this: one row per layer instead of one per level


def render_plan_grid(problem: Problem, plan: Plan, level_cost: tuple[Fraction, ...]) -> list[str]:
    names = problem.network.layer_names
    if len(names) > WIDE:
        kinds = [L.kind.value for L in problem.network.layers]
        w = max(len(n) for n in names)
        lines = [f"{'layer':<{w}}  {'kind':<9}  " + "  ".join(f"L{h:<3}" for h in range(plan.levels))]
        for l, (n, k) in enumerate(zip(names, kinds)):  # noqa: E741
            lines.append(f"{n:<{w}}  {k:<9}  " + "  ".join(f"{plan.at(h, l).value:<4}" for h in range(plan.levels)))
        lines.append("c_h (elements): " + ", ".join(f"L{h} {float(c):,.0f}" for h, c in enumerate(level_cost)))
        return lines
    widths = [max(3, len(n)) for n in names]
    lines = ["level  " + "  ".join(n.ljust(w) for n, w in zip(names, widths)) + "  c_h (elements)"]
    for h, row in enumerate(plan.types):
        cells = "  ".join(t.value.ljust(w) for t, w in zip(row, widths))
        lines.append(f"{h:<5}  {cells}  {float(level_cost[h]):,.0f}")
    return lines
