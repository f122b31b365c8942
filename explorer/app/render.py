"""Readable tables for people: the one place a RunResult or a CheckReport becomes text.

Rendering only formats; every figure comes from the typed result (``results.py``).
"""

from __future__ import annotations

from fractions import Fraction

from ..core.partition import PartitionType
from ..core.names import given_as
from ..core.plan import Plan
from ..core.solution import BROKEN_PLAN_NOTE, Status
from ..core.units import TRAFFIC_UNITS, format_count, memory_text, plural, safe_float
from .figures_text import _milli_micro, _sci, fmt_seconds  # noqa: F401 - re-exported
from .figures_text import FRACTION_NOTE, exact_count, has_fraction
from .results import CheckReport, Inputs, RunResult, SolverReport, StepTerms, conflict_line

WIDE = 16  # more layers than this: one row per layer instead of one per level


def fmt_bytes(x: Fraction | float) -> str:
    """Traffic in a table: decimal units up to EB (``units.TRAFFIC_UNITS``), 3 decimals;
    from 1000 EB, e-notation (no float overflow)."""
    v = safe_float(x)
    if abs(v) >= 1e21:
        return f"{_sci(x)} B"
    for unit, scale in TRAFFIC_UNITS:
        if abs(v) >= scale:
            return f"{v / scale:.3f} {unit}"
    if 0 < abs(v) < 1:  # a fraction of a byte (a batch split finer than a sample): never "0 B"
        return f"{v:.3g} B"
    return f"{v:.0f} B"


def excess_text(v) -> str:
    """A broken constraint and by how much (``core.evaluate.Violation``): a memory limit's excess in
    memory's binary units, a cap's in bytes (traffic, decimal), a pin's or forbid's bare."""
    if not v.limit_bytes:
        return v.constraint
    return f"{v.constraint} by {(memory_text if v.memory else fmt_bytes)(v.excess_bytes)}"


def fmt_joules(x: Fraction | float) -> str:
    v = safe_float(x)
    if v >= 1e6:  # a million joules and more: e-notation, as fmt_seconds (no 31-digit "J" column, no overflow)
        return f"{_sci(x)} J"
    text = _milli_micro(v, "J", 1)
    return f"{v:.3e} J" if text is None else text  # below a microjoule: never a rounded-off "0.0 uJ"


def render_plan_grid(inputs: Inputs, plan: Plan, level_cost: tuple[Fraction, ...]) -> list[str]:
    """Levels x layers (or layers x levels for wide networks), with c_h per level (exact: a note
    follows when one has a fraction, ``FRACTION_NOTE``)."""
    note = [f"note: {FRACTION_NOTE}"] if has_fraction(*level_cost) else []
    names = inputs.layers
    if len(names) > WIDE:
        kinds = [n.kind.value for n in inputs.nodes]
        w = max(len(n) for n in names)
        lines = [f"{'layer':<{w}}  {'kind':<9}  " + "  ".join(f"L{h:<3}" for h in range(plan.levels))]
        cell = {id(t): f"{t.value:<4}" for t in PartitionType}  # keyed by id: Enum.__hash__ is slow
        for n, k, col in zip(names, kinds, zip(*plan.types)):
            lines.append(f"{n:<{w}}  {k:<9}  " + "  ".join(map(cell.__getitem__, map(id, col))))
        lines.append("c_h (elements): " + ", ".join(f"L{h} {exact_count(c)}" for h, c in enumerate(level_cost)))
        return lines + note
    widths = [max(3, len(n)) for n in names]
    lines = ["level  " + "  ".join(n.ljust(w) for n, w in zip(names, widths)) + "  c_h (elements)"]
    for h, row in enumerate(plan.types):
        cells = "  ".join(t.value.ljust(w) for t, w in zip(row, widths))
        lines.append(f"{h:<5}  {cells}  {exact_count(level_cost[h])}")
    return lines + note


def _constraints_line(inputs: Inputs) -> str:
    cons = inputs.constraints
    parts = [c.name for c in cons.caps]
    if cons.memory_bytes is not None:
        parts.append(memory_phrase(cons))
    parts += [p.name for p in cons.pins] + [f.name for f in cons.forbids]
    return "constraints: " + ", ".join(parts)


def memory_phrase(cons) -> str:
    """A memory limit given for every accelerator, as a constraints line words it (even and split runs)."""
    return f"memory {memory_text(cons.memory_bytes)}/accelerator (weight copies {cons.weight_copies})"


def _given_constraints(inputs: Inputs) -> bool:
    """Constraints beyond the array's own memory (caps, --memory, pins, forbids): ``explore check``
    shows them in its header."""
    cons = inputs.constraints
    return bool(cons.caps or cons.memory_set or cons.pins or cons.forbids)


def render_table(result: RunResult) -> str:
    """``explore``'s table: the plan grid and the plan against the three baselines."""
    i = result.inputs
    lines = [
        f"{i.model} on {i.array} ({i.accelerators} accelerators, {plural(i.levels, 'level')}), "
        f"space {i.space.value}, batch {i.batch}, {i.dtype_bytes}-byte elements",
        *(s.describe() for s in i.input_shapes),
        f"solver {result.solver}: {result.status.value}{_broken_note(result)} (objective {i.objective.value}), "
        f"wall {fmt_seconds(result.wall_s)}",
        *(f"warning: {w}" for w in i.warnings),
        _constraints_line(i),
    ]
    if i.time_model is not None and not i.time_model.is_default:
        lines.append(i.time_model.describe())
    figs = result.figures
    if result.plan is None or figs is None:
        return "\n".join(lines + _no_plan_lines(result)) + "\n"
    lines += _status_lines(result)
    lines.append("")
    lines += render_plan_grid(i, result.plan, result.level_cost_elements)
    lines.append("")
    lines += _comparison_lines(result)
    lines += _traffic_tie_note(result)
    return "\n".join(lines) + "\n"


def _traffic_tie_note(result: RunResult) -> list[str]:
    """Under the traffic objective, a baseline that keeps the rules and is faster than the plan:
    say that the step time is not the objective, not even among plans of equal traffic (two
    solvers may return different optima of one traffic and different step times: new-user trial
    2), and how to minimise it; [] otherwise."""
    i, figs = result.inputs, result.figures
    if i.objective.value != "traffic" or figs.violations:
        return []
    faster = [(name, f) for name, f in result.baselines if f.ok and f.step_time_s < figs.step_time_s]
    if not faster:
        return []
    name, f = min(faster, key=lambda nf: nf[1].step_time_s)
    return [f"note: {name} is faster ({fmt_seconds(f.step_time_s)}): the objective is traffic (level h's elements "
            "weighted 2^h, not by its link's bandwidth), and among plans of the least traffic the step time is not "
            f"minimised, so solvers may return optima of different step times; {given_as('--objective')} time "
            "minimises it"]


def _broken_note(result: RunResult) -> str:
    """By the status of a plan that breaks a rule (the DP's): not proven infeasible (as ``explore split`` says)."""
    return f" ({BROKEN_PLAN_NOTE})" if result.figures is not None and result.figures.violations else ""


def _no_plan_lines(result: RunResult) -> list[str]:
    """Why there is no plan: the constraints that conflict (and what to change), or the reason."""
    lines = conflict_lines(result.explanation) or ([f"reason: {result.reason}"] if result.reason else [])
    if result.bound is not None:  # a time-limited run's proven lower bound: its one result
        lines.append(f"no plan found; lower bound {_objective(result.inputs, result.bound)} proven"
                     + (f" (by {result.bound_method})" if result.bound_method else ""))
    return lines + explanation_time(result.explanation)


def explanation_time(why) -> list[str]:
    """The explanation's own time after the solve (not in the solver's wall), and what the time
    limit left unsettled; [] when the solver named the conflict itself."""
    if why is None or why.wall_s is None:
        return []
    return [f"explanation searched after the solve, wall {fmt_seconds(why.wall_s)}"] + (
        [f"explanation {why.note}"] if why.note else [])


def conflict_lines(why) -> list[str]:
    """An infeasible run's explanation (``results.Explanation`` or None): the constraints that
    conflict and what to change, as explore and explore --split print them; [] when none is named."""
    if why is None or not why.conflict:
        return []
    return [conflict_line(why.conflict)] + ([why.suggestion] if why.suggestion else [])


def _status_lines(result: RunResult) -> list[str]:
    """What the plan breaks, an interruption, the time objective's terms, the bound and gap."""
    i, figs, lines = result.inputs, result.figures, []
    if figs.violations:
        lines.append("PLAN BREAKS: " + "; ".join(
            excess_text(v) for v in figs.violations) + f" (use {given_as('--solver')} exact or cpsat to enforce caps and memory)")
    if result.status is Status.INTERRUPTED:
        lines.append(f"INTERRUPTED: {result.reason or 'stopped by Ctrl-C'}")
    elif result.reason and not figs.violations and (result.solver in ("dp", "pruned") or result.status is Status.FEASIBLE):
        lines.append(f"note: {result.reason}")  # dp: levels by CP-SAT; a feasible plan: why it is not proven
    terms = result.time_terms
    if terms is not None and result.objective_value is not None:
        lines.append(f"objective: step time {fmt_seconds(result.objective_value)} = {_terms(terms, terms.communication_s)}")
    if result.bound is not None and result.status is not Status.OPTIMAL:
        of = "" if terms is None or terms.bound_communication_s is None else f" (communication {fmt_seconds(terms.bound_communication_s)})"
        plan = ("" if terms is not None or result.objective_value is None
                else f"plan {_objective(i, result.objective_value)}, ")  # the gap's two ends, one unit
        lines.append(f"{plan}bound {_objective(i, result.bound)}{of}, gap {100 * result.gap:.3f}%")
    return lines


def _comparison_lines(result: RunResult) -> list[str]:
    """The plan and the baselines side by side: traffic, times, speedup, energy, memory, ok; each
    column as wide as its widest cell (a figure wider than the usual width moves the columns after it)."""
    figs = result.figures
    energy = figs.energy_J is not None
    head = [("traffic", 13), ("vs all-I", 10), ("comm time", 12), ("step time", 12), ("speedup", 9)]
    head += [("energy", 11), ("eff.", 8)] if energy else []
    rows = []
    for name, f in ((result.solver, figs), *result.baselines):
        vs = result.versus(f)
        row = [name, fmt_bytes(f.traffic_bytes), _ratio(vs.traffic_ratio_to_all_I), fmt_seconds(f.comm_time_s),
               fmt_seconds(f.step_time_s), _ratio(vs.speedup_over_all_I)]
        if energy:
            row += [fmt_joules(f.energy_J), _ratio(vs.energy_efficiency_over_all_I)]
        rows.append(row + [memory_text(f.memory_bytes_per_accelerator), "yes" if f.ok else "no"])
    cells = [["plan", *(h for h, _ in head), "memory/acc", "ok"], *rows]
    widths = [max(w, 1 + max(len(r[i + 1]) for r in cells)) for i, (_, w) in enumerate(head + [("", 12)])]
    lines = [f"{r[0]:<{max(10, max(len(c[0]) for c in cells))}}" + "".join(_col(c, w) for c, w in zip(r[1:], widths))
             + f"  {r[-1]}" for r in cells]
    if energy:
        lines.append("eff.: energy efficiency over all-I (all-I's energy / the plan's)")
    return lines


def _terms(terms: StepTerms, communication: Fraction | None) -> str:
    """The time objective's terms: compute (the slowest accelerator's, every plan's) and communication."""
    compute = f"compute {fmt_seconds(terms.compute_s)} (slowest accelerator, same for every plan)"
    comm = "communication" if communication is None else f"communication {fmt_seconds(communication)}"
    return f"max({compute}, {comm})" if terms.overlap else f"{compute} + {comm}"


def _col(text: str, width: int) -> str:
    """A right-aligned cell of ``width`` characters that always keeps one space before it."""
    return " " + text.rjust(width - 1)


def _ratio(v: float) -> str:
    return f"{_sci(v)}x" if abs(v) >= 1e6 else f"{v:.3f}x"


def _elements(value: Fraction | int) -> str:
    """A count of elements in check's tables: '20,346,560' when whole (no '.00'), else 2 decimals."""
    return format_count(int(value)) if Fraction(value).denominator == 1 else f"{float(value):,.2f}"


def _fmt(inputs: Inputs, value: Fraction | None) -> str:
    """A check value: elements, or seconds in the unit that suits them (7 significant digits, as
    the other reports' times read: '482.8968 us', not '4.828968e-04')."""
    if value is None:
        return "-"
    if inputs.objective_unit == "elements":
        return _elements(value)
    return fmt_seconds(value, 7)


def _objective(inputs: Inputs, value: Fraction) -> str:
    """A status line's objective value (a bound, a plan's): elements to 6 significant digits, or
    seconds as check's table writes them (``_fmt``: '2.853408 s', not '2.85341 s' after '2.858 s')."""
    if inputs.objective_unit == "elements":
        return f"{float(value):.6g} elements"
    return _fmt(inputs, value)


def _unit(inputs: Inputs) -> str:
    """The unit after a value ``_fmt`` gave: ' elements' (a time carries its own)."""
    return f" {inputs.objective_unit}" if inputs.objective_unit == "elements" else ""


def render_check(r: CheckReport) -> str:
    """``explore check``'s table: the DP level by level, the joint solvers, the verdict."""
    i = r.inputs
    unit = i.objective_unit
    lines = [
        f"check: {i.model} on {i.array} ({i.accelerators} accelerators, {plural(i.levels, 'level')}), "
        f"space {i.space.value}, objective {i.objective.value}, batch {i.batch}",
        *(s.describe() for s in i.input_shapes),
        *(f"warning: {w}" for w in i.warnings),
        *([_constraints_line(i)] if _given_constraints(i) else []),
        *([f"objective: step time = {_terms(r.time_terms, None)}"] if r.time_terms is not None else []),
        "",
        "DP level by level (each level must be optimal given the levels above):",
        f"  {'level':<6}{'DP c_h':>20}{'level optimum':>20}  {'method':<12} ok",
    ]
    for lv in r.levels:
        lines.append(_level_line(lv))
    lines += [f"  level {lv.level}: {lv.cut_short}" for lv in r.levels if lv.cut_short]
    lines += ["", f"joint optimum ({'step time' if r.time_terms is not None else unit}):",
              f"  {'solver':<8}{'status':<15}{'objective':>22}{'bound':>22}  {'method':<30}{'solve':>10}"]
    for name, s in (("dp", r.dp), *r.solvers):
        if s.refused or (s.plan is None and s.status is Status.UNKNOWN and s.reason):
            lines.append(f"  {name:<8}{s.status.value:<15}  {s.reason}")  # refused, or not run (the time limit)
            continue
        lines.append(f"  {name:<8}{s.status.value:<15}{_fmt(i, s.objective):>22}{_fmt(i, s.bound):>22}  "
                     f"{s.method or '':<30}{s.wall_s:>9.3f}s{_breaks(s)}")
    lines.append("")
    lines += _optimum_lines(r)
    lines.append("verdict: " + (_agreed(r) if r.agree else "MISMATCH: " + "; ".join(r.problems)))
    return "\n".join(lines) + "\n"


def _agreed(r: CheckReport) -> str:
    """The verdict when nothing disagrees: with nothing proven, what was compared, not "agrees"."""
    if r.optimum is not None or r.infeasible:
        return "everything agrees with the model"
    plans = sum(s.plan is not None for _, s in (("dp", r.dp), *r.solvers))
    return (f"nothing proven, so no optimum to compare with: the DP checked level by level, "
            f"{plural(plans, 'plan')} re-scored by the evaluator")


def _level_line(lv) -> str:
    """One row of check's level-by-level table; a level cut short shows its bound and '?' (or NO
    where a plan below the DP's was found)."""
    ok = {True: "yes", False: "NO", None: "? (cut short)"}[lv.dp_is_level_optimal]
    if lv.level_optimum_elements is not None:
        shown = _elements(lv.level_optimum_elements)
    elif lv.found_elements is not None and lv.found_elements < lv.dp_cost_elements:
        shown = "<= " + _elements(lv.found_elements)
    else:
        shown = "-" if lv.bound_elements is None else ">= " + _elements(lv.bound_elements)
    return f"  {lv.level:<6}{_elements(lv.dp_cost_elements):>20}{shown:>20}  {lv.method:<12} {ok}"


def _broken(s: SolverReport) -> tuple[str, ...]:
    """What a solver's plan breaks (the DP's, under caps or memory it does not enforce)."""
    return tuple(v.constraint for v in s.figures.violations) if s.figures is not None else ()


def _breaks(s: SolverReport) -> str:
    return f"  PLAN BREAKS: {'; '.join(_broken(s))}" if _broken(s) else ""


def _dp_against(r: CheckReport) -> str:
    """The DP's objective and its gap to the optimum; no gap when its plan breaks the constraints."""
    i, o = r.inputs, r.optimum
    if o.dp_gap is None:
        broken = "; ".join(_broken(r.dp)) or "the constraints"
        return (f"DP {_fmt(i, o.dp_objective)}: no gap, its plan breaks {broken} "
                "(the DP enforces only pins and forbids, not caps or memory)")
    return f"DP {_fmt(i, o.dp_objective)}: gap {_fmt(i, o.dp_gap)}{_unit(i)} ({o.dp_gap_percent:.3f}%)"


def _optimum_lines(r: CheckReport) -> list[str]:
    """``explore check``'s finding: the proven optimum against the DP (gap, the cells that
    differ), or proven infeasibility, or why there is none."""
    i, o = r.inputs, r.optimum
    if o is None and r.infeasible:
        lines = ["no plan satisfies the constraints (proven by " + ", ".join(r.infeasible) + ")"]
        why = r.explanation
        if why is not None and why.conflict:
            lines.append("these conflict: " + "; ".join(why.conflict))
        if why is not None and why.suggestion:
            lines.append(why.suggestion)
        return lines + explanation_time(why)
    if o is None:
        return ["the DP refused this problem: no gap to report" if r.dp.refused
                else "no solver proved the joint optimum within its limits"]
    lines = [
        f"proven optimum {_fmt(i, o.objective)}{_unit(i)} ({', '.join(o.proven_by)}); " + _dp_against(r),
        f"the optimum was proven by {o.method} (" + ", ".join(f"{n}: {m}" for n, m in o.methods) + ")",
    ]
    if o.cells_differing:
        cells = ", ".join(f"{c.layer}@{c.level} {c.dp.value}->{c.optimum.value}" for c in o.cells_differing)
        tie = " (a tie: the DP's plan is an equally good optimum)" if o.dp_gap == 0 else ""
        lines.append(f"cells where the DP differs from the optimum (layer@level dp->optimum): {cells}{tie}")
    else:
        lines.append("the DP's plan is the optimum")
    return lines


