"""``--split search`` scores each start once and its returned plan once: the start's evaluation is
handed to the search (``split_start.scored_start`` -> ``search_level_alphas(start_scored=)``) and
the search's evaluation of its plan to the report (``Scorer.evaluation_of``), never made again;
the reports are those of the re-scoring path, figure for figure (seeded arrays of few kinds)."""

from __future__ import annotations

import random

import pytest

import explorer.app.split as split_mod
import explorer.app.split_start as start_mod
import explorer.solvers.search_scorer as scorer_mod
from explorer.app.split import Split, split_run
from explorer.app.split_start import scored_start
from explorer.core.partition import Space
from explorer.core.split_rules import TIME_ONLY
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.solvers.uneven import search_level_alphas
from explorer.solvers.uneven_levels import equal_types
from explorer.frontends import load_model

from .test_split_scale import _alternating, _few_kinds


def _spied(monkeypatch) -> list:
    """Every ``evaluate_split`` of the split run, (where, plan), in order."""
    calls: list = []
    for mod in (split_mod, start_mod, scorer_mod):
        real = mod.evaluate_split

        def spy(network, array, plan, *a, _real=real, _where=mod.__name__, **k):
            calls.append((_where, plan))
            return _real(network, array, plan, *a, **k)

        monkeypatch.setattr(mod, "evaluate_split", spy)
    return calls


def _report_json(r) -> dict:
    return {k: v for k, v in r.to_json().items() if "wall" not in k}


def _arrays():
    yield _alternating(4)
    for seed in range(8):
        rng = random.Random(seed)
        yield _few_kinds(rng, rng.randint(2, 5))


@pytest.mark.parametrize("array", list(_arrays()), ids=lambda a: f"{a.name}-{a.levels}")
def test_search_scores_its_start_and_its_plan_once(monkeypatch, array):
    net = load_model("sfc")
    with monkeypatch.context() as m:  # the re-scoring path: the search's evaluations not handed on
        m.setattr(scorer_mod.Scorer, "evaluation_of", lambda self, plan: None)
        before = split_run(net, array, Space.ACCPAR, Split.SEARCH, grid=8, time_limit_s=600.0)
    calls = _spied(monkeypatch)
    r = split_run(net, array, Space.ACCPAR, Split.SEARCH, grid=8, time_limit_s=600.0)
    assert _report_json(r) == _report_json(before)
    if not r.alpha_space.free_classes():  # one point: the equal-split plan, no search, scored by the report
        assert [where for where, _ in calls] == [split_mod.__name__]
        return
    starts = [p for where, p in calls if where == start_mod.__name__]
    assert len(starts) == 2  # the equal and the proportional start, each once
    searched = [p for where, p in calls if where == scorer_mod.__name__]
    assert not any(p == starts[0] or p == starts[1] for p in searched[:1])  # the chosen start not scored again first
    assert [where for where, _ in calls if where == split_mod.__name__] == []  # the report reuses the search's
    assert sum(p == r.plan for _, p in calls) >= 1
    last = max(i for i, (_, p) in enumerate(calls) if p == r.plan)
    assert all(p != r.plan for _, p in calls[last + 1:])


def test_the_search_counts_its_start_though_the_caller_scored_it():
    """``start_scored`` changes nothing but the work: the same plan, value and ``explored`` (the
    start counts as one evaluation, made by ``scored_start``) as the search that scores its start."""
    net, array = load_model("sfc"), _alternating(5)
    aspace = alpha_space(array, alpha_grid(8))
    start, ev = scored_start(net, array, equal_types(net, array, Space.ACCPAR), aspace, TIME_ONLY)
    handed = search_level_alphas(net, array, start, aspace, start_scored=ev)
    own = search_level_alphas(net, array, start, aspace)
    assert (handed.plan, handed.split_value, handed.explored) == (own.plan, own.split_value, own.explored)
    assert handed.explored > 1 and own.info["evaluation"] is not None
    assert handed.info["evaluation"].step_time_s == own.info["evaluation"].step_time_s == handed.split_value
