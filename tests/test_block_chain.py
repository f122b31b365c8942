"""The chain of identical blocks (``solvers.block_chain``) against the exact graph elimination,
against the survivor elimination over the same restricted domains, and its detection of
identical blocks (exact: by costs, never by name)."""

from __future__ import annotations

import math

import random
import re
import time

import numpy as np
import pytest

from explorer.core.array import synthetic_array
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.solution import Status
from explorer.frontends import load_model
from explorer.frontends.network_yaml import parse_network
from explorer.frontends.transformer import Family, TransformerShape, build_transformer
from explorer.solvers import block_chain, exact, pruned
from explorer.solvers.deadline import check_deadline
from explorer.solvers.survivor_elim import eliminate
from explorer.solvers.tree_dual import plan_cost
from explorer.solvers.vectors import VectorCosts


def _llama(layers: int, levels: int, hidden: int = 8, ffn: int = 16, batch: int = 2, space=Space.ACCPAR) -> Problem:
    shape = TransformerShape(Family.LLAMA, layers=layers, hidden=hidden, heads=2, ffn=ffn, vocab=32)
    return Problem(build_transformer(shape, "tiny-llama", batch, 4, "test"), synthetic_array(levels), space)


def _block(specs: list, x: str, i: int, a_spokes: int, b_spokes: int, width: int, inner: int, hub_fc: bool) -> str:
    """One block: a-spokes fc x -> inner, a hub (an add of them, or an fc of the one), b-spokes
    fc hub -> width, the exit an add of x and the b-spokes; returns the exit's name."""
    a = [f"b{i}_a{k}" for k in range(a_spokes)]
    for name in a:
        specs.append({"name": name, "kind": "fc", "in_features": width, "out_features": inner, "inputs": [x]})
    hub = f"b{i}_hub"
    if len(a) == 1 or hub_fc:
        src = a[0] if len(a) == 1 else None
        if src is None:
            specs.append({"name": f"b{i}_sum", "kind": "add", "inputs": a})
            src = f"b{i}_sum"  # (then the sum is the hub's only input: the block has no hub: tested as not a chain)
        specs.append({"name": hub, "kind": "fc", "in_features": inner, "out_features": inner, "inputs": [src]})
    else:
        specs.append({"name": hub, "kind": "add", "inputs": a})
    b = [f"b{i}_b{k}" for k in range(b_spokes)]
    for name in b:
        specs.append({"name": name, "kind": "fc", "in_features": inner, "out_features": width, "inputs": [hub]})
    specs.append({"name": f"b{i}_out", "kind": "add", "inputs": [x] + b})
    return f"b{i}_out"


def _repeated(seed: int, levels: int) -> Problem:
    """A random chain of blocks: two block shapes drawn, repeated in a random order (so some are
    identical and some differ only in their widths), after a first fc."""
    rng = random.Random(seed)
    width = rng.choice([4, 8])
    shapes = [(rng.randint(1, 2), rng.randint(1, 2), rng.choice([4, 8, 16])) for _ in range(2)]
    specs = [{"name": "first", "kind": "fc", "in_features": 3, "out_features": width, "inputs": []}]
    x = "first"
    for i in range(rng.randint(2, 4)):
        a, b, inner = shapes[rng.randrange(2)]
        x = _block(specs, x, i, a, b, width, inner, hub_fc=False)
    spec = {"version": 1, "name": f"blocks-{seed}", "batch": rng.choice([1, 2, 8]), "layers": specs}
    return Problem(parse_network(spec, "blocks"), synthetic_array(levels), Space.ACCPAR if seed % 2 else Space.HYPAR)


def _free(vc: VectorCosts) -> list[np.ndarray]:
    return [np.flatnonzero(~vc.blocked(n)) for n in range(vc.N)]


@pytest.mark.parametrize("all_tabled", [False, True])
@pytest.mark.parametrize("layers,levels", [(1, 2), (2, 3), (3, 3), (4, 4), (2, 5)])
def test_tiny_llama_equals_exact(layers, levels, all_tabled, monkeypatch):
    """Pieces met once carry the chain's message directly; with ``all_tabled`` they go by their
    tables too: the same optimum either way."""
    if all_tabled:
        monkeypatch.setattr(block_chain, "direct", lambda vc, p: False)
    problem = _llama(layers, levels)
    vc = VectorCosts(problem)
    got = block_chain.solve(vc, _free(vc))
    want = exact.solve(problem)
    assert got is not None and got.value == want.objective
    assert plan_cost(vc, got.vectors) == got.value
    # pieces: the first (embedding, attention), then a feed-forward and an attention block per layer
    # after the first, and the LM head's edge; every repeat shares its table (feed-forward from 2
    # layers, attention from 3), the others are crossed directly
    assert got.pieces == 2 * layers + 1
    assert got.tables == (min(got.pieces, 4) if all_tabled else min(layers - 1, 2))


@pytest.mark.parametrize("seed", range(16))
def test_repeated_blocks_equal_exact(seed, monkeypatch):
    if seed % 4 == 3:
        monkeypatch.setattr(block_chain, "direct", lambda vc, p: False)
    problem = _repeated(seed, levels=2 + seed % 3)
    vc = VectorCosts(problem)
    got = block_chain.solve(vc, _free(vc))
    want = exact.solve(problem)
    assert got is not None and got.value == want.objective
    assert plan_cost(vc, got.vectors) == got.value


@pytest.mark.parametrize("seed", range(12))
def test_restricted_domains_equal_survivor_elimination(seed):
    """Ends and hubs restricted to random subsets (spokes free): the same optimum as the survivor
    elimination over those domains (itself checked against enumeration in test_pruned)."""
    rng = random.Random(500 + seed)
    problem = _repeated(seed, levels=2 + seed % 2) if seed % 3 else _llama(2, 3)
    vc = VectorCosts(problem)
    free = _free(vc)
    ps = block_chain.pieces(vc, [len(d) for d in free])
    restricted = {n for p in ps for n in (p.a, p.b, p.hub) if n is not None}
    domains = [np.array(sorted(rng.sample(list(d), max(1, len(d) // 3)))) if n in restricted else d
               for n, d in enumerate(free)]
    got = block_chain.solve(vc, domains)
    assert got is not None and got.value <= eliminate(vc, domains)[0]
    # a shared table's hub takes the union of its pieces' hub domains: with those, equal
    owner = block_chain.groups(vc, ps)
    for p, o in zip(ps, owner):
        if p.hub is not None:
            union = np.union1d(domains[p.hub], domains[ps[o].hub])
            domains[p.hub] = domains[ps[o].hub] = union
    for p, o in zip(ps, owner):  # (a second pass: the owner's union may have grown after p)
        if p.hub is not None:
            domains[p.hub] = domains[ps[o].hub]
    want = eliminate(vc, domains)
    assert want is not None and got.value == want[0]
    assert plan_cost(vc, got.vectors) == got.value
    assert all(v in domains[n] for n, v in enumerate(got.vectors))


def test_identical_only_when_costs_are_equal():
    """Blocks of the same structure whose widths differ are not shared; equal ones are."""
    specs = [{"name": "first", "kind": "fc", "in_features": 3, "out_features": 8, "inputs": []}]
    x = "first"
    for i, inner in enumerate([4, 4, 16, 4]):
        x = _block(specs, x, i, 2, 1, 8, inner, hub_fc=False)
    problem = Problem(parse_network({"version": 1, "name": "w", "batch": 2, "layers": specs}, "w"), synthetic_array(3), Space.ACCPAR)
    vc = VectorCosts(problem)
    ps = block_chain.pieces(vc, [d.V for d in vc.dom])
    owner = block_chain.groups(vc, ps)
    widths = {p.hub: problem.network.layers[p.hub].name for p in ps}
    assert len(ps) == 4 and len(set(owner)) == 3  # the first block differs (its entry is the first fc)
    assert owner[1] == owner[3] != owner[2], widths
    got = block_chain.solve(vc, _free(vc))
    assert got.value == exact.solve(problem).objective


def test_not_a_chain_of_pieces():
    for name in ("resnet18", "gpt2-small"):  # downsample shortcuts; the two embeddings' join
        vc = VectorCosts(Problem(load_model(name), synthetic_array(2), Space.ACCPAR))
        assert block_chain.solve(vc, _free(vc)) is None


def test_table_limit_and_deadline():
    vc = VectorCosts(_llama(2, 4))
    assert block_chain.solve(vc, _free(vc), max_table=100) is None
    assert block_chain.solve(vc, _free(vc), deadline=time.perf_counter() - 1) is None


def test_empty_domains_mean_no_plan():
    vc = VectorCosts(_llama(2, 3))
    free = _free(vc)
    ps = block_chain.pieces(vc, [len(d) for d in free])
    hub = ps[1].hub
    domains = [d[:0] if n == hub else d for n, d in enumerate(free)]
    got = block_chain.solve(vc, domains)
    assert got is not None and got.value == vc.big and got.vectors is None


def test_pruned_solves_a_chain_at_once():
    problem = _llama(3, 4)
    got = pruned.solve(problem)
    assert got.status is Status.OPTIMAL and got.info["method"] == "block-chain"
    assert got.objective == got.bound == exact.solve(problem).objective


@pytest.mark.parametrize("seed", range(6))
def test_settle_after_the_dual(seed):
    """After one dual round, with the DP's plan (or a worse one) as incumbent: the chain over the
    vectors whose marginal is at most incumbent - 1 gives the optimum (or proves the incumbent)."""
    from types import SimpleNamespace

    from explorer.solvers.pruned import _dp_start
    from explorer.solvers.tree_dual import dual_bound

    problem = _repeated(seed, levels=3) if seed % 2 else _llama(2 + seed % 3, 3)
    vc = VectorCosts(problem)
    start = _dp_start(problem, vc, math.inf)[:2]
    res = dual_bound(vc, rounds=1, incumbent=start)
    want = exact.solve(problem).objective
    incumbent = want if seed % 3 == 0 else start[0]  # the optimum itself as incumbent: a proof that no plan is below it
    search = SimpleNamespace(vc=vc, res=res, lo=res.bound, incumbent=incumbent, vectors=None)
    info = block_chain.settle(search, time.perf_counter() + 60)
    if res.bound >= incumbent:
        assert info == {}
        return
    assert info["method"] == "tree-dual+block-chain"
    assert search.lo == search.incumbent == want
    if search.vectors is not None:
        assert plan_cost(vc, search.vectors) == want


@pytest.mark.parametrize("name,levels", [("llama-7b", 4), ("vit-b16", 5), ("mobilenet-v2", 5)])
def test_pruned_on_chains_without_the_chain_equals_it(name, levels, monkeypatch):
    """The zoo chains go by the chain now; the dual and thresholds still prove the same optimum
    on them with the chain switched off (they keep their coverage)."""
    problem = Problem(load_model(name), synthetic_array(levels), Space.ACCPAR)
    with_chain = pruned.solve(problem)
    monkeypatch.setattr(block_chain, "solve_whole", lambda *args: None)
    monkeypatch.setattr(block_chain, "settle", lambda *args: {})
    without = pruned.solve(problem)
    assert with_chain.status is without.status is Status.OPTIMAL
    assert with_chain.objective == without.objective == without.bound
    assert with_chain.info["method"] == "block-chain" and without.info["method"] == "tree-dual+thresholds"


@pytest.mark.parametrize("seed", range(8))
def test_pins_and_forbids_equal_exact(seed):
    """A pin or forbid on some layers makes their block differ from its repeats (its costs are
    ``big`` there): the chain shares only what is still equal and keeps the exact optimum."""
    from explorer.core.constraints import Constraints, Forbid, Pin

    rng = random.Random(900 + seed)
    base = _llama(3, 3) if seed % 2 else _repeated(seed, levels=3)
    n, H, types = base.num_layers, base.levels, base.space.types
    pins = tuple(Pin(rng.randrange(n), rng.choice([None] + list(range(H))), rng.choice(types)) for _ in range(rng.randint(0, 2)))
    forbids = tuple(Forbid(rng.randrange(n), rng.choice(types)) for _ in range(rng.randint(1, 2)))
    problem = base.with_constraints(Constraints(pins, forbids))
    vc = VectorCosts(problem)
    if any(vc.blocked(m).all() for m in range(vc.N)):
        pytest.skip("the draw leaves a layer no type")
    got = block_chain.solve(vc, _free(vc))
    assert got is not None and got.value == exact.solve(problem).objective
    assert plan_cost(vc, got.vectors) == got.value


def test_a_run_that_skipped_the_chain_for_time_says_what_limit_would_run_it(monkeypatch):
    """A chain of blocks whose exact chain does not fit the time left goes to the dual; when that
    stops short, the reason says the chain was skipped for time and what limit would run it (it
    used to name only the entries limit of the next elimination, as if more time would not help)."""
    from explorer.core.solution import SolveOptions

    problem = _llama(2, 5)
    rate = block_chain.work(*_whole_work_args(problem)) / 100.0  # the chain: 100 s, beyond a 30 s limit
    monkeypatch.setattr(block_chain, "RATE", rate)
    monkeypatch.setattr(block_chain, "_cpu_share", lambda *a: 1.0)
    monkeypatch.setattr(block_chain, "settle", lambda *args: {})
    s = pruned.solve(problem, SolveOptions(time_limit_s=30.0), max_entries=1)  # no elimination fits either
    assert s.status is Status.FEASIBLE
    m = re.search(r"this graph is a chain of blocks, solved exactly at once in an estimated ([\d.]+) s, more than the "
                  r"([\d.]+) s left of --time-limit 30 s: set --time-limit to about (\d+) s$", s.info["reason"])
    estimate = block_chain.work(*_whole_work_args(problem)) / rate
    assert m and m.group(1) == f"{estimate:.1f}" and 29 < float(m.group(2)) <= 30, s.info["reason"]
    assert abs(int(m.group(3)) - 1.5 * (estimate + 30 - float(m.group(2)))) <= 1


def test_chain_runs_when_it_fits_the_time_left_not_half_the_limit(monkeypatch):
    """Estimated at 70% of the limit (more than the half it used to be allowed): it runs, optimal
    at once (LLaMA-7B at H = 10 under --time-limit 10 went to the dual and ended feasible)."""
    from explorer.core.solution import SolveOptions

    problem = _llama(3, 4)
    monkeypatch.setattr(block_chain, "RATE", block_chain.work(*_whole_work_args(problem)) / 21.0)  # 21 s of 30
    monkeypatch.setattr(block_chain, "_cpu_share", lambda *a: 1.0)
    got = pruned.solve(problem, SolveOptions(time_limit_s=30.0))
    assert got.status is Status.OPTIMAL and got.info["method"] == "block-chain"
    monkeypatch.setattr(block_chain, "_cpu_share", lambda *a: 0.5)  # half a core: 42 s, beyond the time left
    got = pruned.solve(problem, SolveOptions(time_limit_s=30.0))
    assert got.info["method"] != "block-chain" and got.status is Status.OPTIMAL


def test_cpu_share_measured_over_a_sample():
    t = time.perf_counter()
    assert block_chain._cpu_share(t, time.process_time()) == 1.0  # too short to tell
    w0, c0 = time.perf_counter(), time.process_time()
    time.sleep(0.4)  # the process idle: far below a core
    assert block_chain._cpu_share(w0, c0) < 0.5


def test_chain_cut_at_the_deadline_holds_the_limit(monkeypatch):
    """Estimated to fit but slower than that (each table taking until the deadline): cut there,
    the run ends within 10% of the limit (the DP's start after it), feasible, and says so."""
    from explorer.core.solution import SolveOptions

    def slow(vc, p, Da, Db, Dc, deadline=None):
        while True:
            check_deadline(deadline, block_chain._Deadline)
            time.sleep(0.01)

    monkeypatch.setattr(block_chain, "table", slow)
    problem = _llama(3, 4)
    t0 = time.perf_counter()
    got = pruned.solve(problem, SolveOptions(time_limit_s=2.0))
    assert time.perf_counter() - t0 <= 2.2
    assert got.status is Status.FEASIBLE and got.bound <= got.objective
    assert re.search(r"chain of blocks, solved exactly at once in an estimated [\d.]+ s(?: \(at the \d+% of a core "
                     r"this process got\))?, cut after [\d.]+ s at --time-limit 2 s: raise it$", got.info["reason"])


def test_settle_reads_what_the_chain_before_the_dual_kept(monkeypatch):
    """The chain before the dual cut after its first table: after the dual, ``settle`` takes its
    pieces, owners and that table (over every vector: it serves the survivors too), builds only
    the others, and finds what a settle from nothing finds."""
    from types import SimpleNamespace

    from explorer.solvers.tree_dual import dual_bound

    problem = _llama(3, 4)
    vc = VectorCosts(problem)
    start = pruned._dp_start(problem, vc, math.inf)[:2]
    res = dual_bound(vc, rounds=1, incumbent=start)
    fresh = SimpleNamespace(vc=vc, res=res, lo=res.bound, incumbent=start[0], vectors=None)
    want = block_chain.settle(fresh, time.perf_counter() + 60)
    built, real = [], block_chain.table

    def first_only(*args, **kw):
        if built:
            raise block_chain._Deadline
        built.append(args[1])
        return real(*args, **kw)

    kept = block_chain.Kept()
    with monkeypatch.context() as m:
        m.setattr(block_chain, "table", first_only)
        assert block_chain.solve_whole(problem, vc, time.perf_counter(), time.perf_counter() + 60, kept) is None
    assert len(kept.tables) == 1 and kept.ps is not None
    again = []
    monkeypatch.setattr(block_chain, "groups", lambda *a: pytest.fail("owners found again"))
    monkeypatch.setattr(block_chain, "table", lambda *a, **kw: again.append(a[1]) or real(*a, **kw))
    search = SimpleNamespace(vc=vc, res=res, lo=res.bound, incumbent=start[0], vectors=None)
    info = block_chain.settle(search, time.perf_counter() + 60, kept)
    assert again and built[0] not in again and len(again) == want["block_chain"]["tables"] - 1
    assert info["block_chain"]["estimate"] < want["block_chain"]["estimate"]
    assert want["method"] == info["method"] == "tree-dual+block-chain"
    assert (search.lo, search.incumbent) == (fresh.lo, fresh.incumbent) and search.lo == search.incumbent


def _whole_work_args(problem):
    vc = VectorCosts(problem)
    domains = [np.flatnonzero(~vc.blocked(n)) for n in range(vc.N)]
    ps = block_chain.pieces(vc, [len(d) for d in domains])
    return vc, ps, block_chain.groups(vc, ps), domains


def test_a_chain_estimated_beyond_ten_minutes_is_not_suggested(monkeypatch):
    """A chain of blocks estimated at hours (alexnet's at 13 levels: ~4,000 s) is no advice: the
    reason does not tell the user to raise --time-limit to it (trial 8)."""
    from explorer.core.solution import SolveOptions

    problem = _llama(2, 5)
    estimate = block_chain.work(*_whole_work_args(problem))
    monkeypatch.setattr(block_chain, "RATE", estimate / 1000.0)  # the chain: 1,000 s
    monkeypatch.setattr(block_chain, "_cpu_share", lambda *a: 1.0)
    monkeypatch.setattr(block_chain, "settle", lambda *args: {})
    s = pruned.solve(problem, SolveOptions(time_limit_s=30.0), max_entries=1)
    assert s.status is Status.FEASIBLE and "to about" not in s.info["reason"], s.info["reason"]
    monkeypatch.setattr(block_chain, "RATE", estimate / 100.0)  # 100 s: suggested
    s = pruned.solve(problem, SolveOptions(time_limit_s=30.0), max_entries=1)
    assert "chain of blocks" in s.info["reason"] and "to about" in s.info["reason"], s.info["reason"]
