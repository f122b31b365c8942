"""``--split search``, ``--split levels`` and ``explore check --uneven``'s dp and search rows under
``--time-limit`` (trial 14, finding 2: they ran with no deadline, 82-106 s at a 5 s limit). The
search and the level DP look at their deadline inside their loops and return their best plan so
far (status feasible, ``info["cut"]``); the runs pass the limit's deadline and say the plan was cut.
No wall-clock bound is asserted: deadlines already past, a spy clock, or a spy on the deadline."""

import re
import time

import pytest

import explorer.app.check_uneven as check_uneven_mod
import explorer.app.split as split_mod
import explorer.solvers.search_scorer as search_scorer
import explorer.solvers.uneven as uneven
import explorer.solvers.uneven_levels as uneven_levels
from explorer.app.check_uneven import check_uneven
from explorer.app.split import Split, split_run
from explorer.app.split_start import search_start
from explorer.core.evaluate import evaluate_split
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.solution import Status
from explorer.core.split_rules import TIME_ONLY
from explorer.core.uneven import alpha_grid, alpha_space, proportional_plan
from explorer.frontends import load_array, load_model
from explorer.solvers.deadline import LATE, Cut, solve_end
from explorer.solvers.uneven import search_level_alphas
from explorer.solvers.uneven_levels import equal_types, levels_uneven

NET, ARR = load_model("lenet-c"), load_array("tpu-mix-16")
ASPACE = alpha_space(ARR, alpha_grid(4))
TYPES = equal_types(NET, ARR, Space.ACCPAR)
START = search_start(NET, ARR, TYPES, ASPACE)
PAST = 0.0  # a time.perf_counter() value long gone


def _step(plan: Plan):
    return evaluate_split(NET, ARR, plan).step_time_s


def test_search_past_its_deadline_returns_its_start_saying_it_was_cut():
    sol = search_level_alphas(NET, ARR, START, ASPACE, deadline=PAST)
    assert sol.status is Status.FEASIBLE and sol.plan == START
    assert sol.info["cut"] is Cut.SEARCH and sol.explored == 1  # the start alone was scored
    full = search_level_alphas(NET, ARR, START, ASPACE)
    assert "cut" not in full.info and full.explored > 1 and _step(full.plan) < _step(START)  # (the search moves here)


def test_search_cut_midway_keeps_its_best_plan_so_far(monkeypatch):
    """A spy clock: the deadline passes after k looks; no evaluation after that, the plan is the
    best found by then (at most the start's step time, at least the full search's)."""
    full = search_level_alphas(NET, ARR, START, ASPACE)
    k = full.explored // 2
    looks = []

    def spy_past(deadline):
        looks.append(deadline)
        return len(looks) > k

    monkeypatch.setattr(uneven, "past", spy_past)
    monkeypatch.setattr(search_scorer, "past", spy_past)  # (where the search's moves look)
    sol = search_level_alphas(NET, ARR, START, ASPACE, deadline=123.0)
    assert set(looks) == {123.0}
    assert sol.info["cut"] is Cut.SEARCH and sol.explored == k  # the start, a look before the rounds, then k - 1 moves
    assert sol.status is Status.FEASIBLE and sol.split_value == _step(sol.plan)
    assert _step(full.plan) <= _step(sol.plan) <= _step(START)


def test_search_past_its_deadline_scores_the_start_alone(monkeypatch):
    """Past the deadline at the start: the start scored, no round and no block set-up run."""
    monkeypatch.setattr(uneven, "refine_blocks", lambda *a, **k: pytest.fail("the blocks' set-up ran"))
    sol = search_level_alphas(NET, ARR, START, ASPACE, deadline=PAST)
    assert sol.info["cut"] is Cut.SEARCH and sol.explored == 1 and sol.plan == START


def test_levels_past_its_deadline_gives_the_equal_split_saying_the_dp_was_cut():
    sol = levels_uneven(NET, ARR, Space.ACCPAR, ASPACE, deadline=PAST)
    assert sol.status is Status.FEASIBLE and sol.info["cut"] is Cut.LEVEL_DP
    assert sol.plan == Plan.even(TYPES) and sol.step_time_s == _step(sol.plan)
    assert "cut" not in levels_uneven(NET, ARR, Space.ACCPAR, ASPACE).info


def test_levels_cut_in_its_block_moves_keeps_the_dps_plan(monkeypatch):
    """The DP ends (its own deadline checks pass), then the deadline passes before any block move:
    the plan is the better of the DP's and the equal split's without moves."""
    monkeypatch.setattr(uneven_levels, "check_deadline", lambda deadline, error: None)
    monkeypatch.setattr(uneven_levels, "past", lambda deadline: True)
    sol = levels_uneven(NET, ARR, Space.ACCPAR, ASPACE, deadline=123.0)
    assert sol.info["cut"] is Cut.BLOCK_MOVES
    monkeypatch.undo()
    assert sol.plan == levels_uneven(NET, ARR, Space.ACCPAR, ASPACE, moves=False).plan


def test_split_search_with_the_limit_spent_answers_at_once_saying_so():
    """The run's limit counts from ``started``: spent before the search began, it stops at once
    with its start (status feasible), and the note says why."""
    r = split_run(NET, ARR, Space.ACCPAR, Split.SEARCH, grid=4, time_limit_s=5.0, started=time.perf_counter() - 100)
    assert r.status is Status.FEASIBLE and r.plan == START
    assert "search: cut at the time limit (5 s) after 1 evaluation: the best plan so far" in r.note and "--time-limit gives it more" in r.note
    free = split_run(NET, ARR, Space.ACCPAR, Split.SEARCH, grid=4, time_limit_s=600.0)
    assert "cut" not in free.note and free.step_time_s < r.step_time_s


def test_split_levels_is_given_a_deadline_and_says_when_cut(monkeypatch):
    """``--split levels`` (the level DP through ``solve_by``): a deadline within what the clock
    leaves (at least its ``MIN_LEFT_SHARE``); a DP cut there gives the equal split, and the note says so."""
    seen = {}
    real = uneven_levels.levels_uneven

    def spy(*args, **kwargs):
        seen["deadline"] = kwargs.get("deadline")
        return real(*args, **dict(kwargs, deadline=PAST))

    monkeypatch.setattr(uneven_levels, "levels_uneven", spy)
    t0 = time.perf_counter()
    r = split_run(NET, ARR, Space.ACCPAR, Split.LEVELS, grid=4, time_limit_s=600.0, started=t0)
    assert t0 < seen["deadline"] <= solve_end(t0, 600.0) + (time.perf_counter() - t0)  # (what was left, from later)
    assert r.status is Status.FEASIBLE and r.plan == Plan.even(TYPES)
    assert "levels: the level DP was cut at the time limit (600 s): the equal split stands in" in r.note


def test_split_search_is_given_the_runs_deadline(monkeypatch):
    seen = {}
    real = uneven.search_level_alphas  # (split imports it where the search runs: with numpy)

    def spy(*args, **kwargs):
        seen["deadline"] = kwargs.get("deadline")
        return real(*args, **kwargs)

    monkeypatch.setattr(uneven, "search_level_alphas", spy)
    t0 = time.perf_counter()
    split_run(NET, ARR, Space.ACCPAR, Split.SEARCH, grid=4, time_limit_s=7.0, started=t0)
    assert seen["deadline"] == solve_end(t0, 7.0)


def test_check_uneven_heuristic_rows_get_a_deadline_and_say_when_cut(monkeypatch):
    """The dp and search rows each get a deadline within their share of what is left; a cut row
    keeps its plan and says it was cut; the rows after them still run."""
    seen = {}
    real_levels, real_search = check_uneven_mod.levels_uneven, check_uneven_mod.search_level_alphas

    def levels_spy(*args, **kwargs):
        seen["dp"] = kwargs.get("deadline")
        return real_levels(*args, **dict(kwargs, deadline=PAST))

    def search_spy(*args, **kwargs):
        seen["search"] = kwargs.get("deadline")
        return real_search(*args, **dict(kwargs, deadline=PAST))

    monkeypatch.setattr(check_uneven_mod, "levels_uneven", levels_spy)
    monkeypatch.setattr(check_uneven_mod, "search_level_alphas", search_spy)
    t0 = time.perf_counter()
    r = check_uneven(NET, ARR, Space.ACCPAR, 4, solvers=("dp", "search", "proportional"), time_limit_s=600.0,
                     started=t0)
    assert t0 < seen["dp"] <= t0 + 600.0 / 3 + (time.perf_counter() - t0)
    assert t0 < seen["search"] <= t0 + 600.0 / 3 + (time.perf_counter() - t0)
    rows = {row.solver: row for row in r.rows}
    # each says its share of the check's limit (a new user read "cut at the time limit" after 2.3 s of 10 s)
    share = r"its share of the time limit \((19\d|200)\.\d s of 600 s\)"
    assert re.search("dp: the level DP was cut at " + share, rows["dp"].note) and rows["dp"].plan == Plan.even(TYPES)
    assert re.search(f"search: cut at {share} after 1 evaluation: the best plan so far", rows["search"].note)
    assert rows["search"].status == Status.FEASIBLE.value and rows["proportional"].plan is not None


def test_the_joint_solvers_cheap_starts_stop_at_its_deadline(monkeypatch):
    """Under caps or memory the joint solver's starts (``uneven_joint._cheap_plans``) run the level DP
    and the search: both now get its deadline (they checked it only before starting), and a DP cut
    there gives the equal split as its start."""
    from explorer.solvers import uneven_joint

    from .test_uneven_constrained import _levels_capped

    net, arr, aspace, rules, _ = _levels_capped()
    seen = {}
    real_levels, real_search = uneven_levels.levels_uneven, uneven.search_level_alphas

    def levels_spy(*args, **kwargs):
        seen["dp"] = kwargs.get("deadline")
        return real_levels(*args, **dict(kwargs, deadline=PAST))

    def search_spy(*args, **kwargs):
        seen["search"] = kwargs.get("deadline")
        return real_search(*args, **kwargs)

    monkeypatch.setattr(uneven_levels, "levels_uneven", levels_spy)
    monkeypatch.setattr(uneven, "search_level_alphas", search_spy)
    end = time.perf_counter() + 600
    plans = uneven_joint._cheap_plans(net, arr, Space.HYPAR, aspace, rules, 10, end)
    assert seen == {"dp": end, "search": end}
    assert len(plans) == 3 and plans[1] == Plan.even(equal_types(net, arr, Space.HYPAR, rules))


def test_optimal_solver_dp_says_when_the_level_dp_was_cut(monkeypatch):
    """``--split optimal --solver dp`` is the same level DP as ``--split levels``: cut, it says so too
    (review: the note was given for levels and search only)."""
    real = uneven_levels.levels_uneven
    monkeypatch.setattr(uneven_levels, "levels_uneven", lambda *a, **k: real(*a, **dict(k, deadline=PAST)))
    r = split_run(NET, ARR, Space.ACCPAR, Split.OPTIMAL, grid=4, time_limit_s=600.0, solver="dp")
    assert r.status is Status.FEASIBLE and r.plan == Plan.even(TYPES)
    assert "dp: the level DP was cut at the time limit (600 s): the equal split stands in" in r.note, r.note


def test_the_seed_plans_level_dp_gets_what_is_left_of_the_limit(monkeypatch):
    """Issue 23 item 2 (leftover 3): the level DP's seed plan an exact run reads after its limit has
    a deadline (the run's ``solve_end``), and is not started once it has passed (the equal and proportional splits alone)."""
    from explorer.app import split_solve

    seen = []
    real = uneven_levels.levels_uneven

    def spy(*args, **kwargs):
        seen.append(kwargs.get("deadline"))
        return real(*args, **kwargs)

    monkeypatch.setattr(uneven_levels, "levels_uneven", spy)
    even, prop = Plan.even(TYPES), proportional_plan(NET, ARR, TYPES)
    assert list(split_solve.seed_plans(NET, ARR, Space.ACCPAR, ASPACE, TYPES, TIME_ONLY, PAST)) == [even, prop]
    assert seen == []  # past: not started
    later = time.perf_counter() + 600.0
    plans = list(split_solve.seed_plans(NET, ARR, Space.ACCPAR, ASPACE, TYPES, TIME_ONLY, later))
    assert plans[:2] == [even, prop] and len(plans) == 3 and seen == [later]

    given = []
    real_seeds = split_solve.seed_plans
    monkeypatch.setattr(split_mod, "seed_plans", lambda *a, **k: given.append(a[6:] + tuple(k.values())) or real_seeds(*a, **k))
    t0 = time.perf_counter()
    split_run(NET, ARR, Space.ACCPAR, Split.OPTIMAL, grid=4, time_limit_s=600.0, started=t0, solver="exact")
    (deadline, even_seed), = given  # the run's deadline, passed down with the seeds, and the even split's optimum
    assert deadline == solve_end(t0, 600.0) and len(even_seed) == 1 and even_seed[0] == Plan.even(even_seed[0])


def test_split_levels_with_the_limit_spent_is_not_run_and_says_so(monkeypatch):
    """Issue 23 item 2 (leftover 4): ``--split levels`` (and ``--solver dp``) with the limit spent
    before it does not run the level DP (it had its ``MIN_LEFT_SHARE`` and an unbounded even DP):
    the equal-split plan (the proportional one for ``--split proportional``), status feasible, and
    the note says the DP was not run; with time left it runs as before."""
    calls = []
    real = uneven_levels.levels_uneven
    monkeypatch.setattr(uneven_levels, "levels_uneven", lambda *a, **k: calls.append(1) or real(*a, **k))
    spent = time.perf_counter() - 100
    r = split_run(NET, ARR, Space.ACCPAR, Split.LEVELS, grid=4, time_limit_s=5.0, started=spent)
    assert calls == [] and r.status is Status.FEASIBLE and r.plan == Plan.even(TYPES)
    assert r.note.startswith("levels: not run: --time-limit 5 s was spent before it") and "equal-split plan" in r.note
    p = split_run(NET, ARR, Space.ACCPAR, Split.PROPORTIONAL, grid=4, time_limit_s=5.0, started=spent, solver="dp")
    assert calls == [] and p.status is Status.FEASIBLE and "dp: not run" in p.note and "proportional plan" in p.note
    free = split_run(NET, ARR, Space.ACCPAR, Split.LEVELS, grid=4, time_limit_s=600.0)
    assert calls == [1] and "not run" not in free.note


def test_one_sentinel_and_one_shape_for_a_cut():
    """The search and the level DP score a late move with the one ``deadline.LATE`` (they kept a copy
    each) and say what was cut with a ``deadline.Cut`` (it was a count, "the DP" or "the block moves")."""
    from explorer.app.split_notes import cut_note

    assert search_scorer.LATE is uneven_levels.LATE is LATE and LATE > (10.0**300,)
    notes = [cut_note("x", 5.0, cut, 7) for cut in Cut]
    assert notes == ["x: cut at the time limit (5 s) after 7 evaluations: the best plan so far, no proof "
                     "(--time-limit gives it more)",
                     "x: the level DP was cut at the time limit (5 s): the equal split stands in for its plan, no proof "
                     "(--time-limit gives it more; a coarser --alpha-grid gives it fewer candidates)",
                     "x: the block moves were cut at the time limit (5 s): the best plan so far, no proof "
                     "(--time-limit gives it more)"]
    assert cut_note("x", None, None, 7) == ""
