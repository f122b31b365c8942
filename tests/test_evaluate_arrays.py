"""The evaluator's numpy pass (large networks, core/evaluate_arrays.py) gives exactly the figures of
its per-layer loop and of the rational reference, and steps aside where int64 could overflow."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

import explorer.core.evaluate as E
import explorer.core.evaluate_arrays as EA
from explorer.core import thresholds
from explorer.app.baselines import baseline_plan
from explorer.app.request import build_problem
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.randnet import random_dag_spec
from explorer.frontends.network_yaml import load_network_text, parse_network

from .conftest import make_array, numpy_from

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from bench_whole_runs import chain_spec  # noqa: E402


@pytest.fixture(autouse=True)
def _numpy_from(monkeypatch):
    numpy_from(monkeypatch)  # this module's long chains take the numpy paths


def random_plan(rng: random.Random, problem) -> Plan:
    table = problem.types_by_layer
    return Plan(tuple(tuple(rng.choice(sorted(table[n][h], key=str)) for n in range(problem.num_layers))
                      for h in range(problem.levels)))


def problems():
    yield build_problem(load_network_text(chain_spec(1, 300, batch=3)), make_array(6), space="accpar")
    yield build_problem(parse_network(random_dag_spec(2, 200, batch=2), "dag"), make_array(5), space="accpar")
    yield build_problem("llama-7b", "array-1024", space="accpar")  # attention heads limit type II per level
    yield build_problem(parse_network(random_dag_spec(3, 150, batch=1), "dag"), make_array(4), space="hypar")
    # ten levels (the whole-runs bench's array-1024): counts keys of up to ten per type
    yield build_problem(parse_network(random_dag_spec(4, 130, batch=2), "dag"), make_array(10), space="accpar")


def loop_amounts(problem, plan, copies):
    net, H = problem.network, problem.levels
    return E._amounts(net, E._network_facts(net), plan, E._coefficients(4 * 2**H, net.batch, H), copies)


@pytest.mark.parametrize("k", range(5))
def test_numpy_pass_equals_the_loop_and_the_reference(k):
    problem = list(problems())[k]
    net = problem.network
    assert E._network_facts(net).arrays is not None, "the network should take the numpy pass"
    rng = random.Random(k)
    plans = [random_plan(rng, problem) for _ in range(3)] + [baseline_plan(problem, "trick")]
    for i, plan in enumerate(plans):
        copies = i % 3
        ev = E.evaluate(net, problem.array, problem.space, plan, copies)
        assert (ev.intra_units, ev.inter_units, ev.footprint_units, ev.final_counts) == \
            tuple(tuple(x) if j == 3 else x for j, x in enumerate(loop_amounts(problem, plan, copies)))
        if i == 0:
            assert ev == E.evaluate_rational(net, problem.array, problem.space, plan, copies)


def test_overflow_risk_falls_back_to_python_integers(monkeypatch):
    problem = next(problems())
    plan = random_plan(random.Random(5), problem)
    net = problem.network
    want = E.evaluate(net, problem.array, problem.space, plan)
    facts = E._network_facts(net)
    coeff = E._coefficients(4 * 2**problem.levels, net.batch, problem.levels)
    monkeypatch.setattr(EA, "_LIMIT", 2**20)  # every product now "might overflow"
    assert E._amounts_arrays(facts, plan, coeff, 0) is None
    assert E.evaluate(net, problem.array, problem.space, plan) == want


def test_small_networks_never_import_the_numpy_pass():
    net = load_network_text(chain_spec(4, thresholds.NUMPY_FROM_LAYERS - 1))
    assert E._network_facts(net).arrays is None


def test_plan_codes_refuse_a_foreign_entry():
    with pytest.raises(ValueError):
        EA.plan_codes(((object(),),), E._CODE)
    assert Space.ACCPAR.types  # the codes cover every type of the widest space
    assert EA.plan_codes((Space.ACCPAR.types,), E._CODE).reshape(-1).tolist() == [E._CODE[id(t)] for t in Space.ACCPAR.types]
