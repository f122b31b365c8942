"""The DP's level rows from tables built once for every level (``CostTables._shift_tables``,
``level_tuples``) equal the per-level rows (``_level_rows_python``, the per-entry lookups), and
the unrolled chain scans equal the generic one, ties included (issue 23)."""

from __future__ import annotations

import random

import pytest

from explorer.core.comm import advance, zero_counts
from explorer.core.costs import CostTables
from explorer.core.partition import Space
from explorer.core.randnet import random_chain, random_dag_spec
from explorer.frontends import load_model
from explorer.frontends.network_yaml import parse_network
from explorer.solvers import dp

from .conftest import numpy_from


def as_lists(intra, inter):
    return [list(r) for r in intra], [[list(r) for r in m] for m in inter]


def walk_levels(tables: CostTables, rng: random.Random, extra: int = 1):
    """Counts of every layer at levels 0 .. levels - 1 + extra, each level's types drawn at random."""
    counts = zero_counts(len(tables.network.layers))
    for _ in range(tables.levels + extra):
        yield counts
        counts = advance(counts, [rng.choice(tables.types) for _ in counts])


def check_tables(tables: CostTables, rng: random.Random) -> int:
    """Every level's ``level_tuples`` against the per-level rows; returns how many levels had
    counts halving a size more often than the tables hold (the fallback to per-level rows)."""
    past = 0
    for counts in walk_levels(tables, rng):
        got = tables.level_tuples(counts)
        want = tables._level_rows_python(counts)
        assert as_lists(*got) == want
        assert want[0] == [tables.intra_row(l, c) for l, c in enumerate(counts)]  # noqa: E741
        assert want[1] == [tables.inter_matrix(e, counts[v]) for e, (_, v) in enumerate(tables.edges)]
        keys = tables._shift_tables[1] if len(counts) < 128 else None
        past += keys is not None and any(d[c] is None for d, c in zip(keys, counts))
    return past


@pytest.mark.parametrize("space", list(Space), ids=str)
def test_level_tuples_equal_per_level_rows_on_random_chains(space):
    past = 0
    for seed in range(30):
        rng = random.Random(seed)
        net = random_chain(seed, rng.randint(1, 20), max_channels=rng.choice([2, 64]), max_size=rng.choice([1, 16]))
        past += check_tables(CostTables(net, rng.randint(1, 9), space), rng)
    assert past >= 25, "the walks also read counts past the last level (the fallback to per-level rows)"


@pytest.mark.parametrize("space", list(Space), ids=str)
def test_level_tuples_equal_per_level_rows_on_random_graphs(space):
    for seed in range(30):
        rng = random.Random(seed)
        net = parse_network(random_dag_spec(seed, rng.randint(2, 12)), "dag")
        check_tables(CostTables(net, rng.randint(1, 8), space), rng)


@pytest.mark.parametrize("model", ["mobilenet-v2", "gpt2-small", "resnet18"])
@pytest.mark.parametrize("space", list(Space), ids=str)
def test_level_tuples_equal_per_level_rows_on_every_node_kind(model, space):
    """Grouped convs, attention, embeddings and joins (their zero and blocked entries)."""
    check_tables(CostTables(load_model(model), 6, space), random.Random(3))


def test_large_networks_get_the_level_rows(monkeypatch):
    numpy_from(monkeypatch)  # 200 layers: past the threshold
    net = random_chain(1, 200)
    tables = CostTables(net, 4, Space.ACCPAR)
    counts = zero_counts(200)
    assert tables.level_tuples(counts) == tables.level_rows(counts)
    assert "_shift_tables" not in tables.__dict__


def reference_scan(intra, inter):
    """The scan as it was (``chain_level`` before the tables): per next type the first strict
    minimum over the previous types, back pointers, the last layer's first least type."""
    K = len(intra[0])
    cost, back = list(intra[0]), [[-1] * K]
    for l in range(1, len(intra)):  # noqa: E741
        row, m = intra[l], inter[l - 1]
        new, bp = [0] * K, [0] * K
        for k in range(K):
            best, arg = cost[0] + m[0][k], 0
            for kp in range(1, K):
                c = cost[kp] + m[kp][k]
                if c < best:
                    best, arg = c, kp
            new[k], bp[k] = best + row[k], arg
        cost = new
        back.append(bp)
    best, arg = cost[0], 0
    for k in range(1, K):
        if cost[k] < best:
            best, arg = cost[k], k
    choice = [arg]
    for l in range(len(intra) - 1, 0, -1):  # noqa: E741
        choice.append(back[l][choice[-1]])
    return choice[::-1], best


@pytest.mark.parametrize("K", [2, 3])
def test_unrolled_scans_equal_the_reference_scan(K):
    ties = 0
    for seed in range(400):
        rng = random.Random(seed)
        L, top = rng.randint(1, 12), rng.choice([1, 2, 3, 10**6])  # small values: many ties
        intra = [tuple(rng.randint(0, top) for _ in range(K)) for _ in range(L)]
        inter = [tuple(tuple(rng.randint(0, top) for _ in range(K)) for _ in range(K)) for _ in range(L - 1)]
        want = reference_scan(intra, inter)
        assert dp._SCANS[K](intra, inter) == want
        assert dp._chain_scan(intra, inter) == want
        ties += top < 10
    assert ties > 100
