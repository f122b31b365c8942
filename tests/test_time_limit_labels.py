"""The label passes of the exact constrained method keep to ``--time-limit`` (trial 10, finding 16:
ResNet-18 at 5 levels under ``--cap 4=5MB``, the time objective, ran 24.8 s on a 10 s limit and
88 s on the default 60 s: the graph label pass's many-resource dominance scan, pure Python, ran
for seconds between two looks at the clock). A cut run reports its best plan and the best bound
proven, ``feasible`` with its gap.

Wall-clock bounds are generous (a loaded 2-core machine): each fails only if a deadline is
ignored (the label pass alone then runs 4-12 s)."""

from __future__ import annotations

import random
import time
import types
from fractions import Fraction

import numpy as np
import pytest

from explorer.api import build_problem
from explorer.app.run import rescore, run
from explorer.core.constraints import Cap, Constraints
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.randnet import random_chain
from explorer.core.solution import SolveOptions, Status
from explorer.solvers import constrained, exact, labels
from explorer.solvers import deadline as deadline_mod
from explorer.solvers.elimination import TimeUp

from .conftest import make_array


def _plain_scan(key, f, g):
    """The scan before (numpy scalars, row by row): the reference ``dominance_scan`` must equal."""
    order = sorted(range(len(f)), key=lambda i: (int(key[i]), f[i], *(x[i] for x in g)))
    kept, start = [], 0
    for i in range(1, len(order) + 1):
        if i == len(order) or key[order[i]] != key[order[start]]:
            front: list[int] = []
            for j in order[start:i]:
                if not any(all(x[q] <= x[j] for x in g) for q in front):
                    front.append(j)
            kept += front
            start = i
    return np.array(sorted(kept), dtype=np.int64)


@pytest.mark.parametrize("block", [1, 7, 50_000])  # (blocks of whole keys: one key a block, a few, all)
@pytest.mark.parametrize("resources,dtype", [(2, np.int64), (3, np.int64), (2, object), (1, object), (4, np.int64), (0, np.int64)])
def test_the_dominance_scan_keeps_the_rows_the_plain_scan_kept(monkeypatch, resources, dtype, block):
    monkeypatch.setattr(labels, "SCAN_BLOCK", block)
    rng = random.Random(resources * 7 + (dtype is object))
    for trial in range(60):
        n, spread = rng.randint(0, 400), rng.choice([3, 10, 1000])  # small spreads: many ties
        key = np.array([rng.randrange(5) for _ in range(n)], dtype=np.int64)
        big = 2**70 if dtype is object else 0
        f = np.array([big + rng.randrange(spread) for _ in range(n)], dtype=dtype)
        g = [np.array([big + rng.randrange(spread) for _ in range(n)], dtype=dtype) for _ in range(resources)]
        got = labels.dominance_scan(key, f, g, deadline=time.perf_counter() + 60)
        assert got.dtype == np.int64 and np.array_equal(got, _plain_scan(key, f, g)), trial


@pytest.mark.parametrize("resources", [2, 3])  # (the staircase, the general front)
def test_a_passed_deadline_stops_the_dominance_scan(monkeypatch, resources):
    monkeypatch.setattr(labels, "CHECK_EVERY", 50)
    n = 300
    key = np.zeros(n, dtype=np.int64)
    f = np.arange(n, dtype=np.int64)
    g = [np.arange(n, dtype=np.int64)[::-1].copy() for _ in range(resources)]  # all on the front
    with pytest.raises(TimeUp):
        labels.dominance_scan(key, f, g, deadline=time.perf_counter() - 1)
    assert len(labels.dominance_scan(key, f, g)) == n  # (no deadline: the whole front)


def test_the_dominance_scan_looks_at_the_clock_per_block_of_keys(monkeypatch):
    """Its rows become Python values a block of whole keys at a time, the clock looked at before
    each (all at once took 0.5-0.9 s unchecked at load 7): 100 keys of one row each, 10 a block,
    fewer comparisons than ``CHECK_EVERY``."""
    monkeypatch.setattr(labels, "SCAN_BLOCK", 10)
    seen = []
    monkeypatch.setattr(labels, "check_deadline", lambda d, err: seen.append(d) or deadline_mod.check_deadline(d, err))
    key = np.arange(100, dtype=np.int64)
    f, g = np.zeros(100, dtype=np.int64), [np.zeros(100, dtype=np.int64)] * 2
    assert np.array_equal(labels.dominance_scan(key, f, g, deadline=time.perf_counter() + 60), key)
    assert len(seen) >= 10
    with pytest.raises(TimeUp):
        labels.dominance_scan(key, f, g, deadline=time.perf_counter() - 1)


def test_the_graph_label_pass_stops_at_the_limit_with_its_plan_and_bound(monkeypatch):
    """Finding 16's instance: its label pass ran 4-12 s (load 3.6-9) before it outgrew its row limit
    (CP-SAT then searches: ``lagrangian+cpsat``); since its joins prune chunk by chunk and its scans
    convert a block at a time it ends so in 1.5 s (load 2.7), so the limit is made to pass during
    it (the clock the deadline checks read moved past it after the pass's first join): the pass
    stops there, with the plan and the bound so far (``lagrangian+labels``)."""
    p = build_problem("resnet18", levels=5, space="accpar", objective="time", caps=["4=5MB"])
    late = {"s": 0.0}
    monkeypatch.setattr(deadline_mod, "time", types.SimpleNamespace(perf_counter=lambda: time.perf_counter() + late["s"]))
    real = labels._join

    def join_then_late(*a, **k):
        out = real(*a, **k)
        late["s"] = 1e6
        return out

    monkeypatch.setattr(labels, "_join", join_then_late)
    t0 = time.perf_counter()
    result = run(p, "exact", SolveOptions(time_limit_s=30.0))  # re-scored by the evaluator
    assert late["s"] and time.perf_counter() - t0 < 30.0  # (the pass was cut, not the Lagrangian's steps)
    assert result.status is Status.FEASIBLE and result.bound_method == "exact:lagrangian+labels"
    assert "time limit (30 s) ran out before the gap closed (lagrangian+labels" in result.reason
    assert result.ok and result.bound is not None and result.bound < result.objective_value


def _capped_chain() -> Problem:
    """A 6-layer chain whose exact label passes find no plan below two targets before the third proves the
    incumbent optimal (its free optimum's level-2 traffic capped at 6/10)."""
    base = Problem(random_chain(0, 6), make_array(3), Space.ACCPAR, Objective.TIME)
    free = exact.solve(base)
    cap = Cap(2, Fraction(free.level_units[2] * 4, base.tables.unit_per_element) * Fraction(6, 10), "test")
    return base.with_constraints(Constraints(caps=(cap,)))


def test_a_chain_label_pass_stops_at_the_deadline_and_keeps_the_bound_the_passes_proved(monkeypatch):
    p = _capped_chain()
    full = exact.solve(p)
    calls: list = []
    real = constrained._label_setting

    def spy(ch, lam, alphas, completion, beam=None, target=None):
        if calls and calls[-1][1] == "none" and calls[-1][0] is not None:  # the pass after a "none below target"
            ch.deadline = time.perf_counter() - 1
        out = real(ch, lam, alphas, completion, beam=beam, target=target)
        calls.append((target, out))
        return out

    monkeypatch.setattr(constrained, "_label_setting", spy)
    cut = exact.solve(p)
    assert full.status is Status.OPTIMAL
    assert cut.status is Status.FEASIBLE and "time limit" in cut.info["reason"]
    proved = calls[-1][0]  # the last pass's target: no plan lies below it (the pass after it was cut)
    assert calls[-1][1] == "none" and proved is not None
    assert cut.info["lagrangian_bound"] < proved == cut.bound <= full.objective <= cut.objective
    rescore(p, cut)


def _plain_join(a, b, sizes):
    """The join before (every pair at once): the reference the chunked ``_join`` must equal."""
    shared = [n for n in a.scope if n in b.scope]
    radix = [sizes[n] for n in shared]
    ka = labels._key(a.cols, [a.scope.index(n) for n in shared], radix)
    kb = labels._key(b.cols, [b.scope.index(n) for n in shared], radix)
    order = np.argsort(kb, kind="stable")
    lo, hi = np.searchsorted(kb[order], ka, side="left"), np.searchsorted(kb[order], ka, side="right")
    cnt = hi - lo
    extra = [n for n in b.scope if n not in a.scope]
    ia = np.repeat(np.arange(len(ka)), cnt)
    ib = order[np.repeat(lo, cnt) + np.arange(len(ia)) - np.repeat(np.cumsum(cnt) - cnt, cnt)]
    cols = np.concatenate([a.cols[ia], b.cols[ib][:, [b.scope.index(n) for n in extra]]], axis=1)
    return (a.scope + extra, cols, a.f[ia] + b.f[ib], [x[ia] + y[ib] for x, y in zip(a.g, b.g)],
            a.hidden + b.hidden, np.concatenate([a.hcols[ia], b.hcols[ib]], axis=1))


def _factor(scope, hidden, n, sizes, rng, dtype):
    cols = np.stack([rng.integers(0, sizes[s], n) for s in scope], axis=1).astype(np.int64)
    big = 2**70 if dtype is object else 0
    f = np.array([big + int(x) for x in rng.integers(0, 1000, n)], dtype=dtype)
    g = [np.array([big + int(x) for x in rng.integers(0, 1000, n)], dtype=dtype) for _ in range(2)]
    return labels._Rows(scope, cols, f, g, hidden, rng.integers(0, 50, (n, len(hidden))).astype(np.int64))


@pytest.mark.parametrize("dtype", [np.int64, object])
@pytest.mark.parametrize("chunk", [1, 7, 1000, 10**9])
def test_the_chunked_join_builds_the_rows_the_plain_join_built(monkeypatch, chunk, dtype):
    monkeypatch.setattr(labels, "JOIN_CHUNK", chunk)
    rng = np.random.default_rng(chunk)
    big, seen = (2**70 if dtype is object else 0), set()
    sizes = [4, 3, 5, 6, 2, 7]
    for scopes in (([0, 1], [1, 2]), ([0, 1, 2], [2, 1, 3]), ([0], [3]), ([0, 1], [0, 1])):
        a = _factor(scopes[0], [4], int(rng.integers(0, 40)), sizes, rng, dtype)
        b = _factor(scopes[1], [5], int(rng.integers(0, 40)), sizes, rng, dtype)
        got = labels._join(a, b, sizes, deadline=time.perf_counter() + 60)
        scope, cols, f, g, hidden, hcols = _plain_join(a, b, sizes)
        assert got.scope == scope and got.hidden == hidden
        assert np.array_equal(got.cols, cols) and np.array_equal(got.hcols, hcols)
        assert np.array_equal(got.f, f) and all(np.array_equal(x, y) for x, y in zip(got.g, g))
        assert got.f.dtype == f.dtype
        # pruned chunk by chunk: the rows the whole join's pruning keeps, in the same order
        within = (2 * big + 1000, [2 * big + 1100, 2 * big + 900])
        pruned = labels._join(a, b, sizes, deadline=time.perf_counter() + 60, within=within)
        keep = np.flatnonzero((f <= within[0] - 1) & (g[0] <= within[1][0]) & (g[1] <= within[1][1]))
        seen |= {"kept"} if len(keep) else set()
        seen |= {"pruned"} if len(keep) < len(f) else set()
        assert pruned.scope == scope and pruned.hidden == hidden
        assert np.array_equal(pruned.cols, cols[keep]) and np.array_equal(pruned.hcols, hcols[keep])
        assert np.array_equal(pruned.f, f[keep]) and all(np.array_equal(x, y[keep]) for x, y in zip(pruned.g, g))
    assert seen == {"kept", "pruned"}  # (the pruning took some rows and left some)


def test_a_passed_deadline_stops_a_join_between_its_chunks(monkeypatch):
    monkeypatch.setattr(labels, "JOIN_CHUNK", 10)
    rng = np.random.default_rng(1)
    sizes = [3, 3, 3]
    a = _factor([0, 1], [], 50, sizes, rng, np.int64)
    b = _factor([1, 2], [], 50, sizes, rng, np.int64)
    with pytest.raises(TimeUp):
        labels._join(a, b, sizes, deadline=time.perf_counter() - 1)


def test_the_cpsat_rounds_end_the_search_margin_before_the_limit(monkeypatch):
    """CP-SAT stops a little past its own limit and its plan is re-scored after it: the restricted
    rounds keep back ``cpsat``'s margin (chain 200 at H = 8 under memory 9/10 ended 10.2-11.1 s on a
    10 s limit, now 9.5-10 s)."""
    from explorer.solvers import chain_labels, cpsat, restricted

    base = Problem(random_chain(7, 6), make_array(3), Space.ACCPAR)
    free = exact.solve(base)
    cap = Cap(2, Fraction(free.level_units[2] * 4, base.tables.unit_per_element) * Fraction(6, 10), "test")
    p = base.with_constraints(Constraints(caps=(cap,)))
    monkeypatch.setattr(chain_labels, "MAX_LABELS", 0)  # no labels: CP-SAT searches the vectors the bounds leave
    ends: list[float] = []
    real = restricted._Restricted.solve

    def spy(self, U, seconds, options):
        ends.append(time.perf_counter() + seconds)
        return real(self, U, seconds, options)

    monkeypatch.setattr(restricted._Restricted, "solve", spy)
    limit = 4.0
    t0 = time.perf_counter()
    sol = exact.solve(p, SolveOptions(time_limit_s=limit, workers=1, started=t0))
    assert sol.info["method"] == "lagrangian+labels+cpsat" and ends
    margin = min(cpsat.SEARCH_MARGIN * limit, cpsat.SEARCH_MARGIN_MAX_S)
    assert max(ends) <= t0 + limit - margin + 1e-3
