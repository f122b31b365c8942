"""The evaluator's integer pass equals its rational reference on random chains and graphs."""

from __future__ import annotations

import ast
import random
from fractions import Fraction
from pathlib import Path

import pytest

import explorer.core.evaluate as evaluate_module
from explorer.core.evaluate import PlanError, evaluate, evaluate_rational
from explorer.core.partition import JOIN_TYPES, PartitionType as T, Space
from explorer.core.plan import Plan
from explorer.core.randnet import random_chain, random_dag_spec
from explorer.frontends.network_yaml import parse_network

from .conftest import make_array


def random_plan(rng: random.Random, net, levels: int, space: Space) -> Plan:
    def types(layer):
        return [t for t in space.types if t in JOIN_TYPES] if layer.is_join else list(space.types)

    return Plan(tuple(tuple(rng.choice(types(x)) for x in net.layers) for _ in range(levels)))


def networks(seed: int):
    rng = random.Random(seed)
    # small tensors and batch 1: at the lower levels the amounts are fractions of an element
    yield random_chain(seed, rng.randint(1, 12), batch=rng.choice([1, 2, 3]), max_channels=5, max_size=3)
    yield parse_network(random_dag_spec(seed, rng.randint(2, 12), batch=rng.choice([1, 3])), "dag")


def compare(seed: int, space: Space) -> int:
    """Evaluate random plans both ways; return how many reached fractional elements."""
    rng = random.Random(1000 + seed)
    fractional = 0
    for net in networks(seed):
        levels = rng.randint(1, 7)
        arr = make_array(levels, dtype=rng.choice([2, 4]))
        for _ in range(3):
            plan = random_plan(rng, net, levels, space)
            copies = rng.randint(0, 2)
            fast, ref = evaluate(net, arr, space, plan, copies), evaluate_rational(net, arr, space, plan, copies)
            assert fast == ref
            assert fast.intra == ref.intra and fast.inter == ref.inter and fast.footprint_bytes == ref.footprint_bytes
            fractional += any(x.denominator > 1 for row in fast.intra + fast.inter for x in row)
    return fractional


@pytest.mark.parametrize("space", list(Space), ids=str)
def test_integer_pass_equals_rational(space):
    fractional = sum(compare(seed, space) for seed in range(30))
    assert fractional >= 10, "the random instances should reach fractional elements"


def test_fractional_elements_golden(two_layer):
    # two_layer (batch 2): A fc 4->8, B fc 8->2; plan I, I, I, then II at level 3 (H = 4).
    # Levels 0-2: intra I = weights, not halved by I: 32 + 16; inter I->I = 0  -> c = 48.
    # Level 3, counts (3, 0, 0): intra II = A(Fout)/2^3: A 16/8 = 2, B 4/8 = 1/2;
    #   inter II->II = 1/2 * A(E_B)/2^3 = 1/2 * 16/8 = 1  -> c_3 = 2 + 1/2 + 1 = 7/2.
    I, II = T.I, T.II
    plan = Plan(((I, I), (I, I), (I, I), (II, II)))
    arr = make_array(4)
    ev = evaluate(two_layer, arr, Space.HYPAR, plan)
    assert ev.intra[3] == (2, Fraction(1, 2)) and ev.inter[3] == (1,)
    assert ev.level_cost == (48, 48, 48, Fraction(7, 2))
    assert ev.traffic_elements == 48 + 2 * 48 + 4 * 48 + 8 * Fraction(7, 2)
    assert ev == evaluate_rational(two_layer, arr, Space.HYPAR, plan)


def test_plan_errors_are_the_same(three_layer):
    arr = make_array(1)
    with pytest.raises(PlanError, match="not in the hypar space"):
        evaluate(three_layer, arr, Space.HYPAR, Plan(((T.I, T.III, T.I),)))
    with pytest.raises(PlanError, match="problem needs 1 levels x 3 layers"):
        evaluate(three_layer, arr, Space.HYPAR, Plan(((T.I, T.I),)))


def test_evaluator_does_not_read_the_cost_tables():
    tree = ast.parse(Path(evaluate_module.__file__).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not any(m and m.split(".")[-1] == "costs" for m in imported), imported


def test_network_flops_and_sizes_are_each_networks_own():
    """``comm.network_flops`` and ``comm.whole_sizes`` (memoised per network, read by the problem,
    the cost tables, the evaluator and the LLM bounds) are each network's own: networks asked in
    turn, an equal copy and one of another batch never get another's figures, also past the memo's size."""
    from dataclasses import replace

    from explorer.core.comm import _FLOPS, network_flops, training_flops, whole_sizes

    nets = [random_chain(s, 3 + s, batch=1 + s % 3) for s in range(_FLOPS.size + 3)]
    nets += [replace(nets[0]), replace(nets[0], batch=nets[0].batch * 5)]
    for _ in range(2):
        for net in nets:
            assert network_flops(net) == sum(training_flops(x, net.batch) for x in net.layers)
            assert whole_sizes(net) == tuple((x.input_elements(net.batch), x.weight_elements(),
                                              x.output_elements(net.batch)) for x in net.layers)
    assert network_flops(nets[-1]) == 5 * network_flops(nets[0]) != 0
