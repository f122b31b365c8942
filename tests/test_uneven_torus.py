"""Uneven splits on a torus (trial 10, finding 13; issue 20, item 3): where the alpha space frees
the top split alone (every split below 1/2: each accelerator of a side sends an equal share) the
torus's per-level bandwidths b_h serve the uneven tables exactly as the H-tree's; where it frees
a split below the top, the tables carry each group's link windows (``core.torus_links``) and the
evaluator scores the torus link by link. Hand goldens on 2 x 2 torus mixes, the alpha = 1/2 case
equal to the even evaluator's, the solvers cross-checked on seeded random instances of both
kinds, and the shared medium's refusal naming the file and field."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from fractions import Fraction as F

import pytest

from explorer.core.constraints import Cap, Constraints
from explorer.core.errors import SpecError
from explorer.core.split_rules import SplitRules
from explorer.core.evaluate import evaluate, evaluate_split
from explorer.core.objective import Objective
from explorer.core.partition import PartitionType, Space
from explorer.core.plan import Plan
from explorer.core.problem import Problem
from explorer.core.randnet import random_chain
from explorer.core.solution import SolveOptions, Status
from explorer.core.timing import Communication, Topology
from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers import get_solver
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.uneven import exact_uneven
from explorer.solvers.uneven_cpsat import cpsat_uneven
from explorer.solvers.uneven_joint import JointOptions, joint_uneven
from explorer.solvers.uneven_levels import levels_uneven

from .conftest import run_cli
from .test_torus_links import pair_times
from .test_uneven_model import NET, mix

I = PartitionType.I
HALF = F(1, 2)


def torus(levels, peaks, bw=10, dtype=2):
    return replace(mix(levels, peaks, bw, dtype), topology=Topology.TORUS)


def test_torus_golden_on_a_2x2_mix():
    """2 x 2 torus, leaves [1, 1, 3, 3] TFLOPS, links 10 GB/s, 2-byte elements. Level 0 runs along x,
    a ring of 2 at distance 1 (a tie: half each way, load 1/2): b_0 = 10 * 2^1 / (1/2) = 40 GB/s;
    level 1 along y: b_1 = 10 * 2^0 / (1/2) = 20 GB/s. NET (fc 4->2, fc 2->2, batch 8), type I
    everywhere, level 0 at 1/4 (the slow half gets 2 samples), level 1 at 1/2. Level 0: dW 8 + 4 = 12
    each way (I -> I at one alpha re-lays nothing): 24 B / 40 GB/s = 0.6 ns; level 1, each group:
    dW 12 each way, 24 B / 20 GB/s = 1.2 ns. Compute (576 FLOP in all): a slow leaf 576/8 = 72 FLOP
    at 1 TFLOPS, a fast one 576 * 3/8 = 216 at 3 TFLOPS: 72 ps each. Step: 1.872 ns (the H-tree at
    10 GB/s per level: 2.4 + 2.4 + 0.072 = 4.872 ns)."""
    arr = torus(2, [1, 1, 3, 3])
    assert (arr.bandwidth_Bps(0), arr.bandwidth_Bps(1)) == (40 * 10**9, 20 * 10**9)
    plan = Plan(((I, I), (I, I)), (((F(1, 4), F(1, 4)),), ((HALF, HALF), (HALF, HALF))))
    ev = evaluate_split(NET, arr, plan)
    assert ev.group_amounts == (((F(12), F(12)),), ((F(12), F(12)), (F(12), F(12))))
    assert ev.leaf_compute_s == (F(72, 10**12),) * 4
    assert ev.step_time_s == F(1872, 10**12)
    assert evaluate_split(NET, mix(2, [1, 1, 3, 3]), plan).step_time_s == F(4872, 10**12)
    # the equal split: a slow leaf computes 144 FLOP at 1 TFLOPS: 0.144 + 1.8 = 1.944 ns
    assert evaluate_split(NET, arr, Plan.even(plan)).step_time_s == F(1944, 10**12)


@pytest.mark.parametrize("model", ["lenet-c", "alexnet", "resnet18"])
def test_every_alpha_one_half_on_a_torus_is_the_even_evaluators(model):
    arr = replace(load_array("tpu-mix-16"), topology=Topology.TORUS)
    net = load_model(model)
    problem = Problem(net, arr, Space.ACCPAR, Objective.TIME)
    plan = get_solver("dp")(problem, SolveOptions()).plan
    even, split = evaluate(net, arr, Space.ACCPAR, plan), evaluate_split(net, arr, Plan.even(plan))
    assert split.traffic_bytes == even.traffic_bytes and split.level_cost == even.level_cost
    assert split.step_time_s == even.step_time_s


def _instance(rng):
    """A tiny torus mix whose alpha space frees the top split alone: one level of any two kinds, or
    two levels [p, p, q, q]; a random chain; at most 200 plans."""
    while True:
        H = rng.choice([1, 2])
        p, q = rng.sample([1, 2, 3, 5], 2)
        arr = torus(H, [p, q] if H == 1 else [p, p, q, q], bw=rng.choice([1, 10, 100]), dtype=rng.choice([1, 2, 4]))
        space = rng.choice([Space.HYPAR, Space.ACCPAR])
        net = random_chain(rng.randrange(10**6), rng.choice([2, 3]), max_channels=16, max_size=4, consistent=True)
        aspace = alpha_space(arr, alpha_grid(rng.choice([2, 3, 4])), FreeAlphas.UNLIKE, proportional=rng.random() < 0.7)
        n = 1
        for h in range(H):
            n *= len(space.types) * len(aspace.level_rows(h))
        if n ** len(net.layers) <= 200:
            return net, arr, space, aspace


def test_solvers_agree_on_random_torus_instances():
    """brute force, the exact Pareto DP, CP-SAT and the joint solver prove the same step time on 40
    seeded random torus instances; the level DP (dp) is never below it; every plan re-scores."""
    rng = random.Random(1313)
    differ = 0
    for k in range(40):
        net, arr, space, aspace = _instance(rng)
        want = brute_split(net, arr, space, aspace)
        e = exact_uneven(net, arr, space, aspace)
        j = joint_uneven(net, arr, space, aspace, JointOptions(time_limit_s=60))
        assert e.step_time_s == want.step_time_s and j.status is Status.OPTIMAL and j.step_time_s == want.step_time_s
        if k % 3 == 0:
            c = cpsat_uneven(net, arr, space, aspace)
            assert c.status is Status.OPTIMAL and c.step_time_s == c.bound_s == want.step_time_s
        d = levels_uneven(net, arr, space, aspace)
        assert d.step_time_s >= want.step_time_s
        for sol in (want, e, j, d):
            assert evaluate_split(net, arr, sol.plan).step_time_s == sol.step_time_s
        htree = brute_split(net, replace(arr, topology=Topology.HTREE), space, aspace)
        differ += htree.step_time_s != want.step_time_s
    assert differ >= 20  # the torus's bandwidths moved the optimum's time on most


MIXT = """version: 1
name: mixt
levels: 2
topology: torus
dtype_bytes: 2
kinds:
  v2: {peak_TFLOPS: 45, memory_GiB: 16}
  v3: {peak_TFLOPS: 123, memory_GiB: 32}
accelerators: [v2, v2, v3, v3]
link_bandwidth_GBps: 70
"""


def test_the_cli_proves_a_torus_mix_with_every_solver(tmp_path, capsys):
    path = tmp_path / "mixt.yaml"
    path.write_text(MIXT)
    base = ["--model", "sfc", "--array", str(path), "--space", "hypar", "--split", "optimal", "--alpha-grid", "2",
            "--format", "json"]
    values = set()
    for solver in ([], ["--solver", "exact"], ["--solver", "cpsat"], ["--solver", "brute"]):
        code, out, err = run_cli([*base, *solver], capsys)
        got = json.loads(out)
        assert code == 0 and got["status"] == "optimal" and got["time_model"]["topology"] == "torus", err
        values.add((got["objective_value"], got["bound"]))
    assert len(values) == 1


def _lower_instance(rng):
    """A tiny torus mix whose alpha space frees a split below the top: two or three levels whose
    first leaf is of its own kind ([p, q, q, q], [p, q x 7]), or [p, p, q, q] with every class free;
    a random chain; at most 600 plans."""
    while True:
        H = rng.choice([2, 2, 3])
        p, q = rng.sample([1, 2, 3, 5], 2)
        peaks, free = [p] + [q] * (2**H - 1), FreeAlphas.UNLIKE
        if H == 2 and rng.random() < 0.3:
            peaks, free = [p, p, q, q], FreeAlphas.ALL
        arr = torus(H, peaks, bw=rng.choice([1, 10, 100]), dtype=rng.choice([1, 2, 4]))
        space = rng.choice([Space.HYPAR, Space.ACCPAR])
        net = random_chain(rng.randrange(10**6), rng.choice([2, 3]), max_channels=16, max_size=4, consistent=True)
        aspace = alpha_space(arr, alpha_grid(rng.choice([2, 3, 4])), free, proportional=rng.random() < 0.5)
        n = 1
        for h in range(H):
            n *= len(space.types) * len(aspace.level_rows(h))
        if n ** len(net.layers) <= 600:
            return net, arr, space, aspace


def test_solvers_agree_on_random_tori_with_uneven_splits_below_the_top():
    """Brute force (the evaluator, link by link), the exact Pareto DP and CP-SAT (the table's link
    windows) prove the same step time on 24 seeded random torus instances whose space frees a split
    below the top; the level DP is never below it; every plan re-scores."""
    rng = random.Random(2020)
    for k in range(24):
        net, arr, space, aspace = _lower_instance(rng)
        assert any(h > 0 for h, _ in aspace.free_classes())
        want = brute_split(net, arr, space, aspace)
        e = exact_uneven(net, arr, space, aspace)
        assert e.status is Status.OPTIMAL and e.step_time_s == want.step_time_s
        if k % 2 == 0:
            c = cpsat_uneven(net, arr, space, aspace)
            assert c.status is Status.OPTIMAL and c.step_time_s == c.bound_s == want.step_time_s
        d = levels_uneven(net, arr, space, aspace)
        assert d.step_time_s >= want.step_time_s
        for sol in (want, e, d):
            assert evaluate_split(net, arr, sol.plan).step_time_s == sol.step_time_s


def test_traffic_and_caps_on_random_tori_free_below_the_top():
    """Under traffic (sides; ties to the least step time, link by link) and under a cap on a level's
    busiest side, brute force, the exact DP and CP-SAT give the same value and step time on 10
    seeded random torus instances freeing a split below the top."""
    rng = random.Random(77)
    for k in range(10):
        net, arr, space, aspace = _lower_instance(rng)
        if k % 2:
            rules = SplitRules(Objective.TRAFFIC)
        else:
            most = evaluate_split(net, arr, brute_split(net, arr, space, aspace).plan).level_cost[1]
            caps = (Cap(1, most * arr.dtype_bytes * F(9, 10)),)
            rules = SplitRules(Objective.TIME, Constraints(caps=caps))
        sols = [brute_split(net, arr, space, aspace, rules=rules), exact_uneven(net, arr, space, aspace, rules=rules),
                cpsat_uneven(net, arr, space, aspace, time_limit_s=20, rules=rules)]
        statuses = {s.status for s in sols}
        assert len(statuses) == 1 and statuses <= {Status.OPTIMAL, Status.INFEASIBLE}, [(s.solver, s.status) for s in sols]
        if Status.OPTIMAL in statuses:
            evs = [evaluate_split(net, arr, s.plan) for s in sols]
            assert len({(rules.value(ev), ev.step_time_s) for ev in evs}) == 1


def test_the_pair_formula_would_claim_less_than_the_links_give(tmp_path, monkeypatch):
    """LeNet-C on the [v2, v3, v3, v3] torus at grid 2: the exact DP proves 14.59 us link by link; the
    same DP on the pair formula alone (the tables without link windows) claims 14.34 us, for a plan
    whose links take 14.89 us: without the windows it proves a value no plan reaches, and picks a worse plan."""
    path = tmp_path / "mixt4.yaml"
    path.write_text(MIXT.replace("[v2, v2, v3, v3]", "[v2, v3, v3, v3]"))
    arr, net = load_array(str(path)), load_model("lenet-c")
    aspace = alpha_space(arr, alpha_grid(2), FreeAlphas.UNLIKE)
    links = exact_uneven(net, arr, Space.HYPAR, aspace)
    assert links.status is Status.OPTIMAL and round(float(links.step_time_s) * 1e8) == 1459
    import explorer.solvers.uneven as exact_module
    from explorer.core.split_costs import VectorLayout
    monkeypatch.setattr(exact_module, "layout_for", lambda array, a, memory=False: VectorLayout(array.levels, memory))
    pair = exact_uneven(net, arr, Space.HYPAR, aspace)
    claimed = max(pair_times(net, arr, pair.plan)[1])
    assert round(float(claimed) * 1e8) == 1434 and claimed < links.step_time_s
    assert round(float(evaluate_split(net, arr, pair.plan).step_time_s) * 1e8) == 1489


def test_the_cli_proves_a_torus_mix_free_below_the_top(tmp_path, capsys):
    """[v2, v3, v3, v3] on a 2 x 2 torus frees level 1's group 0: --split optimal (the joint solver
    covers the top split alone: exact answers), --solver exact and cpsat prove one value; every other
    split runs; the joint solver says why it does not take it."""
    path = tmp_path / "mixt4.yaml"
    path.write_text(MIXT.replace("[v2, v2, v3, v3]", "[v2, v3, v3, v3]"))
    base = ["--model", "sfc", "--array", str(path), "--space", "hypar", "--split", "optimal", "--alpha-grid", "2",
            "--format", "json"]
    values = set()
    for solver in ([], ["--solver", "exact"], ["--solver", "cpsat"]):
        code, out, err = run_cli([*base, *solver], capsys)
        got = json.loads(out)
        assert code == 0 and got["status"] == "optimal" and got["time_model"]["topology"] == "torus", err
        values.add((got["objective_value"], got["bound"]))
    assert len(values) == 1
    for split in ("proportional", "search", "levels", "equal"):
        code, out, err = run_cli(["--model", "sfc", "--array", str(path), "--split", split], capsys)
        assert code == 0, err


def test_a_shared_medium_is_refused_naming_file_and_field(tmp_path, capsys):
    path = tmp_path / "mixs.yaml"
    path.write_text(MIXT.replace("topology: torus\n", "communication: shared\n").replace("link_bandwidth_GBps",
                                                                                          "shared_bandwidth_GBps"))
    code, out, err = run_cli(["--model", "sfc", "--array", str(path), "--split", "optimal"], capsys)
    assert code == 2 and err.startswith(f"explore: error: {path}: communication: shared: uneven splits are modelled "
                                        "on per-level links (an H-tree or a torus) only"), err
    arr = replace(mix(1, [1, 3]), communication=Communication.SHARED, shared_bandwidth_GBps=F(70))
    with pytest.raises(SpecError, match="^array 'mix': communication: shared"):
        evaluate_split(NET, arr, Plan(((I, I),), ((HALF, HALF),)))
