"""The cross-checker behind ``explore check``: is the DP level-optimal, what is the joint
optimum, do the exact solvers agree, and how far is the DP from it?"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass, replace
from typing import Callable

from ..solvers import get_solver
from ..solvers.deadline import MIN_LEFT_SHARE, origin, solve_end
from ..solvers.dp import graph_level, too_wide, wide_levels
from ..core.comm import advance, zero_counts
from ..core.kinds import CHECK_SOLVERS, JOINT_SOLVERS, solve_limit
from ..core.names import given_as, time_limit_named
from ..core.plan import Plan
from ..core.solution import Solution, SolveOptions, Status, plan_solution

from ..core.constraints import Constraints, Pin
from ..core.errors import Refused, refusal_reason
from ..core.problem import Problem
from .results import (CellDiff, CheckReport, Explanation, Inputs, LevelCheck, Optimum, SolverReport, StepTerms,
                      exact_number, plan_figures)
from .run import EvaluatorMismatch, explain_deadline, rescore

# Of what is left, the share pruned takes when it runs in exact's place (the default solvers, a graph
# exact refuses: MobileNet-v2 at 1,024 accpar, measured in docs/commands.md, `explore check`), so that
# CP-SAT after it still runs
PRUNED_SHARE = 0.5


@dataclass(frozen=True)
class CheckOptions:
    solve: SolveOptions = SolveOptions()
    solvers: tuple[str, ...] = JOINT_SOLVERS
    level_brute_max_rows: int = 50_000  # per-level check by enumeration up to this many rows


def _solution_report(problem: Problem, sol: Solution, problems_found: list[str]) -> SolverReport:
    figs = None
    if sol.plan is not None:
        try:
            _, figs = rescore(problem, sol)
        except EvaluatorMismatch as err:
            problems_found.append(f"evaluator disagrees with {err}")
            _, figs = plan_figures(problem, sol.plan)
    info = sol.info
    return SolverReport(
        status=sol.status,
        wall_s=round(sol.wall_s, 6),
        objective=problem.real(sol.objective) if sol.plan is not None else None,
        bound=problem.real(sol.bound),
        gap=problem.gap(sol.objective, sol.bound),
        plan=sol.plan,
        figures=figs,
        cpsat_status=info.get("cpsat_status"),
        variables=info.get("variables"),
        reason=info.get("reason"),
        method=method_of(sol),
    )


def method_of(sol: Solution) -> str:
    """How a solver reached its answer: the exact solver names its route, the others are themselves."""
    if sol.solver == "exact":
        return f"exact:{sol.info.get('method', 'dp')}"
    return {"cpsat": "cpsat", "brute": "enumeration", "dp": "hierarchical-dp"}.get(sol.solver, sol.solver)


@dataclass(frozen=True)
class LevelResult:
    """A level's optimum given the other levels (units; None: not proven), how, and, where the time
    limit cut the proof short, the least level cost found, the bound and why."""
    value: int | None
    method: str
    found: int | None = None
    bound: int | None = None
    cut_short: str | None = None


def level_result(problem: Problem, plan_rows, h: int, options: CheckOptions, lookup=get_solver,
                 time_limit_s: float | None = None, skip: str | None = None, limit_name: str | None = None
                 ) -> LevelResult:
    """min c_h (units) with every other level pinned to plan_rows: by enumeration when small, else the
    exact DP over type vectors, else (where it refuses) the frontier elimination of one level
    (``dp.graph_level``, exact; on a graph it is the DP's own, on a chain not; under a time limit,
    ``time_limit_s`` given, it comes first: a given limit and the default alike), else, on a level
    too wide for that, CP-SAT within ``time_limit_s`` (from the DP's plan; cut short: not proven),
    or not at all where ``skip`` says why (``Clock.no_time_for``); ``limit_name``: the limit as the
    report names it (``Clock.named``)."""
    sub = _level_problem(problem, plan_rows, h)
    rows = 1
    for l in range(problem.num_layers):  # noqa: E741
        rows *= len(sub.allowed(h, l))
    if rows <= options.level_brute_max_rows:
        sol = lookup("brute")(sub, SolveOptions(max_plans=options.level_brute_max_rows))
        method = "enumeration"
    else:
        sol, method = None, "exact"
        narrow = too_wide(sub, h) is None
        if narrow and time_limit_s is not None:  # under a limit (given or the default) the elimination first:
            sol, method = _eliminated(sub, plan_rows, h), "elimination"  # ms, where exact took 5-20 s a level
        try:  # (ResNet-50 at 7-8 levels) the exact DP over type vectors (pins only: no caps or memory here)
            sol = sol or lookup("exact")(sub, SolveOptions())  # is an independent proof
        except Refused:
            pass
        if (sol is None or sol.status is not Status.OPTIMAL) and narrow:
            sol, method = _eliminated(sub, plan_rows, h), "elimination"
        if (sol is None or sol.status is not Status.OPTIMAL) and skip is not None:
            return LevelResult(None, "cpsat", cut_short=skip)
        if sol is None or sol.status is not Status.OPTIMAL:
            sol = lookup("cpsat")(sub, SolveOptions(time_limit_s=time_limit_s, workers=options.solve.workers,
                                                    seed=options.solve.seed, hint=Plan(tuple(plan_rows))))
            method = "cpsat"
        if sol.status is Status.INTERRUPTED:
            raise KeyboardInterrupt  # Ctrl-C: the CLI says which level it stopped
        if sol.status is not Status.OPTIMAL:
            if time_limit_s is None:
                raise RuntimeError(f"level {h}: {method} did not prove the level optimum ({sol.status})")
            if sol.plan is not None:
                rescore(sub, sol)
            why = (f"{method} did not prove the level optimum within its {time_limit_s:.2f} s of "
                   f"{limit_name or given_as('--time-limit')} ({sol.status.value})")
            return LevelResult(None, method, sol.objective if sol.plan is not None else None, sol.bound, why)
    rescore(sub, sol)  # the level optimum's plan, too, is re-scored by the evaluator
    return LevelResult(sol.objective, method)


def _level_problem(problem: Problem, plan_rows, h: int) -> Problem:
    """The problem with every level but h pinned to plan_rows and the objective c_h alone (the
    DP enforces pins and forbids only: its level optimum is over that relaxation)."""
    L = problem.num_layers
    pins = tuple(Pin(l, hh, plan_rows[hh][l]) for hh in range(problem.levels) if hh != h for l in range(L))  # noqa: E741
    constraints = Constraints(pins=problem.constraints.pins + pins, forbids=problem.constraints.forbids,
                              weight_copies=problem.constraints.weight_copies)
    weights = tuple(1 if hh == h else 0 for hh in range(problem.levels))
    return problem.with_constraints(constraints).with_weights(weights)


def _eliminated(sub: Problem, plan_rows, h: int) -> Solution:
    """Level h's optimum by the frontier elimination, given the counts of plan_rows' levels above it,
    as a plan (plan_rows with row h replaced) whose tables' score must equal the elimination's."""
    t0 = time.perf_counter()
    counts = zero_counts(sub.num_layers)
    for row in plan_rows[:h]:
        counts = advance(counts, row)
    row, cost = graph_level(sub, h, counts)
    rows = list(plan_rows)
    rows[h] = tuple(row)
    sol = plan_solution("elimination", sub, Plan(tuple(rows)), Status.OPTIMAL, time.perf_counter() - t0)
    if sol.objective != cost:
        raise AssertionError(f"level {h}: the elimination's c_h {cost} != the tables' {sol.objective}")
    return Solution(sol.solver, sol.status, sol.plan, sol.objective, sol.objective, sol.level_units, sol.wall_s, sol.info)


def check(
    problem: Problem,
    options: CheckOptions | None = None,
    progress: Callable[[str], None] | None = None,
    lookup: Callable[[str], Callable] = get_solver,
) -> CheckReport:
    """Run the cross-checks; ``lookup`` maps a solver name to its solve function."""
    options = options or CheckOptions()
    say = progress or (lambda msg: None)
    clock = Clock(origin(options.solve), check_limit(problem, options), options.solve.time_limit_s is not None)
    t0 = clock.t0
    options = replace(options, solve=replace(options.solve, started=None))  # each step: the time ``clock`` leaves it
    names = problem.network.layer_names
    to_elements = problem.tables.to_elements
    problems_found: list[str] = []  # every check appends here, in the order the checks run
    dsol, dp_report = _run_dp(problem, options, lookup, say, problems_found, clock)
    levels = _level_checks(problem, dsol, options, lookup, say, to_elements, problems_found, clock)
    wide_dp = dsol if dsol is not None and dsol.info.get("levels_by_cpsat") and not dsol.violations else None
    joint = _joint_solves(problem, options, lookup, say, problems_found, clock, wide_dp)
    verdict = _compare_joint(problem, joint.solutions, problems_found)
    best = _optimum(problem, dsol, verdict, names, problems_found)
    explanation = None
    if verdict.infeasible and not problems_found:
        explanation = _explain_infeasible(problem, options, joint.solutions, clock)
    return CheckReport(
        inputs=Inputs.of(problem),
        dp=dp_report,
        levels=tuple(levels),
        solvers=tuple(joint.reports),
        optimum=best,
        infeasible=tuple(verdict.infeasible),
        problems=tuple(problems_found),
        wall_s=round(time.perf_counter() - t0, 6),
        explanation=explanation,
        time_terms=StepTerms.of(problem),
    )


# Of the time left (``--time-limit``): the DP's (its levels too wide for its elimination go to
# CP-SAT), then the level checks' that need CP-SAT; the joint solvers take what is left, in turn
DP_SHARE = 0.25
LEVELS_SHARE = 0.5
CPSAT_IMPORT_S = 0.5  # OR-Tools' import (with pandas): 0.5-1.3 s measured; CP-SAT is not started with less left


def check_limit(problem: Problem, options: CheckOptions) -> float | None:
    """The whole check's limit: ``--time-limit``, else the default a solve keeps
    (``core.kinds.solve_limit``: ``SOLVE_TIME_LIMIT`` when one of the check's solvers is CP-SAT or
    pruned, or exact under caps or memory); None: no limit (exact and brute alone, uncoupled)."""
    from ..solvers.exact import coupled

    return solvers_limit(options.solvers, options.solve.time_limit_s, coupled(problem))


def solvers_limit(solvers, given: float | None, joint: bool) -> float | None:
    """``check_limit`` before a problem is built (the command line's time bar): ``given``, else the
    first default one of ``solvers`` keeps, the layers coupled (``joint``) or not."""
    return next((x for x in (solve_limit(n, given, joint) for n in solvers) if x is not None), given)


@dataclass(frozen=True)
class Clock:
    """The check's ``--time-limit`` (None: none; ``given`` False: the default, ``check_limit``) counted
    from ``t0`` (``SolveOptions.started``: ``explore``'s process start; else the check's): the DP, the
    level checks and the joint solvers share it, each step getting what the steps before it left (at
    least ``MIN_LEFT_SHARE`` of it)."""
    t0: float
    limit: float | None
    given: bool = True

    def named(self) -> str:
        """The limit as a report names it: '--time-limit 5 s', or 'the default limit of 60 s'."""
        return time_limit_named(self.limit, self.given)

    def left(self, share: float = 1.0) -> float | None:
        if self.limit is None:
            return None
        return max(share * (self.limit - (time.perf_counter() - self.t0)), MIN_LEFT_SHARE * self.limit)

    def for_last_step(self) -> float | None:
        """What is left for a run's last step, its report after it: ``left()`` less the margin
        ``solvers.deadline.solve_end`` keeps back (6% of the limit, at most 0.5 s)."""
        if self.limit is None:
            return None
        left = solve_end(self.t0, self.limit) - time.perf_counter()
        return max(left, MIN_LEFT_SHARE * self.limit)

    def deadline(self) -> float | None:
        """The ``time.perf_counter()`` value a run's last step stops by (``solvers.deadline.solve_end``:
        its report follows); None without a limit."""
        return None if self.limit is None else solve_end(self.t0, self.limit)

    def no_time_for(self, name: str, left: float | None = None) -> str | None:
        """Why solver ``name`` is not run (None: it runs): the limit is spent (brute runs: it refuses by
        size at once or stops at ``MIN_LEFT_SHARE``), or CP-SAT would start with less of it ``left``
        (default: all that is left) than OR-Tools' import takes."""
        if self.limit is None:
            return None
        spent = time.perf_counter() - self.t0
        if spent >= self.limit and name != "brute":  # (brute refuses by size at once, else stops at its 2%)
            return f"not run: {self.named()} was spent before it ({spent:.1f} s)"
        left = self.limit - spent if left is None else left
        if name == "cpsat" and "ortools.sat.python.cp_model" not in sys.modules and left < CPSAT_IMPORT_S:
            return (f"not run: {left:.2f} s of {self.named()} left for it, less than "
                    f"OR-Tools' import (about {CPSAT_IMPORT_S:g} s)")
        return None


@dataclass(frozen=True)
class _JointRuns:
    """The joint solvers' answers: solutions of those that ran, a report for every one (in order)."""
    solutions: dict[str, Solution]
    reports: list[tuple[str, SolverReport]]


@dataclass(frozen=True)
class _Verdict:
    """What the joint solvers agree on: who proved optimality, the optimum (units), who says infeasible."""
    proven: dict[str, Solution]
    optimum: int | None
    infeasible: list[str]


def _run_dp(problem: Problem, options: CheckOptions, lookup, say, problems_found: list[str], clock: Clock
            ) -> tuple[Solution | None, SolverReport]:
    """The hierarchical DP's solution (None if it refuses) and its report."""
    say("hierarchical DP")
    try:
        dsol = lookup("dp")(problem, replace(options.solve, time_limit_s=clock.left(DP_SHARE)))
        return dsol, _solution_report(problem, dsol, problems_found)
    except Refused as err:  # e.g. costs beyond CP-SAT's int64 range on a wide level: reported, the joint solvers still run
        return None, SolverReport(status=Status.REFUSED, reason=str(err))


def _level_checks(problem: Problem, dsol: Solution | None, options: CheckOptions, lookup, say, to_elements,
                  problems_found: list[str], clock: Clock) -> list[LevelCheck]:
    """Is the DP's plan level-optimal at each level, given its other levels? The levels too wide for
    the elimination (CP-SAT's) share ``LEVELS_SHARE`` of the time left, each what the others left."""
    levels: list[LevelCheck] = []
    if dsol is None or dsol.plan is None:
        return levels
    wide = set() if problem.network.is_chain else set(wide_levels(problem))
    until = None if clock.limit is None else time.perf_counter() + clock.left(LEVELS_SHARE)
    for h in range(problem.levels):
        say(f"level {h}: level-wise optimum given the DP's levels above")
        share = None
        if until is not None:
            share = max((until - time.perf_counter()) / max(1, len([w for w in wide if w >= h])),
                        MIN_LEFT_SHARE * clock.limit)
        res = level_result(problem, dsol.plan.types, h, options, lookup, share,
                           None if share is None or h not in wide else clock.no_time_for("cpsat", share),
                           None if clock.limit is None else clock.named())
        lv = LevelCheck(h, to_elements(dsol.level_units[h]), None if res.value is None else to_elements(res.value),
                        res.method, None if res.found is None else to_elements(res.found),
                        None if res.bound is None else to_elements(res.bound), res.cut_short)
        if lv.dp_is_level_optimal is False:
            problems_found.append(f"DP is not level-optimal at level {h}")
        levels.append(lv)
    return levels


def _joint_solves(problem: Problem, options: CheckOptions, lookup, say, problems_found: list[str],
                  clock: Clock, wide_dp: Solution | None = None) -> _JointRuns:
    """Run each joint solver in turn, each within what the steps before it left of the time limit
    (its import counted); one that refuses is reported with its reason. ``wide_dp``: the DP's plan
    on a graph too wide for its elimination (CP-SAT makes no DP hint of its own there), CP-SAT's
    hint where the exact solver gives none."""
    solutions: dict[str, Solution] = {}
    reports: list[tuple[str, SolverReport]] = []
    names = list(options.solvers)
    for name in names:
        say(f"joint optimum: {name}")
        skip = clock.no_time_for(name)
        if skip is not None:  # (the limit is the whole check's)
            reports.append((name, SolverReport(status=Status.UNKNOWN, reason=skip)))
            continue
        solve = lookup(name)  # (its import counts)
        opts = _with_exact_hint(name, options.solve, solutions.get("exact") or solutions.get("pruned") or wide_dp)
        if clock.limit is not None:
            opts = replace(opts, time_limit_s=clock.left(_share(name, names)))
        try:
            sol = solve(problem, opts)
        except Refused as err:
            instead = name == "exact" and pruned_instead(problem, options.solvers)
            if instead:
                names.insert(names.index("exact") + 1, "pruned")
            reports.append((name, SolverReport(status=Status.REFUSED, reason=in_check(err, names, instead))))
            continue
        if sol.status is Status.INTERRUPTED:
            raise KeyboardInterrupt  # Ctrl-C during a joint solve: the CLI says which
        solutions[name] = sol
        reports.append((name, _solution_report(problem, sol, problems_found)))
    return _JointRuns(solutions, reports)


def pruned_instead(problem: Problem, solvers: tuple[str, ...]) -> bool:
    """Whether ``pruned`` runs after ``exact`` refused: with the default solvers (``JOINT_SOLVERS``),
    on a graph without link caps (where exact's refusal names it: ``solvers.elimination.instead``)."""
    return tuple(solvers) == JOINT_SOLVERS and not problem.network.is_chain and not problem.constraints.caps


def in_check(err: Refused, names: list[str], pruned_next: bool = False) -> str:
    """A refusal as check's row gives it: that pruned runs next in its place, or what it names to
    run instead as check's ``--solvers`` (``--solver`` is explore's), unless every one it names runs."""
    reason = refusal_reason(err)
    if pruned_next:
        return f"{reason}; pruned runs in its place"
    rest = str(err)[len(reason):].removeprefix(f"; use {given_as('--solver')} ")
    named = [n for n in CHECK_SOLVERS if re.search(rf"\b{n}\b", rest)]
    return f"{reason}; add to {given_as('--solvers')}: {rest}" if any(n not in names for n in named) else reason


def _share(name: str, names: list[str]) -> float:
    """Of what is left, the share solver ``name`` takes: ``PRUNED_SHARE`` for pruned with CP-SAT after it."""
    return PRUNED_SHARE if name == "pruned" and "cpsat" in names[names.index(name) + 1:] else 1.0


def _with_exact_hint(name: str, opts: SolveOptions, hint: Solution | None) -> SolveOptions:
    """The exact solver's plan is CP-SAT's first solution (unless a hint is given or it has none)."""
    if name == "cpsat" and opts.hint is None and hint is not None and hint.plan is not None and hint.status is not Status.INFEASIBLE:
        return replace(opts, hint=hint.plan)
    return opts


def _compare_joint(problem: Problem, solutions: dict[str, Solution], problems_found: list[str]) -> _Verdict:
    """Do the joint solvers agree on the optimum, their bounds and feasibility?"""
    proven = {n: s for n, s in solutions.items() if s.status is Status.OPTIMAL}
    values = {s.objective for s in proven.values()}
    if len(values) > 1:
        problems_found.append("exact solvers disagree: " + ", ".join(
            f"{n}={exact_number(problem.real(s.objective))}" for n, s in proven.items()))
    optimum = min(values) if values else None
    for n, s in solutions.items():
        if optimum is not None and s.objective is not None and s.objective < optimum:
            problems_found.append(f"{n} found {s.objective} below the proven optimum {optimum}")
        if optimum is not None and s.bound is not None and s.bound > optimum:
            problems_found.append(f"{n} claims a bound {s.bound} above the proven optimum {optimum}")
    infeasible = [n for n, s in solutions.items() if s.status is Status.INFEASIBLE]
    if infeasible and any(s.plan is not None and s.status is not Status.INFEASIBLE for s in solutions.values()):
        problems_found.append(f"{', '.join(infeasible)} report infeasible but {', '.join(proven)} found a plan")
    return _Verdict(proven, optimum, infeasible)


def _optimum(problem: Problem, dsol: Solution | None, verdict: _Verdict, names: list[str],
             problems_found: list[str]) -> Optimum | None:
    """The proven optimum set against the DP's plan (None without both)."""
    optimum, proven = verdict.optimum, verdict.proven
    if optimum is None or dsol is None or dsol.plan is None:
        return None
    # (pruned runs before cpsat, which starts from its plan: the proof is pruned's)
    ref_name = next(n for n in ("exact", "brute", "pruned", "cpsat") if n in proven)
    ref = proven[ref_name]
    best = Optimum(
        objective=problem.real(optimum),
        proven_by=tuple(sorted(proven)),
        plan_from=ref_name,
        method=method_of(ref),
        methods=tuple((n, method_of(s)) for n, s in sorted(proven.items())),
        dp_objective=problem.real(dsol.objective),
        dp_satisfies_constraints=not dsol.violations,
        cells_differing=tuple(
            CellDiff(h, names[l], dsol.plan.at(h, l), ref.plan.at(h, l)) for h, l in dsol.plan.diff(ref.plan)  # noqa: E741
        ),
    )
    if dsol.objective < optimum and not dsol.violations:
        problems_found.append("the DP beats the proven optimum")
    return best


def _explain_infeasible(problem: Problem, options: CheckOptions, solutions: dict[str, Solution],
                        clock: Clock) -> Explanation:
    """Why no plan exists: the exact solver's own proof if it named one, else CP-SAT's explanation."""
    from ..solvers.cpsat import explain_infeasible

    named = [s.info for s in solutions.values() if s.info.get("conflict")]  # the exact solver's own proof
    spent = time.perf_counter() - clock.t0
    why = named[0] if named else explain_infeasible(problem, options.solve.seed, explain_deadline(options.solve, spent))
    if why.get("conflict"):  # where each rule came from, as explore names it
        why = {**why, "conflict": problem.constraints.with_sources(why["conflict"])}
    return Explanation.of(why)
