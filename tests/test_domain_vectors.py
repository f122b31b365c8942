"""``vectors.Domain`` builds its tables with numpy (issue 23: at 12 levels the Python loop over
3^12 count tuples took ~0.9 s, outside any deadline); every table must equal the loop's."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from explorer.core.comm import add_type
from explorer.core.partition import ALL_TYPES, Space
from explorer.solvers.vectors import Domain
from tests.conftest import fc, problem_of
from explorer.core.network import Network


def reference(problem, types):
    """The tables as the loop over count tuples made them (the implementation before numpy)."""
    tables, H = problem.tables, problem.levels
    K = len(types)
    V = K**H
    tix = np.array([tables.types.index(t) for t in types], dtype=np.int64)
    vec = np.arange(V)
    digit = [(vec // K ** (H - 1 - h)) % K for h in range(H)]
    prefix_state = []
    counts = [tables.states(0)[0]]
    for h in range(H):
        index = {s: i for i, s in enumerate(tables.states(h))}
        prefix_state.append(np.array([index[c] for c in counts], dtype=np.int64))
        counts = [add_type(c, t) for c in counts for t in types]
    final = {s: i for i, s in enumerate(dict.fromkeys(counts))}
    final_state = np.array([final[c] for c in counts], dtype=np.int64)
    pstate = [prefix_state[h][vec // K ** (H - h)] for h in range(H)]
    return dict(tix=tix, digit=digit, type_index=[tix[d] for d in digit], prefix_state=prefix_state,
                final_states=list(final), final_state=final_state, pstate=pstate, V=V)


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


SUBSETS = [types for k in (1, 2, 3) for types in itertools.combinations(ALL_TYPES, k)]


@pytest.mark.parametrize("space", [Space.HYPAR, Space.ACCPAR])
@pytest.mark.parametrize("levels", [1, 2, 3, 5, 7])
def test_domain_tables_equal_the_loop(space, levels):
    problem = problem_of(Network.chain("c", 8, [fc("a", 16, 16), fc("b", 16, 8)]), levels, space)
    for types in SUBSETS:
        if not set(types) <= set(space.types):
            continue
        d, ref = Domain(problem, types), reference(problem, types)
        assert d.V == ref["V"] and same(d.tix, ref["tix"])
        assert d.final_states == ref["final_states"]
        assert same(d.final_state, ref["final_state"])
        for name in ("digit", "type_index", "prefix_state", "pstate"):
            got, want = getattr(d, name), ref[name]
            assert len(got) == len(want) == levels, name
            assert all(same(g, w) for g, w in zip(got, want)), name


def test_domain_at_ten_levels_equals_the_loop():
    problem = problem_of(Network.chain("c", 8, [fc("a", 16, 16)]), 10, Space.ACCPAR)
    d, ref = Domain(problem, problem.node_types(0)), reference(problem, problem.node_types(0))
    assert d.final_states == ref["final_states"] and same(d.final_state, ref["final_state"])
    assert all(same(g, w) for g, w in zip(d.pstate, ref["pstate"]))
    assert all(same(g, w) for g, w in zip(d.prefix_state, ref["prefix_state"]))


def old_intra_level(vc, n, h):
    t = vc.tables
    rows = np.array([t.intra_row(n, s) for s in t.states(h)], dtype=vc.dtype)
    d = vc.dom[n]
    return rows[d.pstate[h], d.type_index[h]]


def old_blocked(vc, n):
    d = vc.dom[n]
    out = np.zeros(d.V, dtype=bool)
    for h in range(vc.H):
        allowed = vc.problem.allowed(h, n)
        out |= np.array([t not in allowed for t in d.types])[d.digit[h]]
    return out


def old_intra_vec(vc, n, W, extra=None):
    vec = np.zeros(vc.dom[n].V, dtype=vc.dtype)
    for h in range(vc.H):
        if W[h]:
            vec = vec + W[h] * old_intra_level(vc, n, h)
    if extra is not None:
        vec = vec + extra
    vec[old_blocked(vc, n)] = vc.big
    return vec


CASES = [  # (model, levels, space, pins, forbids, memory GiB)
    ("alexnet", 6, "accpar", ["conv2@1=I", "fc6@0=II"], ["conv3=III"], None),
    ("resnet18", 5, "accpar", [], ["s2b1_a=II"], 0.5),
    ("vgg-a", 7, "hypar", ["conv1_1@6=II"], [], None),
]


@pytest.mark.parametrize("model,levels,space,pins,forbids,memory", CASES)
def test_vector_costs_equal_the_per_vector_gathers(model, levels, space, pins, forbids, memory):
    """``intra_vec`` and ``blocked`` are built prefix by prefix: each equals the gather over every
    vector's count state and type (the implementation before), pins and forbids (``big``), each
    level alone, the objective's weights, arbitrary multipliers and a footprint extra included."""
    from explorer.api import build_problem
    from solvers.vectors import VectorCosts

    problem = build_problem(model, "array-1024", space=space, levels=levels, pins=pins, forbids=forbids, memory_GiB=memory)
    vc = VectorCosts(problem)
    rng = np.random.default_rng(7)
    for n in range(vc.N):
        assert same(vc.blocked(n), old_blocked(vc, n))
        for h in range(vc.H):
            W = tuple(int(j == h) for j in range(vc.H))
            assert same(vc.intra_vec(n, W), old_intra_vec(vc, n, W))
        assert same(vc.intra_vec(n), old_intra_vec(vc, n, vc.weights))
        W = tuple(int(x) for x in rng.integers(0, 5, vc.H))
        extra = vc.footprint(n) * 3
        assert same(vc.intra_vec(n, W, extra), old_intra_vec(vc, n, W, extra))
    assert any(vc.blocked(n).any() for n in range(vc.N))  # the pins and forbids bite
