"""The smallest feasible cap of a level below the top on the uneven path (trial 10, finding 2:
``--cap 1=4MB`` on sfc / mix-4 got no suggestion although ``--cap 1=4.5MB`` admits a plan; the
Pareto search behind it ran out of time and states on the four sides of level 1)."""

from __future__ import annotations

from fractions import Fraction

from explorer.core.constraints import Cap, Constraints
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.solution import Status
from explorer.core.split_rules import SplitRules, leaf_memory_limits
from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers import uneven_least
from explorer.solvers.uneven_constrained import constrained_uneven

from .conftest import MIX4


def _rules(arr, level: int, cap_bytes) -> SplitRules:
    return SplitRules(Objective.TIME, Constraints(caps=(Cap(level, Fraction(cap_bytes)),)), leaf_memory_limits(arr, None))


def test_the_smallest_feasible_cap_of_level_1_is_found_and_exact(tmp_path, monkeypatch):
    path = tmp_path / "mix-4.yaml"
    path.write_text(MIX4)
    net, arr = load_model("sfc"), load_array(str(path))
    aspace = alpha_space(arr, alpha_grid(4), FreeAlphas.UNLIKE, proportional=True)
    # the exact pass keeps only partial plans below a first plan's value: a few thousand states
    # (16 per column); without that bound the four sides' Pareto fronts outgrow this limit
    monkeypatch.setattr(uneven_least, "MAX_STATES", 5000)
    least = uneven_least.least_limits(net, arr, Space.ACCPAR, aspace, _rules(arr, 1, 4_000_000), 120.0)
    cap = next(x for x in least if x.level == 1)
    assert cap.need_bytes == 4_397_568 and cap.alone
    for cap_bytes, status in ((cap.need_bytes, Status.OPTIMAL), (cap.need_bytes - 1, Status.INFEASIBLE)):
        sol = constrained_uneven(net, arr, Space.ACCPAR, aspace, time_limit_s=120, rules=_rules(arr, 1, cap_bytes))
        assert sol.status is status, (cap_bytes, sol.status)


def test_no_suggestion_says_why_per_limit():
    """Where the search gives up, the sentence names the limit and the reason (time, states, or no
    value of it alone admits a plan), not one sentence for every case."""
    from explorer.app.split_notes import no_suggestion as _no_suggestion
    from explorer.app.results import Explanation
    from explorer.solvers.uneven_least import LeastLimit, gave_up_text as _gave_up

    least = [LeastLimit(0, None, False, "time"), LeastLimit(1, None, False, "states"), LeastLimit(None, None, False, "none")]
    note = _gave_up(least, 30.0)
    assert note == ("cap at level 0: its search ran out of time (the 30 s the run's --time-limit left it, shared by the "
                    "limits; a longer --time-limit gives more); cap at level 1: its search outgrew its state limit (200,000 Pareto states a layer); "
                    "memory: no value of it alone admits a plan (the other rules conflict with it)")
    assert _gave_up([LeastLimit(1, Fraction(5), True)], 30.0) is None
    assert _gave_up(least[:1], 8.4, 10.0) == ("cap at level 0: its search ran out of time (the 8.4 s the run's 10 s "
                                              "limit left it, shared by the limits): try --time-limit 30")
    net, arr = load_model("sfc"), load_array("tpu-mix-16")
    text = _no_suggestion(net, _rules(arr, 1, 1), Status.INFEASIBLE, Explanation(None, None, note))
    assert text == "; no smallest feasible cap or memory is suggested: " + note
