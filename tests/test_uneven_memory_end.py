"""The uneven exact DP's memory guard, tripped after its columns are built (the live Pareto states,
the column tables as Python ints), returns the plan in hand: FEASIBLE, the best of its greedy
incumbent and the seed plans re-scored by ``evaluate_split``, with a proven bound (the separable
one, or the last complete fronts'), never OPTIMAL unless proven; with no plan in hand, and up
front (before any column, as the even ``exact``'s ``check_size``), the one-line refusal."""

from __future__ import annotations

import random

import pytest

from explorer.app.split_notes import proof_note
from explorer.app.split_solve import proof_info
from explorer.core.errors import Refused
from explorer.core.evaluate import evaluate_split
from explorer.core.objective import Objective
from explorer.core.plan import Plan
from explorer.core.solution import Status
from explorer.core.uneven import proportional_plan
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.uneven import MemoryLimit, _chain_columns, exact_uneven, table_sides
from explorer.solvers.uneven_prune import memory_estimate

from .test_split_rules import _random_case


def _seeds(net, arr, aspace, plan: Plan) -> list[Plan]:
    """Two seed plans of brute force's types: the equal split's and the proportional split's."""
    return [p for p in (Plan.even(plan), proportional_plan(net, arr, plan)) if aspace.contains(p)]


def _best_seed(net, arr, rules, seeds):
    """(value, plan) of the seed of least objective value keeping to ``rules``, each re-scored."""
    scored = [(evaluate_split(net, arr, p, rules.weight_copies), p) for p in seeds]
    kept = [(rules.value(ev), p) for ev, p in scored if not rules.side_constrained or rules.feasible(ev, arr, p)]
    return min(kept, key=lambda s: s[0], default=None)


def _limit(net, arr, space, aspace, rules, prune: bool) -> int:
    """A limit that the columns (and, pruning, the column tables) pass but the first live state does not."""
    _H, _L, costs, cols = _chain_columns(net, arr, space, aspace, "exact", rules=rules)
    copies = 2 if rules.objective is Objective.TRAFFIC else 1
    return memory_estimate(cols, costs.layout.size, 0, copies, table_sides(costs.layout) if prune else 0) + 1


def test_a_memory_end_in_the_pareto_states_returns_the_best_seed_with_a_bound_on_random_chains():
    """Without pruning (no incumbent): the plan is the best seed's, re-scored; the bound is at most
    brute force's optimum; no seed within the rules: the refusal, one line."""
    rng = random.Random(2020)
    seen = {"feasible": 0, "refused": 0, "traffic": 0, "gap": 0}
    for k in range(40):
        net, arr, space, aspace, rules = _random_case(rng, k)
        brute = brute_split(net, arr, space, aspace, rules=rules)
        if brute.status is Status.INFEASIBLE:
            continue
        seeds = _seeds(net, arr, aspace, brute.plan)
        best = _best_seed(net, arr, rules, seeds)
        limit = _limit(net, arr, space, aspace, rules, prune=False)
        if best is None:
            with pytest.raises(MemoryLimit, match=r"Pareto states, beyond its limit of"):
                exact_uneven(net, arr, space, aspace, max_bytes=limit, rules=rules, prune=False, seeds=seeds)
            seen["refused"] += 1
            continue
        sol = exact_uneven(net, arr, space, aspace, max_bytes=limit, rules=rules, prune=False, seeds=seeds)
        assert sol.info["memory_end"].startswith("the exact DP stopped at its memory limit: it would need about")
        assert (sol.split_value, sol.plan) == best, k
        assert sol.split_value == rules.value(evaluate_split(net, arr, sol.plan, rules.weight_copies))
        assert sol.split_bound is not None and sol.split_bound <= brute.split_value <= sol.split_value, k
        proven = rules.objective is Objective.TIME and sol.split_bound >= sol.split_value
        assert sol.status is (Status.OPTIMAL if proven else Status.FEASIBLE), k
        seen["feasible"] += 1
        seen["traffic"] += rules.objective is Objective.TRAFFIC
        seen["gap"] += sol.split_bound < sol.split_value
        with pytest.raises(MemoryLimit, match=r"Pareto states, beyond its limit of"):  # no plan in hand
            exact_uneven(net, arr, space, aspace, max_bytes=limit, rules=rules, prune=False)
    assert all(seen.values()), seen


def test_a_memory_end_after_the_incumbent_keeps_it_or_a_better_seed_and_the_fronts_bound():
    """Pruning: the guard trips in the Pareto DP after the greedy incumbent: a plan even without seeds
    (the incumbent, re-scored), never worse than the best seed, the bound at most brute force's."""
    rng = random.Random(77)
    ended = 0
    for k in range(40):
        net, arr, space, aspace, rules = _random_case(rng, k)
        if rules.objective is Objective.TRAFFIC:
            continue
        brute = brute_split(net, arr, space, aspace, rules=rules)
        if brute.status is Status.INFEASIBLE:
            continue
        limit = _limit(net, arr, space, aspace, rules, prune=True)
        seeds = _seeds(net, arr, aspace, brute.plan)
        try:
            alone = exact_uneven(net, arr, space, aspace, max_bytes=limit, rules=rules)
        except Refused:  # the greedy incumbent found no plan within the rules
            continue
        sol = exact_uneven(net, arr, space, aspace, max_bytes=limit, rules=rules, seeds=seeds)
        for s in (alone, sol):
            assert s.split_value == rules.value(evaluate_split(net, arr, s.plan, rules.weight_copies)), k
            assert s.split_bound <= brute.split_value <= s.split_value, k
            assert s.status is (Status.OPTIMAL if s.split_bound == s.split_value else Status.FEASIBLE), k
        best = _best_seed(net, arr, rules, seeds)
        assert best is None or sol.split_value <= best[0]
        assert sol.split_value <= alone.split_value
        ended += "memory_end" in alone.info
    assert ended >= 5


def test_python_int_tables_past_the_limit_return_the_seed_and_up_front_still_refuses(mix4):
    """The Python-int tables' guard (``_Run.python_ints``; trial 13's at 1/16) with a seed: the seed,
    feasible, with the separable bound and the note that says how many MiB the DP would need; a
    limit below the columns' own least estimate refuses at once, seeds or not."""
    from .test_tables_pace import _instance

    net, arr, aspace, (_H, _L, _costs, _cols) = _instance(mix4)
    from explorer.core.partition import Space
    from explorer.solvers.uneven_levels import levels_uneven

    seed = levels_uneven(net, arr, Space.ACCPAR, aspace, name="dp").plan
    sol = exact_uneven(net, arr, Space.ACCPAR, aspace, max_bytes=15 * 2**20, seeds=[seed])
    assert sol.status is Status.FEASIBLE and sol.plan == seed
    assert sol.split_value == evaluate_split(net, arr, seed).step_time_s
    optimum = exact_uneven(net, arr, Space.ACCPAR, aspace, max_bytes=30 * 2**20).split_value
    assert sol.info["separable_bound"] and sol.info["convex_bound"] and sol.split_bound <= optimum < sol.split_value
    assert sol.info["memory_end"] == ("the exact DP stopped at its memory limit: it would need about 23 MiB, beyond "
                                      "its limit of 15 MiB")
    note = proof_note("exact", sol.status, 30.0, proof_info("exact", sol))
    assert note.startswith("exact: the exact DP stopped at its memory limit: it would need about 23 MiB")
    assert "not proven optimal; bound: a convex combination of the step time's pieces" in note
    info = dict(proof_info("exact", sol), alone=True, reason="CP-SAT refused the instance (too many columns)")
    assert proof_note("cpsat", sol.status, 30.0, info).startswith(  # --solver cpsat, the exact path alone
        "cpsat: CP-SAT refused the instance (too many columns): the exact constrained path answered alone: the "
        "exact DP stopped at its memory limit: it would need about 23 MiB")
    with pytest.raises(Refused, match=r"columns, at least .* MiB before any table, beyond its limit of 0 MiB"):
        exact_uneven(net, arr, Space.ACCPAR, aspace, max_bytes=100, seeds=[seed])


def test_a_memory_end_in_the_second_traffic_pass_keeps_the_least_traffic_the_first_proved(monkeypatch):
    """Traffic: the guard trips in the second Pareto pass (ties to the least step time): the plan has
    brute force's least traffic and that is the bound (the first pass proved it), not the separable one."""
    from explorer.solvers import uneven

    real, calls = uneven._pareto_dp, []

    def second_trips(*a, **k):
        calls.append(0)
        if len(calls) == 2:
            raise MemoryLimit("exact (uneven splits): the second pass's states", 2, 1)
        return real(*a, **k)

    monkeypatch.setattr(uneven, "_pareto_dp", second_trips)
    rng, ended = random.Random(31), 0
    for k in range(24):
        net, arr, space, aspace, rules = _random_case(rng, k)
        if rules.objective is not Objective.TRAFFIC:
            continue
        brute = brute_split(net, arr, space, aspace, rules=rules)
        if brute.status is Status.INFEASIBLE:
            continue
        calls.clear()
        sol = exact_uneven(net, arr, space, aspace, rules=rules)
        assert len(calls) == 2 and sol.info["memory_end"].startswith("the exact DP stopped at its memory limit"), k
        assert sol.split_value == rules.value(evaluate_split(net, arr, sol.plan, rules.weight_copies)), k
        assert sol.split_value == sol.split_bound == brute.split_value and sol.status is Status.FEASIBLE, k
        ended += 1
    assert ended >= 3
