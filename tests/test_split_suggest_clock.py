"""An infeasible ``--split optimal`` run's search for the smallest feasible cap or memory (trial:
AlexNet on tpu-mix-16, ``--cap 1=1MB``, 68 s at the default 10 s limit): it takes what the run's
limit leaves (the whole run within its limit), says so when that runs out, and searches only
the limits that can take part in the conflict (the kinds' own memory, which no plan can exceed,
is not searched)."""

from __future__ import annotations

import time
from fractions import Fraction

from explorer.app.split import Split, split_run
from explorer.core.constraints import Cap, Constraints
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.solution import Status
from explorer.core.split_rules import SplitRules, leaf_memory_limits
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers import uneven_least


def test_the_suggestion_search_gets_what_the_run_leaves(monkeypatch):
    given = []
    real = uneven_least.least_limits
    monkeypatch.setattr(uneven_least, "least_limits", lambda *a: given.append(a[-1]) or real(*a))
    net, arr = load_model("alexnet"), load_array("tpu-mix-16")
    t0 = time.perf_counter()
    rep = split_run(net, arr, Space.ACCPAR, Split.OPTIMAL, grid=2, time_limit_s=10.0,
                    constraints=Constraints(caps=(Cap(0, Fraction(10**7)),)))
    wall = time.perf_counter() - t0
    assert rep.status is Status.INFEASIBLE and len(given) == 1
    assert given[0] <= 10.0 - 0.1 and wall < 10.0 + 3.0, (given, wall)  # was max(limit, 30 s): 30 s
    assert rep.wall_s >= wall - 0.5  # the report's wall time includes the search


def test_a_memory_limit_no_plan_can_exceed_is_not_searched():
    net, arr = load_model("alexnet"), load_array("tpu-mix-16")
    aspace = alpha_space(arr, alpha_grid(2))
    rules = SplitRules(Objective.TIME, Constraints(caps=(Cap(0, Fraction(10**7)),)), leaf_memory_limits(arr, None))
    least = uneven_least.least_limits(net, arr, Space.ACCPAR, aspace, rules, 60.0)
    assert [x.level for x in least] == [0] and least[0].need_bytes == Fraction(1009679424, 49)  # 20,605,702.5 B: the cap only
    tight = SplitRules(Objective.TIME, rules.constraints, (Fraction(2**20),) * len(arr.leaves))  # 1 MiB: it binds
    assert [x.level for x in uneven_least.least_limits(net, arr, Space.ACCPAR, aspace, tight, 0.9)] == [0]
    assert [x.level for x in uneven_least.least_limits(net, arr, Space.ACCPAR, aspace, tight, 5.0)] == [0, None]


def test_with_too_little_left_nothing_is_searched_and_the_note_says_so():
    net, arr = load_model("alexnet"), load_array("tpu-mix-16")
    aspace = alpha_space(arr, alpha_grid(2))
    rules = SplitRules(Objective.TIME, Constraints(caps=(Cap(0, Fraction(10**7)),)), leaf_memory_limits(arr, None))
    t0 = time.perf_counter()
    least = uneven_least.least_limits(net, arr, Space.ACCPAR, aspace, rules, 0.5)
    # why == "time": nothing was searched (the wall check is loose: the shared machine's load)
    assert time.perf_counter() - t0 < 3.0 and [(x.level, x.why) for x in least] == [(0, "time")]
    assert uneven_least.gave_up_text(least, 0.5).startswith(
        "cap at level 0: its search ran out of time (the 0.5 s the run's --time-limit left it")


def test_a_limit_alone_takes_its_whole_part_and_the_note_says_what_limit_finds_more(monkeypatch):
    """Trial finding 6: under one memory limit and no other rule, the search ran out of time in half of
    what the proof left (the other half kept for a second solve that never ran); now it takes all of
    it. Run out of time, the note names the limit to give: three times the run's."""
    from explorer.app import split as split_app

    arr = load_array("tpu-mix-16")
    shares, real = [], uneven_least._least
    monkeypatch.setattr(uneven_least, "_least", lambda *a: shares.append(a[-1]) or real(*a))
    rules = SplitRules(Objective.TIME, Constraints(), (Fraction(2**20),) * len(arr.leaves))  # 1 MiB a leaf: it binds
    least = uneven_least.least_limits(load_model("alexnet"), arr, Space.ACCPAR, alpha_space(arr, alpha_grid(2)), rules, 20.0)
    assert [x.level for x in least] == [None] and len(shares) == 1 and 10.0 < shares[0] <= 20.0, shares
    note = uneven_least.gave_up_text([uneven_least.LeastLimit(None, None, False, "time")], 6.7, 10.0)
    assert note == ("memory: its search ran out of time (the 6.7 s the run's 10 s limit left it, shared by the limits): "
                    "try --time-limit 30")

    def out_of_time(*a):
        return [uneven_least.LeastLimit(x.level, None, False, "time") for x in real_least_limits(*a)]

    real_least_limits = uneven_least.least_limits
    monkeypatch.setattr(uneven_least, "least_limits", out_of_time)
    rep = split_app.split_run(load_model("alexnet"), arr, Space.ACCPAR, Split.OPTIMAL, grid=2, time_limit_s=10.0,
                              constraints=Constraints(caps=(Cap(0, Fraction(10**7)),)))
    assert rep.status is Status.INFEASIBLE and "(the " in rep.note and "run's 10 s limit left it" in rep.note, rep.note
    # the suggestion's words, then (a proof in the declared space, tpu-mix-16 under --free unlike) the wider space's
    assert "cap at level 0: its search ran out of time" in rep.note and "try --time-limit 30" in rep.note, rep.note
    rest = rep.note.split("try --time-limit 30", 1)[1]
    assert rest == "" or rest.startswith("; the proof holds in the declared space"), rep.note


def test_the_search_counts_its_tables_and_model_in_its_time(monkeypatch):
    """Its CP-SAT got the whole share after the tables and the model were built (1.4 s a table at
    load 11: a 30 s run ended at 33.8 s): with the tables taking the share, no solve starts."""
    from explorer.solvers import cpsat_run

    arr = load_array("tpu-mix-16")
    real_own, solves = uneven_least._own, []
    monkeypatch.setattr(uneven_least, "_own", lambda *a: time.sleep(1.2) or real_own(*a))
    monkeypatch.setattr(cpsat_run, "new_solver", lambda *a, **k: solves.append(k) or None)
    rules = SplitRules(Objective.TIME, Constraints(), (Fraction(2**20),) * len(arr.leaves))
    least = uneven_least.least_limits(load_model("alexnet"), arr, Space.ACCPAR, alpha_space(arr, alpha_grid(2)), rules, 2.0)
    assert [(x.level, x.why) for x in least] == [(None, "time")] and solves == []
