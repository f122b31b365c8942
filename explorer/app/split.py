"""``explore split``: a plan with uneven splits on an array of kinds, against equal-split plans.

The policies (``equal``, ``proportional``, ``search``, ``optimal``, ``levels``), the declared alpha
space and the per-kind memory check are described in docs/commands.md (``explore split``) and
docs/uneven.md. Every step time is the slowest accelerator's (``core.uneven``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from ..core.array import ArraySpec
from ..core.constraints import Constraints
from ..core.errors import InstanceTooLarge, Refused, SpecError, refusal_reason
from ..core.names import given_as
from ..core.uneven import (
    MAX_FREE_CLASSES,
    AlphaSpace,
    FreeAlphas,
    alpha_grid,
    alpha_space,
    check_array,
    proportional_plan,
)
from ..core.evaluate import Violation, evaluate_split
from ..core.network import Network
from ..core.objective import Objective
from ..core.partition import Space
from ..core.plan import Plan
from ..core.problem import Problem
from ..core.solution import BROKEN_PLAN_NOTE, SolveOptions, Status
from ..core.split_rules import TIME_ONLY, SplitRules, joint_refusal, kind_memory_violation, leaf_memory_limits
from ..core.units import memory_text, safe_float
from ..solvers import get_solver
from .baselines import BASELINES, baseline_plan
from .check import Clock
from .figures_text import exact_count
from .render import conflict_lines, excess_text, fmt_joules, fmt_seconds, memory_phrase, render_plan_grid
from .results import SCHEMA_VERSION, Explanation, Inputs, PlanFigures, Versus, batch_warning, exact_number, plan_figures
from .run import EvaluatorMismatch
from .split_kinds import KindMemory, class_labels, kind_memory
from .split_start import scored_start
from .split_notes import cut_note, heuristic_note, joined, no_plan_note, no_suggestion, proof_note, wider_space_note
from .split_solve import (PROVING_SOLVERS, SeedPlans, even_optimum, even_solve, proof_info, routed_optimal, seed_plans,
                          solve_by)


class Split(enum.Enum):
    EQUAL = "equal"
    PROPORTIONAL = "proportional"
    SEARCH = "search"
    OPTIMAL = "optimal"
    LEVELS = "levels"  # AccPar's hierarchical DP: type and alpha per layer, level by level

    def __str__(self) -> str:
        return self.value


COMPARED = ("all-I", "trick", "hypar")  # data parallelism, the trick, HyPar's DP plan: each with an equal split


@dataclass(frozen=True)
class SplitReport:
    network: str
    array: str
    space: Space
    split: Split
    grid: int
    status: Status
    plan: Plan | None  # None: no plan keeps to the rules (status infeasible)
    step_time_s: Fraction | None
    group_times_s: tuple[Fraction, Fraction] | None  # the two top-level groups' slowest accelerators
    idle_s: Fraction | None  # how long the faster top-level group waits
    compared: tuple[tuple[str, Fraction], ...]  # (plan, its equal-split step time)
    layer_names: tuple[str, ...]
    wall_s: float
    alpha_space: AlphaSpace | None = None  # the declared space (groups' classes)
    class_labels: tuple[tuple[str, ...], ...] = ()  # [level][class]: "v2x4|v3x4"
    bound_s: Fraction | None = None  # a proven lower bound on the step time (optimal: the step time)
    equal_best_s: Fraction | None = None  # the best equal-split plan's step time (optimal only)
    solver_wall_s: float | None = None  # optimal: the joint solver's own wall time (to proof or to its limit)
    memory: tuple[KindMemory, ...] = ()  # per kind: its most loaded accelerator against its limit
    weight_copies: int = 0
    note: str = ""  # what the status means where it is not the obvious (one point in the declared space)
    free: FreeAlphas = FreeAlphas.UNLIKE  # which classes of groups choose alpha (--free)
    batch: int = 0  # the network's batch (samples per step)
    warnings: tuple[str, ...] = ()  # sentences about the inputs (explore's, e.g. a batch below the accelerators)
    objective: Objective = Objective.TIME
    objective_value: Fraction | None = None  # the step time (s), or the traffic sum_h 2^h c_h (elements)
    objective_bound: Fraction | None = None  # a proven lower bound on it, if any
    violations: tuple = ()  # caps, pins and forbids the plan breaks (``core.evaluate.Violation``); memory: ``memory``
    rules: tuple[str, ...] = ()  # the side constraints the run took (caps, pins, forbids), by name
    solver: str = ""  # what chose the plan (``method``): dp, joint, search, brute, exact or cpsat
    inputs: Inputs | None = None  # the run's header, as explore's (``split_inputs``)
    figures: PlanFigures | None = None  # the evaluator's figures of the plan, as explore's (``with_figures``)
    explanation: Explanation | None = None  # infeasible: the conflicting rules and a suggestion, where known
    level_cost_elements: tuple[Fraction, ...] = ()  # c_h: per level, the busiest side of its groups (elements, one way)
    baselines: tuple[tuple[str, PlanFigures], ...] = ()  # the equal-split plans' figures (all-I, all-II, trick, hypar)
    bound_method: str | None = None  # --solver brute, exact, cpsat: what proved the bound (or no plan), e.g. exact:lagrangian+labels

    @property
    def memory_ok(self) -> bool:
        return all(m.ok for m in self.memory)

    @property
    def ok(self) -> bool:
        """A plan that keeps to every cap, pin, forbid and memory limit (exit status 0)."""
        return self.plan is not None and self.memory_ok and not self.violations

    @property
    def uses_grid(self) -> bool:
        return self.split in (Split.SEARCH, Split.OPTIMAL, Split.LEVELS)

    @property
    def grid_only(self) -> bool | None:
        """Whether the declared space was the grid alone (``--grid-only``); None where no grid is used."""
        if not self.uses_grid or self.alpha_space is None:
            return None
        return not self.alpha_space.proportional

    @property
    def gap(self) -> Fraction | None:
        v, b = self.objective_value, self.objective_bound
        if v is None or b is None:
            return None
        return (v - b) / v if v else Fraction(0)

    def speedup(self, name: str) -> Fraction:
        return dict(self.compared)[name] / self.step_time_s

    def _alpha_layers(self, row) -> dict[Fraction, list[str]]:
        d: dict[Fraction, list[str]] = {}
        for name, a in zip(self.layer_names, row):
            d.setdefault(a, []).append(name)
        return d

    def class_alphas(self) -> list[list[tuple[str, dict[Fraction, list[str]]]]]:
        """Per level, per class of groups (identical subtrees): its label and alpha -> layers."""
        out = []
        for h, groups in enumerate(self.plan.alphas):
            classes = self.alpha_space.group_class[h] if self.alpha_space else (0,) * len(groups)
            row = []
            for c in range(max(classes) + 1):
                g = classes.index(c)
                label = self.class_labels[h][c] if self.class_labels else f"group {g}"
                row.append((label, self._alpha_layers(groups[g])))
            out.append(row)
        return out

    def to_json(self) -> dict[str, Any]:
        """``explore``'s schema (docs/commands.md, "The JSON report"): its header (``inputs``), plan
        figures (evaluator times as floats; elements and bytes with ``exact_number``), exact
        ``objective_value`` and ``bound``, ``baselines``; then what only a split has: its alphas
        ("p/q" strings, [level][group][layer]), the top groups' times, the memory per kind."""
        f = lambda x: None if x is None else float(x)  # noqa: E731
        out = self.inputs.to_json() if self.inputs is not None else {"schema_version": SCHEMA_VERSION}
        out.update(split=str(self.split), alpha_grid=self.grid if self.uses_grid else None, grid_only=self.grid_only,
                   free=str(self.free), solver=self.solver or None, status=self.status.value, ok=self.ok,
                   wall_s=self.wall_s, bound=None if self.objective_bound is None else exact_number(self.objective_bound),
                   gap=f(self.gap))
        plan = self.plan
        out["plan"] = None if plan is None else plan.to_lists()
        out["alphas"] = None if plan is None else [[[str(a) for a in row] for row in groups] for groups in plan.alphas]
        if plan is not None:  # as explore's: no plan, no figures, objective_value or baselines
            out.update(self._plan_json())
        out.update(group_times_s=None if self.group_times_s is None else [float(t) for t in self.group_times_s],
                   idle_s=f(self.idle_s), equal_best_s=f(self.equal_best_s),
                   memory={m.kind: m.to_json() for m in self.memory}, note=self.note or None)
        if self.bound_method is not None:  # as explore's: only where a proving solver names one
            out["bound_method"] = self.bound_method
        if self.status is Status.INFEASIBLE:  # as explore's: the conflicting rules (null: not named) and a suggestion
            out.update((self.explanation or Explanation(None, None)).to_json())
        return out

    def _plan_json(self) -> dict[str, Any]:
        """The plan's figures, exact ``objective_value``, ``baselines`` and its ratios to all-I."""
        out: dict[str, Any] = {}
        if self.figures is not None:
            out["level_cost_elements"] = [exact_number(c) for c in self.level_cost_elements]
            out.update(self.figures.to_json())
        out["objective_value"] = None if self.objective_value is None else exact_number(self.objective_value)
        out["baselines"] = self._baselines_json()
        all_i = dict(self.baselines).get("all-I")
        if self.figures is not None and all_i is not None:
            out.update(Versus.of(self.figures, all_i).to_json(comm=True))  # as explore's (energy: where modelled)
        return out

    def _baselines_json(self) -> dict[str, Any]:
        """The equal-split plans: each one's figures, traffic ratio and speedup over all-I (as
        ``explore``'s baselines) and the split plan's speedup over it (``split_speedup``)."""
        all_i = dict(self.baselines).get("all-I")
        out = {}
        for name, figs in self.baselines:
            vs = Versus.of(figs, all_i)
            out[name] = {**figs.to_json(), **vs.to_json(comm=False),
                         "split_speedup": None if not self.step_time_s else float(figs.step_time_s / self.step_time_s)}
        return out

    def all_violations(self) -> tuple[Violation, ...]:
        """The memory limits of kinds the plan exceeds, then the caps, pins and forbids it breaks."""
        return tuple(kind_memory_violation(m.kind, m.limit_bytes, m.memory_bytes) for m in self.memory
                     if not m.ok) + tuple(self.violations)


def _answered_by(split: Split, solver: str | None, status: Status, time_limit_s: float, info: dict,
                 note: str) -> tuple[str | None, str]:
    """The solver that answered (``--split optimal`` outside the joint solver's scope is routed) and
    the report's note: the route, then the proof's note, a step not run, why the joint solver stopped
    or a heuristic's (``proportional``, ``search``, ``levels``, ``--solver dp``: no bound)."""
    joint_cut = (f"joint: {info['reason']}" if split is Split.OPTIMAL and solver is None
                 and not info.get("routed") and info.get("reason") else "")
    solver = info.get("routed") or solver
    cut = cut_note(solver or str(split), time_limit_s, info.get("cut"), info.get("explored") or 0)  # levels, search, dp
    heuristic = heuristic_note(solver or str(split)) if method(split, solver) in ("dp", "search") else ""
    return solver, joined(info.get("route"), proof_note(solver, status, time_limit_s, info) or info.get("not_run")
                          or joint_cut or cut or note or heuristic)


def split_run(network: Network, array: ArraySpec, space: Space, split: Split, grid: int = 16,
              free: FreeAlphas = FreeAlphas.UNLIKE, time_limit_s: float = 10.0, memory_GiB: Fraction | None = None,
              weight_copies: int = 0, progress=None, grid_only: bool = False, solver: str | None = None,
              objective: Objective = Objective.TIME, constraints: Constraints | None = None,
              started: float | None = None) -> SplitReport:
    """One ``explore split`` run on any mix of kinds (module docstring). ``progress(step, done=None,
    total=None)`` names each step as it starts (and counts the search's evaluations). ``solver``
    (``explore --split optimal --solver``): brute, exact or cpsat prove the optimum over the same
    declared space with the uneven form of that solver (small instances), dp runs the level DP
    (no proof; with ``proportional`` it chooses the types at the proportional alphas); None: the
    joint solver (optimal), the even DP's types (the other splits).
    ``objective`` and ``constraints`` (pins, forbids, caps; its memory is ``memory_GiB``, None: each
    kind's own) are the even split's, read on split plans (``core.split_rules``). ``time_limit_s``
    counts from ``started`` (a ``time.perf_counter()`` value; ``explore`` passes its process's
    start) or else from the call: the set-up, the search and the solver share it (``check.Clock``)."""
    import time

    say = progress or (lambda *a, **k: None)
    t0 = time.perf_counter()
    clock = Clock(t0 if started is None else started, time_limit_s)
    constraints, rules = _run_rules(array, objective, constraints, memory_GiB, weight_copies)
    aspace = _declared_space(array, split, grid, free, grid_only, solver, rules)
    say("split: the equal-split DP plans (partition types)")
    typed = Problem(network, array, space, objective, replace(constraints, caps=()))
    types = _dp_plan(typed)
    if types is None:  # the pins and forbids alone leave some layer no type: nothing to split
        return _conflict_report(network, array, space, split, grid, free, typed, time.perf_counter() - t0, constraints)
    baselines = _baselines(Problem(network, array, space, Objective.TIME, _baseline_rules(constraints)), say)
    compared = [(name, dict(baselines)[name].step_time_s) for name in COMPARED]
    equal = Plan.even(types)
    one_point = split in (Split.PROPORTIONAL, Split.SEARCH) and not aspace.free_classes()
    heuristic_equal = (split is Split.EQUAL and solver in (None, "dp")) or one_point  # the even DP's plan itself
    status = Status.LEVEL_OPTIMAL if heuristic_equal else Status.FEASIBLE
    note = ("no free class of groups (every split is between identical subtrees): the declared space is the equal "
            "split alone, so this is the equal-split plan" if one_point else "")
    if heuristic_equal:
        plan, bound, equal_best, solver_wall, claimed, info = equal, None, None, None, None, {}
    else:
        plan, found, bound, equal_best, solver_wall, claimed, info = _split_plan(
            network, array, space, split, aspace, types, clock, say, _free_hint(array, grid, free), solver, rules,
            _even_seed(network, array, space, split, aspace, solver, rules, clock, say))
        status = status if found is None else found
        solver, note = _answered_by(split, solver, status, time_limit_s, info, note)
    base = dict(_report_base(network, array, space, objective, constraints, aspace, free),
                solver=method(split, solver), compared=tuple(compared), baselines=baselines, solver_wall_s=solver_wall,
                bound_method=info.get("proved_by"))
    if plan is None:
        return _no_plan_report(network, array, space, split, grid, aspace, solver, rules, status, bound, info,
                               time_limit_s, clock, t0, base)
    ev = _evaluation(network, array, plan, weight_copies, info, say)
    return _plan_report(network, array, space, split, grid, solver, rules, ev, plan, status, claimed,
                        None if heuristic_equal else bound, bound if objective is Objective.TIME else None,
                        equal_best, memory_GiB, note, time.perf_counter() - t0, base)


def _evaluation(network: Network, array: ArraySpec, plan: Plan, weight_copies: int, info: dict, say):
    """The plan's ``evaluate_split``: the search's own (``info["evaluation"]``, ``Scorer.evaluation_of``)
    where it made it (the same plan is not scored again), else made here."""
    ev = info.pop("evaluation", None)
    if ev is None:
        say("split: scoring the plan")
        ev = evaluate_split(network, array, plan, weight_copies)
    return ev


def _plan_report(network, array, space, split: Split, grid: int, solver: str | None, rules: SplitRules, ev,
                 plan: Plan, status: Status, claimed, bound, time_bound, equal_best, memory_GiB, note: str,
                 wall_s: float, base: dict) -> SplitReport:
    """``split_run``'s report of a plan, re-scored (``ev``: ``evaluate_split``'s): a plan with a
    proven ``bound`` that breaks a rule is the evaluator contradicting the solver."""
    value = _rescored(rules, ev, claimed, solver)
    g0, g1, idle = ev.top_groups()
    memory, broken = kind_memory(array, ev.leaf_memory_bytes, memory_GiB), tuple(_broken(rules, ev, array, plan))
    if bound is not None and (broken or not all(m.ok for m in memory)):  # every proving route keeps every rule
        raise EvaluatorMismatch(f"{method(split, solver)}: its plan with a proven bound breaks "
                                + "; ".join(v.constraint for v in rules.violations(ev, array, plan)))
    report = SplitReport(network.name, array.name, space, split, grid, status, plan, ev.step_time_s, (g0, g1), idle,
                         wall_s=wall_s, bound_s=time_bound, equal_best_s=equal_best, memory=memory,
                         note=note, objective_value=value, objective_bound=bound, violations=broken, **base)
    return replace(report, figures=PlanFigures.of_split(ev, report.all_violations()),
                   level_cost_elements=tuple(ev.level_cost))


def _no_plan_report(network, array, space, split: Split, grid: int, aspace, solver: str | None, rules: SplitRules,
                    status: Status, bound, info: dict, time_limit_s: float, clock: Clock, t0: float,
                    base: dict) -> SplitReport:
    """``split_run``'s report of a run with no plan: why (the conflict of a proven infeasible run,
    its suggestions searched in what ``clock`` leaves of the run's limit), the note and the bound it
    proved; its wall time from ``t0`` (the call's start) includes that search."""
    import time

    why = info.get("explanation") or (_infeasible_explanation(
        network, array, space, _searched(array, split, aspace, solver), rules,
        SUGGEST_S if clock.limit is None else clock.for_last_step(), clock.limit)
        if status is Status.INFEASIBLE and split is not Split.EQUAL else None)
    return SplitReport(network.name, array.name, space, split, grid, status, None, None, None, None,
                       wall_s=time.perf_counter() - t0, explanation=why, **base,
                       note=joined(info.get("route"), no_plan_note(method(split, solver), status, time_limit_s, info)
                                    + no_suggestion(network, rules, status, why)
                                    + (wider_space_note(aspace, status) if split is Split.OPTIMAL else "")),
                       bound_s=bound if rules.objective is Objective.TIME else None, objective_bound=bound)


def _run_rules(array: ArraySpec, objective: Objective, constraints: Constraints | None, memory_GiB: Fraction | None,
               weight_copies: int) -> tuple[Constraints, SplitRules]:
    """The run's constraints (``memory_GiB``: one limit for every kind, given by the caller) and its split rules."""
    constraints = replace(constraints or Constraints(), weight_copies=weight_copies)
    if memory_GiB is not None and not constraints.memory_set:
        constraints = replace(constraints, memory_bytes=Fraction(memory_GiB) * 2**30, memory_set=True,
                              memory_origin=given_as("--memory"))
    limits = leaf_memory_limits(array, None if memory_GiB is None else memory_GiB * 2**30)
    return constraints, SplitRules(objective, constraints, limits)


def _report_base(network: Network, array: ArraySpec, space: Space, objective: Objective, c: Constraints,
                 aspace, free: FreeAlphas) -> dict:
    """The fields of a split report that do not depend on its plan: the header and the rules."""
    warnings = tuple(w for w in (batch_warning(network.batch, array.accelerators),) if w)
    return dict(layer_names=tuple(L.name for L in network.layers), alpha_space=aspace,
                class_labels=class_labels(array, aspace), free=free, batch=network.batch,
                weight_copies=c.weight_copies, warnings=warnings, objective=objective,
                rules=tuple(c.side_names()[: len(c.pins) + len(c.forbids) + len(c.caps)]),
                inputs=split_inputs(network, array, space, objective, c, warnings))


def split_inputs(network: Network, array: ArraySpec, space: Space, objective: Objective, constraints: Constraints,
                 warnings: tuple[str, ...]) -> Inputs:
    """explore's header for a split run: its constraints' memory_bytes is the limit given for
    every kind (--memory, a constraints file), None when each kind keeps its own (``memory``)."""
    c = constraints if constraints.memory_set else replace(constraints, memory_bytes=None)
    return Inputs.make(network, array, space, objective, c, warnings)


def _rescored(rules: SplitRules, ev, claimed: Fraction | None, solver: str | None) -> Fraction:
    """The evaluator's value of the plan; EvaluatorMismatch where the solver claimed another."""
    value = rules.value(ev)
    if claimed is not None and claimed != value:
        what = "step time" if rules.objective is Objective.TIME else "traffic"
        raise EvaluatorMismatch(f"{solver or 'joint'}: {what} {claimed} does not re-score to {value}")
    return value


def _declared_space(array: ArraySpec, split: Split, grid: int, free: FreeAlphas, grid_only: bool, solver: str | None,
                    rules: SplitRules) -> AlphaSpace:
    """The alpha space a split run searches, after refusing what does not fit the split (one line each)."""
    check_split_solver(split, solver)
    check_array(array)
    aspace = alpha_space(array, alpha_grid(grid), free, proportional=not grid_only)
    searched = split is Split.SEARCH or (split is Split.OPTIMAL and solver is None)  # the joint solver's starts
    if searched and len(aspace.free_classes()) > MAX_FREE_CLASSES:
        why = "one is searched at a time" if split is Split.SEARCH else \
            f"the joint solver starts from {given_as('--split')} search's plans, which search one at a time"
        raise SpecError("--split", f"{split}: array {array.name!r} has {len(aspace.free_classes())} free classes of groups, "
                        f"more than {MAX_FREE_CLASSES} ({why}); use {given_as('--split')} proportional or equal")
    return aspace


def method(split: Split, solver: str | None) -> str:
    """What chooses a split's plan: the --solver given, else the split's own (the even DP's types for
    equal and proportional, the level DP for levels, the alpha search, the joint solver)."""
    if solver:
        return solver
    return {Split.EQUAL: "dp", Split.PROPORTIONAL: "dp", Split.LEVELS: "dp", Split.SEARCH: "search",
            Split.OPTIMAL: "joint"}[split]


def rule_names(rules: SplitRules) -> tuple[str, ...]:
    """The side rules a split run keeps to, by name: pins, forbids, caps, then the memory limit
    (the one given for every kind, or each kind's own)."""
    c = rules.constraints
    names = tuple(p.name for p in c.pins) + tuple(f.name for f in c.forbids) + tuple(x.name for x in c.caps)
    if rules.leaf_memory_bytes is not None:
        names += (c.memory_name or "memory per accelerator (each kind's, array memory_GiB)",)
    return tuple(c.with_sources(names))


SUGGEST_S = 30.0  # seconds the smallest-feasible-limit search of an infeasible run may take without a time limit


def _infeasible_explanation(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, rules: SplitRules,
                            suggest_s: float, run_s: float | None = None) -> Explanation:
    """A proven infeasible run's ``proven_conflict`` with, as the even split's, the smallest feasible
    value of each cap or memory limit that can take part in the conflict and alone would admit a
    plan (the others kept; ``solvers.uneven_least``, ``core.constraints.limit_suggestion``), None
    where none is proven; its search takes ``suggest_s`` (what the run's limit ``run_s`` left it)."""
    from ..core.constraints import limit_suggestion
    from ..solvers.uneven_least import gave_up_text, least_limits

    names = rule_names(rules)
    c = rules.constraints
    try:
        least = least_limits(network, array, space, aspace, rules, suggest_s)
    except Refused:
        least = []
    limits = names[len(c.pins) + len(c.forbids):]  # the caps, then the memory limit: least_limits' order
    alone = [name for name, x in zip(limits, least) if x.alone][:1]  # a conflict by itself (a minimal one)
    differ = len(set(rules.leaf_memory_bytes or ())) > 1  # the kinds' own limits, unequal (no --memory)
    text = "; or ".join(limit_suggestion(x.level, x.need_bytes, differ, None if x.level is None else c.cap_at(x.level)) for x in least if x.need_bytes is not None)
    why = Explanation(tuple(alone), text or None) if alone else replace(proven_conflict(names), suggestion=text or None)
    return replace(why, note=None if text else gave_up_text(least, suggest_s, run_s))


def proven_conflict(names: tuple[str, ...]) -> Explanation:
    """Why a proving solver found no plan, as explore's ``conflict``: a run under one rule alone
    conflicts with that rule (without rules every layer has a type and every alpha a plan);
    under several, which of them conflict is not named (null). ``names``: ``rule_names``."""
    return Explanation(names if len(names) == 1 else None, None)


def _conflict_report(network, array, space, split, grid, free, typed: Problem, wall_s: float,
                     constraints: Constraints) -> SplitReport:
    """No types keep to the pins and forbids: infeasible, naming the conflicting rules as the even split does."""
    from ..solvers.cpsat import explain_infeasible

    c = typed.constraints
    why = explain_infeasible(typed)
    conflict = c.with_sources(why.get("conflict") or c.side_names())
    more = (" (the other constraints conflict among themselves too: relaxing these alone is not enough)"
            if why.get("more_conflicts") else "")
    aspace = alpha_space(array, alpha_grid(grid), free)  # its labels only
    return SplitReport(network.name, array.name, space, split, grid, Status.INFEASIBLE, None, None, None, None,
                       wall_s=wall_s, note="these conflict: " + "; ".join(conflict) + more, compared=(),
                       explanation=Explanation(tuple(conflict), why.get("suggestion")),
                       layer_names=tuple(L.name for L in network.layers), alpha_space=aspace,
                       class_labels=class_labels(array, aspace), free=free, batch=network.batch,
                       weight_copies=typed.constraints.weight_copies, objective=typed.objective,
                       rules=tuple(c.side_names()[: len(c.pins) + len(c.forbids) + len(c.caps)]),
                       inputs=split_inputs(network, array, space, typed.objective, constraints, ()))


def _even_seed(network, array, space, split: Split, aspace, solver: str | None, rules: SplitRules, clock, say) -> tuple:
    """The even split's optimum (``split_solve.even_optimum``) where ``--split optimal`` runs a proving
    route (the joint solver, brute, exact, cpsat): a seed of each, so that none returns a plan worse
    than the even split's best; () elsewhere (the heuristics; proportional's space lacks 1/2)."""
    if split is not Split.OPTIMAL or solver == "dp":
        return ()
    say("split: the even split's optimum (exact, a seed)")
    return even_optimum(network, array, space, aspace, rules, clock)


def _split_plan(network, array, space, split, aspace, types, clock, say, hint, solver, rules, even: tuple = ()):
    """The plan of a split that is not the equal one: (plan, status or None, bound, equal_best,
    solver wall, the solver's own value of its plan, ``proof_info`` of a proving solver or {}). ``levels`` is ``optimal --solver dp``: the
    same run, the same status. The solver gets what ``clock`` (the run's ``--time-limit``) leaves.
    ``even``: the even split's optimum (``_even_seed``), a seed of the proving routes."""
    if split is Split.LEVELS:
        solver = "dp"
    if split is Split.EQUAL:  # exact, cpsat, brute, pruned: the even split's own solver (alpha 1/2 everywhere)
        say(f"split: equal ({solver}, the even split's solver)")
        return even_solve(network, array, space, solver, clock, rules)
    if solver is not None:  # optimal or proportional (brute, exact, cpsat, dp), levels (dp)
        alphas = _searched(array, split, aspace, solver)
        if solver == "dp" and (late := clock.no_time_for("dp")) is not None:
            return _dp_not_run(seed_plans(network, array, space, alphas, types, rules),
                               "levels" if split is Split.LEVELS else "dp", late)
        say(f"split: {split} ({solver}, uneven form)")
        plan, status, bound, wall, claimed, info = solve_by(solver, network, array, space, alphas, clock.for_last_step(), rules,
                                                            split is Split.PROPORTIONAL,
                                                            seed_plans(network, array, space, alphas, types, rules,
                                                                       clock.deadline(), even))
        return plan, status, bound, None, wall, claimed, info
    if split is Split.OPTIMAL:
        return _optimal(network, array, space, aspace, Plan.even(types), clock, say, hint, rules, even)
    if split is Split.SEARCH:  # until ``solve_end`` (the report follows): its best plan so far, ``info["cut"]``
        from ..solvers.uneven import search_level_alphas  # (with numpy: not part of every split's start-up)

        say("split: scoring the starting points")
        start, scored = scored_start(network, array, types, aspace, rules, clock.deadline())
        sol = search_level_alphas(network, array, start, aspace, progress=_prefixed(say), rules=rules,
                                  deadline=clock.deadline(), start_scored=scored)
        return sol.plan, None, None, None, None, None, {"cut": sol.info.get("cut"), "explored": sol.explored,
                                                        "evaluation": sol.info.get("evaluation")}
    return proportional_plan(network, array, types), None, None, None, None, None, {}


def _dp_not_run(seeds: SeedPlans, name: str, late: str):
    """The level DP (``--split levels``, ``--solver dp``) not started with the limit spent before it
    (``late``, ``Clock.no_time_for``): of the seeds built at once (``SeedPlans.cheap``: the equal-split
    plan, else the proportional one) the first in the declared space (status feasible, no proof), or
    no plan (unknown); ``info["not_run"]`` says so. (Its ``MIN_LEFT_SHARE`` slice would have been
    spent in the even DP and the block moves.)"""
    found = next(((which, p) for which, p in seeds.cheap() if seeds.aspace.contains(p)), None)
    if found is None:
        return None, Status.UNKNOWN, None, None, None, None, {"reason": late}
    return found[1], Status.FEASIBLE, None, None, None, None, {"not_run": f"{name}: {late}; {found[0]} plan (no proof)"}


def _searched(array: ArraySpec, split: Split, aspace: AlphaSpace, solver: str | None) -> AlphaSpace:
    """The alphas a --solver chooses from: the proportional split's alone for ``proportional``."""
    return proportional_space(array, aspace) if split is Split.PROPORTIONAL and solver is not None else aspace


def proportional_space(array: ArraySpec, aspace: AlphaSpace) -> AlphaSpace:
    """The proportional split as an alpha space: each free class's proportional ratio alone (the
    others 1/2), so that the level DP (``--split proportional --solver dp``) chooses the types only."""
    return alpha_space(array, (), aspace.free, proportional=True)

def _broken(rules: SplitRules, ev, array: ArraySpec, plan: Plan) -> list:
    """Caps, pins and forbids the plan breaks (memory is reported per kind, ``kind_memory``)."""
    return replace(rules, leaf_memory_bytes=None).violations(ev, array, plan) if rules.side_constrained else []


def _baseline_rules(constraints: Constraints) -> Constraints:
    """The rules the baselines are checked against: the caps, pins and forbids, and a memory
    limit given for every kind (each kind's own limit is checked on the split plan only)."""
    return constraints if constraints.memory_set else replace(constraints, memory_bytes=None)


def _baselines(problem: Problem, say) -> tuple[tuple[str, PlanFigures], ...]:
    """The equal-split baselines' figures, as explore's: data parallelism, model parallelism and
    the trick in the problem's space, and HyPar's time-optimal plan (hypar-space DP); each checked
    against the problem's caps and pins (memory: each kind's, on the split plan only)."""
    network, array = problem.network, problem.array
    hypar = _dp_plan(Problem(network, array, Space.HYPAR, Objective.TIME))
    say("split: scoring the equal-split plans")
    out = [(name, plan_figures(problem, baseline_plan(problem, name))[1]) for name in BASELINES]
    out.append(("hypar", plan_figures(replace(problem, space=Space.HYPAR), hypar)[1]))
    return tuple(out)


def _prefixed(say):
    return lambda step, done, total: say(f"split: {step}", done, total)


def _dp_plan(problem: Problem):
    """The DP's equal-split plan (its types). The DP takes every graph (wide levels by CP-SAT); it
    refuses only a wide level whose costs exceed CP-SAT's int64 range, in one line saying what
    ``explore split`` can do instead."""
    try:
        return get_solver("dp")(problem, SolveOptions()).plan
    except InstanceTooLarge as err:
        why = refusal_reason(err)
        raise InstanceTooLarge(f"{why}; explore split takes its partition types from the hierarchical DP, so it cannot "
                               f"split this graph in space {problem.space}: a {given_as('--space')} with fewer types (hypar: I and II) "
                               "may fit") from None


def _free_hint(array: ArraySpec, grid: int, free: FreeAlphas) -> str:
    """Why --split optimal may refuse because of --free all: that space frees more than the top split
    ('' when --free unlike's space frees more too, or --free is unlike)."""
    if free is not FreeAlphas.ALL or any(h > 0 for h, _ in alpha_space(array, alpha_grid(grid), FreeAlphas.UNLIKE).free_classes()):
        return ""
    f = given_as("--free")
    return f" ({f} all frees every class of groups below the top split too; {f} unlike frees the top split alone here)"


def _optimal(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, equal: Plan,
             clock: Clock, say=lambda *a, **k: None, free_hint: str = "", rules: SplitRules = TIME_ONLY,
             even: tuple[Plan, ...] = ()):
    """``--split optimal``: the joint solver under ``rules`` (``solvers.uneven_constrained.joint_under``,
    the route of ``--solver exact`` under caps or memory) from the even split's optimum (``even``),
    the equal-split and the search plans, its answer never worse than them and the seeds (``SeedPlans.floor``)
    (the search only while ``clock`` has time left, and until ``solve_end``), with what the steps
    before it left of the time limit; outside its scope or its objective (the step time:
    ``joint_refusal``), exact, cpsat or brute (``_routed``). (plan or None, status, bound, best
    equal-split step time, wall, the solver's own value of the plan, ``proof_info``)."""
    if joint_refusal(rules.objective):  # the traffic objective: no search (it lowers the step time), routed at once
        return _routed(network, array, space, aspace, equal, clock, say, rules, joint_refusal(rules.objective),
                       even=even)
    late = clock.no_time_for("joint")  # not started with nothing left (nor its modules imported: numpy's alone 0.07 s)
    if late is not None:
        return equal, Status.FEASIBLE, None, None, None, None, {"not_run": f"joint: {late}; the equal-split plan (no proof)"}
    from ..solvers.uneven import search_level_alphas
    from ..solvers.uneven_constrained import joint_under
    from ..solvers.uneven_joint import check_scope

    say("split: optimal (search, then the joint solver)")
    starts = (*even, equal)
    try:
        check_scope(network, array, aspace)  # outside it: routed before the search (whose plans seed the joint solver alone)
        if clock.no_time_for("search") is None:
            start, scored = scored_start(network, array, equal.plan, aspace, deadline=clock.deadline())
            starts += (search_level_alphas(network, array, start, aspace, progress=_prefixed(say),
                                           deadline=clock.deadline(), start_scored=scored).plan,)
        left = clock.for_last_step()  # (the report follows)
        say(f"split: optimal (the joint solver, up to {left:.3g} s)")
        sol = seed_plans(network, array, space, aspace, equal, rules, clock.deadline(), even).floor(
            joint_under(network, array, space, aspace, left, rules, starts=starts, even=even), starts[len(even) + 1:])
        # (the seeds hold the even optimum and the equal split: only the search's plan is more; ``even``: not solved again)
    except Refused as err:  # outside its scope: exact, cpsat or brute, the first that takes it
        hint = free_hint if "frees the top split alone" in str(err) else ""
        return _routed(network, array, space, aspace, equal, clock, say, rules, f"{err}{hint}", hint, even)
    return sol.plan, sol.status, sol.split_bound, sol.equal_best_s, sol.wall_s, sol.split_value, proof_info("joint", sol)


def _routed(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, equal: Plan, clock: Clock, say,
            rules: SplitRules, why: str, hint: str = "", even: tuple[Plan, ...] = ()):
    """``routed_optimal``'s answer where the joint solver refused (``why``); SpecError naming
    ``--split`` (every refusal, and what takes the instance instead) where no solver takes it."""
    say(f"split: optimal ({why}: exact, cpsat, then brute, the first that takes it)")
    try:
        return routed_optimal(network, array, space, aspace, equal.plan, clock, rules, why, even)
    except Refused as every:
        split, solver, free = (given_as(o) for o in ("--split", "--solver", "--free"))
        raise SpecError("--split", f"optimal: {every}; use {split} search or {solver} dp (the level DP, no "
                        "proof)" + (f", or {free} unlike" if hint else "")) from None


SPLIT_SOLVERS = (*PROVING_SOLVERS, "dp")  # every solver with an uneven form (--split ... --solver)
EVEN_ONLY_SOLVERS = ("pruned",)  # registered solvers without an uneven form (with --split: equal only)
DP_SPLITS = (Split.EQUAL, Split.PROPORTIONAL, Split.OPTIMAL, Split.LEVELS)  # the splits --solver dp takes
PROVING_SPLITS = (Split.OPTIMAL, Split.PROPORTIONAL)  # the splits brute, exact and cpsat take (and equal: the even ones)


def solver_splits() -> str:
    """Which splits take which --solver, naming the options as the running front end does."""
    split, solver = given_as("--split"), given_as("--solver")
    return (f"{split} optimal and proportional take {solver} brute, exact, cpsat or dp (the first three: their "
            f"uneven forms, proofs on small instances; dp: the level DP, no proof); {split} equal takes every "
            f"solver (the even split's own); {split} levels takes {solver} dp")


def check_split_solver(split: Split, solver: str | None) -> None:
    """SpecError naming --solver unless it fits the split: brute, exact or cpsat with optimal (types
    and alphas) or proportional (the types at the proportional alphas, ``proportional_space``); dp
    (the level DP) with proportional, optimal and levels; every even solver with equal (the even
    split itself, ``even_solve``)."""
    if solver is None:
        return
    if split is Split.EQUAL and solver in (*SPLIT_SOLVERS, *EVEN_ONLY_SOLVERS):
        return
    if (solver == "dp" and split in DP_SPLITS) or (solver in PROVING_SOLVERS and split in PROVING_SPLITS):
        return
    if solver in EVEN_ONLY_SOLVERS:
        raise SpecError("--solver", f"{solver}: no uneven form (it solves the even split only); {solver_splits()}")
    if solver not in SPLIT_SOLVERS:
        raise SpecError("--solver", f"unknown solver {solver!r} (choose from {', '.join(SPLIT_SOLVERS)})")
    split_, solver_ = given_as("--split"), given_as("--solver")
    raise SpecError("--solver", f"{solver}: not with {split_} {split}; {solver_splits()} ({split_} optimal without "
                                f"{solver_}: the joint solver)")


def _alpha(a: Fraction) -> str:
    """An alpha: the exact fraction when short (15/56), else 6 significant digits (the JSON keeps it exact)."""
    return str(a) if len(str(a)) <= 15 else f"~{safe_float(a):.6g}"


def _times(x: Fraction) -> str:
    """A ratio: x1.234, or 4 significant digits when very large or very small."""
    v = safe_float(x)
    return f"x{v:.3f}" if 1e-3 <= v < 1e6 else f"x{v:.4g}"


def _alphas_text(d: dict[Fraction, list[str]]) -> str:
    """A level's alphas and their layers; the largest group as 'every layer but fc' where that is under half as long."""
    most = max(d, key=lambda a: len(d[a]))
    rest = [n for a, names in d.items() if a != most for n in names]
    if not rest:
        return f"{_alpha(most)} (every layer)"
    but = "every layer but " + (", ".join(rest) if len(rest) <= 3 else f"the {len(rest)} listed")
    return "; ".join(f"{_alpha(a)}: {but if a == most and 2 * len(but) < len(', '.join(ns)) else ', '.join(ns)}"
                     for a, ns in d.items())


def keepers(split: Split) -> str:
    """The runs that keep to caps, pins and memory, for a plan of ``split`` that breaks one: with
    ``proportional`` its proving solvers too (the same alphas, the types chosen under the rules)."""
    which = "proportional (its alphas) or optimal" if split is Split.PROPORTIONAL else "optimal"
    return f"{given_as('--split')} {which} {given_as('--solver')} brute, exact or cpsat"


def _memory_lines(r: SplitReport) -> list[str]:
    wc = f", weight copies {r.weight_copies}" if r.weight_copies else ""
    lines = [f"memory per accelerator (the most loaded of each kind{wc}):"]
    for m in r.memory:
        verdict = "fits" if m.ok else f"OVER by {memory_text(m.memory_bytes - m.limit_bytes)}"
        lines.append(f"  {m.kind:<8} x{m.accelerators:<5} {memory_text(m.memory_bytes):>12} of {memory_text(m.limit_bytes)}  {verdict}")
    over = [m for m in r.memory if not m.ok]
    if over:
        lines.append("PLAN BREAKS: " + "; ".join(excess_text(kind_memory_violation(m.kind, m.limit_bytes, m.memory_bytes))
                                                 for m in over)
                     + f" ({keepers(r.split)} keeps to each kind's memory)")
    return lines


def _value_lines(r: SplitReport) -> list[str]:
    """A split plan's traffic (under that objective), step time (each with its proven bound and gap)
    and energy (where the array models it: the evaluator's, as the even report's energy column)."""
    lines = []
    if r.objective is Objective.TRAFFIC:
        lines.append(f"traffic {exact_count(r.objective_value)} elements (sum_h 2^h c_h, c_h the level's busiest side)"
                     + ("" if r.objective_bound is None else f"; proven bound {exact_count(r.objective_bound)}, "
                                                             f"gap {safe_float(r.gap) * 100:.3f}%"))
    lines.append(f"step time {fmt_seconds(r.step_time_s)} (the slowest accelerator)"
                 + ("" if r.bound_s is None else f"; proven bound {fmt_seconds(r.bound_s)}, gap {safe_float(r.gap) * 100:.3f}%"))
    if r.figures is not None and r.figures.energy_J is not None:
        lines.append(f"energy {fmt_joules(r.figures.energy_J)}")
    return lines


def render_split(r: SplitReport) -> str:
    grid = (f" (alpha grid 1/{r.grid}{' only' if r.grid_only else ' + proportional'}, free alphas {r.free})"
            if r.uses_grid else "")
    objective = "" if r.objective is Objective.TIME else f", objective {r.objective}"
    broken = "" if r.plan is None or (not r.violations and r.memory_ok) else f" ({BROKEN_PLAN_NOTE})"
    by = f" by {r.solver}" if r.solver else ""
    if r.solver == "cpsat" and (r.bound_method or "").startswith("exact:"):  # the exact path ran first and proved it
        by += f" (proved by {r.bound_method})"
    lines = [f"{r.network} on {r.array}: split {r.split}{grid}, space {r.space}{objective}, batch {r.batch}, "
             f"{r.status}{by}{broken}"]
    lines += [f"warning: {w}" for w in r.warnings]
    memory = r.inputs is not None and r.inputs.constraints.memory_bytes is not None  # given for every kind
    if r.rules or memory:
        lines.append("constraints: " + "; ".join(r.rules + ((memory_phrase(r.inputs.constraints),) if memory else ())))
    if r.note:
        lines.append(f"note: {r.note}")
    if r.plan is None:
        b = r.objective_bound
        bound = [] if b is None else [f"proven bound {fmt_seconds(b) if r.objective is Objective.TIME else exact_count(b)} (no plan)"]
        return "\n".join(lines + bound + conflict_lines(r.explanation)) + "\n"
    lines += _value_lines(r)
    lines += [f"top-level groups: {fmt_seconds(r.group_times_s[0])} and {fmt_seconds(r.group_times_s[1])}; the faster idles {fmt_seconds(r.idle_s)}",
              "alpha (subgroup 0's share) per level:"]
    for h, classes in enumerate(r.class_alphas()):
        if all(d == classes[0][1] for _, d in classes):  # every group of the level alike
            lines.append(f"  level {h}: {_alphas_text(classes[0][1])}")
        else:
            for label, d in classes:
                lines.append(f"  level {h} [{label}]: {_alphas_text(d)}")
    if r.inputs is not None and r.level_cost_elements:  # explore's grid: the layers named, c_h per level
        lines += ["types per level and layer (c_h: the level's busiest side):",
                  *render_plan_grid(r.inputs, r.plan, r.level_cost_elements)]
    else:
        lines.append("types per level: " + " | ".join(" ".join(t.value for t in row) for row in r.plan.types))
    lines += _memory_lines(r)
    if r.violations:
        lines.append("PLAN BREAKS: " + "; ".join(excess_text(v) for v in r.violations)
                     + f" ({keepers(r.split)} keeps to caps, pins and memory)")
    if r.equal_best_s is not None:
        lines.append(f"best equal-split plan (every alpha 1/2, types chosen for it): {fmt_seconds(r.equal_best_s)}, "
                     f"{_times(r.equal_best_s / r.step_time_s)}")
    lines.append("speedup over equal-split plans:")
    labels = {"all-I": "data parallelism", "trick": "the trick (conv I, fc II)", "hypar": "HyPar's plan (hypar DP, time)"}
    broken = {name: figs.violations for name, figs in r.baselines if figs.violations}
    for name, t in r.compared:
        mark = "" if name not in broken else "  BREAKS " + "; ".join(v.constraint for v in broken[name])
        lines.append(f"  {labels[name]:<32} {fmt_seconds(t):>12}  {_times(t / r.step_time_s)}{mark}")
    return "\n".join(lines) + "\n"
