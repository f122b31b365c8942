"""A second trial's small findings: ``check --uneven`` keeps the reason of a row that has a plan
(#2); the search's cut note counts "1 evaluation" (#3)."""

from __future__ import annotations

import explorer.app.check_uneven as check_uneven_mod
from explorer.app.check_uneven import check_uneven
from explorer.app.split_notes import cut_note
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.solution import Status, split_solution
from explorer.frontends import load_array, load_model
from explorer.solvers.deadline import Cut
from explorer.solvers.uneven_levels import equal_types

WHY = ("the time limit (0.4 s left to it) ran out while the joint solver built its tables: the best of its "
       "starting plans, no bound")


def test_a_check_row_with_a_plan_keeps_the_solvers_reason(monkeypatch):
    """#2: the joint row held the equal-split plan, feasible, no bound, and an empty note (the JSON
    no ``reason``): the solver's ``info["reason"]`` was dropped for a row with a plan."""
    net, arr = load_model("lenet-c"), load_array("tpu-mix-16")
    even = Plan.even(equal_types(net, arr, Space.ACCPAR))

    def cut_joint(network, array, space, aspace, time_limit_s, rules, **passed):  # as ``uneven_joint``'s cut while building (starts=, even=)
        from explorer.core.evaluate import evaluate_split

        sol = split_solution("joint", Status.FEASIBLE, even, evaluate_split(network, array, even).step_time_s,
                             None, 0.4, 0)
        sol.info["reason"] = WHY
        return sol

    monkeypatch.setattr(check_uneven_mod, "joint_under", cut_joint)
    rows = {r.solver: r for r in check_uneven(net, arr, Space.ACCPAR, grid=4, solvers=("joint",), time_limit_s=60.0).rows}
    assert rows["joint"].status == "feasible" and rows["joint"].plan == even
    assert rows["joint"].note == WHY


def test_the_cut_note_counts_one_evaluation_in_the_singular():
    """#3: "after 1 evaluations"."""
    assert "after 1 evaluation: the best plan so far" in cut_note("search", 0.1, Cut.SEARCH, 1)
    assert "after 2 evaluations: the best plan so far" in cut_note("search", 0.1, Cut.SEARCH, 2)


def test_one_wording_per_number_rule():
    """#4: solve(memory_GiB=-1) said "must be > 0", plan_llm "must be a finite number of GiB > 0";
    solve(batch=0) "must be > 0", batch=2.5 "must be a positive integer"."""
    import pytest

    import explorer.api as api
    from explorer.core.errors import SpecError

    def said(fn, model, **kw):
        with pytest.raises(SpecError) as err:
            getattr(api, fn)(model, **kw)
        return str(err.value)

    assert said("solve", "lenet-c", memory_GiB=-1) == said("plan_llm", "gpt3-1.3b", memory_GiB=-1) == \
        "memory_GiB: must be > 0, got -1"
    assert said("plan_llm", "gpt3-1.3b", memory_GiB=float("nan")) == "memory_GiB: must be a finite number, got nan"
    for value in ("80", True):  # not a number: one checker for both (solve said 'must be a number')
        assert said("solve", "lenet-c", memory_GiB=value) == said("plan_llm", "gpt3-1.3b", memory_GiB=value) == \
            f"memory_GiB: must be a number of GiB, got {value!r}"
    assert said("solve", "lenet-c", batch=0) == "batch: must be a positive integer, got 0"
    assert said("solve", "lenet-c", batch=2.5) == "batch: must be a positive integer, got 2.5"
