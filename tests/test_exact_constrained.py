"""The exact solver under side constraints: Lagrangian bound + label setting on chains, the
one-level-at-a-time elimination on graphs, cross-checked against brute force (the oracle) on
seeded random chains and graphs with caps, memory, pins and forbids (both spaces, both
objectives), and against CP-SAT on a share of them."""

import random
from fractions import Fraction

import pytest

from explorer.app.run import rescore
from explorer.core.constraints import Cap, Constraints, Forbid, Pin
from explorer.core.evaluate import evaluate
from explorer.core.kinds import SOLVE_TIME_LIMIT
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.randnet import random_chain, random_dag_spec
from explorer.core.solution import SolveOptions, Status
from explorer.frontends import load_model
from explorer.frontends.network_yaml import parse_network
from explorer.solvers import brute, chain_labels, constrained, cpsat, exact

from .conftest import make_array

ONE = SolveOptions(workers=1, seed=0)


def random_instance(seed: int) -> Problem:
    """A tiny chain (3 in 4) or graph, random limits around its free optimum (some bind, some are infeasible)."""
    rng = random.Random(seed)
    space = Space.HYPAR if seed % 2 else Space.ACCPAR
    objective = Objective.TRAFFIC if (seed // 2) % 2 else Objective.TIME
    K = len(space.types)
    graph = seed % 4 == 3
    while True:
        H, L = rng.randint(1, 3), rng.randint(2, 5)
        if K ** (H * L) <= 3000:
            break
    net = parse_network(random_dag_spec(seed, L), "dag") if graph else random_chain(seed, L)
    bw = [rng.choice([5, 12.5, 25, 60, 100]) for _ in range(H)]
    base = Problem(net, make_array(H, bw), space, objective)
    free = exact.solve(base)
    wc = rng.randint(0, 2)
    caps = []
    for h in range(H):
        if rng.random() < 0.5:  # between the level's least cost and the free optimum's (sometimes outside)
            least = exact.solve(base.with_weights(tuple(int(k == h) for k in range(H)))).level_units[h]
            units = least + (free.level_units[h] - least) * Fraction(rng.choice([-1, 0, 3, 6, 9, 10, 12]), 10)
            caps.append(Cap(h, max(0, units) * 4 / Fraction(base.tables.unit_per_element), "test"))
    memory = None
    if rng.random() < 0.25:
        ev = evaluate(net, base.array, space, free.plan, wc)
        memory = ev.memory_bytes * Fraction(rng.choice([9, 10, 10, 15]), 10)
    n = base.num_layers
    pins = tuple(Pin(rng.randrange(n), rng.choice([None] + list(range(H))), rng.choice(space.types)) for _ in range(rng.randint(0, 1)))
    forbids = tuple(Forbid(rng.randrange(n), rng.choice(space.types)) for _ in range(rng.randint(0, 1)))
    return base.with_constraints(Constraints(pins, forbids, tuple(caps), memory, wc))


@pytest.mark.parametrize("block", range(10))
def test_exact_agrees_with_brute_under_constraints(block):
    # 10 blocks x 52 instances = 520 seeded instances; CP-SAT joins on every 8th one
    for seed in range(52 * block, 52 * (block + 1)):
        p = random_instance(seed)
        b = brute.solve(p)
        e = exact.solve(p)
        assert e.status is b.status, seed
        if b.status is Status.OPTIMAL:
            assert e.objective == b.objective == e.bound, seed
            rescore(p, e)
        else:
            assert e.plan is None
        if seed % 8 == 0:
            c = cpsat.solve(p, ONE)
            assert c.status is b.status and c.objective == b.objective, seed


def test_graphs_at_scale_agree_with_cpsat():
    # ResNet-18 at 32 accelerators, accpar: a graph the (K^H)^3 tables refused; joins are 2^H
    p = Problem(load_model("resnet18"), make_array(5), Space.ACCPAR)
    e, c = exact.solve(p), cpsat.solve(p, SolveOptions(workers=2))
    assert e.status is c.status is Status.OPTIMAL and e.objective == c.objective
    assert e.info["method"] == "graph-elimination"
    rescore(p, e)


def test_label_limit_hands_the_restricted_search_to_cpsat(monkeypatch):
    # with no room for labels, CP-SAT searches the vectors the Lagrangian bounds leave; with no
    # time for it either, the answer is the incumbent with a proven (lower) bound
    net = random_chain(7, 6)
    base = Problem(net, make_array(3), Space.ACCPAR)
    free = exact.solve(base)
    cap = Cap(2, Fraction(free.level_units[2] * 4, base.tables.unit_per_element) * Fraction(6, 10), "test")
    p = base.with_constraints(Constraints(caps=(cap,)))
    full = exact.solve(p)
    c = cpsat.solve(p, ONE)
    assert full.status is c.status is Status.OPTIMAL and full.objective == c.objective
    monkeypatch.setattr(chain_labels, "MAX_LABELS", 0)
    monkeypatch.setattr(constrained, "BEAM", 1)
    s = exact.solve(p, ONE)
    assert s.status is Status.OPTIMAL and s.objective == full.objective == s.bound
    assert s.info["method"] == "lagrangian+labels+cpsat" and s.info["cpsat_status"] == "OPTIMAL"
    rescore(p, s)
    s = exact.solve(p, SolveOptions(workers=1, time_limit_s=1e-9))
    assert s.status is Status.FEASIBLE and s.bound < full.objective <= s.objective
    assert "time limit" in s.info["reason"]
    rescore(p, s)


def test_min_marginals_on_graphs_match_enumeration():
    import itertools

    from explorer.core.costs import plan_level_units
    from explorer.solvers.elimination import graph_marginals, vectors_plan
    from explorer.solvers.vectors import VectorCosts

    for seed in range(12):
        net = parse_network(random_dag_spec(seed, 4), "dag")
        p = Problem(net, make_array(2), Space.HYPAR if seed % 2 else Space.ACCPAR)
        vc = VectorCosts(p)
        total, marg = graph_marginals(vc)
        best = [[None] * d.V for d in vc.dom]
        for vecs in itertools.product(*[range(d.V) for d in vc.dom]):
            val = p.weights.value(plan_level_units(p.tables, vectors_plan(vc, list(vecs)).types))
            for n, v in enumerate(vecs):
                if best[n][v] is None or val < best[n][v]:
                    best[n][v] = val
        assert [[int(x) for x in m] for m in marg] == best
        assert total == min(best[0])


def test_huge_sizes_with_a_cap_stay_exact(monkeypatch):
    # ~2^63 elements per tensor: the Lagrangian DPs and the label pass run on Python integers
    from explorer.core.network import Layer, LayerKind, Network

    b1, d1, d2, d3, d4 = 3_000_000_019, 3_000_000_017, 2_999_999_929, 2_999_999_963, 2_999_999_999
    net = Network.chain("huge", b1, [Layer("a", LayerKind.FC, d1, d2), Layer("b", LayerKind.FC, d2, d3),
                                     Layer("c", LayerKind.FC, d3, d4)])
    base = Problem(net, make_array(2), Space.ACCPAR)
    free = exact.solve(base)
    methods = set()
    for h in range(2):
        least = exact.solve(base.with_weights(tuple(int(k == h) for k in range(2)))).level_units[h]
        for factor in (Fraction(1, 10), Fraction(5, 10), Fraction(9, 10)):
            units = least + (free.level_units[h] - least) * factor
            p = base.with_constraints(Constraints(caps=(Cap(h, units * 4 / Fraction(base.tables.unit_per_element), "test"),)))
            e, b = exact.solve(p), brute.solve(p)
            methods.add(e.info["method"])
            assert e.status is b.status and e.objective == b.objective and e.bound == b.bound
            if e.plan is not None:
                assert e.objective > 2**63
                rescore(p, e)
    assert methods - {"chain-dp", "least-resource"}  # some cap bound and needed the Lagrangian passes
    # without multiplier moves the labels must close the whole gap, on Python integers
    monkeypatch.setattr(constrained, "_line_search", lambda ch, k, lam, known=None: [])
    monkeypatch.setattr(constrained, "_local_search", lambda ch, plan: plan)
    e, b = exact.solve(p), brute.solve(p)
    assert e.info["method"] == "lagrangian+labels" and e.status is b.status is Status.OPTIMAL
    assert e.objective == b.objective == e.bound
    rescore(p, e)


def test_a_hint_that_breaks_a_pin_is_ignored():
    # the free optimum of the unpinned chain, handed over as a hint, must not become the answer
    base = Problem(random_chain(11, 3), make_array(2), Space.ACCPAR)
    free = exact.solve(base)
    t = free.plan.at(0, 0)
    other = next(x for x in Space.ACCPAR.types if x is not t)
    cap = Cap(1, Fraction(free.level_units[1] * 4, base.tables.unit_per_element), "test")
    p = base.with_constraints(Constraints(pins=(Pin(0, 0, other),), caps=(cap,)))
    e, b = exact.solve(p, SolveOptions(hint=free.plan)), brute.solve(p)
    assert e.status is b.status and e.objective == b.objective and e.bound == b.bound
    if e.plan is not None:
        assert e.plan.at(0, 0) is other
        rescore(p, e)


def test_a_lone_infeasible_limit_is_explained_as_cpsat_explains_it():
    from explorer.solvers.cpsat import explain_infeasible

    named = 0
    for seed in range(200):
        p = random_instance(seed)
        if seed % 2:  # keep one limit only, so that more of them are lone
            cons = p.constraints
            p = p.with_constraints(Constraints(caps=cons.caps[:1], memory_bytes=None if cons.caps else cons.memory_bytes,
                                               weight_copies=cons.weight_copies))
        e = exact.solve(p)
        if e.status is not Status.INFEASIBLE or "conflict" not in e.info:
            continue
        why = explain_infeasible(p)
        # (a cap no plan meets under several limits: the others may conflict too, said in the suggestion)
        assert why["infeasible"] and (not why["more_conflicts"] or "among themselves" in e.info["suggestion"]), seed
        assert e.info["conflict"] == why["conflict"] and e.info["suggestion"] == why["suggestion"], seed
        named += 1
    assert named >= 5  # (seeded: 5 of them)


def _capped_chain():
    """A 6-layer chain at 3 levels whose level-2 cap binds (0.6x the free optimum's), its optimum
    (exact; CP-SAT agrees, test_label_limit_hands_the_restricted_search_to_cpsat), and a feasible
    plan that is not optimal (the least level-2 cost)."""
    base = Problem(random_chain(7, 6), make_array(3), Space.ACCPAR)
    free = exact.solve(base)
    cap = Cap(2, Fraction(free.level_units[2] * 4, base.tables.unit_per_element) * Fraction(6, 10), "test")
    p = base.with_constraints(Constraints(caps=(cap,)))
    least = exact.solve(base.with_weights((0, 0, 1))).plan
    return p, exact.solve(p), least


def test_cpsat_given_a_proven_bound_reports_it_honestly():
    from explorer.core.costs import plan_level_units

    p, b, least = _capped_chain()
    worse = p.weights.value(plan_level_units(p.tables, least.types))
    assert b.status is Status.OPTIMAL and worse > b.objective  # the hint is feasible and not optimal
    # the optimum as the bound: CP-SAT proves nothing itself, the bound is the given method's
    c = cpsat.solve(p, SolveOptions(workers=1, hint=least, lower_bound=b.objective, lower_bound_by="test"))
    assert c.status is Status.OPTIMAL and c.objective == c.bound == b.objective
    assert c.info["bound_method"] == "test"
    rescore(p, c)
    # a weaker bound: CP-SAT raises it to the optimum and is named for it
    c = cpsat.solve(p, SolveOptions(workers=1, hint=least, lower_bound=b.objective // 2, lower_bound_by="test"))
    assert c.status is Status.OPTIMAL and c.objective == c.bound == b.objective and c.info["bound_method"] == "cpsat"
    # no time to search: the hint at most, feasible with the given bound and a gap, never optimal
    c = cpsat.solve(p, SolveOptions(workers=1, hint=least, lower_bound=b.objective // 2, lower_bound_by="test",
                                    deterministic_time_limit=0.0))
    assert c.status is not Status.OPTIMAL
    if c.plan is not None:
        assert c.status is Status.FEASIBLE and b.objective // 2 <= c.bound <= b.objective <= c.objective
        assert c.gap > 0
        rescore(p, c)


def test_explore_cpsat_runs_the_exact_method_first_and_names_the_bound():
    from explorer.app.run import run, solve_with

    p, b, _ = _capped_chain()
    s = solve_with(p, "cpsat", ONE)
    assert s.status is Status.OPTIMAL and s.objective == s.bound == b.objective
    assert s.info["exact_first"]["status"] == "optimal" and s.info["exact_first"]["bound"] == b.objective
    assert s.info["bound_method"] == "exact:" + s.info["exact_first"]["method"]
    out = run(p, "cpsat", ONE).to_json()
    assert out["status"] == "optimal" and out["bound_method"].startswith("exact:lagrangian")
    # without caps or memory CP-SAT runs alone and proves its own bound
    free = Problem(random_chain(7, 6), make_array(3), Space.ACCPAR)
    s = solve_with(free, "cpsat", ONE)
    assert "exact_first" not in s.info and s.info["bound_method"] == "cpsat" and s.status is Status.OPTIMAL
    # the exact method cut short (no time for its CP-SAT rounds): CP-SAT gets its plan and bound, and
    # its answer is optimal only when proven
    for seed in range(3, 40, 4):  # graphs
        q = random_instance(seed)
        if not q.constraints.caps:
            continue
        bb = brute.solve(q)
        s = solve_with(q, "cpsat", SolveOptions(workers=1, time_limit_s=5.0))
        assert s.status is bb.status and s.objective == bb.objective, seed
        if s.status is Status.OPTIMAL:
            assert s.bound == s.objective
            rescore(q, s)


def test_ctrl_c_in_a_cpsat_round_ends_the_constrained_solve_with_its_plan_so_far(monkeypatch):
    from explorer.solvers import cpsat as cpsat_module

    monkeypatch.setattr(constrained, "MAX_GRAPH_ROWS", 0)  # CP-SAT rounds close the gap
    for seed in range(3, 400, 4):
        q = random_instance(seed)
        if q.constraints.caps and q.constraints.memory_bytes is None:
            if exact.solve(q, ONE).info.get("method") == "lagrangian+cpsat":
                break
    real = cpsat_module.run_solver
    monkeypatch.setattr(cpsat_module, "run_solver", lambda solver, model, cb=None: (real(solver, model, cb)[0], True))
    s = exact.solve(q, ONE)  # (a round's Ctrl-C used to be CP-SAT's own: the next round went on)
    assert s.status is Status.INTERRUPTED and "stopped by Ctrl-C" in s.info["reason"]
    if s.plan is not None:
        rescore(q, s)


def test_the_time_limit_bounds_the_whole_constrained_solve(monkeypatch):
    # a graph whose gap CP-SAT must close: with --time-limit the rounds get what the Lagrangian
    # phase left; with no time left the answer is feasible with its proven bound, never optimal
    monkeypatch.setattr(constrained, "MAX_GRAPH_ROWS", 0)  # no room for graph labels: CP-SAT closes the gap
    p = None
    for seed in range(3, 400, 4):
        q = random_instance(seed)
        if q.constraints.caps and q.constraints.memory_bytes is None:
            e = exact.solve(q, ONE)
            if e.info.get("method") == "lagrangian+cpsat" and e.status is Status.OPTIMAL:
                p, full = q, e
                break
    assert p is not None and full.status is Status.OPTIMAL
    assert constrained.time_budget(SolveOptions()) == SOLVE_TIME_LIMIT
    assert constrained.time_budget(SolveOptions(time_limit_s=7.0)) == 7.0
    s = exact.solve(p, SolveOptions(workers=1, time_limit_s=1e-9))
    if s.status is Status.FEASIBLE:
        assert s.bound < s.objective and "time limit" in s.info["reason"]
        rescore(p, s)
    elif s.status is Status.UNKNOWN:  # the limit passed before the first relaxed DP
        assert s.plan is None and s.bound is None and "time limit" in s.info["reason"]
    else:  # the local search found the optimum before any CP-SAT round
        assert s.status is Status.OPTIMAL and s.objective == full.objective == s.bound


def test_graph_labels_and_the_cpsat_fallback_agree_with_brute(monkeypatch):
    # graphs whose cap binds: the label elimination closes the gap; with no room for its rows,
    # CP-SAT over the same vectors; both agree with brute force
    seen = 0
    for seed in range(3, 600, 4):
        p = random_instance(seed)
        e = exact.solve(p, ONE)
        if e.info.get("method") != "lagrangian+labels" or "vectors_left" not in e.info:
            continue
        b = brute.solve(p)
        assert e.status is b.status and e.objective == b.objective == e.bound, seed
        rescore(p, e)
        with monkeypatch.context() as m:
            m.setattr(constrained, "MAX_GRAPH_ROWS", 0)
            c = exact.solve(p, ONE)
        assert c.info["method"] == "lagrangian+cpsat" and c.info["labels"] == "outgrew the label limit", seed
        assert c.status is b.status and c.objective == b.objective, seed
        seen += 1
    assert seen >= 5


def test_footprints_beyond_int64_stay_exact():
    # 10^15 weight copies: a layer's footprint beyond int64, so the DPs run on Python integers
    # (VectorCosts.footprint overflowed)
    base = Problem(random_chain(5, 4), make_array(2), Space.ACCPAR)
    free = exact.solve(base)
    wc = 10**15
    mem = evaluate(base.network, base.array, Space.ACCPAR, free.plan, wc).memory_bytes
    seen = set()
    for factor in (Fraction(1, 2), Fraction(99, 100), Fraction(1), Fraction(3, 2)):
        p = base.with_constraints(Constraints(memory_bytes=mem * factor, weight_copies=wc))
        e, b = exact.solve(p), brute.solve(p)
        assert e.status is b.status and e.objective == b.objective, factor
        seen.add(e.status)
        if e.plan is not None:
            assert e.bound == e.objective
            rescore(p, e)
    assert Status.OPTIMAL in seen
