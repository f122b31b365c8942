"""``explore check --uneven``: the uneven-split solvers side by side on an array of kinds.

Which solvers run, on which space, and when they agree: docs/commands.md, "explore check --uneven".
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from ..core.array import ArraySpec
from ..core.errors import InstanceTooLarge, Refused, refusal_reason
from ..core.names import given_as
from ..core.uneven import (
    DEFAULT_ALPHA_GRID,
    SPLIT_TIME_LIMIT,
    AlphaSpace,
    FreeAlphas,
    alpha_grid,
    alpha_space,
    proportional_plan,
)
from ..core.evaluate import evaluate_split
from ..core.network import Network
from ..core.objective import Objective
from ..core.plan import Plan
from ..core.partition import Space
from ..core.solution import Solution, Status, split_solution
from ..core.units import plural
from ..core.split_rules import TIME_ONLY, SplitRules, joint_refusal
from ..solvers.brute import solve_split as brute_split
from ..solvers.uneven import exact_uneven, search_level_alphas
from ..solvers.uneven_cpsat import cpsat_size_check, cpsat_uneven
from ..solvers.uneven_constrained import constrained_uneven, joint_under
from ..solvers.uneven_joint import accpar_uneven
from ..solvers.uneven_levels import equal_types, levels_uneven
from .figures_text import FRACTION_NOTE, exact_count, fmt_seconds, has_fraction
from .results import SCHEMA_VERSION, Inputs, PlanFigures, batch_warning, exact_number
from .check import Clock
from .split import proven_conflict, rule_names, split_inputs
from .split_start import scored_start
from .split_notes import cut_note, heuristic_note, joined, seed_end_note
from .split_solve import even_optimum

UNEVEN_CHECK_SOLVERS = ("brute", "exact", "cpsat", "joint", "accpar", "dp", "search", "proportional")  # by default
UNEVEN_CHECK_NAMES = (*UNEVEN_CHECK_SOLVERS, "levels")  # levels: dp's uneven form under its split's name
METHODS = {  # how each row's answer is reached, as check's ``method`` (check.method_of: brute and cpsat the same)
    "brute": "enumeration", "exact": "exact:pareto-dp", "cpsat": "cpsat", "joint": "joint:bound+label-setting",
    "accpar": "accpar-dp", "dp": "hierarchical-dp", "levels": "hierarchical-dp", "search": "level-search",
    "proportional": "proportional-rule",
}


@dataclass(frozen=True)
class SplitCheckRow:
    solver: str
    status: str  # optimal, feasible or refused
    step_time_s: Fraction | None
    bound_s: Fraction | None
    wall_s: float
    note: str  # why refused, or the evaluator's disagreement
    rescored: bool  # the evaluator gives the reported step time
    breaks: bool = False  # the plan breaks a cap, pin, forbid or memory limit of the run (note: which)
    plan: Plan | None = None
    figures: PlanFigures | None = None  # the evaluator's figures of the plan, as in explore check's rows
    route: str | None = None  # the exact solver's route (``info["method"]``), as check's ``exact:<route>``
    objective: Objective = Objective.TIME  # traffic: step_time_s is the plan's (the evaluator's), bound_s None
    traffic: Fraction | None = None  # under traffic: the solver's traffic of its plan (elements, re-scored)
    traffic_bound: Fraction | None = None  # under traffic: its proven lower bound (elements), if any

    @property
    def value(self) -> Fraction | None:
        """The objective's value of the plan: its step time (s) or its traffic (elements)."""
        return self.traffic if self.objective is Objective.TRAFFIC else self.step_time_s

    @property
    def bound(self) -> Fraction | None:
        """The proven lower bound on the objective, in the value's units."""
        return self.traffic_bound if self.objective is Objective.TRAFFIC else self.bound_s

    def key(self) -> tuple:
        """What rows are compared on: the step time, or (traffic, step time): least traffic, ties
        to the least step time (the lexicographic optimum every proving solver proves)."""
        return (self.traffic, self.step_time_s) if self.objective is Objective.TRAFFIC else (self.step_time_s,)

    @property
    def ok(self) -> bool:
        """A plan that keeps to every rule of the run (as ``ok`` in explore's and check's JSON)."""
        return self.step_time_s is not None and not self.breaks


@dataclass(frozen=True)
class SplitCheck:
    network: str
    array: str
    space: Space
    grid: int
    free: FreeAlphas
    rows: tuple[SplitCheckRow, ...]
    optimum_s: Fraction | None  # the proven optimum's step time, when a solver proved one (traffic: the tie-break's)
    proven_by: tuple[str, ...]
    problems: tuple[str, ...]
    grid_only: bool = False  # the grid alone, without each free class's proportional ratio
    constraints: tuple[str, ...] = ()  # the side constraints the solvers were given, by name
    inputs: Inputs | None = None  # the header, as explore check's
    wall_s: float = 0.0
    objective: Objective = Objective.TIME
    optimum_traffic: Fraction | None = None  # under traffic: the proven least traffic (elements)

    @property
    def optimum(self) -> Fraction | None:
        """The proven optimum of the objective: seconds, or elements under traffic."""
        return self.optimum_traffic if self.objective is Objective.TRAFFIC else self.optimum_s

    @property
    def agree(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        """``explore check``'s schema (docs/commands.md, "The JSON report"): its header, ``solvers`` by
        name (each as check's: exact ``objective`` and ``bound``, the plan's figures, ``plan``; and
        its ``alphas``), ``optimum``, ``infeasible``, ``agree``, ``problems``."""
        out = self.inputs.to_json() if self.inputs is not None else {"schema_version": SCHEMA_VERSION}
        out.update(split="optimal", alpha_grid=self.grid, grid_only=self.grid_only, free=str(self.free))
        out["solvers"] = {r.solver: _row_json(r) for r in self.rows}
        out["optimum"] = None if self.optimum is None else {"objective": exact_number(self.optimum),
                                                           "proven_by": list(self.proven_by)}
        if out["optimum"] is not None and self.objective is Objective.TRAFFIC:  # the tie-break, proven with it
            out["optimum"]["step_time_s"] = exact_number(self.optimum_s)
        out["infeasible"] = [r.solver for r in self.rows if r.status == Status.INFEASIBLE.value]
        if out["infeasible"] and self.agree:  # as check's: one rule alone conflicts (split.proven_conflict), several: null
            out.update(proven_conflict(self.constraints).to_json())
        out.update(agree=self.agree, problems=list(self.problems), wall_s=self.wall_s)
        return out


def _row_json(r: SplitCheckRow) -> dict[str, Any]:
    """One solver's row as ``explore check``'s (``results.SolverReport``), with the plan's alphas."""
    if r.status == Status.REFUSED.value:
        return {"status": Status.REFUSED.value, "reason": r.note}
    method = f"{r.solver}:{r.route}" if r.route else METHODS[r.solver]
    out: dict[str, Any] = {"status": r.status, "wall_s": round(r.wall_s, 6), "method": method}
    if r.plan is not None and r.figures is not None:
        out["objective"] = exact_number(r.value)
        out["ok"] = r.ok
        out.update(r.figures.to_json())
        out["plan"] = r.plan.to_lists()
        out["alphas"] = [[[str(a) for a in row] for row in groups] for groups in r.plan.alphas]
    out["bound"] = exact_number(r.bound)
    gap = None if r.bound is None or not r.value else float((r.value - r.bound) / r.value)
    out.update(gap=gap, rescored=r.rescored, breaks=r.breaks)
    if r.note:
        out["reason"] = r.note
    return out


def _dp_types(name: str, network: Network, array: ArraySpec, space: Space, rules: SplitRules = TIME_ONLY):
    """The DP's equal-split types under the pins and forbids of ``rules``."""
    try:
        plan = equal_types(network, array, space, rules)
    except InstanceTooLarge as err:  # the search takes its types from the DP: refused, like the others
        raise Refused(f"{name}: no types from the DP ({refusal_reason(err)})") from None
    return plan  # None: the pins and forbids leave some layer no type at some level (infeasible)


def _search(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, rules: SplitRules = TIME_ONLY,
            deadline: float | None = None) -> Solution:
    t0 = time.perf_counter()
    types = _dp_types("search", network, array, space, rules)
    if types is None:
        return split_solution("search", Status.INFEASIBLE, None, None, None, time.perf_counter() - t0, 0,
                              objective=rules.objective)
    start, scored = scored_start(network, array, types, aspace, rules, deadline)
    sol = search_level_alphas(network, array, start, aspace, rules=rules, deadline=deadline, start_scored=scored)
    out = split_solution("search", Status.FEASIBLE, sol.plan, sol.split_value, None, time.perf_counter() - t0, sol.explored,
                         objective=rules.objective)
    if "cut" in sol.info:
        out.info["cut"] = sol.info["cut"]
    return out


def _proportional(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace,
                  rules: SplitRules = TIME_ONLY) -> Solution:
    """The proportional split on the DP's types (``explore split --split proportional``): a rule, in
    the declared space unless ``--grid-only``, so no proven optimum may exceed it."""
    t0 = time.perf_counter()
    if not aspace.proportional:
        raise Refused(f"proportional: {given_as('--grid-only')} leaves the proportional ratios out of the declared space")
    types = _dp_types("proportional", network, array, space, rules)
    if types is None:
        return split_solution("proportional", Status.INFEASIBLE, None, None, None, time.perf_counter() - t0, 0,
                              objective=rules.objective)
    plan = proportional_plan(network, array, types)
    if not aspace.contains(plan):
        raise Refused("proportional: rounded to whole groups or heads, its plan leaves the declared space")
    value = rules.value(evaluate_split(network, array, plan, rules.weight_copies))
    return split_solution("proportional", Status.FEASIBLE, plan, value, None, time.perf_counter() - t0, 1,
                          objective=rules.objective)


def _run(name: str, network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, time_limit_s: float,
         rules: SplitRules = TIME_ONLY, seeds: tuple = (), hint: Plan | bool | None = None,
         even: tuple[Plan, ...] | None = None):
    """``even``: the even split's optimum solved already (``even_optimum``), for the joint solver's starts
    (not solved again: ``joint_uneven``); None: the joint solver solves it."""
    deadline = None if time_limit_s is None else time.perf_counter() + time_limit_s  # (the heuristics': no proof)
    if name == "brute":
        return brute_split(network, array, space, aspace, rules=rules,  # explore --split's limits (SPLIT_MAX_PLANS)
                           time_limit_s=time_limit_s)
    if name == "exact":  # EXACT_MAX_BYTES; caps or memory: the constrained path (as explore --split optimal)
        if rules.couples_layers:
            return constrained_uneven(network, array, space, aspace, time_limit_s=time_limit_s, rules=rules, even=even)
        return exact_uneven(network, array, space, aspace, time_limit_s=time_limit_s, rules=rules, seeds=seeds)
    if name == "cpsat":  # alone (not after the exact path as explore --split's): an independent cross-check
        return _cpsat_hinted(network, array, space, aspace, time_limit_s, rules, hint)
    if name == "joint":
        return joint_under(network, array, space, aspace, time_limit_s, rules, starts=even or (), even=even)  # as explore --split optimal
    if name == "accpar":
        if rules.side_constrained:
            raise Refused("accpar: no side constraints")
        return accpar_uneven(network, array, space, aspace, time_limit_s)
    if name in ("dp", "levels"):  # the level-by-level DP (explore --split optimal --solver dp, --split levels)
        return levels_uneven(network, array, space, aspace, rules=rules, name=name, deadline=deadline)
    if name == "proportional":
        return _proportional(network, array, space, aspace, rules)
    return _search(network, array, space, aspace, rules, deadline)


def _cpsat_hinted(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, time_limit_s: float,
                  rules: SplitRules, hint: Plan | bool | None = None) -> Solution:
    """CP-SAT's row, its search started from the level DP's plan (a hint: CP-SAT still proves, or
    finds no better, on its own): the check's ``dp`` row's, else run here (its time counts against
    the row's limit); ``False``: none (the check's time limit was spent before the DP's row)."""
    t0 = time.perf_counter()
    if hint is False:
        hint = None
    elif hint is None:
        hint = levels_uneven(network, array, space, aspace, rules=rules, name="dp",
                             deadline=time.perf_counter() + time_limit_s).plan
    return cpsat_uneven(network, array, space, aspace, time_limit_s=max(time_limit_s - (time.perf_counter() - t0), 0.0),
                        rules=rules, hint=hint)


PROVERS = ("exact", "cpsat", "brute", "joint")  # the rows that take seeds
CHEAP = ("dp", "search", "proportional")  # run first: their plans seed exact's (``exact_uneven``'s ``seeds``)
# then the provers that end soonest (lenet-c on tpu-mix-16: joint proves in 0.13 s, exact's tables
# need ~20 s), then the rest in the order given; the table shows the rows in the order given
FAST_PROVERS = ("joint", "accpar")
# Of what is left of the check's limit, the share the level DP's, the search's and the joint solver's
# rows may take (each stops at its deadline with its best plan so far), so that the rows after them still run
HEURISTIC_SHARE = {"dp": 1 / 3, "levels": 1 / 3, "search": 1 / 3, "joint": 1 / 2}
PROVING = ("brute", "exact", "cpsat", "joint")  # they keep to every rule they take: a plan that breaks one is a bug


def _row(name: str, network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, clock: Clock,
         rules: SplitRules = TIME_ONLY, seeds: tuple = (), hint: Plan | bool | None = None,
         even: tuple[Plan, ...] | None = None) -> SplitCheckRow:
    """One solver's row, with what the rows before it left of the check's time limit (``clock``);
    not run (status unknown, the note says why) once the limit is spent: most rows have no limit
    of their own (brute runs: it refuses by size at once or stops at ``MIN_LEFT_SHARE``)."""
    t0 = time.perf_counter()
    refused = _refused_at_once(name, network, array, space, aspace, rules)
    if refused is not None:
        return SplitCheckRow(name, Status.REFUSED.value, None, None, time.perf_counter() - t0, refused, True)
    late = clock.no_time_for(name)
    if late is not None:
        return SplitCheckRow(name, Status.UNKNOWN.value, None, None, 0.0, late, True)
    try:
        given = clock.left(HEURISTIC_SHARE.get(name, 1.0))  # its share of what is left (None: no limit)
        sol = _run(name, network, array, space, aspace, given, rules, seeds, hint, even)
    except Refused as err:
        return SplitCheckRow(name, Status.REFUSED.value, None, None, time.perf_counter() - t0, refusal_reason(err), True)
    if sol.status is Status.INTERRUPTED:
        raise KeyboardInterrupt  # Ctrl-C during CP-SAT's search: the CLI says which row it stopped
    if sol.plan is None:
        why = ("no plan and no proof within the time limit" if sol.status is Status.UNKNOWN
               else "no plan keeps to the constraints")
        if sol.info.get("reason"):  # exact ended at once: its column pairs need more than the limit
            why += ": " + sol.info["reason"]
        return SplitCheckRow(name, sol.status.value, None, None, sol.wall_s, why, True, route=_route(name, sol),
                             objective=rules.objective)
    row = _scored(name, sol, network, array, aspace, rules)
    cut = cut_note(name, clock.limit, sol.info.get("cut"), sol.explored,  # a heuristic's best plan so far
                   given if name in HEURISTIC_SHARE else None)
    # exact ended at once or early (its best seed plan), else why it stopped with this plan (e.g. the
    # joint solver cut while it built its tables: the best of its starting plans)
    cut = joined(cut, seed_end_note(sol.info, sol.status) or sol.info.get("reason") or "")
    # a heuristic's plan where nothing else is said: why it has no bound, in explore --split's words
    note = joined(row.note, cut) or (heuristic_note(name) if name not in PROVING else "")
    return replace(row, note=note)


def _scored(name: str, sol: Solution, network: Network, array: ArraySpec, aspace: AlphaSpace,
            rules: SplitRules) -> SplitCheckRow:
    """A row with a plan, re-scored by the evaluator: the solver's value of it (step time, or traffic
    in elements) must be the evaluator's, the plan in the declared space, and a proving solver's
    plan keep to every rule. Under traffic the row's step time is the evaluator's (the tie-break)."""
    ev = evaluate_split(network, array, sol.plan, rules.weight_copies)
    value, claimed = rules.value(ev), sol.split_value
    unit = "s" if rules.objective is Objective.TIME else "elements"
    note = "" if value == claimed else f"evaluator gives {value} {unit}, the solver {claimed} {unit}"
    if not aspace.contains(sol.plan):
        note = (note + "; " if note else "") + "plan outside the declared alpha space"
    broken = rules.violations(ev, array, sol.plan) if rules.side_constrained else []
    rescored = not note and not (broken and name in PROVING)
    if broken:
        note = (note + "; " if note else "") + "breaks " + "; ".join(v.constraint for v in broken)
    traffic = rules.objective is Objective.TRAFFIC
    return SplitCheckRow(name, sol.status.value, ev.step_time_s if traffic else sol.step_time_s,
                         None if traffic else sol.bound_s, sol.wall_s, note, rescored, bool(broken),
                         sol.plan, PlanFigures.of_split(ev, broken), _route(name, sol), rules.objective,
                         claimed if traffic else None, sol.split_bound if traffic else None)


def _refused_at_once(name: str, network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace,
                     rules: SplitRules) -> str | None:
    """Why the row is refused before it runs, even when too little of the limit is left for it:
    the joint solver and ``accpar`` under the traffic objective (they minimise the step time), or
    CP-SAT's size check (no column built, no OR-Tools import)."""
    if name == "joint" and joint_refusal(rules.objective):
        return joint_refusal(rules.objective)
    if name == "accpar" and rules.objective is not Objective.TIME:
        return "accpar: the step time only (AccPar's level cost), not the traffic objective"
    if name != "cpsat":
        return None
    try:
        cpsat_size_check(network, array, space, aspace, rules=rules)
    except Refused as err:
        return refusal_reason(err)
    return None


def _route(name: str, sol: Solution) -> str | None:
    """The exact solver's route when it names one (the constrained path's), else None (``METHODS``)."""
    return sol.info.get("method") if name == "exact" else None


def check_uneven(network: Network, array: ArraySpec, space: Space, grid: int = DEFAULT_ALPHA_GRID, free: FreeAlphas = FreeAlphas.UNLIKE,
                 solvers: tuple[str, ...] = UNEVEN_CHECK_SOLVERS, time_limit_s: float = SPLIT_TIME_LIMIT,
                 grid_only: bool = False, rules: SplitRules = TIME_ONLY, started: float | None = None) -> SplitCheck:
    """The solvers side by side (module docstring); under ``rules`` (pins, forbids, caps, memory)
    each keeps to what it takes, a heuristic's plan that breaks one is reported (not compared),
    and the proving solvers must agree on the optimum or on there being no plan. ``time_limit_s``
    bounds the whole check, counted from ``started`` (``time.perf_counter()``; ``explore check``
    passes its process's start) or else from the call: the rows in turn, each with what is left."""
    t0 = time.perf_counter()
    clock = Clock(t0 if started is None else started, time_limit_s)
    aspace = alpha_space(array, alpha_grid(grid), free, proportional=not grid_only)
    done = {n: _row(n, network, array, space, aspace, clock, rules) for n in solvers if n in CHEAP}
    hint = (False if done["dp"].plan is None else done["dp"].plan) if "dp" in done else None  # CP-SAT's first plan (not run twice)
    even = even_optimum(network, array, space, aspace, rules, clock) if set(solvers) & set(PROVERS) else ()
    for n in run_order(solvers):
        if n not in done:  # exact starts from the plans of the rows before it (the joint solver's too) and the
            # even split's proven optimum (as under --split optimal: never a plan worse than the even split's)
            seeds = even + tuple(r.plan for r in done.values() if r.plan is not None and not r.breaks)
            done[n] = _row(n, network, array, space, aspace, clock, rules, seeds, hint,
                           even if set(solvers) & set(PROVERS) else None)  # (solved once, above)
    rows = tuple(done[n] for n in solvers)
    best, proven_by, problems = _verdict(rows, rules.objective)
    c = rules.constraints
    names = rule_names(rules)
    warnings = tuple(w for w in (batch_warning(network.batch, array.accelerators),) if w)
    traffic = rules.objective is Objective.TRAFFIC
    return SplitCheck(network.name, array.name, space, grid, free, rows, None if best is None else best[-1],
                      proven_by, problems, grid_only, names,
                      split_inputs(network, array, space, rules.objective, c, warnings), time.perf_counter() - t0,
                      rules.objective, best[0] if traffic and best is not None else None)


def run_order(solvers: tuple[str, ...]) -> tuple[str, ...]:
    """The order the rows run in: ``CHEAP``, then ``FAST_PROVERS``, then the rest as given."""
    first = [n for group in (CHEAP, FAST_PROVERS) for n in group if n in solvers]
    return (*first, *(n for n in solvers if n not in first))


def _verdict(rows: tuple[SplitCheckRow, ...], objective: Objective):
    """The proven optimum's key (``SplitCheckRow.key``; None when no solver proved one), the solvers
    that proved it, and every disagreement: a plan that does not re-score, proven optima (or, under
    traffic, proven tie-breaks: both sides proven) that differ, a proof of no plan beside an optimum,
    a plan that keeps to the rules below the proven optimum, a bound above it, ``search`` slower
    than its start, the proportional split."""
    proven = [r for r in rows if r.status == Status.OPTIMAL.value and r.value is not None]
    none = [r for r in rows if r.status == Status.INFEASIBLE.value]
    best = min((r.key() for r in proven), default=None)
    problems = [f"{r.solver}: {r.note}" for r in rows if not r.rescored]
    if len({r.value for r in proven}) > 1:
        problems.append("proven optima differ: " + ", ".join(f"{r.solver} {r.value}" for r in proven))
    elif len({r.key() for r in proven}) > 1:  # the same least traffic, not the same least step time among its plans
        problems.append("proven step times of the least traffic differ: "
                        + ", ".join(f"{r.solver} {r.step_time_s}" for r in proven))
    if proven and none:
        problems.append(f"{', '.join(r.solver for r in none)} prove no plan, {', '.join(r.solver for r in proven)} an optimum")
    if best is not None:
        kept = [r for r in rows if r.value is not None and not r.breaks]
        problems += [f"{r.solver}: plan {r.value} below the proven optimum" for r in kept if r.value < best[0]]
        if objective is Objective.TRAFFIC:
            problems += [f"{r.solver}: plan of the least traffic at step time {r.step_time_s} s, below the proven "
                         f"{best[1]} s" for r in kept if r.value == best[0] and r.step_time_s < best[1]]
        problems += [f"{r.solver}: bound {r.bound} above the proven optimum" for r in rows
                     if r.bound is not None and r.bound > best[0]]
    found = {r.solver: r.value for r in rows if r.value is not None and not r.breaks}
    if "search" in found and found.get("proportional", found["search"]) < found["search"]:
        worse = "slower" if objective is Objective.TIME else "more traffic"
        problems.append(f"search: {found['search']} {worse} than its start, the proportional split {found['proportional']}")
    return best, tuple(r.solver for r in proven if r.key() == best), tuple(problems)


CHECK_DIGITS = 6  # significant digits of the table's times: the solvers' values side by side


def _time(x: Fraction | None) -> str:
    """A step time or bound of the table (``fmt_seconds``, as the split report, to ``CHECK_DIGITS``)."""
    return "-" if x is None else fmt_seconds(x, CHECK_DIGITS)


def _elements(x: Fraction | None) -> str:
    return "-" if x is None else exact_count(x)


def _cells(row: SplitCheckRow, traffic: bool, tw: int = 14) -> str:
    """A row's figures: step time and bound, or (traffic, ``tw`` wide) traffic, bound and the plan's step time."""
    gap = "-" if row.bound is None or not row.value else f"{float(1 - row.bound / row.value) * 100:.3f}%"
    if traffic:
        return f"{_elements(row.traffic):>{tw}} {_elements(row.traffic_bound):>{tw}} {gap:>8} {_time(row.step_time_s):>12}"
    return f"{_time(row.step_time_s):>12} {_time(row.bound_s):>12} {gap:>8}"


def _optimum_line(r: SplitCheck) -> str:
    if r.optimum is not None:
        value = (f"{_elements(r.optimum_traffic)} elements, step time {_time(r.optimum_s)}"
                 if r.objective is Objective.TRAFFIC else _time(r.optimum_s))
        return f"proven optimum {value} ({', '.join(r.proven_by)})"
    if any(row.status == Status.INFEASIBLE.value for row in r.rows):
        return "no plan keeps to the constraints (" + ", ".join(row.solver for row in r.rows
                                                              if row.status == Status.INFEASIBLE.value) + ")"
    return "no solver proved the optimum"


def render_check_uneven(r: SplitCheck) -> str:
    statuses = ["breaks" if row.breaks else str(row.status) for row in r.rows]  # breaks: its plan breaks a rule (the note: which)
    w = max(9, *map(len, statuses))  # level-optimal (13) widens the column, not its row
    traffic = r.objective is Objective.TRAFFIC
    counts = [x for row in r.rows for x in (row.traffic, row.traffic_bound)] + [r.optimum_traffic]
    tw = max([14] + [len(_elements(x)) for x in counts if x is not None])  # a count with a fraction widens it
    heads = (f"{'traffic':>{tw}} {'bound':>{tw}} {'gap':>8} {'step time':>12}" if traffic
             else f"{'step time':>12} {'bound':>12} {'gap':>8}")
    lines = [f"check (uneven splits): {r.network} on {r.array}, space {r.space}, alpha grid 1/{r.grid}"
             f"{' only' if r.grid_only else ' + proportional'}, "
             f"free alphas {r.free}, objective "
             + ("traffic (elements; ties to the least step time)" if traffic else "step time"),
             *(["constraints: " + "; ".join(r.constraints)] if r.constraints else []),
             f"{'solver':<12} {'status':<{w}} {heads} {'solve s':>8}  note"]
    for row, status in zip(r.rows, statuses):
        lines.append(f"{row.solver:<12} {status:<{w}} {_cells(row, traffic, tw)} {row.wall_s:>8.3f}  {row.note}".rstrip())
    if traffic and has_fraction(*counts):
        lines.append(f"note: {FRACTION_NOTE}")
    lines.append(_optimum_line(r))
    lines.append(agree_line(r) if r.agree else "DISAGREE: " + "; ".join(r.problems))
    return "\n".join(lines) + "\n"


def agree_line(r: SplitCheck) -> str:
    """What agreeing means in this run, by what was compared: the proofs with each other and every
    plan and bound with the proven optimum; or, with nothing proven, no "agree" at all: the plans
    that re-score, no more."""
    plans = [row.solver for row in r.rows if row.value is not None]
    if r.optimum is not None:
        return (f"agree: {', '.join(r.proven_by)} {'prove' if len(r.proven_by) > 1 else 'proves'} the optimum; "
                f"no plan below it, no bound above it ({plural(len(plans), 'plan')}, "
                f"{plural(sum(row.bound is not None for row in r.rows), 'bound')} compared)")
    if any(row.status == Status.INFEASIBLE.value for row in r.rows):
        return "agree: no plan that keeps to the rules where a solver proves none"
    return (f"nothing proven, so nothing to agree on: {plural(len(plans), 'plan')} re-scored by the evaluator"
            + (f" ({', '.join(plans)})" if plans else ""))

