"""Cross-checks of the joint solvers on seeded random chains, and their refusals."""

import random

import pytest

from explorer.core.constraints import Constraints, Forbid, Pin
from explorer.core.errors import InstanceTooLarge
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.randnet import random_chain
from explorer.app.run import rescore
from explorer.frontends import load_array, load_model
from explorer.solvers import brute, cpsat, dp, exact
from explorer.core.solution import SolveOptions, Status

from .conftest import make_array

ONE = SolveOptions(workers=1, seed=0)


def random_problem(seed: int) -> Problem:
    rng = random.Random(seed)
    space = Space.HYPAR if seed % 2 else Space.ACCPAR
    objective = Objective.TRAFFIC if (seed // 2) % 2 else Objective.TIME
    K = len(space.types)
    while True:
        H, L = rng.randint(1, 3), rng.randint(1, 5)
        if K ** (H * L) <= 20_000:
            break
    bw = [rng.choice([5, 12.5, 25, 60, 100]) for _ in range(H)]
    return Problem(random_chain(seed, L), make_array(H, bw), space, objective)


@pytest.mark.parametrize("seed", range(240))
def test_brute_exact_cpsat_agree_and_dp_is_no_better(seed):
    p = random_problem(seed)
    b, e, c, d = brute.solve(p), exact.solve(p), cpsat.solve(p, ONE), dp.solve(p)
    for sol in (b, e, c):
        assert sol.status is Status.OPTIMAL
        assert sol.bound == sol.objective
        rescore(p, sol)  # the evaluator re-scores the plan to the claimed objective
    rescore(p, d)
    assert b.objective == e.objective == c.objective
    assert d.objective >= e.objective


def test_the_dp_is_not_always_jointly_optimal():
    # model.md section 6: on small chains with three types the DP's gap reaches several percent
    gaps = []
    for seed in range(0, 240, 2):  # accpar instances
        p = random_problem(seed)
        gaps.append(dp.solve(p).objective - exact.solve(p).objective)
    assert min(gaps) >= 0 and max(gaps) > 0


@pytest.mark.parametrize("space", list(Space))
def test_zoo_gap_lenet_16(space):
    # the proven optimum on a real network: CP-SAT and the exact solver agree
    p = Problem(load_model("lenet-c"), load_array("hypar-16"), space)
    e, c = exact.solve(p), cpsat.solve(p, ONE)
    assert c.status is Status.OPTIMAL and c.objective == e.objective
    rescore(p, c)


def test_time_limited_cpsat_reports_feasible_with_valid_bound():
    # A deterministic work budget (reproducible with one worker) far below what the proof needs.
    p = Problem(load_model("vgg-e"), load_array("accpar-128"), Space.ACCPAR)
    opt = exact.solve(p).objective
    feasible = 0
    for budget in (0.05, 1.2):
        sol = cpsat.solve(p, SolveOptions(workers=1, seed=0, deterministic_time_limit=budget))
        assert sol.status in (Status.FEASIBLE, Status.OPTIMAL)
        assert sol.plan is not None
        rescore(p, sol)
        if sol.bound is None:  # nothing proven (CP-SAT's trivial bound 0): said so, not shown as bound 0
            assert sol.status is Status.FEASIBLE and "proved no bound" in sol.info["reason"]
            feasible += 1
            continue
        assert sol.bound <= opt <= sol.objective
        if sol.status is Status.FEASIBLE:
            feasible += 1
            assert sol.bound < sol.objective, "feasible means the proof is not complete"
            assert sol.gap == pytest.approx((sol.objective - sol.bound) / sol.objective)
        else:
            assert sol.objective == sol.bound == opt
    assert feasible >= 1


def test_pins_and_forbids_all_solvers_agree():
    rng = random.Random(5)
    compared = 0
    for seed in range(30):
        p = random_problem(100 + seed)
        L = p.num_layers
        pins = (Pin(rng.randrange(L), rng.choice([None, 0]), rng.choice(p.space.types)),)
        forbids = (Forbid(rng.randrange(L), rng.choice(p.space.types)),)
        q = p.with_constraints(Constraints(pins=pins, forbids=forbids))
        sols = [brute.solve(q), exact.solve(q), cpsat.solve(q, ONE)]
        statuses = {s.status for s in sols}
        if statuses == {Status.INFEASIBLE}:
            continue
        assert statuses == {Status.OPTIMAL}
        assert len({s.objective for s in sols}) == 1
        compared += 1
        for s in sols:
            for pin in pins:
                for h in range(q.levels):
                    if pin.level in (None, h):
                        assert s.plan.at(h, pin.layer) is pin.type
            assert all(s.plan.at(h, forbids[0].layer) is not forbids[0].type for h in range(q.levels))
    assert compared >= 24, f"only {compared} of 30 instances had a plan to compare (28 do)"


def test_refusals_name_the_size():
    big = Problem(load_model("vgg-a"), load_array("hypar-16").with_levels(12), Space.ACCPAR)
    with pytest.raises(InstanceTooLarge, match=r"exact: 3\^12 = 531,441 type vectors per layer"):
        exact.solve(big)
    with pytest.raises(InstanceTooLarge, match=r"brute: 1\.759e\+13 plans \(11 layers x 4 levels"):
        brute.solve(Problem(load_model("vgg-a"), load_array("hypar-16"), Space.HYPAR))


def test_dump_model(tmp_path):
    p = Problem(load_model("sfc"), load_array("hypar-16"), Space.HYPAR)
    target = tmp_path / "m.pb.txt"
    sol = cpsat.solve(p, SolveOptions(workers=1, dump_model=str(target)))
    assert sol.status is Status.OPTIMAL
    assert "x[0,0,(0, 0, 0),I]" in target.read_text()


def test_huge_sizes_stay_exact_and_cpsat_refuses_overflow():
    # every tensor has ~2^63 elements: beyond int64 once in units. The exact solver
    # switches to Python integers, brute force uses them anyway; CP-SAT refuses by name.
    from explorer.core.network import Layer, LayerKind, Network

    b1, d1, d2, d3 = 3_000_000_019, 3_000_000_017, 2_999_999_929, 2_999_999_963  # no common factor to divide out
    net = Network.chain("huge", b1, [Layer("a", LayerKind.FC, d1, d2), Layer("b", LayerKind.FC, d2, d3)])
    p = Problem(net, make_array(2), Space.ACCPAR)
    e, b, d = exact.solve(p), brute.solve(p), dp.solve(p)  # the DP's tables fall back from numpy too
    assert e.objective == b.objective and e.objective > 2**63
    assert d.objective >= e.objective
    rescore(p, e)
    rescore(p, d)
    with pytest.raises(InstanceTooLarge, match=r"cpsat: the objective can reach .* beyond CP-SAT's int64 range"):
        cpsat.solve(p, ONE)
