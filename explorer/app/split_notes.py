"""The notes of a split report (``app.split``): why a run ended as it did where the status alone
does not say (a routed default, a stopped or refused solver, no limit suggested)."""

from __future__ import annotations

from ..core.kinds import FreeAlphas
from ..core.names import given_as
from ..core.network import Network
from ..core.solution import Status
from ..core.split_rules import SplitRules
from ..solvers.deadline import Cut
from .results import Explanation
from .run import EXACT_SHARE
from .split_solve import PROVING_SOLVERS

# an early end's bound (``solvers.uneven_bound``), in words
SEPARABLE = "bound: each layer's least columns, summed side by side, the edges left out (solvers.uneven_bound)"
# the same under the time objective where the convex combination of the step time's pieces is higher
CONVEX = ("bound: a convex combination of the step time's pieces, each layer's least column under it, the edges "
          "left out (solvers.uneven_bound.convex_bound)")


# why a heuristic's plan (--split proportional, search, levels; --solver dp) is unproven, as the proven routes say their bound
HEURISTIC = "a heuristic, no bound"


def heuristic_note(name: str) -> str:
    """A heuristic route's note where nothing else is said (e.g. 'search: a heuristic, no bound')."""
    return f"{name}: {HEURISTIC}"


def bound_words(info: dict) -> str:
    """'; ' and which bound an early end's plan has ('' where none of the columns' bounds was done)."""
    if not info.get("separable_bound"):
        return ""
    return f"; {CONVEX if info.get('convex_bound') else SEPARABLE}"


def seed_end_note(info: dict, status: Status) -> str:
    """How the exact Pareto DP ended early with a plan, the same words under ``explore --split`` and
    ``explore check --uneven`` ('' where it did not): at once (its column pairs' least time,
    ``info["ended_at_once"]``, more than the limit leaves) or early (its column tables' measured
    pace, ``info["ended_early"]``): the best seed plan, proven optimal where it meets the bound
    (under traffic its traffic proven least, ``info["meets"]``: the tie to the least step time
    unsettled), and the separable bound where it was done (``info["separable_bound"]``)."""
    if info.get("ended_early"):
        why = f"ended early: {info['ended_early']}"
    elif info.get("ended_at_once"):
        why = f"ended at once: {info['ended_at_once']}, beyond what the time limit leaves"
    else:
        return ""
    return f"{why}: the best seed plan, {_seed_verdict(info, status)}" + bound_words(info)


def _seed_verdict(info: dict, status: Status) -> str:
    """Whether a plan in hand (a seed plan, an incumbent) is proven: optimal where it meets the bound;
    under traffic, a plan meeting the bound (``info["meets"]``) has the least traffic, but which plan of
    that traffic has the least step time is not settled (status feasible)."""
    if status is Status.OPTIMAL:
        return "proven optimal: it meets the bound"
    if info.get("meets"):
        return ("its traffic meets the bound, so it is proven least; the tie to the least step time is not "
                "settled: not proven optimal")
    return "not proven optimal"


def joined(*notes) -> str:
    """The non-empty notes, '; '-joined."""
    return "; ".join(n for n in notes if n)


def wider_space_note(aspace, status: Status) -> str:
    """A proven infeasible run's proof is relative to its declared alpha space: where ``--free
    unlike`` fixed some class of groups at 1/2 (identical subtrees), ``--free all`` declares a
    larger space that may hold a plan ('' otherwise)."""
    if status is not Status.INFEASIBLE or aspace is None or aspace.free is not FreeAlphas.UNLIKE:
        return ""
    if all(all(row) for row in aspace.class_free):
        return ""
    f = given_as("--free")
    return (f"; the proof holds in the declared space ({f} unlike fixes splits between identical subtrees at "
            f"1/2): {f} all frees every class of groups, a larger space that may hold a plan")


def no_suggestion(network: Network, rules: SplitRules, status: Status, why: Explanation | None) -> str:
    """Why a run without a plan under a cap or a memory limit suggests no smallest feasible one
    ('' where it does, or where no such limit was given): no proof, or its search found none."""
    from ..solvers.uneven import is_path

    c = rules.constraints
    if not rules.couples_layers or (why is not None and why.suggestion) or status not in (Status.UNKNOWN, Status.INFEASIBLE):
        return ""
    if status is Status.UNKNOWN and not (c.caps or c.memory_set):  # no cap or memory given: nothing to suggest
        return ""
    if status is Status.UNKNOWN:
        return "; no smallest feasible cap or memory is suggested: that follows a proof that no plan keeps to them"
    return "; no smallest feasible cap or memory is suggested: " + (
        "its search takes chains only" if not is_path(network) else (why.note if why is not None and why.note else
        "its search proved none within its time and state limits (or no one limit's change admits a plan)"))


def cut_note(name: str, time_limit_s: float | None, cut: Cut | None, evaluations: int = 0,
             share_s: float | None = None) -> str:
    """Why a heuristic's plan is its best so far ('' when it ran to its end): ``cut``, its
    ``info["cut"]`` (what its deadline cut), ``evaluations`` its ``info["explored"]``; ``share_s``:
    the seconds of ``time_limit_s`` it was given (``explore check``'s rows share the limit)."""
    if cut is None:
        return ""
    limit = " the time limit" if time_limit_s is None else f" the time limit ({time_limit_s:g} s)"
    if share_s is not None and time_limit_s is not None:
        limit = f" its share of the time limit ({share_s:.1f} s of {time_limit_s:g} s)"
    more = f"{given_as('--time-limit')} gives it more"
    if cut is Cut.LEVEL_DP:
        return (f"{name}: the level DP was cut at{limit}: the equal split stands in for its plan, "
                f"no proof ({more}; a coarser {given_as('--alpha-grid')} gives it fewer candidates)")
    if cut is Cut.BLOCK_MOVES:
        return f"{name}: the block moves were cut at{limit}: the best plan so far, no proof ({more})"
    counted = f"{evaluations} evaluation" + ("" if evaluations == 1 else "s")
    return f"{name}: cut at{limit} after {counted}: the best plan so far, no proof ({more})"


def no_plan_note(solver: str | None, status: Status, time_limit_s: float, info: dict) -> str:
    why, by = info.get("reason", ""), info.get("proved_by") or ""
    if status is Status.INTERRUPTED:
        return f"{solver}: {why or 'stopped by Ctrl-C'}"
    if status is Status.INFEASIBLE and solver == "cpsat" and by.startswith("exact:"):
        return (f"cpsat: no plan of the declared space keeps to every pin, forbid, cap and memory limit (proven by "
                f"the exact constrained path, {by}, " + ("which answered alone: " + why if info.get("alone") else
                                                          "run first") + ")")
    if status is Status.UNKNOWN and info.get("alone") and info.get("exact_reason"):  # ended before the limit
        return (f"cpsat: no plan and no proof: {why}: the exact constrained path ran alone and ended: "
                f"{info['exact_reason']}")
    if status is Status.UNKNOWN and info.get("alone"):
        return (f"cpsat: no plan and no proof within the time limit ({time_limit_s:g} s; {given_as('--time-limit')} "
                f"gives more): {why}: the exact constrained path ran alone")
    if status is Status.UNKNOWN and why:  # the solver ended at once, saying why (exact: its column pairs)
        return f"{solver}: no plan and no proof within the time limit: {why}"
    if status is Status.UNKNOWN:
        return f"{solver}: no plan and no proof within the time limit ({time_limit_s:g} s; {given_as('--time-limit')} gives more)"
    return (f"{solver}: no plan of the declared space keeps to every pin, forbid, cap and memory limit (proven"
            + (f": {why})" if why else ")"))


def proof_note(solver: str | None, status: Status, time_limit_s: float, info: dict) -> str:
    """A proving solver's answer where it is not the obvious: stopped with a plan (status
    feasible: unproven, and why: the time limit, or the exact labels' state limit, which more time
    does not lift), or the uneven cpsat's answer proven by the exact path it ran first."""
    by = info.get("proved_by") or ""
    if status is Status.INTERRUPTED:
        return f"{solver}: {info.get('reason') or 'stopped by Ctrl-C'}"
    if info.get("even"):  # --split equal: the even solver's own words, as explore without --split
        return f"{solver}: {info['reason']}" if info.get("reason") else ""
    if info.get("memory_end") and status in (Status.FEASIBLE, Status.OPTIMAL):  # past its memory guard: the plan in hand
        by_exact = (f"cpsat: {info['reason']}: the exact constrained path answered alone: " if solver == "cpsat"
                    and info.get("alone") else f"{solver}: ")
        return (by_exact + f"{info['memory_end']} (a coarser {given_as('--alpha-grid')} has fewer columns): the best "
                f"plan in hand (its incumbent or a seed plan), {_seed_verdict(info, status)}" + bound_words(info))
    if solver == "cpsat" and info.get("alone") and (ended := seed_end_note(info, status)):
        return f"cpsat: {info['reason']}: the exact constrained path answered alone and {ended}"
    if solver == "cpsat" and info.get("alone"):  # refused by its count: the exact path had the whole limit
        return (f"cpsat: {info['reason']}: the exact constrained path's answer, with the whole time limit"
                + (f" (proven by {by})" if status in (Status.OPTIMAL, Status.INFEASIBLE) else
                   f", not proven optimal ({given_as('--time-limit')} gives it more)" + (f"; bound by {by}" if by else "")))
    if solver == "cpsat" and by.startswith("exact:") and info.get("exact_first") == status.value and \
            status in (Status.OPTIMAL, Status.INFEASIBLE):  # a proof; feasible: the exact path's plan, unproven
        return (f"cpsat: proven by the exact constrained path ({by}), run first within {EXACT_SHARE:.0%} of the time "
                "limit (the uneven cpsat always does: each kind's memory is a rule); CP-SAT was not needed")
    if solver == "cpsat" and by.startswith("exact:") and status is Status.OPTIMAL:
        return (f"cpsat: the plan meets the bound the exact constrained path ({by}) proved before CP-SAT ran: "
                "optimal by the two together")
    if solver in PROVING_SOLVERS and status is Status.OPTIMAL and (ended := seed_end_note(info, status)):
        return f"{solver}: {ended}"  # an early end whose seed plan meets the bound: proven all the same
    if solver not in PROVING_SOLVERS or status is not Status.FEASIBLE:
        return ""
    if info.get("reason", "").startswith("CP-SAT refused"):
        return (f"cpsat: {info['reason']}: the exact constrained path's plan, stopped at its share of the time limit "
                f"({EXACT_SHARE:.0%}), not proven optimal ({given_as('--time-limit')} gives it more)")
    if "state limit" in info.get("method", ""):
        return (f"{solver}: the exact labels outgrew their state limit: the best plan found, not proven optimal (a "
                f"coarser {given_as('--alpha-grid')} makes the space smaller; {given_as('--time-limit')} does not lift the state limit)")
    if ended := seed_end_note(info, status):  # exact's Pareto DP ended at once or early: its best seed plan
        return f"{solver}: {ended}"
    return (f"{solver}: stopped at the time limit ({time_limit_s:g} s): the best plan found so far, not proven "
            f"optimal ({given_as('--time-limit')} gives more)" + (f"; bound by {by}" if by else ""))
