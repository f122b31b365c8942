"""A run evaluates each plan once (the solver's and the baselines), and what it reports is what the
evaluator gives: the DP's own level costs are passed on, not summed again, and the evaluator's
re-score still rejects a wrong claim."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import explorer.app.results as results
import explorer.solvers.dp as dp
from explorer.app.baselines import BASELINES, baseline_plan
from explorer.app.request import build_problem
from explorer.app.run import EvaluatorMismatch, run
from explorer.core.costs import plan_level_units
from explorer.core.evaluate import evaluate
from explorer.frontends.network_yaml import load_network_text

from .conftest import TEST_NUMPY_FROM, numpy_from

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from bench_whole_runs import chain_spec  # noqa: E402


def problems():
    yield build_problem("sconv", "hypar-16")  # convolutions only: the trick is all-I
    yield build_problem("resnet50", "hypar-16", space="accpar")
    yield build_problem(load_network_text(chain_spec(5, 300)), "array-1024", space="accpar")


@pytest.mark.parametrize("vectorised", [True, False], ids=["numpy", "python"])
@pytest.mark.parametrize("k", range(3))
def test_the_dp_reports_the_costs_the_tables_and_the_evaluator_give(k, vectorised, monkeypatch):
    numpy_from(monkeypatch, TEST_NUMPY_FROM if vectorised else 10**6)  # the 300-layer chain: both paths
    problem = list(problems())[k]
    sol = dp.solve(problem)
    assert list(sol.level_units) == plan_level_units(problem.tables, sol.plan.types)
    ev = evaluate(problem.network, problem.array, problem.space, sol.plan)
    assert [problem.tables.to_elements(u) for u in sol.level_units] == list(ev.level_cost)


def test_a_wrong_claim_of_the_dp_is_caught(monkeypatch):
    problem = next(problems())
    real = dp._hierarchical

    def off_by_one(*args, **kwargs):
        plan, units, unproven = real(*args, **kwargs)
        return plan, [units[0] + 1] + units[1:], unproven

    monkeypatch.setattr(dp, "_hierarchical", off_by_one)
    with pytest.raises(EvaluatorMismatch, match="level costs"):
        run(problem, "dp")


@pytest.mark.parametrize("k", range(3))
def test_each_plan_is_evaluated_once_and_reported_as_the_evaluator_scores_it(k, monkeypatch):
    problem = list(problems())[k]
    calls = []
    monkeypatch.setattr(results, "evaluate", lambda *a, **kw: calls.append(a[3]) or evaluate(*a, **kw))
    result = run(problem, "dp")
    plans = [result.plan] + [baseline_plan(problem, name) for name in BASELINES]
    distinct = [p for i, p in enumerate(plans) if p not in plans[:i]]
    assert calls == distinct
    if k == 0:
        assert len(distinct) < len(plans), "sconv's trick should be its all-I plan"
    monkeypatch.undo()
    assert result.figures == results.plan_figures(problem, result.plan)[1]
    for (name, figs), plan in zip(result.baselines, plans[1:]):
        assert figs == results.plan_figures(problem, plan)[1], name
