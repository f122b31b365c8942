"""The joint uneven-split solver reads the one integer cost table (``core.split_costs``, issue 20
item 1): its exact components are the evaluator's, its floored terms are lower bounds within one
unit of scale per term, and on three-level arrays (lower levels with prefixes of two types, which
the 300-instance cross-check of test_uneven_joint.py does not reach) its optimum is brute force's."""

import random

import numpy as np

from explorer.core.evaluate import evaluate_split
from explorer.core.partition import Space
from explorer.core.randnet import random_chain, random_dag_spec
from explorer.core.solution import Status
from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space
from explorer.frontends.network_yaml import parse_network
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.joint_labels import _comps_floor
from explorer.solvers.joint_columns import INF, _Model, _Tables, _VirtualSource, step_of
from explorer.solvers.uneven_joint import _scale, joint_uneven

from .test_uneven_model import mix


def _instance(rng, H: int, layers: int, grid: int):
    """A random chain (or a random graph) on an H-level mix of one kind per half."""
    p, q = rng.sample([1, 2, 3, 5, 7], 2)
    arr = mix(H, [p] * 2 ** (H - 1) + [q] * 2 ** (H - 1), bw=rng.choice([1, 10, 100]), dtype=rng.choice([1, 2, 4]))
    seed = rng.randrange(10**6)
    net = parse_network(random_dag_spec(seed, layers), "dag") if rng.random() < 0.3 else \
        random_chain(seed, layers, max_channels=16, max_size=4)
    space = rng.choice([Space.HYPAR, Space.ACCPAR])
    return net, arr, space, alpha_space(arr, alpha_grid(grid), FreeAlphas.UNLIKE, proportional=rng.random() < 0.7)


def test_components_are_the_evaluators_and_the_floors_bound_them():
    rng = random.Random(20)
    checked = 0
    for _ in range(60):
        net, arr, space, aspace = _instance(rng, rng.choice([2, 3, 4]), rng.choice([3, 4, 5]), rng.choice([3, 4, 8]))
        view = _VirtualSource.of(net)
        m = _Model(view, arr, space, aspace)
        t = _Tables(m, _scale(m, 1024))
        for _ in range(5):
            cols = [int(rng.choice(list(np.flatnonzero(t.node[l][0] < INF)))) for l in range(len(view.layers))]  # noqa: E741
            plan = m.plan(cols[1:] if m.virtual else cols)
            ev = evaluate_split(net, arr, plan)
            S0, S1, V0, V1 = comp = m.components(cols)
            top = ev.group_comm_s[0][0]
            assert step_of(comp) == ev.step_time_s
            assert max(S0, S1) == top
            assert (V0, V1) == (ev.leaf_time_s[0] - top, ev.leaf_time_s[-1] - top)
            # each term floored at scale s: a lower bound, short by less than one per term summed
            terms = len(view.layers) + len(view.edges)
            floor = [int(x) for x in _comps_floor(t, cols)]
            for k, x in enumerate(comp):
                exact = x * t.s
                assert floor[k] <= exact < floor[k] + terms * m.H + 1
            checked += 1
    assert checked == 300


def test_joint_equals_brute_on_three_level_arrays():
    """Two free lower levels below the top split (types of levels 1 and 2 under every top cell)."""
    rng = random.Random(2020)
    ran = 0
    while ran < 25:
        net, arr, space, aspace = _instance(rng, 3, 2, rng.choice([2, 3, 4]))
        n = (len(space.types) * len(aspace.choices(0, 0))) * len(space.types) ** 2
        if n ** len(net.layers) > 3000:
            continue
        b = brute_split(net, arr, space, aspace)
        j = joint_uneven(net, arr, space, aspace)
        assert evaluate_split(net, arr, j.plan).step_time_s == j.step_time_s and aspace.contains(j.plan)
        assert j.bound_s <= b.step_time_s <= j.step_time_s
        if net.is_chain:
            assert j.status is Status.OPTIMAL
        if j.status is Status.OPTIMAL:
            assert j.step_time_s == b.step_time_s
        ran += 1
