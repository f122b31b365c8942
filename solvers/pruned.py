"""Exact joint optimum by bound and prune (issue 23, item 3): the tree dual bound
(``solvers.tree_dual``) and its incumbent (the DP's plan, improved), then, unless they already
meet, exact eliminations over the type vectors whose marginal does not exceed a threshold U
(``solvers.survivor_elim``), U rising from the bound towards the incumbent (``_Search``).
``optimal`` only when a threshold's elimination finds a plan within it; else ``feasible`` with
the highest bound proven.
Pins and forbids are kept (when they leave a layer no type vector the run is ``infeasible``,
as exact's); caps and the memory limit are refused (``solvers.constrained``).
"""

from __future__ import annotations

import os
import time

import numpy as np

from explorer.core.errors import InstanceTooLarge, Refused
from explorer.core.kinds import SOLVE_TIME_LIMIT
from explorer.core.names import given_as, time_limit_named
from explorer.core.partition import compositions
from explorer.core.plan import Plan
from explorer.core.problem import Problem
from explorer.core.solution import Solution, SolveOptions, Status, plan_solution
from explorer.core.units import progress_value

from . import block_chain
from .deadline import origin, solve_end
from .elimination import vectors_plan
from .survivor_elim import MAX_ENTRIES, eliminate, plan, rescore, round_work
from .tree_dual import STALL_WORDS, DualResult, dual_bound
from .vectors import VectorCosts


def _instead() -> str:
    return f"use {given_as('--solver')} cpsat (or exact, on graphs it can eliminate)"


def solve(problem: Problem, options: SolveOptions | None = None, rounds: int = 40,
          max_entries: int = MAX_ENTRIES) -> Solution:
    options = options or SolveOptions()
    t0 = origin(options)  # (``explore``: its process's start; the limit counts what came before the solve)
    if problem.constraints.caps:
        raise Refused(f"pruned: link caps couple the layers (it takes pins and forbids only); {_instead()}")
    check_size(problem)
    if not fits_int64(problem):
        raise Refused(f"pruned: costs beyond int64 at these levels and batch; {_instead()}")
    limit = options.time_limit_s or SOLVE_TIME_LIMIT
    setup, left = setup_estimate_s(problem), limit - (time.perf_counter() - t0)
    if setup > left:
        return _within_memory(problem, _dp_instead(problem, t0, setup, limit, left, options.time_limit_s is not None))
    vc = VectorCosts(problem)
    if not vc.use_int64:  # (``fits_int64`` says the same, before the arrays)
        raise Refused(f"pruned: costs beyond int64 at these levels and batch; {_instead()}")
    if any(vc.blocked(n).all() for n in range(vc.N)):
        return _infeasible(t0)
    sol = _solve_relaxed(problem, vc, options, t0, rounds, max_entries)
    return _within_memory(problem, sol)


MAX_VECTORS = 3**12  # type vectors per layer: 531,441 (accpar at 12 levels; 2^19 in hypar); alexnet at 12: 4.3 s, at 13: 15 s before any search
MAX_MEMORY = 2 * 2**30  # bytes ``memory_estimate`` may reach
BASE_BYTES = 4 * 2**20


def _beyond() -> str:
    """What runs where pruned refuses up front: CP-SAT, or the DP's plan (no bound) at once."""
    return f"use {given_as('--solver')} cpsat, or dp for a plan without a bound"


def check_size(problem: Problem) -> None:
    """Refuse, before any array is made, an instance whose type vectors per layer or arrays are
    beyond what ``pruned`` builds within a usual time limit (measured, accpar: alexnet at 13
    levels spent 8 s making its domains alone, at 16 levels 14 GB; at 20 levels numpy failed to
    allocate the 26 GiB of one domain)."""
    K, H = max(len(problem.node_types(n)) for n in range(problem.num_layers)), problem.levels
    if K**H > MAX_VECTORS:
        raise InstanceTooLarge(f"pruned: {K}^{H} = {K**H:,} type vectors per layer ({problem.space} space, {H} levels) "
                               f"exceeds its limit of {MAX_VECTORS:,}; {_beyond()}")
    need = memory_estimate(problem)
    if need > MAX_MEMORY:
        raise InstanceTooLarge(f"pruned: about {need / 2**20:,.0f} MiB of arrays needed, beyond its limit of "
                               f"{MAX_MEMORY / 2**20:,.0f} MiB; {_beyond()}")


def memory_estimate(problem: Problem) -> int:
    """Bytes of the arrays ``VectorCosts`` and the dual hold (the eliminations have their own
    limit, ``MAX_ENTRIES``): per node its vectors' costs, marginals and a working copy, the
    pins-and-forbids mask; each domain's digit, type and prefix tables."""
    H = problem.levels
    sizes = [len(problem.node_types(n)) ** H for n in range(problem.num_layers)]
    total = sum(sizes)
    per_node = 3 * total + total // 8
    domains = sum((3 * H + 2) * V for V in set(sizes))
    return 8 * (per_node + domains) + BASE_BYTES


SETUP_RATE = 4e7  # entries a second that making the type vectors and their per-level costs reaches (measured
# 14-23 M/s on a loaded 2-core machine, AlexNet at 12 levels: 57 M entries in 2.5-4 s): errs towards running


def setup_estimate_s(problem: Problem) -> float:
    """Seconds to make the type vectors (each domain's digit, type and count-state tables) and each
    node's per-level intra costs, before any bound: their entries over ``SETUP_RATE``."""
    H = problem.levels
    sizes = [len(problem.node_types(n)) ** H for n in range(problem.num_layers)]
    return H * (sum(set(sizes)) + sum(sizes)) / SETUP_RATE


def _dp_instead(problem: Problem, t0: float, setup: float, limit: float, left: float, given: bool) -> Solution:
    """The DP's plan, ``feasible`` with the trivial bound 0, when the set-up alone is estimated
    beyond the limit (then no bound could be proven within it); ``given``: the limit was given."""
    plan, note = dp_plan(problem, t0 + limit)
    if plan is None:  # (the DP keeps pins and forbids: a layer they leave no type has none)
        return _infeasible(t0)
    K = max(len(problem.node_types(n)) for n in range(problem.num_layers))
    why = (f"setting up {K}^{problem.levels} type vectors per layer is estimated at {setup:.1f} s, beyond the "
           f"{max(left, 0.0):.1f} s left of {time_limit_named(limit, given)}: the DP's plan, no bound; "
           f"raise {given_as('--time-limit')}")
    return plan_solution("pruned", problem, plan, Status.FEASIBLE, time.perf_counter() - t0, 0,
                         {"method": "dp-start", "reason": why + note})


# Of the time left, what the DP's starting plan may take on a graph too wide for its elimination
# (``dp.solve`` solves those levels by CP-SAT, sharing this), and the least it gets
DP_START_SHARE = 0.25
DP_START_MIN_S = 0.1


def dp_plan(problem: Problem, deadline: float) -> tuple[Plan | None, str]:
    """The DP's plan, as ``--solver dp`` gives it (None: pins and forbids leave a layer no type),
    and '' or, where levels too wide for its elimination were solved by CP-SAT within
    ``DP_START_SHARE`` of the time left, '; the DP's plan it starts from: <the DP's note>'.
    Refused (one line) where the DP cannot give one (costs beyond CP-SAT's int64, or no plan in time)."""
    from .dp import solve as dp_solve

    share = max(DP_START_SHARE * (deadline - time.perf_counter()), DP_START_MIN_S)
    try:
        sol = dp_solve(problem, SolveOptions(time_limit_s=share))
    except InstanceTooLarge as err:
        raise Refused(f"pruned: no starting plan: {err}") from None
    note = sol.info.get("levels_note")
    return sol.plan, f"; the DP's plan it starts from: {note}" if note else ""


def fits_int64(problem: Problem) -> bool:
    """``VectorCosts.use_int64`` from the tables alone (before its arrays): weighted level costs
    and, under a memory limit, the worst footprint (each node's largest over the count states
    its types reach) within int64 with room to add."""
    tables = problem.tables
    if sum(problem.weights.weights) * tables.max_level_cost() >= 2**60:
        return False
    if problem.constraints.memory_bytes is None:
        return True
    wc, space, worst = problem.constraints.weight_copies, problem.space.types, 0
    finals = compositions(problem.levels, problem.space)
    for n in range(problem.num_layers):
        out = [t.index for t in space if t not in problem.node_types(n)]
        worst += max(tables.footprint_units(n, c, wc) for c in finals if all(c[i] == 0 for i in out))
    return worst < 2**56


def _infeasible(t0: float) -> Solution:
    """Proven: a layer whose every type vector a pin or forbid excludes leaves no plan (any other
    choice of allowed vectors is one, of finite cost); the report names the conflict as exact's."""
    return Solution("pruned", Status.INFEASIBLE, None, None, None, None, time.perf_counter() - t0,
                    {"reason": "pins and forbids leave no plan", "method": "proof"})


def _within_memory(problem: Problem, sol: Solution) -> Solution:
    """The memory limit (every array has one) is checked on the plan, not searched: the solve
    ignores it, so its bound holds with it too, and a plan within it keeps its status (an
    optimum of the relaxation that satisfies the limit is the optimum under it). A plan
    beyond it is refused: the limit binds and couples the layers."""
    if sol.plan is None:
        return sol
    broken = problem.plan_violations_units(sol.level_units, sol.plan.types)
    if broken:
        raise Refused(f"pruned: its plan breaks {'; '.join(broken)} (a binding memory limit couples the layers); "
                      f"{_instead()}")
    return sol


CHAIN_HINT_MAX_S = 600.0  # a chain estimated beyond this (x1.5) is not suggested (alexnet at 13 levels: ~4,000 s)


def _chain_hint(kept: block_chain.Kept, limit: float, given: bool) -> str:
    """When the chain of blocks (exact at once) did not run or end: what limit would let it
    (``given``: ``limit`` was given, not the default)."""
    if kept.estimate_s is None:
        return ""
    said = (f"; this graph is a chain of blocks, solved exactly at once in an estimated {kept.estimate_s:.1f} s"
            + (f" (at the {kept.share:.0%} of a core this process got)" if kept.share < 1 else ""))
    if kept.cut_s is not None:
        return f"{said}, cut after {kept.cut_s:.1f} s at {time_limit_named(limit, given)}: raise it"
    need = kept.spent_s + kept.estimate_s
    if need * 1.5 > CHAIN_HINT_MAX_S:  # an hour's chain is no advice: the dual is the way there
        return ""
    return (f"{said}, more than the {max(0.0, limit - kept.spent_s):.1f} s left of {time_limit_named(limit, given)}: "
            f"set {given_as('--time-limit')} to about {max(need * 1.5, limit + 1):.0f} s")


def _solve_relaxed(problem: Problem, vc: VectorCosts, options: SolveOptions, t0: float, rounds: int,
                   max_entries: int) -> Solution:
    """The bound-and-prune solve itself (caps and memory not seen)."""
    limit = options.time_limit_s or SOLVE_TIME_LIMIT
    kept = block_chain.Kept()
    end = solve_end(t0, limit)  # (what follows the search: the plan's re-scoring and the report)
    say = Progress(problem, options.progress, t0)
    chained = block_chain.solve_whole(problem, vc, t0, end, kept)  # a chain of blocks: exact at once
    if chained is not None:
        say("solved at once as a chain of blocks", chained.bound, chained.objective)
        return chained
    *start, note = _dp_start(problem, vc, end)  # finite: ``solve`` returned infeasible when some node had no allowed vector
    t_dual = time.perf_counter()
    if t_dual >= end:  # the set-up alone took the limit: no dual round, no threshold (they ran 1.5 s past it)
        return _dp_only(problem, vc, start, t0, limit, _chain_hint(kept, limit, options.time_limit_s is not None) + note)
    say(f"set up {vc.dom[0].V:,} type vectors per layer and the DP's plan", None, start[0])
    dual_end = dual_deadline(t0, t_dual, limit, end)
    res = dual_bound(vc, rounds, deadline=dual_end, incumbent=start, enough=_final_is_cheap(vc, max_entries))
    info = {"method": "tree-dual+thresholds", "dual_rounds": res.rounds, "dual_bound": res.bound,
            "start_s": t_dual - t0, "dual_s": time.perf_counter() - t_dual, "dual_cut": time.perf_counter() >= dual_end and res.rounds < rounds}  # (all its rounds run: not cut)
    say(f"dual bound after {res.rounds} of up to {rounds} rounds", res.bound, res.incumbent)
    search = _Search(vc, res, max_entries, end, _threads(options), _dual_rate(vc, res, info["dual_s"]), say)
    info.update(block_chain.settle(search, end, kept))  # a chain of blocks: settled at once (or left as it was)
    proven = search.run() or _use_the_rest(vc, search, rounds, end, max_entries, info, say)
    info.update(thresholds=search.steps, survivors_max=search.survivors_max, eliminations=search.log)
    if not proven:
        given = options.time_limit_s is not None
        info["reason"] = (_dual_cut(search.res, rounds, info, search) + search.why + _resume_words(info)
                          + _chain_hint(kept, limit, given) + note)
    elif note:
        info["reason"] = note.removeprefix("; ")
    status = Status.OPTIMAL if proven else Status.FEASIBLE
    bound = search.incumbent if proven else search.lo
    sol = plan_solution("pruned", problem, vectors_plan(vc, search.vectors), status, time.perf_counter() - t0, bound, info)
    if sol.objective != search.incumbent:
        raise AssertionError(f"pruned: incumbent {search.incumbent} != table re-score {sol.objective}")
    return sol


RESUME_MIN_S = 0.5  # time left below which the dual is not resumed (a round at H = 10 takes 1-7 s)


def _use_the_rest(vc: VectorCosts, search: "_Search", rounds: int, end: float, max_entries: int, info: dict,
                  say) -> bool:
    """The search stopped with time left and no elimination it could afford (``search.why``, not cut
    by the limit): the dual rounds go on from their last multipliers (``dual_bound(resume=)``) within
    ``DUAL_SHARE`` of what is left, the search again over their higher marginals (fewer survivors, a
    higher ``lo``), until a proof, no time left (``RESUME_MIN_S``), no round fits (the least a round takes,
    ``_round_floor_s``, beyond the dual's share of what is left: not started; or none ended), or a dual that
    stalled (``tree_dual._stalled``: more rounds would raise the bound by little). ``info["resume_note"]``
    says which of the last three ended it; ``info["resumed"]``: the resumptions that added rounds.
    Whether the incumbent was proven optimal."""
    res = search.res
    while search.why and not search.why.startswith("the elimination") and end - time.perf_counter() > RESUME_MIN_S:
        if res.stalled:
            info["resume_note"] = (f"the dual bound had stalled ({STALL_WORDS}): "
                                   f"the {end - time.perf_counter():.1f} s left were not spent on more rounds, which would "
                                   "raise it by little")
            return False
        t, before = time.perf_counter(), res.rounds
        if (share := DUAL_SHARE * (end - t)) < (least := _round_floor_s(info, res)):
            info["resume_note"] = (f"a dual round takes ~{least:.1f} s at least (the rounds' measured mean without its decodes), "
                                   f"beyond the {share:.1f} s the dual may take of the {end - t:.1f} s left: not resumed")
            return False
        res = dual_bound(vc, res.rounds + rounds, deadline=t + share, incumbent=(search.incumbent, search.vectors),
                         enough=_final_is_cheap(vc, max_entries), resume=res)
        info.update(dual_rounds=res.rounds, dual_bound=res.bound, dual_s=info["dual_s"] + time.perf_counter() - t)
        if res.rounds == before:  # no round fitted in the time left: not a resumption
            info["resume_note"] = f"resumed, the dual ended no further round in the {share:.1f} s it could take"
            return False
        info["resumed"] = info.get("resumed", 0) + 1
        search.resumed(res)
        say(f"dual bound after {res.rounds} rounds (resumed)", search.lo, search.incumbent)
        if search.run():
            return True
    return False


DECODE_COST = 1.5  # a round that decodes a plan (``tree_dual.DECODE_EVERY``) costs 1.5 one that does not


def _round_floor_s(info: dict, res: DualResult) -> float:
    """The least a dual round is expected to take: the rounds' measured mean (``info["dual_s"]``, their
    set-up and decodes in it) over ``DECODE_COST`` (0 before any round): a resumption given less than
    it would end no round (efficientnet-b0 at H = 10 under an 8 s limit: rounds of 2-3 s, and 0.3-0.7 s
    given to resumptions that ended none, load 9-11)."""
    return info["dual_s"] / res.rounds / DECODE_COST if res.rounds else 0.0


def _resume_words(info: dict) -> str:
    """Why the time left was not spent on more dual rounds, where that is why (``_use_the_rest``)."""
    return f"; {info['resume_note']}" if info.get("resume_note") else ""


def dual_deadline(t0: float, t_dual: float, limit: float, end: float) -> float:
    """When the dual rounds stop: at ``DUAL_SHARE`` of the limit, or, where the set-up took most of
    that (ResNet-50 at 1,024, ``--time-limit 10`` at load 9: 6 s; no round, the bound 0, and 3.3 s
    of the limit unused), at ``DUAL_SHARE`` of what the set-up left before ``end``."""
    return max(t0 + DUAL_SHARE * limit, t_dual + DUAL_SHARE * (end - t_dual))


def _dual_cut(res: DualResult, rounds: int, info: dict, search) -> str:
    """Why the bound is where it is, when its time, not convergence, ended the dual rounds and the
    search then found no elimination it could afford: the tables a threshold needs shrink as the
    bound rises, so the entries allowed are not the wall they seem."""
    if not info["dual_cut"] or search.why.startswith(("the elimination", "next elimination")):
        return ""
    if info.get("resumed") and res.stalled:  # stalled: no more time would help much
        return f"the dual rounds, resumed with the time the search could not use, stalled after {res.rounds} rounds; at that bound "
    if info.get("resumed"):
        return (f"the dual rounds, resumed with the time the search could not use, ended after {res.rounds} rounds "
                f"({info['dual_s']:.1f} s), the bound still short; raise {given_as('--time-limit')}; at that bound ")
    if not res.rounds:
        return (f"the dual bound's share of the time limit ended before its first round: bound 0; "
                f"raise {given_as('--time-limit')}; at that bound ")
    return (f"the dual bound's share of the time limit ended after {res.rounds} of up to {rounds} rounds ({info['dual_s']:.1f} s), "
            f"its bound still short; raise {given_as('--time-limit')} (more rounds, smaller tables); at that bound ")


class Progress:
    """``--solver pruned``'s progress lines (``SolveOptions.progress``: the CLI's stderr), as CP-SAT's:
    the step, the proven bound and the plan in the objective's units, the gap and the time; none in
    the first ``QUIET_S`` of the solve (a quick solve stays quiet, and a refusal at its end, a
    binding memory limit, is its one line)."""

    QUIET_S = 2.0

    def __init__(self, problem: Problem, say, t0: float):
        self.problem, self.say, self.t0 = problem, say, t0
        self.unit = "elements" if problem.objective.value == "traffic" or problem.custom_weights is not None else "s"

    def __call__(self, what: str, bound: int | None, plan: int) -> None:
        if self.say is None or time.perf_counter() - self.t0 < self.QUIET_S:
            return
        real = self.problem.real
        gap = "" if bound is None else f", gap {100 * self.problem.gap(plan, bound):.3f}%"
        shown = "-" if bound is None else progress_value(float(real(bound)), self.unit)
        self.say(f"pruned: {what}: plan at {progress_value(float(real(plan)), self.unit)} {self.unit}, bound {shown}{gap}, "
                 f"{time.perf_counter() - self.t0:.1f} s")


def _dp_only(problem: Problem, vc: VectorCosts, start: tuple[int, list[int]], t0: float, limit: float,
             hint: str) -> Solution:
    """The DP's plan, ``feasible`` with the trivial bound 0, when setting up the type vectors and
    scoring the DP's plan took the whole limit (AlexNet at 12 levels: 3.5 s on a loaded machine)."""
    why = (f"the time limit ({limit:g} s) ran out while setting up the {vc.dom[0].V:,} type vectors per layer "
           f"and the DP's starting plan: raise {given_as('--time-limit')}{hint}")
    sol = plan_solution("pruned", problem, vectors_plan(vc, start[1]), Status.FEASIBLE, time.perf_counter() - t0, 0,
                        {"method": "tree-dual+thresholds", "dual_rounds": 0, "reason": why})
    if sol.objective != start[0]:
        raise AssertionError(f"pruned: DP start {start[0]} != table re-score {sol.objective}")
    return sol


DUAL_SHARE = 0.6  # of the time limit, for the dual rounds
RATE = 3.5e8  # planned element operations a wall second when nothing was measured yet (see _Search.rate)
DUAL_RATE_SHARE = 1.0  # of the dual rounds' measured rate, for the first elimination (measured: 0.7 left it 0.4-0.9 of the wall)
PROBES = 14  # plans scored per threshold choice
LAST_CHANCE = 1.3  # times the time left the last threshold's estimate may be when nothing else fits (estimates: 0.9-1.3 of the wall)
FIRST_SHARE = 0.1  # of the time left, for the first threshold when the last is beyond reach: a better incumbent, cheaply


class _Search:
    """Thresholds U between the proven bound ``lo`` and the incumbent: the elimination over the
    vectors whose marginal is at most U either finds a plan of cost <= U (then optimal: every plan
    of cost <= U uses only those vectors) or shows that none exists (then lo = U + 1); a plan it
    finds above U may still be a better incumbent. U = incumbent - 1 (which settles the question
    at once) is tried whenever its plan (``survivor_elim.plan``) is estimated to end in the time
    left; else the largest U whose plan fits a share of it; else, rather than leave the time
    unused, U = incumbent - 1 again when estimated within ``LAST_CHANCE`` times it. Estimates are planned work over
    ``rate``: the largest finished elimination's measured rate (work / wall: the machine's load
    as it is), before any the dual rounds'. ``why`` says why the search stopped short of a proof."""

    def __init__(self, vc: VectorCosts, res: DualResult, max_entries: int, deadline: float, workers: int = 1,
                 rate: float = RATE, say=None):
        self.vc, self.res, self.max_entries, self.deadline, self.workers = vc, res, max_entries, deadline, workers
        self.say = say or (lambda *args: None)
        self.lo, self.incumbent, self.vectors = res.bound, res.incumbent, res.vectors
        self.steps, self.survivors_max, self.log, self.rate, self.why, self.rated_work = 0, 0, [], rate, "", 0.0
        self.sorted = [np.sort(m[~vc.blocked(n)]) for n, m in enumerate(res.marginals)]
        self.known: dict[tuple, object] = {}  # the distinct plans met, by their steps (``_plan``)

    def run(self) -> bool:
        """Whether the incumbent was proven optimal."""
        while self.lo < self.incumbent:
            chosen = self._affordable()
            if chosen is None or self._try(*chosen) is None:
                return False
        return True

    def resumed(self, res: DualResult) -> None:
        """The dual gone on (``_use_the_rest``): its marginals (each at least the old: the rounds' maximum),
        a bound no lower than ``lo`` where it rose, its incumbent where better; ``why`` cleared."""
        self.res, self.lo, self.why = res, max(self.lo, res.bound), ""
        if res.incumbent < self.incumbent:
            self.incumbent, self.vectors = res.incumbent, res.vectors
        self.sorted = [np.sort(m[~self.vc.blocked(n)]) for n, m in enumerate(res.marginals)]

    def _plan(self, U: int):
        """(survivor counts at U, the cheapest plan for them among the greedy one and every plan
        met so far, scored again at these counts), so that a higher threshold's plan is never
        cheaper than a lower one's among those tried (the greedy order alone is not monotone:
        ResNet-50 at H = 9 planned 1.6x the work at a lower threshold)."""
        sizes = [int(np.searchsorted(s, U, side="right")) for s in self.sorted]
        if min(sizes) == 0:
            return sizes, None
        greedy = plan(self.vc, sizes, self.max_entries)
        if len(greedy.steps) == self.vc.N:  # (a plan cut short at a step beyond the entries has no use elsewhere)
            self.known.pop(greedy.steps, None)
            self.known[greedy.steps] = greedy  # the latest last: the oldest go first
        while len(self.known) > KNOWN:
            del self.known[next(iter(self.known))]
        tried = [rescore(self.vc, sizes, p, self.max_entries) for k, p in self.known.items() if k != greedy.steps]
        return sizes, min([greedy] + tried, key=lambda p: (p.peak > self.max_entries, p.work))

    def _left(self) -> float:
        return self.deadline - time.perf_counter()

    def _fits(self, found, share: float) -> bool:
        return found is None or (found.peak <= self.max_entries and found.work <= self.rate * self._left() * share)

    def _affordable(self):
        """(U, its plan or None when some node has no survivor) to try next, or None (``why`` set)."""
        top = self.incumbent - 1
        _, last = self._plan(top)
        if self._fits(last, 1.0):
            return top, last
        lo, hi, best = self.lo, top - 1, None
        share = 0.5 if self.steps else FIRST_SHARE
        for _ in range(PROBES):
            if lo > hi or self._left() <= 0:
                break
            mid = (lo + hi) // 2
            _, found = self._plan(mid)
            if self._fits(found, share):
                best, lo = (mid, found), mid + 1
            else:
                hi = mid - 1
        if best is None and self._fits(last, LAST_CHANCE):  # the time would go unused: a chance at the proof
            return top, last
        if best is None:
            self.why = self._short(last)
        return best

    def _short(self, last) -> str:
        left = max(0.0, self._left())
        if last.peak > self.max_entries:
            return f"the next elimination needs {last.peak:,} table entries, more than the {self.max_entries:,} allowed"
        if last.work == float("inf"):
            return "the next elimination has no order whose tables stay within the entries allowed"
        return f"next elimination estimated at {last.work / self.rate:.1f} s, {left:.1f} s left"

    def _try(self, U: int, steps) -> bool | None:
        """One threshold: True when settled (a proof or a raised bound), None when not finished."""
        vc = self.vc
        self.steps += 1
        if steps is None:
            self.lo = U + 1
            return True
        domains = [np.flatnonzero((m <= U) & ~vc.blocked(n)) for n, m in enumerate(self.res.marginals)]
        self.survivors_max = max(self.survivors_max, max(len(d) for d in domains))
        estimate, w0, c0 = steps.work / self.rate, time.perf_counter(), time.process_time()
        found = eliminate(vc, domains, self.max_entries, self.deadline, steps, self.workers)
        wall = time.perf_counter() - w0
        self.log.append({"work": steps.work, "rate": self.rate, "estimate_s": estimate, "wall_s": wall, "cpu_s": time.process_time() - c0,
                         "done": found is not None, "level_steps": sum(s.how == "level" for s in steps.steps)})
        if found is None:
            self.why = f"the elimination estimated at {estimate:.1f} s was cut at the time limit after {wall:.1f} s"
            return None
        if wall >= MEASURED_S and steps.work >= self.rated_work:  # the largest elimination so far: the most representative
            self.rate, self.rated_work = steps.work / wall, steps.work
        value, vectors = found
        if value < self.incumbent:
            self.incumbent, self.vectors = value, vectors
        self.lo = value if value <= U else U + 1  # within U: the restricted optimum is the optimum
        self.say(f"threshold {self.steps} ({self.survivors_max:,} type vectors at most kept, {wall:.1f} s)",
                 self.lo, self.incumbent)
        return True


MEASURED_S = 0.3  # an elimination at least this long sets the rate for the next estimates
KNOWN = 24  # plans met that ``_Search._plan`` scores again (ResNet-50 at H = 9: 8 ms a probe with 51 of them)


def _final_is_cheap(vc: VectorCosts, max_entries: int):
    """Whether the last threshold's elimination (the incumbent's cost - 1) over these marginals'
    survivors plans at most one dual round's work (within the entries allowed): then it ends the
    search sooner than another round would (EfficientNet-B0 at H = 9: 40 rounds, 23 s, then a
    0.1 s elimination), so the dual stops."""
    allowed = [~vc.blocked(n) for n in range(vc.N)]
    budget = FINISH_ROUNDS * round_work(vc)

    def enough(marginals: list[np.ndarray], incumbent: int) -> bool:
        sizes = [int(np.count_nonzero(m[a] <= incumbent - 1)) for m, a in zip(marginals, allowed)]
        if min(sizes) == 0:
            return True
        found = plan(vc, sizes, max_entries)
        return found.peak <= max_entries and found.work <= budget

    return enough


FINISH_ROUNDS = 1.0  # dual rounds' work the last elimination may plan for the dual to stop


def _dual_rate(vc: VectorCosts, res: DualResult, seconds: float) -> float:
    """The first elimination's rate (planned operations a wall second): the dual rounds' measured
    one (their decodes and improvements uncounted, so it errs low), scaled by ``DUAL_RATE_SHARE``;
    ``RATE`` when they took too little time to measure."""
    if seconds < MEASURED_S or not res.rounds:
        return RATE
    return DUAL_RATE_SHARE * res.rounds * round_work(vc) / seconds


def _threads(options: SolveOptions) -> int:
    """Threads for the level steps' row blocks: ``--workers``, else up to two (the cores this
    project targets; numpy leaves the interpreter lock in its loops)."""
    return max(1, options.workers or min(2, os.cpu_count() or 1))


def _dp_start(problem: Problem, vc: VectorCosts, deadline: float) -> tuple[int, list[int], str]:
    """The DP's plan as type vectors, its cost, and the note on its levels (``dp_plan``)."""
    plan, note = dp_plan(problem, deadline)
    if plan is None:  # (``solve`` returned infeasible before, where a node has no allowed vector)
        raise AssertionError("pruned: the DP found no plan where every node has an allowed type vector")
    vectors = []
    for n in range(vc.N):
        d = vc.dom[n]
        v = 0
        for h in range(vc.H):
            v = v * d.K + d.types.index(plan.types[h][n])
        vectors.append(v)
    return _cost(vc, vectors), vectors, note


def _cost(vc: VectorCosts, vectors: list[int]) -> int:
    from .tree_dual import plan_cost

    return plan_cost(vc, vectors)
