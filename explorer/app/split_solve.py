"""``--split optimal|proportional --solver``: the uneven form of that solver (``solve_by``); the
uneven ``cpsat`` under a cap or a memory limit runs the exact constrained path first, as the even
split's ``cpsat`` runs ``app.run.exact_first`` (docs/uneven.md, "CP-SAT after the exact path")."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from ..core.array import ArraySpec
from ..core.errors import Refused, refusal_reason
from ..core.names import given_as
from ..core.network import Network
from ..core.objective import Objective
from ..core.partition import Space
from ..core.plan import Plan
from ..core.problem import Problem
from ..core.solution import INTERRUPTED_WITH_PLAN, Solution, SolveOptions, Status
from ..core.split_rules import SplitRules
from ..core.uneven import AlphaSpace, proportional_plan
from ..solvers.deadline import MIN_LEFT_SHARE, past
from .run import EXACT_SHARE

PROVING_SOLVERS = ("brute", "exact", "cpsat")  # solvers with an uneven form that proves the optimum


def cpsat_after_exact(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, time_limit_s: float,
                      rules: SplitRules, seeds: "SeedPlans | None" = None) -> Solution:
    """CP-SAT's uneven form; under a cap or a memory limit (``SplitRules.couples_layers``) the exact
    constrained path runs first within ``EXACT_SHARE`` of the time limit: its proof (optimal or
    infeasible) is the answer, else CP-SAT gets the time left (the exact path's answer where CP-SAT
    refuses the instance as too large, its columns counted before any is built) and the answer is the better plan
    with the higher proven bound (optimal under the time objective when they meet: both bounds
    are proofs; under traffic only CP-SAT's own proof, which settles the ties too).
    ``info["proved_by"]`` names what proved the bound (``exact:<route>``, ``cpsat``). ``seeds``: as
    ``solve_by``'s, what the exact path answering alone falls back on (as under ``--solver exact``)."""
    from ..solvers.uneven_cpsat import cpsat_size_check, cpsat_uneven
    from ..solvers.uneven_constrained import constrained_uneven

    t0 = time.perf_counter()
    try:  # counted before anything is built: too large for CP-SAT, its model is never built
        cpsat_size_check(network, array, space, aspace, rules=rules)
    except Refused as err:  # the exact path alone, with the whole limit: its answer at any limit
        return _exact_alone(network, array, space, aspace, time_limit_s, rules, err, t0, seeds)
    pre = None
    if rules.couples_layers:
        try:
            pre = constrained_uneven(network, array, space, aspace, time_limit_s=time_limit_s * EXACT_SHARE, rules=rules,
                                     even=_even_in(seeds))
        except Refused:  # beyond the exact path's memory guard: CP-SAT alone (it refuses what it cannot take)
            pre = None
    if pre is not None and pre.status in (Status.OPTIMAL, Status.INFEASIBLE):
        return _tagged(pre, _exact_by(pre), pre, t0)
    left = max(time_limit_s - (time.perf_counter() - t0), MIN_LEFT_SHARE * time_limit_s)
    try:
        sol = cpsat_uneven(network, array, space, aspace, time_limit_s=left, rules=rules)
    except Refused as err:  # refused after its count (e.g. its model too large): the exact path's plan and bound
        if pre is None or pre.plan is None:
            raise
        return _cpsat_refused(pre, err, t0)
    if pre is None or pre.plan is None or sol.status in (Status.OPTIMAL, Status.INFEASIBLE):
        return _tagged(sol, "cpsat" if sol.split_bound is not None or sol.status is Status.INFEASIBLE else "", pre, t0)
    return _combined(sol, pre, rules.objective, t0)


def _exact_alone(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, time_limit_s: float,
                 rules: SplitRules, refusal: Refused, t0: float, seeds: "SeedPlans | None" = None) -> Solution:
    """CP-SAT refused the instance by its count, before anything was built (a graph: chains only; too
    many columns): the exact constrained path answers with the whole time limit and ``seeds``, whatever
    it finds (a proof, a plan with its bound, its best seed plan, or no plan), so the same instance gets
    the same answer as under ``--solver exact``, and the same kind at any limit; where the exact path
    refuses too (at once), CP-SAT's refusal (the answer's info: ``_cpsat_refused``)."""
    from ..solvers.uneven_constrained import constrained_uneven

    seeds, time_limit_s = _levels_first(seeds, network, array, aspace, time_limit_s, rules, constrained=True)
    try:
        pre = constrained_uneven(network, array, space, aspace, time_limit_s=time_limit_s, rules=rules, seeds=seeds,
                                 even=_even_in(seeds))
    except Refused:
        raise refusal from None
    return _cpsat_refused(pre, refusal, t0, alone=True)


def _cpsat_refused(pre: Solution, refusal: Refused, t0: float, alone: bool = False) -> Solution:
    """The exact constrained path's answer ``pre`` as CP-SAT's, CP-SAT having refused the instance
    (``refusal``; ``alone``: by its count, before anything was built, ``_exact_alone``): the reason
    says so, ``info["exact_reason"]`` keeps the exact path's own (why it ended, "" at the limit),
    and ``proved_by`` names the exact route where it proved a bound or that no plan exists."""
    proved = pre.split_bound is not None or pre.status is Status.INFEASIBLE
    info = dict(pre.info, reason=f"CP-SAT refused the instance ({refusal})", exact_reason=pre.info.get("reason") or "")
    if alone:
        info["exact_alone"] = True
    return _tagged(replace(pre, info=info), _exact_by(pre) if proved else "", pre, t0)


def _exact_by(pre: Solution) -> str:
    """What proved an exact path's bound, as ``info["proved_by"]``: ``exact:<route>``."""
    return f"exact:{pre.info.get('method', 'pareto-dp')}"


def _levels_first(seeds: "SeedPlans | None", network: Network, array: ArraySpec, aspace: AlphaSpace,
                  time_limit_s: float | None, rules: SplitRules, constrained: bool) -> tuple:
    """(the seeds, the time left for the run): ``seeds`` with the level DP's plan computed before an
    exact run that reads them when it stops (``SeedPlans.levels_first``), the time it took taken off
    ``time_limit_s``. Only for the Pareto DP (chains): the joint solver, tried first on the
    constrained path (``constrained``) where it takes the instance and ``rules``' objective, starts
    from the first seed alone and has its own: the solver says which route it takes (``runs_pareto_dp``)."""
    from ..solvers.uneven_constrained import runs_pareto_dp

    if seeds is None:
        return (), time_limit_s
    if time_limit_s is None or not runs_pareto_dp(network, array, aspace, rules, constrained):
        return seeds, time_limit_s
    t0 = time.perf_counter()
    seeds = seeds.levels_first(time_limit_s)
    return seeds, max(time_limit_s - (time.perf_counter() - t0), MIN_LEFT_SHARE * time_limit_s)


def _combined(sol: Solution, pre: Solution, objective: Objective, t0: float) -> Solution:
    """Neither proved alone: the better plan (CP-SAT's on a tie) and the higher bound; optimal when
    they meet under the time objective."""
    best = pre if sol.plan is None or pre.split_value < sol.split_value else sol
    bounds = [(b, by) for b, by in ((pre.split_bound, _exact_by(pre)),
                                    (sol.split_bound, "cpsat")) if b is not None]
    bound, by = max(bounds, key=lambda b: b[0]) if bounds else (None, "")
    met = objective is Objective.TIME and bound is not None and bound >= best.split_value
    stopped = sol.status is Status.INTERRUPTED  # Ctrl-C during CP-SAT: the better plan so far
    status = Status.OPTIMAL if met else Status.INTERRUPTED if stopped else Status.FEASIBLE
    value = best.split_value
    if objective is Objective.TRAFFIC:
        info = dict(best.info, value=value, bound=bound)
        out = replace(best, status=status, info=info)
    else:
        out = replace(best, status=status, step_time_s=value, bound_s=value if met else bound, info=dict(best.info))
    if status is Status.INTERRUPTED:
        out = replace(out, info=dict(out.info, reason=INTERRUPTED_WITH_PLAN))
    return _tagged(out, by, pre, t0)


def _tagged(sol: Solution, proved_by: str, pre: Solution | None, t0: float) -> Solution:
    """``sol`` as CP-SAT's answer (the whole run's wall time), naming what proved its bound and
    what the exact path found first (``exact_first``, as the even cpsat's JSON)."""
    info = dict(sol.info)
    if proved_by:
        info["proved_by"] = proved_by
    if pre is not None:
        info["exact_first"] = {"status": pre.status.value, "method": pre.info.get("method"), "wall_s": round(pre.wall_s, 6)}
    return replace(sol, solver="cpsat", wall_s=time.perf_counter() - t0, info=info)


def solve_by(solver: str, network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, time_limit_s: float,
             rules: SplitRules, proportional: bool = False, seeds: "SeedPlans | None" = None):
    """``--split optimal --solver brute|exact|cpsat|dp``: the uneven form of that solver over the
    declared space under ``rules``: brute, exact and cpsat keep to caps, memory, pins and forbids
    and prove the optimum; dp (the level-by-level DP, ``solvers.uneven_levels``) keeps to pins and
    forbids, its plan's broken caps and memory are reported by the caller, and it proves nothing
    (status feasible; level-optimal where every level is the even DP's). Refused (one line) where
    it does not apply. ``seeds`` (``SeedPlans``; None: none): what exact's Pareto DP returns
    when the time limit stops it with no better plan (``solvers.uneven.exact_uneven``). (plan or
    None, status, bound, wall, its own objective value, ``proof_info``)."""
    try:
        sol = _uneven_solve(solver, network, array, space, aspace, time_limit_s, rules, seeds)
    except Refused as err:  # too large for it: say what takes the instance instead (the refusal's own class and fields)
        err.args = (refusal_reason(err) + _instead(solver, rules, proportional, (network, array, aspace, space)),)
        raise err from None
    return sol.plan, sol.status, sol.split_bound, sol.wall_s, sol.split_value, proof_info(solver, sol)


def _uneven_solve(solver: str, network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace,
                  time_limit_s: float, rules: SplitRules, seeds: "SeedPlans | None" = None) -> Solution:
    """The uneven form of ``solver`` (``solve_by``); Refused (its own words) where it does not take the instance."""
    from ..solvers.brute import solve_split as brute_split
    from ..solvers.uneven import exact_uneven
    from ..solvers.uneven_levels import levels_uneven
    from ..solvers.uneven_constrained import constrained_uneven

    if solver == "brute":
        return _floored(brute_split(network, array, space, aspace, rules=rules, time_limit_s=time_limit_s), seeds)
    if solver == "exact":  # caps or memory: the constrained path, as the even split's exact solver
        seeds, time_limit_s = _levels_first(seeds, network, array, aspace, time_limit_s, rules, rules.couples_layers)
        if rules.couples_layers:
            return _floored(constrained_uneven(network, array, space, aspace, time_limit_s=time_limit_s, rules=rules,
                                               seeds=seeds, even=_even_in(seeds)), seeds)
        return _floored(exact_uneven(network, array, space, aspace, time_limit_s=time_limit_s, rules=rules, seeds=seeds),
                        seeds)
    if solver == "cpsat":  # caps or memory: the exact path first, as the even split's cpsat
        return _floored(cpsat_after_exact(network, array, space, aspace, time_limit_s, rules, seeds), seeds)
    deadline = None if time_limit_s is None else time.perf_counter() + time_limit_s
    return levels_uneven(network, array, space, aspace, rules=rules, name="dp", deadline=deadline)


def _even_in(seeds) -> tuple[Plan, ...] | None:
    """The even split's optimum ``seeds`` hold (``SeedPlans.even``, solved under the rules by
    ``even_optimum``), so that the joint solver does not solve it again; None where they hold none
    (not solved, or no plan found: solved there)."""
    return seeds.even if isinstance(seeds, SeedPlans) and seeds.even else None


def _floored(sol: Solution, seeds) -> Solution:
    """A proving solver's answer never worse than the seed plans in hand (``SeedPlans.floor``; ``seeds``
    None or () where a caller gave none)."""
    return seeds.floor(sol) if isinstance(seeds, SeedPlans) else sol


ROUTE = ("exact", "cpsat", "brute")  # --split optimal without --solver, outside the joint solver's scope or objective


def routed_optimal(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, types: Plan, clock,
                   rules: SplitRules, why: str, even: tuple[Plan, ...] = ()):
    """``--split optimal`` without ``--solver`` where the joint solver refuses the instance (``why``,
    its words: its scope, or the traffic objective, ``joint_refusal``): the first of ``ROUTE`` that
    takes it under ``rules`` (the traffic objective too: each proves the lexicographic optimum,
    least traffic then least step time, docs/uneven.md), with what ``clock`` leaves, so the
    default never refuses what a sibling proves. ``info["routed"]`` names the solver that answered,
    ``info["route"]`` why. Refused (every refusal, ';'-joined) where none takes it; each refuses at
    once (its size counted before any column is built). ``even``: the even split's optimum
    (``even_optimum``), a seed as ``seed_plans``'. The tuple of ``split._split_plan``."""
    refusals = [why]
    for solver in ROUTE:
        try:
            sol = _uneven_solve(solver, network, array, space, aspace, clock.left(), rules,
                                seed_plans(network, array, space, aspace, types, rules, clock.deadline(), even))
        except Refused as err:
            refusals.append(refusal_reason(err))
            continue
        info = dict(proof_info(solver, sol), routed=solver, route=f"{why}; {solver} answered instead")
        return sol.plan, sol.status, sol.split_bound, None, sol.wall_s, sol.split_value, info
    raise Refused("; ".join(refusals))


def proof_info(solver: str, sol) -> dict:
    """What a split report keeps of a solver's info: why it ended without a plan (``reason``) and
    the method that proved its bound (``proved_by``: the uneven cpsat names its own, exact its route)."""
    by = sol.info.get("proved_by")
    if by is None and solver in PROVING_SOLVERS and (sol.split_bound is not None or sol.status is Status.INFEASIBLE):
        by = f"exact:{sol.info['method']}" if solver == "exact" and sol.info.get("method") else solver
    first = (sol.info.get("exact_first") or {}).get("status")
    return {"reason": sol.info.get("reason") or "", "proved_by": by, "method": sol.info.get("method") or "",
            "exact_first": first, "alone": bool(sol.info.get("exact_alone")),
            "exact_reason": sol.info.get("exact_reason") or "", "ended_at_once": sol.info.get("ended_at_once") or "",
            "cut": sol.info.get("cut"), "explored": sol.explored, "ended_early": sol.info.get("ended_early") or "",
            "separable_bound": bool(sol.info.get("separable_bound")),
            "convex_bound": bool(sol.info.get("convex_bound")), "memory_end": sol.info.get("memory_end") or "",
            "meets": _meets(sol)}


def _meets(sol) -> bool:
    """Whether the plan's value meets its proven bound (a proof under the time objective; under traffic
    of the least traffic alone, ``split_notes._seed_verdict``)."""
    value, bound = sol.split_value, sol.split_bound
    return sol.plan is not None and value is not None and bound is not None and value <= bound


def _instead(solver: str, rules: SplitRules, proportional: bool = False, instance=None) -> str:
    """What to run when a proving solver refuses an uneven instance as too large: the default
    (``--split optimal`` without ``--solver``) only where its joint solver takes ``instance``
    (network, array, alpha space; ``solvers.uneven_constrained.joint_takes``), else what does."""
    split, by, limit, grid = (given_as(o) for o in ("--split", "--solver", "--time-limit", "--alpha-grid"))
    if proportional:  # one point per class: the exact DP takes what brute force and CP-SAT cannot
        return ((f"; {by} dp (the level DP, no proof) takes it" if solver == "exact" else
                 f"; {by} exact (the exact DP over the types at the proportional alphas) or dp (the level DP, no proof)")
                + f", or {split} proportional without {by} (the even DP's types)")
    from ..solvers.uneven import MAX_FREE_CLASSES, is_path
    from ..solvers.uneven_constrained import joint_takes

    if instance is not None and not joint_takes(*instance[:3], rules):
        # the default routes past the joint solver (``routed_optimal``): what it routes to
        if solver != "exact" and is_path(instance[0]) and _exact_columns_fit(*instance, rules):
            return (f"; {by} exact (the exact DP on chains, which {split} optimal without {by} runs here) takes it, "
                    f"or a coarser {grid} makes the space smaller")
        if len(instance[2].free_classes()) > MAX_FREE_CLASSES:  # search refuses it too, and any grid keeps the classes
            return f"; {by} dp ({split} levels: the level DP, no proof) takes it, or {split} proportional or equal"
        return f"; a coarser {grid} makes the space smaller, or {split} search or {by} dp (no proof) takes it"
    return (f"; {split} optimal without {by} (the joint solver; arrays with one kind per half of the tree; pins, "
            f"forbids, caps and memory) takes such instances: a proven optimum, or at {limit} its best plan with "
            "a proven bound and the gap")


def _exact_columns_fit(network: Network, array: ArraySpec, aspace: AlphaSpace, space: Space, rules: SplitRules) -> bool:
    """Whether exact's first guard (its columns counted, nothing built) passes: where it does not
    (an array of 1,024 kinds: 3e+1237 columns), a refusal does not send the user to exact."""
    from ..solvers.uneven import EXACT_MAX_BYTES, _columns_fit

    try:
        _columns_fit(network, array, space, aspace, rules, EXACT_MAX_BYTES)
    except Refused:
        return False
    return True


# Of the time a solve gets, what the level DP may take before an exact run whose seeds it joins
# (``SeedPlans.levels_first``): 0.15 s for sfc on mix-4 at grid 1/16, against 30-300 s limits.
LEVELS_FIRST_SHARE = 0.05


# Of what a run's limit leaves, what the even split's exact solver may take for its optimum, a seed
# (``even_optimum``): 0.01-0.5 s on the zoo's nets on tpu-mix-16 (accpar, both objectives, each kind's
# memory; bert-base the longest; load 5.9 on the 2 shared cores; docs/benchmarks.md).
EVEN_FIRST_SHARE = 0.1


def even_optimum(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, rules: SplitRules,
                 clock) -> tuple[Plan, ...]:
    """The even split's proven optimum as a seed of the uneven routes (``solvers.uneven_seed``: the
    even exact solver under ``rules``' objective, pins, forbids, caps and the smallest kind's memory,
    its plan with every alpha 1/2), within ``EVEN_FIRST_SHARE`` of what ``clock`` (a ``check.Clock``)
    leaves; () where 1/2 is not in ``aspace``, or it refuses or finds no plan, or the run's deadline
    (``Clock.deadline``: its limit less the report's margin) has passed: not started, nor its solver
    imported (it would run past the limit; the equal-split plan stands)."""
    if past(clock.deadline()):
        return ()
    from ..solvers.uneven_seed import even_under_limits

    left = clock.left()
    limit = None if left is None else min(left, max(EVEN_FIRST_SHARE * left, 0.1))
    plan = even_under_limits(network, array, space, aspace, rules, limit)
    return () if plan is None else (plan,)


@dataclass(frozen=True)
class SeedPlans:
    """The plans a time-limited exact run falls back on (iterable, read when it stops): the even
    split's optimum (``even``: ``even_optimum``'s, where it was computed), the equal-split DP's
    (``types``' with every alpha 1/2), the proportional split of those types
    (cheap; as ``--split proportional``), then the level DP's (``--solver dp``'s) over ``aspace``:
    ``first``, computed before the run (``levels_first``), else (or when it was cut there) run
    when the seeds are read, until ``deadline`` (what is left of the run's limit: it stops there
    with its best plan so far; not started once it has passed)."""
    network: Network
    array: ArraySpec
    space: Space
    aspace: AlphaSpace
    types: Plan
    rules: SplitRules
    deadline: float | None = None
    even: tuple[Plan, ...] = ()  # the even split's optimum (``even_optimum``), computed before the run
    first: tuple[Plan, ...] = ()  # the level DP's plan, computed before the run
    done: bool = False  # ``first`` is the level DP's whole run (not cut): not run again

    def __iter__(self):
        yield from (plan for _, plan in self.cheap())
        yield from self.first
        if self.done or past(self.deadline):
            return
        try:
            plan = self._levels(self.deadline).plan
        except Refused:
            return
        if plan is not None:  # (none: the pins and forbids leave the level DP no plan)
            yield plan

    def cheap(self) -> tuple[tuple[str, Plan], ...]:
        """The seeds at hand, named as a report says them: the even split's optimum (computed before
        the run, where it was), the equal split's and the proportional split's (of ``types``), in
        that order."""
        return (tuple(("the even-split optimum's", p) for p in self.even)
                + (("the equal-split", Plan.even(self.types)),
                   ("the proportional", proportional_plan(self.network, self.array, self.types))))

    def floor(self, sol: Solution, more: tuple[Plan, ...] = ()) -> Solution:
        """``sol`` (a proving solver's answer) never worse than these seeds and ``more`` (e.g. the
        joint solver's starts): where it is feasible or unknown, the one of least objective value
        that beats it, in the space and the rules (``solvers.uneven.seeded``, its bound and solver
        kept). The seeds are read only then (the level DP's plan: as ``__iter__``, not run again
        once done, nor once the deadline has passed)."""
        from itertools import chain

        from ..solvers.uneven import seeded

        return seeded(sol, self.network, self.array, self.aspace, self.rules, chain(more, self), solver=sol.solver)

    def levels_first(self, time_limit_s: float | None) -> "SeedPlans":
        """These seeds with the level DP's plan computed now, before an exact run limited to
        ``time_limit_s`` (None: no limit, the run proves its answer: unchanged), within
        ``LEVELS_FIRST_SHARE`` of it: its cost is small against the limit, so a run that uses the
        whole limit still falls back on it (a longer limit never gives a worse plan)."""
        if time_limit_s is None or self.done:
            return self
        end = time.perf_counter() + LEVELS_FIRST_SHARE * time_limit_s
        try:
            sol = self._levels(end if self.deadline is None else min(end, self.deadline))
        except Refused:
            return replace(self, done=True)
        return replace(self, first=() if sol.plan is None else (sol.plan,), done=sol.info.get("cut") is None)

    def _levels(self, deadline: float | None) -> Solution:
        from ..solvers.uneven_levels import levels_uneven

        return levels_uneven(self.network, self.array, self.space, self.aspace, rules=self.rules, name="dp",
                             deadline=deadline)


def seed_plans(network: Network, array: ArraySpec, space: Space, aspace: AlphaSpace, types: Plan, rules: SplitRules,
               deadline: float | None = None, even: tuple[Plan, ...] = ()) -> SeedPlans:
    """The seeds of an exact run over ``aspace`` (``SeedPlans``), its level DP's until ``deadline``;
    ``even``: the even split's optimum (``even_optimum``), the first seed."""
    return SeedPlans(network, array, space, aspace, types, rules, deadline, even)


def even_solve(network: Network, array: ArraySpec, space: Space, solver: str, clock, rules: SplitRules):
    """``--split equal --solver exact|cpsat|brute|pruned``: the even split is the alpha = 1/2 case of
    the one model, so the even solver answers it (``app.run.run``: its status, plan, proven bound and,
    with no plan, its explanation), on the problem ``explore`` without ``--split`` solves. Its
    objective value is the even evaluator's (traffic, or the time objective: the slowest kind's
    compute plus sum_h c_h * dtype / b_h), which the caller checks against ``evaluate_split``'s
    (the step time of the slowest accelerator at alpha 1/2). ``clock`` (``check.Clock``): the run's
    time limit and its origin, as ``SolveOptions.started``. The tuple of ``split._split_plan``."""
    from .run import run

    problem = Problem(network, array, space, rules.objective, rules.constraints)
    r = run(problem, solver, SolveOptions(time_limit_s=clock.limit, started=clock.t0))
    info = {"reason": r.reason or "", "proved_by": r.bound_method, "method": "", "exact_first": None,
            "explanation": r.explanation, "even": True}
    return r.plan, r.status, r.bound, None, r.wall_s, r.objective_value, info
