"""The DP's graph elimination (``dp.graph_level``) against its unoptimised form (issue 23, item 1).

``graph_level`` computes its elimination order once per graph (not per level), splits each step
by whether the node stays on the frontier, looks each state's edge rows up once, and reads the
plan back from the last entry of each record; ``wide_levels`` asks ``too_wide`` once per distinct
row of allowed-type counts, and ``dp.solve`` does not ask it again per level. ``reference_level``
below is the elimination as it was before (every state times every type, a full assignment
each, strict improvement in (state, type) order): the rows and costs must be the same, ties
included, on seeded random graphs, graphs of repeated identical blocks (where ties abound),
under pins and forbids, and on zoo transformers."""

import random

import pytest

from explorer.core.array import synthetic_array
from explorer.core.comm import advance, zero_counts
from explorer.core.constraints import Constraints, Forbid, Pin
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.randnet import random_dag_spec
from explorer.frontends import load_model
from explorer.frontends.network_yaml import parse_network
from explorer.solvers import dp


def reference_level(problem: Problem, h: int, counts) -> tuple[list, int]:
    """One level's frontier elimination, written plainly (the DP's code before the speed-up)."""
    types, N = problem.tables.types, problem.num_layers
    intra, inter = problem.tables.level_tuples(counts)
    allowed = [[k for k, t in enumerate(types) if t in problem.allowed(h, n)] for n in range(N)]
    choice, cost = reference_eliminate(N, problem.tables.edges, allowed, intra, inter)
    return [types[k] for k in choice], cost


def reference_eliminate(N, edges, allowed, intra, inter) -> tuple[list[int], int]:
    in_edges, last_use = [[] for _ in range(N)], list(range(N))
    for e, (u, v) in enumerate(edges):
        in_edges[v].append((e, u))
        last_use[u] = max(last_use[u], v)
    frontier, states, back = [], {(): 0}, []
    for i in range(N):
        full_nodes = frontier + [i]
        pos = {n: j for j, n in enumerate(full_nodes)}
        keep = [j for j, n in enumerate(full_nodes) if last_use[n] > i]
        best, arg = {}, {}
        for st, c0 in states.items():
            for k in allowed[i]:
                full = st + (k,)
                c = c0 + intra[i][k] + sum(inter[e][full[pos[u]]][k] for e, u in in_edges[i])
                key = tuple(full[j] for j in keep)
                if key not in best or c < best[key]:
                    best[key], arg[key] = c, full
        back.append((full_nodes, arg))
        frontier, states = [full_nodes[j] for j in keep], best
    choice, key = [0] * N, ()
    for i in range(N - 1, -1, -1):
        full_nodes, arg = back[i]
        full = arg[key]
        for n, k in zip(full_nodes, full):
            choice[n] = k
        key = full[:-1]
    (cost,) = states.values()
    return choice, cost


def blocks_spec(seed: int, blocks: int) -> dict:
    """A network of ``blocks`` identical random blocks (as a transformer's): each block's nodes
    read the block's input or earlier nodes of the block, add joins among them, and the block
    ends with a residual add of its input and its last node (all of one width)."""
    rng = random.Random(seed)
    width, size, m = rng.choice([4, 8]), rng.choice([1, 2]), rng.randint(2, 5)
    template = []  # per node: (kind, inputs as -1 = the block's input, else an index in the block)
    for j in range(m):
        if j >= 2 and rng.random() < 0.3:
            template.append(("add", rng.sample(range(-1, j), 2)))
        else:
            template.append(("fc" if size == 1 and rng.random() < 0.5 else "conv", [rng.randint(-1, j - 1)]))
    layers = [{"name": "stem", "kind": "conv", "in_channels": 3, "out_channels": width, "kernel": 3,
               "in_size": size, "out_size": size}]
    prev = "stem"
    for b in range(blocks):
        names = [f"b{b}n{j}" for j in range(m)]
        for j, (kind, ins) in enumerate(template):
            inputs = [prev if i < 0 else names[i] for i in ins]
            node = {"name": names[j], "kind": kind, "inputs": inputs}
            if kind == "conv":
                node.update(in_channels=width, out_channels=width, kernel=rng.choice([1, 3]), in_size=size, out_size=size)
            elif kind == "fc":
                node.update(in_features=width, out_features=width)
            layers.append(node)
        layers.append({"name": f"b{b}res", "kind": "add", "inputs": [prev, names[-1]]})
        prev = f"b{b}res"
    return {"version": 1, "name": f"blocks-{seed}", "batch": rng.choice([2, 4]), "layers": layers}


def rules(net, seed: int) -> Constraints:
    """A few random pins (some at one level) and forbids: nodes then allow different types per level."""
    rng, space = random.Random(seed), list(Space.ACCPAR.types)
    pins = tuple(Pin(rng.randrange(len(net.layers)), rng.choice([None, 0, 1]), space[0]) for _ in range(2))
    forbids = tuple(Forbid(rng.randrange(len(net.layers)), rng.choice(space[1:])) for _ in range(3))
    return Constraints(pins=pins, forbids=forbids)


def assert_levels_match(p: Problem, seed: int) -> None:
    """Every level equal to the reference, at the counts the DP's own rows give and at random counts."""
    rng = random.Random(seed)
    for counts_of in ("dp", "random"):
        counts = zero_counts(p.num_layers)
        for h in range(p.levels):
            got, want = dp.graph_level(p, h, counts), reference_level(p, h, counts)
            assert got == want, (counts_of, h)
            row = got[0] if counts_of == "dp" else [rng.choice(p.allowed(h, n)) for n in range(p.num_layers)]
            counts = advance(counts, row)


@pytest.mark.parametrize("seed", range(40))
def test_graph_level_equals_the_reference_on_random_dags(seed):
    net = parse_network(random_dag_spec(seed, random.Random(seed).randint(3, 12)), "dag")
    space = Space.ACCPAR if seed % 2 else Space.HYPAR
    p = Problem(net, synthetic_array(3), space, constraints=rules(net, seed) if seed % 3 == 0 else Constraints())
    if net.is_chain:
        pytest.skip("a chain: the chain scan, not graph_level")
    assert_levels_match(p, seed)


@pytest.mark.parametrize("seed", range(30))
def test_graph_level_equals_the_reference_on_repeated_blocks(seed):
    net = parse_network(blocks_spec(seed, random.Random(seed).randint(2, 6)), "blocks")
    space = Space.HYPAR if seed % 2 else Space.ACCPAR
    constraints = rules(net, seed) if seed % 3 == 0 else Constraints()
    assert_levels_match(Problem(net, synthetic_array(3), space, constraints=constraints), seed)


@pytest.mark.parametrize("model", ["gpt2-small", "llama-7b", "resnet18"])
def test_graph_level_equals_the_reference_on_zoo_graphs(model):
    assert_levels_match(Problem(load_model(model), synthetic_array(4), Space.HYPAR), 7)


def test_wide_levels_equal_too_wide_per_level_under_pins():
    """The memo by allowed-type counts: the same reasons as asking every level, also where pins
    make levels differ (a byte limit between the levels' needs sends only the wider ones)."""
    net = parse_network(blocks_spec(4, 5), "blocks")
    pins = tuple(Pin(n, 0, Space.ACCPAR.types[0]) for n in range(0, len(net.layers), 2))
    p = Problem(net, synthetic_array(3), Space.ACCPAR, constraints=Constraints(pins=pins))
    needs = [dp.frontier_bytes([s[:3] for s in dp._frontier_steps(p, h)]) for h in range(3)]
    assert needs[0] < needs[1] == needs[2]
    old = dp.MAX_FRONTIER_BYTES
    try:
        dp.MAX_FRONTIER_BYTES = needs[0]
        assert dp.wide_levels(p) == {h: dp.too_wide(p, h) for h in (1, 2)} and dp.too_wide(p, 0) is None
    finally:
        dp.MAX_FRONTIER_BYTES = old


def test_solve_asks_too_wide_once_per_distinct_level(monkeypatch):
    """``dp.solve`` checks the frontier once per distinct level (``wide_levels``), not again in
    ``graph_level``; ``graph_level`` called alone still checks."""
    p = Problem(load_model("gpt2-small"), synthetic_array(4), Space.HYPAR)
    calls = []
    real = dp._too_wide
    monkeypatch.setattr(dp, "_too_wide", lambda *a: calls.append(1) or real(*a))
    distinct = {tuple(dp._level_sizes(p, h)) for h in range(p.levels)}  # heads: type II at the first levels only
    sol = dp.solve(p)
    assert len(calls) == len(distinct) < p.levels
    assert sol.level_units[0] == reference_level(p, 0, zero_counts(p.num_layers))[1]
    monkeypatch.setattr(dp, "MAX_FRONTIER_STATES", 1)
    with pytest.raises(NotImplementedError):
        dp.graph_level(p, 0, zero_counts(p.num_layers))


def block_edges(rng: random.Random, blocks: int) -> tuple[int, list[tuple[int, int]]]:
    """Edges of ``blocks`` blocks, each a copy of one of two random blocks of the same size (nodes
    read the block's input or earlier nodes of the block; the block's last node reads its input
    too, so the cut is one node)."""
    m = rng.randint(1, 4)

    def template():
        t = [sorted(set(rng.sample(range(-1, j), min(j + 1, rng.randint(1, 3))))) for j in range(m)]
        t[-1] = sorted(set(t[-1]) | {-1})
        return t

    templates = [template(), template()]
    edges, first = [], 1
    for _ in range(blocks):
        for j, ins in enumerate(rng.choice(templates)):
            edges += [(first - 1 if i < 0 else first + i, first + j) for i in ins]
        first += m
    return first, sorted(edges, key=lambda e: (e[1], e[0]))


@pytest.mark.parametrize("seed", range(300))
def test_eliminate_equals_the_reference_on_rows_drawn_from_a_few(seed):
    """``dp_graph.eliminate`` on its own: repeated blocks whose rows are drawn from a pool of one
    to three (many equal segments, many ties, and segments equal but for one thing: an intra
    row, an in-edge's inter row, a node's allowed types, which positions its in-edges read, or
    the costs they are entered with), against the plain elimination."""
    from explorer.solvers.dp_graph import eliminate

    rng = random.Random(seed)
    K = rng.choice([2, 3])
    N, edges = block_edges(rng, rng.randint(2, 7))
    pool_intra = [tuple(rng.randint(0, 3) for _ in range(K)) for _ in range(rng.randint(1, 3))]
    pool_inter = [tuple(tuple(rng.randint(0, 3) for _ in range(K)) for _ in range(K)) for _ in range(rng.randint(1, 3))]
    pool_allowed = [list(range(K))] + ([[0], sorted(rng.sample(range(K), 2))] if seed % 4 == 0 else [])
    intra = [rng.choice(pool_intra) for _ in range(N)]
    inter = [rng.choice(pool_inter) for _ in edges]
    allowed = [rng.choice(pool_allowed) for _ in range(N)]
    if seed % 2:  # the large networks' form: lists
        intra, inter = [list(r) for r in intra], [[list(r) for r in m] for m in inter]
    assert eliminate(N, tuple(edges), allowed, intra, inter) == reference_eliminate(N, edges, allowed, intra, inter)


@pytest.mark.parametrize("seed", range(20))
def test_eliminate_tells_apart_blocks_that_read_other_positions(seed):
    """Two blocks alike in every row, width and kept position, but one node reads the block's
    input in one and the node before it in the other: a segment of one must not stand for the other."""
    from explorer.solvers.dp_graph import eliminate

    rng = random.Random(seed)
    reads = {"A": [[-1], [-1], [-1, 0, 1]], "B": [[-1], [0], [-1, 0, 1]]}  # a <- x; b <- x or a; c <- x, a, b
    edges, first = [], 1
    for name in rng.choices("AB", k=6):
        for j, ins in enumerate(reads[name]):
            edges += [(first - 1 if i < 0 else first + i, first + j) for i in ins]
        first += 3
    K = 2
    intra = [(rng.randint(0, 3), rng.randint(0, 3))] * first
    inter = [tuple(tuple(rng.randint(0, 5) for _ in range(K)) for _ in range(K))] * len(edges)
    allowed = [[0, 1]] * first
    assert eliminate(first, tuple(edges), allowed, intra, inter) == reference_eliminate(first, edges, allowed, intra, inter)
