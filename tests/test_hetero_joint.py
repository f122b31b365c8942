"""The joint uneven-split solver (solvers/hetero_joint.py) and ``explore check --uneven``:
cross-checked with brute force, the exact Pareto DP and CP-SAT on random tiny instances (random
mixes, both spaces, both alpha spaces, chains and graphs), every plan re-scored by the evaluator."""

import random
from fractions import Fraction as F

import pytest

from explorer.api import solve
from explorer.core.hetero import FreeAlphas, HeteroPlan, alpha_grid, alpha_space, evaluate_hetero
from explorer.core.partition import PartitionType, Space
from explorer.core.plan import Plan
from explorer.core.randnet import random_chain, random_dag_spec
from explorer.core.solution import Status
from explorer.frontends import load_array, load_model
from explorer.frontends.network_yaml import parse_network
from explorer.solvers.hetero import HeteroRefused, brute_hetero, cpsat_hetero, exact_hetero
from explorer.solvers.hetero_joint import JointOptions, accpar_hetero, check_scope, joint_hetero

from .conftest import run_cli
from .test_hetero_model import mix


def _instance(rng):
    """Tiny: at most 150 plans. Mixes of any shape (8+8-like ones in scope of the joint solver)."""
    while True:
        H = rng.choice([1, 1, 2])
        graph = rng.random() < 0.25
        L = rng.choice([2, 3]) if H == 1 else 2
        space = rng.choice([Space.HYPAR, Space.ACCPAR])
        grid = rng.choice([2, 3, 4] if H == 2 else [2, 3, 4, 8])
        free = rng.choice([FreeAlphas.UNLIKE, FreeAlphas.ALL])
        if H == 2 and rng.random() < 0.5:
            p, q = rng.sample([1, 2, 3, 5], 2)
            peaks = [p, p, q, q]  # one kind per half
        else:
            peaks = [rng.choice([1, 2, 3, 5]) for _ in range(2**H)]
        arr = mix(H, peaks, bw=rng.choice([1, 10, 100]), dtype=rng.choice([1, 2, 4]))
        seed = rng.randrange(10**6)
        net = parse_network(random_dag_spec(seed, rng.choice([3, 4])), "dag") if graph else \
            random_chain(seed, L, max_channels=16, max_size=4)
        aspace = alpha_space(arr, alpha_grid(grid), free)
        n = 1
        for h in range(H):
            n *= len(space.types) * len(aspace.level_rows(h))
        if n ** len(net.layers) <= 150:
            return net, arr, space, aspace


def test_joint_equals_brute_exact_cpsat_on_300_random_instances():
    rng = random.Random(2013)
    ran = {"joint": 0, "exact": 0, "cpsat": 0, "graphs": 0, "uneven wins": 0, "not top-split": 0}
    for k in range(300):
        net, arr, space, aspace = _instance(rng)
        b = brute_hetero(net, arr, space, aspace)
        assert evaluate_hetero(net, arr, b.plan).step_time_s == b.step_time_s and aspace.contains(b.plan)
        if net.is_chain:
            e = exact_hetero(net, arr, space, aspace)
            assert e.step_time_s == b.step_time_s
            ran["exact"] += 1
            if k % 4 == 0:
                c = cpsat_hetero(net, arr, space, aspace)
                assert c.status is Status.OPTIMAL and c.step_time_s == c.bound_s == b.step_time_s
                assert evaluate_hetero(net, arr, c.plan).step_time_s == c.step_time_s
                ran["cpsat"] += 1
        else:
            ran["graphs"] += 1
        try:
            check_scope(net, arr, aspace)
        except HeteroRefused:
            ran["not top-split"] += 1
            continue
        try:
            j = joint_hetero(net, arr, space, aspace)
        except HeteroRefused as err:  # a random graph of several sources or sinks
            assert "graph" in str(err) or "source" in str(err)
            continue
        ran["joint"] += 1
        a = accpar_hetero(net, arr, space, aspace)  # the AccPar-style heuristic: a plan of the space, no better
        assert evaluate_hetero(net, arr, a.plan).step_time_s == a.step_time_s >= b.step_time_s and aspace.contains(a.plan)
        assert evaluate_hetero(net, arr, j.plan).step_time_s == j.step_time_s and aspace.contains(j.plan)
        assert j.bound_s <= b.step_time_s <= j.step_time_s
        if net.is_chain:
            assert j.status is Status.OPTIMAL and j.step_time_s == j.bound_s == b.step_time_s
        if j.status is Status.OPTIMAL:
            assert j.step_time_s == b.step_time_s
        if j.equal_best_s is not None:
            assert j.step_time_s <= j.equal_best_s
            ran["uneven wins"] += j.step_time_s < j.equal_best_s
    assert ran["joint"] >= 100 and ran["exact"] >= 150 and ran["cpsat"] >= 40 and ran["graphs"] >= 30
    assert ran["not top-split"] >= 25 and ran["uneven wins"] >= 10, ran


def test_joint_on_the_tpu_mix_proves_lenet_and_beats_the_equal_split():
    """lenet-c on tpu-mix-16 (accpar, 1/16): proven; never slower than the best equal split, which
    is the exact solver's time optimum with alpha 1/2 (the slowest leaf's compute is plan-independent)."""
    net, arr = load_model("lenet-c"), load_array("tpu-mix-16")
    aspace = alpha_space(arr, alpha_grid(16))
    j = joint_hetero(net, arr, Space.ACCPAR, aspace, JointOptions(time_limit_s=60))
    assert j.status is Status.OPTIMAL and j.bound_s == j.step_time_s
    assert evaluate_hetero(net, arr, j.plan).step_time_s == j.step_time_s
    r = solve(net, arr, solver="exact", objective="time", space="accpar")
    eq = evaluate_hetero(net, arr, HeteroPlan.equal(Plan.from_lists([[t.value for t in row] for row in r.plan.types])))
    assert j.equal_best_s == eq.step_time_s
    assert j.step_time_s < j.equal_best_s
    assert {a for row in j.plan.alphas[1:] for g in row for a in g} == {F(1, 2)}  # only the top split is free


def test_joint_refuses_what_it_does_not_cover():
    net = load_model("lenet-c")
    four_twelve = mix(4, [45] * 4 + [123] * 12, bw=70)
    with pytest.raises(HeteroRefused, match="frees the top split alone"):
        joint_hetero(net, four_twelve, Space.ACCPAR, alpha_space(four_twelve, alpha_grid(16)))


def test_check_uneven_cli(capsys):
    code, out, err = run_cli(["check", "--uneven", "--model", "lenet-c", "--array", "tpu-mix-16", "--space", "hypar",
                              "--solvers", "joint,accpar,search,brute"], capsys)
    assert code == 0, err
    assert "joint   optimal" in out and "brute   refused" in out and "accpar  feasible" in out and "proven optimum" in out and "agree" in out
    code, out, err = run_cli(["check", "--uneven", "--model", "lenet-c", "--solvers", "dp"], capsys)
    assert code == 2 and "--solvers: unknown solver dp with --uneven" in err


def test_split_optimal_cli(capsys):
    code, out, err = run_cli(["split", "--model", "lenet-c", "--split", "optimal"], capsys)
    assert code == 0, err
    assert "split optimal" in out and ", optimal" in out and "gap 0.000%" in out and "best equal-split plan" in out
    code, out, err = run_cli(["split", "--model", "lenet-c", "--split", "optimal", "--free", "all"], capsys)
    assert code == 2 and "--split: optimal:" in err and "use --split search" in err


def _residual(rng, seed: int):
    """A tiny residual network: a stem conv, one block (a path of one or two convs beside an identity
    shortcut or a 1x1 projection), the add, optionally a tail conv (single source, single sink)."""
    w, w2, s = rng.choice([2, 4, 8]), rng.choice([2, 4, 8]), rng.choice([1, 2, 4])
    k = lambda: rng.choice([1, 3])  # noqa: E731
    layers = [{"name": "stem", "kind": "conv", "in_channels": rng.randint(1, 8), "out_channels": w, "kernel": k(),
               "in_size": s, "out_size": s, "inputs": ["input"]},
              {"name": "a", "kind": "conv", "in_channels": w, "out_channels": w2, "kernel": k(), "in_size": s,
               "out_size": s, "inputs": ["stem"]}]
    last = "a"
    if rng.random() < 0.5:
        layers.append({"name": "b", "kind": "conv", "in_channels": w2, "out_channels": w2, "kernel": k(), "in_size": s,
                       "out_size": s, "inputs": ["a"]})
        last = "b"
    short = "stem"
    if w2 != w or rng.random() < 0.4:
        layers.append({"name": "proj", "kind": "conv", "in_channels": w, "out_channels": w2, "kernel": 1, "in_size": s,
                       "out_size": s, "inputs": ["stem"]})
        short = "proj"
    layers.append({"name": "add", "kind": "add", "inputs": [last, short]})
    if rng.random() < 0.5:
        layers.append({"name": "tail", "kind": "conv", "in_channels": w2, "out_channels": rng.choice([2, 4]),
                       "kernel": k(), "in_size": s, "out_size": s, "inputs": ["add"]})
    return parse_network({"version": 1, "name": f"res{seed}", "batch": rng.choice([1, 2, 8]), "layers": layers}, "res")


def test_joint_proves_residual_graphs_equal_to_brute():
    """The graph proof pass (label setting over the blocks): on random tiny residual networks of
    one-kind-per-half mixes, OPTIMAL every time and equal to brute force; the pass itself is
    exercised (the Lagrangian bound alone does not close these)."""
    rng = random.Random(1813)
    labels = 0
    done = 0
    while done < 40:
        net = _residual(rng, done)
        H = rng.choice([1, 1, 2])
        p, q = rng.sample([1, 2, 3, 5], 2)
        arr = mix(H, [p] * 2 ** (H - 1) + [q] * 2 ** (H - 1), bw=rng.choice([1, 10, 100]), dtype=rng.choice([1, 2]))
        space = Space.HYPAR if H == 2 else rng.choice([Space.HYPAR, Space.ACCPAR])
        aspace = alpha_space(arr, alpha_grid(rng.choice([3, 4]) if H == 1 else 3))
        n = 1
        for h in range(H):
            n *= len(space.types) * len(aspace.level_rows(h))
        if n ** len(net.layers) > 1500:
            continue
        done += 1
        b = brute_hetero(net, arr, space, aspace)
        j = joint_hetero(net, arr, space, aspace, JointOptions(time_limit_s=60))
        assert j.status is Status.OPTIMAL and j.step_time_s == j.bound_s == b.step_time_s, (done, net.name)
        assert evaluate_hetero(net, arr, j.plan).step_time_s == j.step_time_s and aspace.contains(j.plan)
        labels += any(name == "labels" for name, _ in j.phases)
    assert labels >= 20, labels


def test_joint_graph_proof_on_resnet18_equal_grid_matches_the_exact_solver():
    """ResNet-18 on tpu-mix-16 (hypar) with the alpha grid {1/2}: the joint solver's graph proof pass
    (label setting over the residual blocks) must find the exact homogeneous solver's time optimum,
    scored under uneven splits (an independent solver); with grid 1/4 it proves a faster plan."""
    net, arr = load_model("resnet18"), load_array("tpu-mix-16")
    j = joint_hetero(net, arr, Space.HYPAR, alpha_space(arr, alpha_grid(2)), JointOptions(time_limit_s=60))
    assert j.status is Status.OPTIMAL and any(name == "labels" for name, _ in j.phases)
    r = solve(net, arr, solver="exact", objective="time", space="hypar")
    eq = evaluate_hetero(net, arr, HeteroPlan.equal(Plan.from_lists([[t.value for t in row] for row in r.plan.types])))
    assert j.step_time_s == j.bound_s == eq.step_time_s
    aspace = alpha_space(arr, alpha_grid(4))
    j4 = joint_hetero(net, arr, Space.HYPAR, aspace, JointOptions(time_limit_s=60))
    assert j4.status is Status.OPTIMAL and j4.step_time_s == j4.bound_s < eq.step_time_s
    assert evaluate_hetero(net, arr, j4.plan).step_time_s == j4.step_time_s and aspace.contains(j4.plan)
    assert j4.step_time_s <= accpar_hetero(net, arr, Space.HYPAR, aspace).step_time_s


def test_joint_equals_brute_and_exact_with_grouped_convs():
    """Random tiny chains with a grouped or depthwise conv (its group split offered only while each
    side holds whole groups): joint == brute == exact, every plan re-scored by the evaluator."""
    from .test_hetero_model import _random_grouped_instance

    rng = random.Random(4242)
    ran = {"joint": 0, "group split": 0}
    for _ in range(80):
        net, arr, space, grid = _random_grouped_instance(rng)
        aspace = alpha_space(arr, grid)
        b = brute_hetero(net, arr, space, aspace)
        e = exact_hetero(net, arr, space, aspace)
        assert b.step_time_s == e.step_time_s == evaluate_hetero(net, arr, b.plan).step_time_s
        try:
            check_scope(net, arr, aspace)
        except HeteroRefused:
            continue
        j = joint_hetero(net, arr, space, aspace)
        assert evaluate_hetero(net, arr, j.plan).step_time_s == j.step_time_s and aspace.contains(j.plan)
        assert j.status is Status.OPTIMAL and j.step_time_s == j.bound_s == b.step_time_s
        a = accpar_hetero(net, arr, space, aspace)
        assert evaluate_hetero(net, arr, a.plan).step_time_s == a.step_time_s >= b.step_time_s
        g = next(i for i, L in enumerate(net.layers) if L.groups > 1)
        ran["joint"] += 1
        ran["group split"] += j.plan.types[0][g] is PartitionType.II
    assert ran["joint"] >= 30 and ran["group split"] >= 3, ran
