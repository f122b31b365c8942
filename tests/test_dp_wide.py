"""The DP's levels too wide for its elimination go to CP-SAT (issue 23, item 4): the same level costs."""

import random

import pytest

from explorer.app.run import run
from explorer.core.array import synthetic_array
from explorer.core.comm import advance, zero_counts
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions, Status
from explorer.frontends import load_model
from explorer.solvers import dp


@pytest.mark.parametrize("model", ["resnet18", "gpt2-small", "mobilenet-v2"])
def test_a_level_by_cpsat_costs_what_the_elimination_finds(model):
    """At random count vectors, each level's optimum by CP-SAT equals the frontier elimination's."""
    p = Problem(load_model(model), synthetic_array(4), Space.ACCPAR)
    rng, counts = random.Random(3), zero_counts(p.num_layers)
    for h in range(p.levels):
        row, cost = dp.graph_level(p, h, counts)
        wide_row, wide_cost, proven = dp._level_by_cpsat(p, h, counts, None, 0)
        assert proven and wide_cost == cost
        assert all(t in p.allowed(h, n) for n, t in enumerate(wide_row))
        counts = advance(counts, [rng.choice(p.allowed(h, n)) for n in range(p.num_layers)])


def test_dp_with_every_level_too_wide_is_labelled_and_rescored(monkeypatch):
    p = Problem(load_model("resnet18"), synthetic_array(3), Space.ACCPAR)
    plain = dp.solve(p)
    monkeypatch.setattr(dp, "MAX_FRONTIER_STATES", 2)
    assert sorted(dp.wide_levels(p)) == [0, 1, 2]
    result = run(p, "dp", SolveOptions())  # the evaluator re-scores the plan
    assert result.status is Status.LEVEL_OPTIMAL
    assert result.reason.startswith("levels 0, 1, 2 solved by CP-SAT") and result.reason.endswith("each proven optimal")
    assert result.level_cost_units[0] == plain.level_units[0]  # level 0: same counts, same optimum
