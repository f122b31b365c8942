"""The small-chain DP without tables (issue 23): ``costs.chain_sizes`` gives the same amounts as
the cost tables at every level, the sized scans equal the reference scan (ties included), and
``dp.small_chain_levels`` equals the per-level DP (``dp_level``) wherever it applies and declines
wherever it does not."""

from __future__ import annotations

import random
from fractions import Fraction
from operator import itemgetter

import pytest

from explorer.core.array import synthetic_array
from explorer.core.comm import advance, zero_counts
from explorer.core.constraints import Constraints, Pin
from explorer.core.costs import ZERO, ChainSizes, CostTables, chain_sizes
from explorer.core.network import Layer, LayerKind, Network
from explorer.core.partition import PartitionType, Space
from explorer.core.problem import Problem
from explorer.core.randnet import random_chain
from explorer.core import thresholds
from explorer.solvers import dp

from .conftest import TEST_NUMPY_FROM, numpy_from

from .test_level_tables import reference_scan


def level_rows(data: ChainSizes, K: int):
    """The current level's intra rows and inter matrices as ``ChainSizes`` documents them."""
    s, ex = data.first
    intra, inter = [tuple(s[e] for e in ex)], []
    for s, *rest in data.steps:
        ex, get, q = rest[:K], rest[K], rest[K + 1]
        flat = get((0, (q * s[0]) >> 2))
        intra.append(tuple(s[e] for e in ex))
        inter.append(tuple(tuple(flat[a * K:(a + 1) * K]) for a in range(K)))
    return intra, inter


def per_level(problem: Problem):
    """The per-level DP (``dp_level``, the tables' path): type indices per level and c_h."""
    counts, choices, units = zero_counts(problem.num_layers), [], []
    types = problem.space.types
    for h in range(problem.levels):
        row, c = dp.dp_level(problem, h, counts, True)
        choices.append([types.index(t) for t in row])
        units.append(c)
        counts = advance(counts, row)
    return choices, units


def small_chain(seed: int) -> Network:
    """Random chains, often with tiny shapes (many equal amounts: ties in the scans)."""
    rng = random.Random(seed)
    tiny = rng.random() < 0.5
    return random_chain(seed, rng.randint(1, 14), batch=rng.choice([1, 2, 16]) if tiny else None,
                        max_channels=2 if tiny else 64, max_size=1 if tiny else 16)


@pytest.mark.parametrize("space", list(Space), ids=str)
def test_chain_sizes_give_the_tables_amounts_at_every_level(space):
    K = len(space.types)
    for seed in range(40):
        rng = random.Random(seed)
        net, H = small_chain(seed), rng.randint(1, 9)
        tables, data = CostTables(net, H, space), chain_sizes(net, H, space)
        counts = zero_counts(len(net.layers))
        for _ in range(H):
            intra, inter = level_rows(data, K)
            want = tables._level_rows_python(counts)
            assert ([list(r) for r in intra], [[list(r) for r in m] for m in inter]) == want
            choice = [rng.randrange(K) for _ in counts]
            data.halve(choice)
            counts = advance(counts, [space.types[k] for k in choice])


def random_sizes(rng: random.Random, K: int, L: int, top: int, pattern: tuple | None = None) -> ChainSizes:
    """A ``ChainSizes`` of random small amounts, exchanged positions and 0/q patterns (each
    edge its own, or ``pattern`` on every edge)."""
    sizes = [[rng.randint(0, top) for _ in range(3)] + [0] for _ in range(L)]
    ex = [tuple(rng.choice([0, 1, 2, ZERO]) for _ in range(K)) for _ in range(L)]
    steps = []
    for s, e in zip(sizes[1:], ex[1:]):
        p = pattern or tuple(rng.randint(0, 1) for _ in range(K * K))
        steps.append((s, *e, itemgetter(*p), rng.choice([0, 2, 4, 6])))
    return ChainSizes(sizes, (sizes[0], ex[0]), steps, [((0,),) * K] * L, pattern)


def check_scan(scan, K: int, pattern: tuple | None = None) -> int:
    """``scan`` against the reference scan on 600 random levels; returns how many had equal sums."""
    ties = 0
    for seed in range(600):
        rng = random.Random(seed)
        data = random_sizes(rng, K, rng.randint(1, 12), rng.choice([1, 2, 3, 10**6]), pattern)
        intra, inter = level_rows(data, K)
        assert scan(data) == reference_scan(intra, inter)
        costs = [sum(r) for r in intra] + [sum(map(sum, m)) for m in inter]
        ties += len(set(costs)) < len(costs) and len(intra) > 1
    return ties


@pytest.mark.parametrize("K", [2, 3])
def test_sized_scans_equal_the_reference_scan(K):
    assert check_scan(dp._SIZED_SCANS[K], K) > 200


@pytest.mark.parametrize("pattern", list(dp._UNIFORM_SCANS), ids=len)
def test_uniform_scans_equal_the_reference_scan(pattern):
    assert check_scan(dp._UNIFORM_SCANS[pattern], {4: 2, 9: 3}[len(pattern)], pattern) > 200


@pytest.mark.parametrize("space", list(Space), ids=str)
def test_conv_fc_chains_share_the_uniform_pattern(space):
    data = chain_sizes(random_chain(5, 6), 3, space)
    assert data.pattern in dp._UNIFORM_SCANS
    assert chain_sizes(random_chain(5, 1), 3, space).pattern is None  # no edges


@pytest.mark.parametrize("space", list(Space), ids=str)
def test_small_chain_levels_equal_the_per_level_dp(space):
    for seed in range(60):
        rng = random.Random(seed)
        problem = Problem(small_chain(seed), synthetic_array(rng.randint(1, 9)), space)
        fast = dp.small_chain_levels(problem)
        assert fast is not None
        assert fast == per_level(problem)
        plan, units = dp.hierarchical_dp(problem)
        assert [[space.types.index(t) for t in row] for row in plan.types] == fast[0] and units == fast[1]


@pytest.mark.parametrize("vectorised", [True, False], ids=["numpy", "python"])
@pytest.mark.parametrize("space", list(Space), ids=str)
def test_long_chains_equal_the_vectorised_per_level_dp(space, vectorised, monkeypatch):
    """Chains from ``thresholds.NUMPY_FROM_LAYERS`` layers, where ``dp_level`` scans numpy arrays (and,
    with the threshold above them, the Python scan); tiny shapes (ties) and int64-sized amounts
    (Python integers on the sized path)."""
    numpy_from(monkeypatch, TEST_NUMPY_FROM if vectorised else 10**6)
    nets = [random_chain(7, 300, batch=2, max_channels=2, max_size=1), random_chain(8, 700)]
    nets.append(Network.chain("big", 2**14, [Layer(f"fc{i}", LayerKind.FC, 2**26, 2**26) for i in range(160)]))
    for net in nets:
        problem = Problem(net, synthetic_array(6), space)
        assert (problem.num_layers >= thresholds.NUMPY_FROM_LAYERS) == vectorised
        assert dp.small_chain_levels(problem) == per_level(problem)


@pytest.mark.parametrize("space", list(Space), ids=str)
def test_ties_break_as_the_per_level_dp(space):
    """Identical layers of one element: every level is all ties (the first least type wins)."""
    net = Network.chain("same", 1, [Layer(f"fc{i}", LayerKind.FC, 1, 1) for i in range(6)])
    problem = Problem(net, synthetic_array(5), space)
    assert dp.small_chain_levels(problem) == per_level(problem)


def embedding_chain() -> Network:
    return Network.chain("emb", 4, [Layer("emb", LayerKind.EMBEDDING, 50, 8, in_size=(6, 1), out_size=(6, 1)),
                                    Layer("fc", LayerKind.FC, 8, 16, in_size=(6, 1), out_size=(6, 1))])


def grouped_chain(groups: int) -> Network:
    return Network.chain("grouped", 2, [Layer("c0", LayerKind.CONV, 8, 8, (3, 3), (4, 4), (4, 4)),
                                        Layer("g", LayerKind.CONV, 8, 8, (3, 3), (4, 4), (4, 4), groups=groups),
                                        Layer("fc", LayerKind.FC, 128, 10)])


@pytest.mark.parametrize("space", list(Space), ids=str)
def test_embeddings_and_whole_grouped_splits_take_the_fast_path(space):
    """An embedding's III exchanges nothing (the zero slot); a grouped conv whose groups halve
    at every level takes II everywhere (HyPar: its kind offers both types)."""
    cases = [embedding_chain()] + ([grouped_chain(8)] if space is Space.HYPAR else [])
    for net in cases:
        problem = Problem(net, synthetic_array(3), space)
        fast = dp.small_chain_levels(problem)
        assert fast is not None and fast == per_level(problem)


def test_where_the_fast_path_declines_the_dp_is_unchanged():
    """Graphs, pins, a grouped conv whose II stops before the last level, a kind without every
    type (AccPar's grouped conv), partial edges and long chains go to ``dp_level``."""
    graph = Network("g", 2, random_chain(1, 3).layers, ((0, 1), (0, 2), (1, 2)))
    partial = Network("p", 2, random_chain(1, 3).layers, ((0, 1), (1, 2)), edge_shares=(Fraction(1), Fraction(1, 2)))
    pinned = Constraints(pins=(Pin(1, 0, PartitionType.II),))
    declined = [Problem(graph, synthetic_array(3)), Problem(partial, synthetic_array(3)),
                Problem(grouped_chain(2), synthetic_array(3), Space.HYPAR),
                Problem(grouped_chain(8), synthetic_array(3), Space.ACCPAR),
                Problem(random_chain(2, 4), synthetic_array(3), Space.ACCPAR, constraints=pinned),
                Problem(random_chain(3, dp.CHAIN_SIZES_BELOW), synthetic_array(2))]
    for problem in declined:
        assert dp.small_chain_levels(problem) is None
    plan, _ = dp.hierarchical_dp(declined[4])
    assert plan.types[0][1] is PartitionType.II


def test_network_chain_checks():
    net = random_chain(4, 5)
    assert net.is_chain and net.whole_edges
    assert Network("n", 1, net.layers, tuple(net.edges)).is_chain  # equal edges, not the shared tuple
    assert not Network("n", 1, net.layers, ((0, 1), (1, 2), (2, 3), (2, 4))).is_chain
    assert not Network("n", 1, net.layers, net.edges, edge_shares=(Fraction(1),) * 3 + (Fraction(1, 2),)).whole_edges
    assert Network("n", 1, net.layers, net.edges, edge_shares=(Fraction(1),) * 4).whole_edges


@pytest.mark.parametrize("seed", range(40))
def test_a_default_random_chain_passes_the_network_check(seed):
    """random_chain's defaults give a chain whose every layer reads what its input outputs (the API
    refuses anything else); consistent=False keeps the benchmarks' unchecked draws."""
    from explorer.core.network_check import network_problems

    assert network_problems(random_chain(seed, 1 + seed % 9)) == []
    assert network_problems(random_chain(seed, 1 + seed % 9, max_channels=4, max_size=2)) == []
    assert network_problems(random_chain(1, 5, consistent=False))  # the drawn sizes, as they were
