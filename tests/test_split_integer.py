"""The uneven split in integers (issue 20, item 1): the solvers' integer table
(``core.split_costs``) and the evaluator's integer pass (``evaluate_split``) against the Fraction
reference (``evaluate_split_rational``), on seeded random networks, arrays and plans."""

from __future__ import annotations

import math
import random
from fractions import Fraction as F
from itertools import product

from explorer.core.array import AcceleratorKind, ArraySpec
from explorer.core.evaluate import evaluate_split, evaluate_split_rational
from explorer.core.network import Layer, LayerKind, Network
from explorer.core.partition import PartitionType, Space
from explorer.core.plan import Plan
from explorer.core.randnet import random_chain, random_dag_spec
from explorer.core.split_costs import SplitCosts, VectorLayout
from explorer.core.uneven import alpha_grid, alpha_space, check_plan, round_to_whole_units
from explorer.frontends.network_yaml import parse_network
from explorer.solvers.uneven import _columns, _columns_plan

from .conftest import random_attention_spec

I, II = PartitionType.I, PartitionType.II


def _mix(rng, H: int) -> ArraySpec:
    peaks = [rng.choice([1, 2, 3, 5, 45, 123]) for _ in range(2**H)]
    kinds = {p: AcceleratorKind(f"k{p}", F(p), F(rng.choice([1, 16]))) for p in set(peaks)}
    bw = tuple(F(rng.choice([1, 10, 70])) for _ in range(H))
    leaves = tuple(kinds[p] for p in peaks)
    return ArraySpec("mix", H, rng.choice([1, 2, 4]), bw, min(map(F, peaks)), min(k.memory_GiB for k in leaves), leaves=leaves)


def _grouped(rng, net: Network) -> Network:
    layers = list(net.layers)
    k = rng.randrange(len(layers))
    G = rng.choice([2, 3, 4, 6, 8])
    layers[k] = Layer(f"g{k}", LayerKind.CONV, G * rng.choice([1, 2]), G * rng.choice([1, 2]), (3, 3), (4, 4), (4, 4),
                      groups=G)
    return Network.chain(net.name + "-g", net.batch, layers)


def _network(rng) -> Network:
    kind = rng.choice(["chain", "graph", "attention", "attention-fan-in", "grouped"])
    seed = rng.randrange(10**6)
    if kind == "chain":
        return random_chain(seed, rng.randint(1, 6), max_channels=32, max_size=8)
    if kind == "graph":
        return parse_network(random_dag_spec(seed, rng.randint(3, 7)), "dag")
    if kind == "grouped":
        return _grouped(rng, random_chain(seed, rng.randint(1, 4), max_channels=16, max_size=4))
    return parse_network(random_attention_spec(seed, fan_in=kind == "attention-fan-in"), "att")


def _plan(rng, net: Network, H: int, space: Space, grid) -> Plan:
    """Random offered types; per level per group per layer an alpha of ``grid`` (or 1/2); whole
    groups and heads restored by ``round_to_whole_units``."""
    types = tuple(tuple(rng.choice([t for t in space.types if x.offers(t, h)]) for x in net.layers) for h in range(H))
    alphas = tuple(tuple(tuple(rng.choice(grid) for _ in net.layers) for _ in range(2**h)) for h in range(H))
    return round_to_whole_units(net, Plan(types, alphas))


def test_integer_evaluator_equals_the_fraction_reference_on_random_plans():
    """Every figure of the Evaluation, on 400 seeded plans: chains, graphs (adds, concats), attention
    and embedding nodes, grouped convs; both spaces; 1 to 3 levels of mixed kinds; per-group
    alphas from grids 1/2 .. 1/16 or proportional-like ratios (15/56); 0 to 2 weight copies."""
    rng = random.Random(2020)
    grids = [alpha_grid(n) for n in (2, 3, 4, 7, 8, 16)] + [(F(15, 56), F(41, 56), F(1, 2), F(3, 8))]
    checked = 0
    for _ in range(400):
        net, H = _network(rng), rng.choice([1, 2, 2, 3])
        arr, space = _mix(rng, H), rng.choice([Space.HYPAR, Space.ACCPAR])
        plan = _plan(rng, net, H, space, rng.choice(grids))
        check_plan(net, arr, plan)
        wc = rng.choice([0, 1, 2])
        assert evaluate_split(net, arr, plan, wc) == evaluate_split_rational(net, arr, plan, wc), net.name
        checked += 1
    assert checked == 400


def test_table_vectors_sum_to_the_fraction_reference():
    """Per plan of random columns: the table's layer and edge vectors (every edge, chains and
    graphs), summed and read in its unit, are the reference's per-group sides, per-leaf compute
    and per-leaf memory; the unit is S * D^(H+1) and every entry an integer (no floor)."""
    rng = random.Random(21)
    for _ in range(60):
        net, H = _network(rng), rng.choice([1, 1, 2])
        arr, space = _mix(rng, H), rng.choice([Space.HYPAR, Space.ACCPAR])
        aspace = alpha_space(arr, alpha_grid(rng.choice([2, 3, 4, 8])), proportional=rng.random() < 0.7)
        wc = rng.choice([0, 2])
        costs = SplitCosts(net, H, aspace.values(), VectorLayout(H, True), wc)
        D = 2
        for a in aspace.values():
            D = math.lcm(D, a.denominator)
        assert costs.unit % D ** (H + 1) == 0 and costs.D == D
        columns = _columns(net, space, aspace, H)
        if any(not c for c in columns):
            continue
        for _ in range(3):
            cols = [rng.choice(c) for c in columns]
            vecs = [costs.layer(l, c) for l, c in enumerate(cols)]  # noqa: E741
            vecs += [costs.edge(e, cols[u], cols[v]) for e, (u, v) in enumerate(net.edges)]
            assert all(isinstance(x, int) for v in vecs for x in v)
            total = [sum(x) for x in zip(*vecs)]
            ref = evaluate_split_rational(net, arr, _columns_plan(cols, H), wc)
            lay, U = costs.layout, costs.unit
            for (h, g), p in lay.pos.items():
                assert ref.group_amounts[h][g] == (F(total[p], U), F(total[p + 1], U))
            peaks = arr.leaf_peaks_TFLOPS()
            for i in range(lay.leaves):
                assert ref.leaf_compute_s[i] == F(total[i], U) / (peaks[i] * 10**12)
                assert ref.leaf_memory_bytes[i] == F(total[lay.mem + i], U) * arr.dtype_bytes


def test_table_golden_one_fc_on_one_level():
    """fc 4 -> 8, batch 2 (A(F) 8, A(W) 32, 384 training FLOPs), type I with alpha 1/4 on one level:
    D = 4, U = 4^2 = 16 units per element. Side 0 computes 1/4 of the FLOPs (96 -> 1536 units),
    side 1 3/4 (288 -> 4608); both send the whole dW (32 -> 512); side 0 holds 2 * 32 weights and
    1/4 of A(F) (66 elements -> 1056), side 1 64 + 6 (70 -> 1120)."""
    net = Network.chain("one", 2, [Layer("fc", LayerKind.FC, 4, 8)])
    costs = SplitCosts(net, 1, (F(1, 4), F(1, 2), F(3, 4)), VectorLayout(1, True))
    assert (costs.D, costs.unit) == (4, 16)
    assert costs.layer(0, ((I, (F(1, 4),)),)) == (1536, 4608, 512, 512, 1056, 1120)


def test_table_and_evaluator_agree_with_every_column_of_a_tiny_chain():
    """Exhaustively on one tiny chain and mix (every pair of columns of both layers)."""
    rng = random.Random(7)
    net = random_chain(3, 2, max_channels=8, max_size=4)
    arr = _mix(rng, 1)
    aspace = alpha_space(arr, alpha_grid(3))
    costs = SplitCosts(net, 1, aspace.values(), VectorLayout(1, True))
    columns = _columns(net, Space.ACCPAR, aspace, 1)
    for c0, c1 in product(*columns):
        total = [a + b + c for a, b, c in zip(costs.layer(0, c0), costs.layer(1, c1), costs.edge(0, c0, c1))]
        ev = evaluate_split(net, arr, _columns_plan([c0, c1], 1))
        assert ev.group_amounts[0][0] == (F(total[2], costs.unit), F(total[3], costs.unit))
