"""Proven optima under link caps and the memory limit, on chains and graphs.

The full derivation is in the manual: docs/derivations.md, "Under constraints".
"""

from __future__ import annotations

import time
from dataclasses import replace
from fractions import Fraction

import numpy as np

from explorer.core.constraints import limit_suggestion
from explorer.core.kinds import SOLVE_TIME_LIMIT
from explorer.core.names import given_as, time_limit_named
from explorer.core.problem import Problem
from explorer.core.solution import INTERRUPTED_WITH_PLAN, Solution, SolveOptions, Status, plan_solution

from .chain_labels import _label_setting
from .deadline import MIN_LEFT_SHARE, origin
from .elimination import chain_backward, graph_marginals, vectors_plan
from .labels import LabelsOverflow, least_plan
from .lagrangian import _Chain, _closed, _line_search, _wx
from .repair import _local_search
from .restricted import _Restricted, model_bytes
from .vectors import VectorCosts

MAX_GRAPH_ROWS = 5_000_000  # rows of one factor in the graph label pass before it gives up
# (its joins' bytes are checked by ``_Chain.fits``: ``labels.join_bytes`` with what the factors and
# the solve hold, against ``max_bytes``; ResNet-18 at H = 6 under a binding memory limit joins
# 3.4 M rows, 1.8 GB by the estimate, 1.5 GB measured)
CPSAT_ROUND = 15.0  # seconds per CP-SAT round before the model is restricted again
BEAM = 64
LOCAL_STARTS = 3  # cheapest limit-breaking plans a local search repairs (and the incumbent)


def solve_constrained(problem: Problem, options: SolveOptions, vc: VectorCosts | None = None, held: int = 0,
                      max_bytes: int | None = None) -> Solution:
    """The proven optimum under the caps and memory limit (or, when ``time_budget`` runs out,
    the best plan met and the best bound proven, ``feasible`` or ``unknown``). ``held``: the bytes
    the solve holds before its label passes (``exact.constrained_estimate``); a label pass that
    would bring it past ``max_bytes`` gives up (CP-SAT then searches; None: no byte limit, which
    no caller asks: ``exact`` passes ``MAX_LABEL_MEMORY``)."""
    t0 = origin(options)  # (``exact.solve``'s start or the process's: its checks and cost tables count)
    ch = _Chain(problem, vc)
    ch.held, ch.max_bytes = held, max_bytes
    ch.deadline = max(t0 + time_budget(options), time.perf_counter() + MIN_LEFT_SHARE * time_budget(options))
    info: dict = {"type_vectors_per_layer": ch.vc.dom[0].V, "method": "lagrangian"}
    if options.hint is not None:
        ch.offer(options.hint)
    try:
        return _solve(problem, ch, t0, info, options)
    except TimeoutError:  # TimeUp (graphs: between two steps of an elimination or the label pass), BuildTimeout
        found = ("the best plan met and the best bound proven" if ch.incumbent is not None
                 else "no plan found; a lower bound proven" if ch.proven_bound is not None else "no plan and no bound")
        info["reason"] = (f"the time limit ({time_budget(options):g} s) ran out before the gap closed "
                          f"({info['method']}, {ch.evaluations} relaxed solves): {found}; raise {given_as('--time-limit')}")
        return _result(problem, ch, ch.proven_bound, t0, info, proven=False)
    except KeyboardInterrupt:  # Ctrl-C: the best plan met and the best bound so far, as CP-SAT reports them
        info["reason"] = INTERRUPTED_WITH_PLAN if ch.incumbent is not None else "stopped by Ctrl-C before any plan"
        return replace(_result(problem, ch, ch.proven_bound, t0, info, proven=False), status=Status.INTERRUPTED)


def _solve(problem: Problem, ch: _Chain, t0: float, info: dict, options: SolveOptions) -> Solution:
    refused = _memory_refused(problem, ch, t0, info)  # milliseconds: before the first elimination
    if refused is not None:
        return refused
    # unconstrained optimum: optimal when it satisfies every limit
    lam = [0] * len(ch.res)
    value, plan, alphas = ch.relaxed(lam)
    if value >= ch.vc.big:
        info["method"] = "proof"
        return _result(problem, ch, None, t0, info, "pins and forbids leave no plan", infeasible=True)
    ch.offer(plan)
    best = (ch.bound(value, lam), list(lam), alphas)  # (bound, multipliers, forward values)
    ch.proven_bound = best[0]
    if _closed(ch, best[0]):
        info["method"] = "graph-elimination" if ch.graph else "chain-dp"
        return _result(problem, ch, best[0], t0, info)
    completion, refused = _least_resources(problem, ch, t0, info)
    if refused is not None:
        return refused
    if ch.graph:  # the free optimum repaired: a feasible plan near it starts the multiplier search close
        ch.offer(_local_search(ch, plan))
    best, closed = _raise_dual(ch, best)
    if closed:
        return _result(problem, ch, best[0], t0, info)
    info["lagrangian_bound"] = best[0]
    info["multipliers"] = [x / ch.D for x in best[1]]
    if ch.graph:  # (chains get their incumbent from the beam pass)
        _polish_graph(ch)
    if _closed(ch, best[0]):
        return _result(problem, ch, best[0], t0, info)
    if ch.graph:
        return _close_with_cpsat(problem, ch, best[1], best[0], t0, info, options, solved=best[2])
    return _close_with_labels(problem, ch, best, completion, t0, info, options)


def time_budget(options: SolveOptions) -> float:
    """Seconds a constrained solve may take, from ``deadline.origin`` (at least ``MIN_LEFT_SHARE``
    of them from its own start): ``--time-limit`` bounds the whole solve, else
    ``SOLVE_TIME_LIMIT``. The Lagrangian phase stops between elimination steps at the limit
    (on graphs; a chain's DP is a few vector sweeps), the label passes between joins or layers,
    chunks of candidates and every ``labels.CHECK_EVERY`` comparisons of their dominance scans;
    the CP-SAT rounds that close a gap get what is left less ``cpsat``'s margin (CP-SAT stops a
    little past its own limit; its plan is re-scored after it), and a run stopped by the limit
    reports ``feasible`` (or ``unknown``) with its proven bound (a chain's label passes raise it
    past the Lagrangian's as they find no plan below their targets) and gap."""
    return float(options.time_limit_s) if options.time_limit_s is not None else SOLVE_TIME_LIMIT


def _least_resources(problem: Problem, ch: _Chain, t0: float, info: dict) -> tuple[list, Solution | None]:
    """The least use of each resource: proves infeasibility (the infeasible Solution, second), and
    gives the far side of each search; on chains, each resource's backward values (completion bounds)."""
    completion = []
    for k, r in enumerate(ch.res):
        W, ex = ch.resource_weights(k)
        least, p, _ = ch.optimum(W, ex)
        if least > r.limit:
            return completion, _cannot_hold(problem, ch, k, least, t0, info)
        ch.offer(p)
        if not ch.graph:
            completion.append(chain_backward(ch.vc, W, ex))
    return completion, None


def _memory_refused(problem: Problem, ch: _Chain, t0: float, info: dict) -> Solution | None:
    """The infeasible Solution when the memory limit is below every plan's footprint, found from
    ``least_footprint`` (separable, no elimination: a graph's relaxed optimum before it could take
    longer than the time limit and end ``unknown`` where the limit was proven infeasible)."""
    for k, r in enumerate(ch.res):
        if r.level is None:
            least = ch.least_footprint()
            if r.limit < least < ch.vc.big:  # (``big``: pins and forbids leave no plan, which the relaxed solve says)
                return _cannot_hold(problem, ch, k, least, t0, info)
    return None


def _cannot_hold(problem: Problem, ch: _Chain, k: int, least: int, t0: float, info: dict) -> Solution:
    """Resource ``k`` needs ``least`` units at the least, above its limit: the infeasible Solution."""
    info["method"] = "least-resource"
    info.update(_explanation(problem, ch, k, least))
    reason = f"{ch.res[k].name} cannot hold: every plan needs more"
    return _result(problem, ch, None, t0, info, reason, infeasible=True)


def _raise_dual(ch: _Chain, best: tuple) -> tuple[tuple, bool]:
    """Line searches over the resources in rounds, from ``best`` (bound, multipliers, forward
    values); returns the best evaluated, and whether the incumbent met it (stopping at once)."""
    best_bound, best_lam, best_alphas = best
    for _ in range(3):  # rounds over the resources
        before = list(best_lam)
        for k in range(len(ch.res)):
            for b, l_, a in _line_search(ch, k, best_lam, best_bound):
                if b > best_bound:
                    best_bound, best_lam, best_alphas = b, list(l_), a
                    ch.proven_bound = b
            if _closed(ch, best_bound):
                return (best_bound, best_lam, best_alphas), True
        if best_lam == before or len(ch.res) == 1:
            break
    return (best_bound, best_lam, best_alphas), False


def _polish_graph(ch: _Chain) -> None:
    """Repair the cheapest plans that break a limit, polish the incumbent (a better incumbent
    prunes more in the restricted search)."""
    starts = [p for _, _, p in sorted((t for t in ch.plans if t[0] > 0), key=lambda t: t[1])[:LOCAL_STARTS]]
    if ch.incumbent is not None:
        starts.append(ch.incumbent[1])
    for p in starts:
        ch.offer(_local_search(ch, p))


def _close_with_labels(problem: Problem, ch: _Chain, best: tuple, completion: list, t0: float, info: dict,
                       options: SolveOptions) -> Solution:
    """Close a chain's gap with labels: a beam pass for a good incumbent, then the exact pass; CP-SAT
    over the vectors the bounds leave when the labels outgrow their limit."""
    best_bound, best_lam, best_alphas = best
    info["method"] = "lagrangian+labels"
    _label_setting(ch, best_lam, best_alphas, completion, beam=BEAM)  # a good incumbent first
    lo, step = best_bound, None
    while not _closed(ch, lo):
        target = None
        if ch.incumbent is not None:  # aim below the incumbent first: a pass prunes harder the lower it aims
            U = ch.incumbent[0]
            step = max(1, (U - lo) // 4) if step is None else 2 * step
            target = lo + step if lo + step < U else None
        found = _label_setting(ch, best_lam, best_alphas, completion, target=target)
        if found is None:  # the labels outgrew their limit: CP-SAT over the vectors the bounds leave
            info["labels"] = "outgrew the label limit"
            W, ex = _wx(ch, best_lam)
            marg = [a + b for a, b in zip(best_alphas, chain_backward(ch.vc, W, ex))]
            return _close_with_cpsat(problem, ch, best_lam, lo, t0, info, options, marg)
        info["label_passes"] = info.get("label_passes", 0) + 1
        if found == "found" or target is None:  # the least plan below the target (or the incumbent): optimal
            if found == "none" and ch.incumbent is None:
                return _result(problem, ch, None, t0, info, "no plan satisfies the constraints", infeasible=True)
            return _result(problem, ch, ch.incumbent[0], t0, info)
        lo = ch.proven_bound = target  # no feasible plan below the target (the bound a cut run reports)
    return _result(problem, ch, lo, t0, info)


def _explanation(problem: Problem, ch: _Chain, k: int, least: int) -> dict:
    """When the problem's only cap (or memory limit) is infeasible by itself, pins and forbids aside,
    name it as the conflict and say the least limit that would do (what ``cpsat.explain_infeasible``
    says, without its CP-SAT runs); otherwise nothing (the caller asks CP-SAT)."""
    r, cons = ch.res[k], problem.constraints
    if len(ch.res) != 1 and r.level is None:
        return {}  # the least memory under the caps: CP-SAT's (``cpsat._least_memory``)
    if cons.pins or cons.forbids:
        free = _Chain(problem.with_constraints(type(cons)(caps=cons.caps, memory_bytes=cons.memory_bytes,
                                                           weight_copies=cons.weight_copies)))
        free.deadline = ch.deadline  # (an elimination on a graph: it stops there)
        try:
            free_least = free.least_footprint() if r.level is None else free.optimum(*free.resource_weights(k))[0]
        except TimeoutError:
            return {}  # cut short: the caller's explanation (CP-SAT, in what the limit leaves) names the conflict
        if free_least <= r.limit:
            return {}  # pins or forbids are part of the conflict
    if len(ch.res) != 1:  # a cap no plan meets, whatever the other limits: they bound the least cap that does
        return {"conflict": [r.name], "suggestion": _least_cap(problem, r, ch.deadline, ch.held, ch.max_bytes)}
    need = Fraction(least * problem.array.dtype_bytes, problem.tables.unit_per_element)
    return {"conflict": [r.name], "suggestion": limit_suggestion(r.level, need, cap=_cap(problem, r.level))}


def _cap(problem: Problem, level: int | None):
    """The cap at ``level`` (None: a memory limit), whose form a suggestion takes (bytes or a time)."""
    return None if level is None else problem.constraints.cap_at(level)


def _least_cap(problem: Problem, r, deadline: float, held: int, max_bytes: int | None) -> str | None:
    """The least traffic at the cap's level under the other limits (a constrained solve in the time
    left, as ``cpsat._nearest_limit``): its suggestion; None when the time ran out first."""
    left = deadline - time.perf_counter()
    if left <= 0:
        return None
    weights = tuple(1 if h == r.level else 0 for h in range(problem.levels))
    relaxed = problem.with_constraints(problem.constraints.without(r.name)).with_weights(weights)
    sol = solve_constrained(relaxed, SolveOptions(time_limit_s=left), None, held, max_bytes)
    if sol.status is Status.INFEASIBLE:
        return "the other constraints conflict among themselves too: relaxing these alone is not enough"
    if sol.status is not Status.OPTIMAL:
        return None
    need = Fraction(sol.level_units[r.level] * problem.array.dtype_bytes, problem.tables.unit_per_element)
    return limit_suggestion(r.level, need, cap=_cap(problem, r.level))


def _close_with_cpsat(problem: Problem, ch: _Chain, lam: list[int], bound: int, t0: float, info: dict,
                      options: SolveOptions, marg: list[np.ndarray] | None = None, solved: tuple | None = None) -> Solution:
    """Keep only the type vectors whose Lagrangian min-marginal (``marg``; on graphs computed here)
    leaves room for a better feasible plan, and let CP-SAT search that restricted model; each
    better plan it finds tightens the restriction before the next round. Used on graphs, and on
    chains whose label pass outgrew its limit."""
    if marg is None:  # (graphs: from the multipliers' elimination record when kept)
        _, marg = graph_marginals(ch.vc, *_wx(ch, lam), solved=solved, deadline=ch.deadline)
    slack = sum(x * r.limit for x, r in zip(lam, ch.res))
    if ch.graph and ch.incumbent is not None:
        done = _close_with_graph_labels(problem, ch, marg, slack, t0, info)
        if done is not None:
            return done
    info["method"] = info["method"] + "+cpsat" if not ch.graph else "lagrangian+cpsat"
    if not ch.fits(model_bytes(problem)):  # (the labels' arrays are gone by now)
        info["reason"] = ("CP-SAT's restricted model would pass the exact solver's memory limit: the best plan met "
                          f"and the best bound proven; {given_as('--solver')} cpsat searches without it")
        return _result(problem, ch, bound, t0, info, proven=False)
    from .cpsat_run import search_margin  # (OR-Tools: ``_Restricted`` imports it anyway)

    search = _Restricted(problem, ch)
    # CP-SAT stops a little past its own limit, and its plan is extracted and re-scored after it:
    # the rounds end this much before the deadline (``cpsat.solve`` keeps back the same)
    deadline = t0 + time_budget(options) - search_margin(time_budget(options))
    rounds, improved = 0, True
    while True:
        U = ch.incumbent[0] if ch.incumbent is not None else None
        if U is not None:  # a better plan uses only vectors whose min-marginal fits under U
            survivors = [np.flatnonzero(m <= ch.D * (U - 1) + slack) for m in marg]
            info["vectors_left"] = int(sum(len(s) for s in survivors))
            if any(len(s) == 0 for s in survivors):
                return _result(problem, ch, U, t0, info)  # no vector of some node fits a better plan
            search.restrict(survivors)
        left = deadline - time.perf_counter()
        if left <= 0.05:
            break
        rounds += 1
        status = search.solve(U, min(left, CPSAT_ROUND) if improved else left, options)
        info["cpsat_status"], info["cpsat_rounds"] = search.solver.status_name(status), rounds
        done, bound = _after_round(problem, ch, search, status, U, bound, t0, info)
        if done is not None:
            return done
        improved = ch.incumbent is not None and (U is None or ch.incumbent[0] < U)
    info["reason"] = _out_of_time_reason(rounds, time.perf_counter() - t0, options)
    return _result(problem, ch, bound, t0, info, proven=False)


def _out_of_time_reason(rounds: int, spent_s: float, options: SolveOptions) -> str:
    """Why the CP-SAT fallback stopped without a proof: its rounds ran out of time, or none could
    start (the bound and the labels took the whole limit); the limit given, or the default one."""
    limit = time_limit_named(time_budget(options), options.time_limit_s is not None)
    if rounds == 0:
        return (f"the Lagrangian bound and the labels took the whole time limit ({spent_s:.1f} s of {limit}) before "
                "CP-SAT's restricted search could start; a longer limit lets it run")
    return f"CP-SAT did not finish the restricted search ({rounds} round{'s' * (rounds > 1)}) within {limit}; a longer limit lets it continue"


def _close_with_graph_labels(problem: Problem, ch: _Chain, marg: list[np.ndarray], slack: int, t0: float,
                             info: dict) -> Solution | None:
    """Labels on the graph (``solvers.labels``): the least feasible plan below the incumbent over the
    vectors whose min-marginal leaves room for one; the incumbent is optimal when there is none.
    None when the labels outgrow ``MAX_GRAPH_ROWS`` or a join the bytes ``ch.fits`` allows (CP-SAT
    then searches those vectors)."""
    U = ch.incumbent[0]
    survivors = [np.flatnonzero(m <= ch.D * (U - 1) + slack) for m in marg]
    info["vectors_left"] = int(sum(len(s) for s in survivors))
    info["method"] = "lagrangian+labels"
    if any(len(s) == 0 for s in survivors):
        return _result(problem, ch, U, t0, info)
    resources = [ch.resource_weights(k) for k in range(len(ch.res))]
    try:
        vectors = least_plan(ch.vc, survivors, resources, [r.limit for r in ch.res], U, MAX_GRAPH_ROWS,
                             ch.deadline, ch.fits)
    except LabelsOverflow:
        info["labels"] = "outgrew the label limit"
        return None
    if vectors is not None:
        f, g = ch.offer(vectors_plan(ch.vc, vectors))
        if f >= U or any(x > r.limit for x, r in zip(g, ch.res)):
            raise AssertionError("constrained exact: the graph label pass's plan does not re-score below the incumbent")
    return _result(problem, ch, ch.incumbent[0], t0, info)


def _after_round(problem: Problem, ch: _Chain, search: _Restricted, status, U: int | None, bound: int, t0: float,
                 info: dict) -> tuple[Solution | None, int]:
    """Take a CP-SAT round's plan as a candidate incumbent; the Solution when the round settles the
    question (else None), and the bound raised by the restricted search's own bound."""
    from ortools.sat.python import cp_model

    if status == cp_model.INFEASIBLE:
        if U is None:
            return _result(problem, ch, None, t0, info, "no plan satisfies the constraints", infeasible=True), bound
        return _result(problem, ch, U, t0, info), bound  # nothing in the model, so nothing better than U
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        ch.offer(search.plan())
    if status == cp_model.OPTIMAL:  # every plan better than U lies in the model: min(U, its optimum)
        return _result(problem, ch, ch.incumbent[0], t0, info), bound
    if status == cp_model.FEASIBLE:
        restricted = search.lower_bound()
        bound = max(bound, restricted if U is None else min(U, restricted))
    return None, bound


def _result(problem: Problem, ch: _Chain, bound: int | None, t0: float, info: dict, reason: str | None = None,
            infeasible: bool = False, proven: bool = True) -> Solution:
    wall = time.perf_counter() - t0
    info = dict(info, relaxed_solves=ch.evaluations)
    if infeasible:
        info["reason"] = reason
        return Solution("exact", Status.INFEASIBLE, None, None, None, None, wall, info)
    if ch.incumbent is None:
        info.setdefault("reason", "no plan found within the limits")
        return Solution("exact", Status.UNKNOWN, None, None, bound, None, wall, info)
    f, plan = ch.incumbent
    sol = plan_solution("exact", problem, plan, Status.FEASIBLE, wall, info=info)
    if sol.objective != f or problem.plan_violations_units(sol.level_units, plan.types):
        raise AssertionError("constrained exact: incumbent does not re-score as recorded")
    if bound is not None and bound > f:
        raise AssertionError(f"constrained exact: bound {bound} above a feasible plan's value {f}")
    status = Status.OPTIMAL if proven and bound == f else Status.FEASIBLE
    return Solution("exact", status, plan, f, bound, sol.level_units, wall, info)
