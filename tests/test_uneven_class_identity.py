"""Classes of groups (``core.uneven.alpha_space``) by every figure of a leaf that makes its cost or
feasibility differ: kinds of equal speed but unequal memory are not identical subtrees, so the
default space (``--free unlike``) frees their split and finds what ``--free all`` finds; the solvers
agree with brute force on such classes; a proven infeasible run says its proof is the declared
space's (trial hostile, finding 4)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from fractions import Fraction as F

from explorer.core.array import AcceleratorKind, ArraySpec
from explorer.core.evaluate import evaluate_split
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.randnet import random_chain
from explorer.core.solution import Status
from explorer.core.split_rules import SplitRules, leaf_memory_limits
from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.uneven_constrained import constrained_uneven

GiB = 2**30


def _array(levels: int, figures) -> ArraySpec:
    """An array whose leaves (tree order) have the given (peak_TFLOPS, memory_GiB)."""
    kinds = {f: AcceleratorKind(f"k{i}", F(f[0]), F(f[1])) for i, f in enumerate(dict.fromkeys(figures))}
    leaves = tuple(kinds[f] for f in figures)
    return ArraySpec("m", levels, 2, (F(10),) * levels, min(k.peak_TFLOPS for k in leaves),
                     min(k.memory_GiB for k in leaves), leaves=leaves)


def test_equal_speed_unequal_memory_is_a_free_class():
    eq1 = _array(1, [(45, F(15, 100)), (45, 16)])
    assert alpha_space(eq1, alpha_grid(16)).free_classes() == [(0, 0)]
    assert alpha_space(eq1, alpha_grid(16)).choices(0, 0)[0] == F(1, 16)  # the grid, not (1/2,) alone
    same = _array(1, [(45, 16), (45, 16)])
    assert alpha_space(same, alpha_grid(16)).free_classes() == []
    # [a, b, a, b]: the top's two subgroups are identical (fixed); level 1's groups one class, free
    abab = alpha_space(_array(2, [(45, 1), (45, 16), (45, 1), (45, 16)]), alpha_grid(4))
    assert abab.group_class == ((0,), (0, 0)) and abab.free_classes() == [(1, 0)]
    # [a, a, b, b]: the top free; level 1's two groups are different classes, each fixed
    aabb = alpha_space(_array(2, [(45, 1), (45, 1), (45, 16), (45, 16)]), alpha_grid(4))
    assert aabb.group_class == ((0,), (0, 1)) and aabb.free_classes() == [(0, 0)]
    assert aabb.class_ratio(0, 0) == F(1, 2)  # equal peaks: the proportional ratio is the equal split


def _memory_case(rng, vary_memory: bool):
    """A random chain on one level of two kinds differing in memory alone (the smaller below the
    equal split's footprint) or in speed alone (memory 16 GiB both), the memory limits each kind's."""
    net = random_chain(rng.randrange(10**6), rng.choice([2, 3]), max_channels=16, max_size=4)
    space = rng.choice([Space.HYPAR, Space.ACCPAR])
    probe = _array(1, [(1, 16), (1, 16)])
    L = len(net.layers)
    need = max(evaluate_split(net, probe, Plan(((Space.HYPAR.types[0],) * L,), (((F(1, 2),) * L,),))).leaf_memory_bytes)
    small = need * F(rng.choice([6, 7, 8, 9]), 10) / GiB
    figures = [(1, small), (1, 16)] if vary_memory else [(1, 16), (rng.choice([2, 3, 5]), 16)]
    if rng.random() < 0.5:
        figures.reverse()
    arr = _array(1, figures)
    return net, arr, space, SplitRules(leaf_memory_bytes=leaf_memory_limits(arr))


def test_one_level_unlike_equals_all_and_brute_force_on_random_kinds():
    """On one level the top split is free under --free unlike exactly when the kinds differ, so both
    spaces are one: equal optima (brute force, the exact constrained solver), every plan re-scored."""
    rng = random.Random(404)
    seen = {"memory": 0, "speed": 0, "uneven": 0}
    for k in range(24):
        vary = k % 2 == 0
        net, arr, space, rules = _memory_case(rng, vary)
        grid = alpha_grid(rng.choice([3, 4]))
        unlike, every = alpha_space(arr, grid, FreeAlphas.UNLIKE), alpha_space(arr, grid, FreeAlphas.ALL)
        assert unlike.free_classes() == every.free_classes() == [(0, 0)]
        sols = [brute_split(net, arr, space, unlike, rules=rules), brute_split(net, arr, space, every, rules=rules),
                constrained_uneven(net, arr, space, unlike, rules=rules)]
        assert len({s.status for s in sols}) == 1 and len({s.split_value for s in sols}) == 1, \
            [(s.solver, s.status, s.split_value) for s in sols]
        if sols[0].status is Status.OPTIMAL:
            ev = evaluate_split(net, arr, sols[2].plan)
            assert rules.violations(ev, arr, sols[2].plan) == [] and ev.step_time_s == sols[2].step_time_s
            seen["uneven"] += any(a != F(1, 2) for row in sols[2].plan.alphas[0] for a in row)
        seen["memory" if vary else "speed"] += sols[0].status is Status.OPTIMAL
    assert seen["memory"] >= 8 and seen["speed"] >= 10 and seen["uneven"] >= 8, seen


def test_two_levels_memory_classes_solvers_agree_with_brute_force():
    """Two levels of kinds differing in memory alone, in random layouts: the exact constrained
    solver keeps to the new classes as brute force does; --free all is never worse."""
    rng = random.Random(405)
    seen = {"optimal": 0, "all_better": 0}
    for _ in range(8):
        net = random_chain(rng.randrange(10**6), 2, max_channels=8, max_size=4)
        layout = [rng.choice([(1, F(1, 10**6)), (1, 16)]) for _ in range(4)]
        arr = _array(2, layout)
        rules = SplitRules(leaf_memory_bytes=leaf_memory_limits(arr))
        unlike = alpha_space(arr, alpha_grid(2), FreeAlphas.UNLIKE)
        a, b = brute_split(net, arr, Space.HYPAR, unlike, rules=rules), constrained_uneven(net, arr, Space.HYPAR, unlike, rules=rules)
        assert (a.status, a.split_value) == (b.status, b.split_value)
        every = brute_split(net, arr, Space.HYPAR, alpha_space(arr, alpha_grid(2), FreeAlphas.ALL), rules=rules)
        if a.status is Status.OPTIMAL:
            seen["optimal"] += 1
            assert every.status is Status.OPTIMAL and every.split_value <= a.split_value
    assert seen["optimal"] >= 3, seen


EQ1 = "version: 1\nname: eq1\nlevels: 1\ndtype_bytes: 4\nkinds:\n  a: {peak_TFLOPS: 45, memory_GiB: 0.15}\n" \
      "  b: {peak_TFLOPS: 45, memory_GiB: 16}\naccelerators: [a, b]\nlink_bandwidth_GBps: [70]\n"


def _explore(tmp_path, *args):
    (tmp_path / "eq1.yaml").write_text(EQ1)
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "explorer.app.cli", *args], cwd=tmp_path, env=env, capture_output=True, text=True)


def test_eq1_the_default_space_finds_the_plan_free_all_finds(tmp_path):
    """The trial's array: --split optimal was 'infeasible (proven)'; now the --free all optimum, 64.83 ms."""
    out = [_explore(tmp_path, "--model", "alexnet", "--array", "eq1.yaml", "--split", "optimal", *free)
           for free in ((), ("--free", "all"))]
    for r in out:
        assert r.returncode == 0, r.stdout + r.stderr
        assert "optimal by joint" in r.stdout and "step time 64.83 ms" in r.stdout
    assert "no free class" not in _explore(tmp_path, "--model", "alexnet", "--array", "eq1.yaml", "--split",
                                           "proportional").stdout


def test_a_proven_infeasible_run_says_its_proof_is_the_declared_spaces(tmp_path):
    r = _explore(tmp_path, "--model", "lenet-c", "--array", "hypar-16", "--levels", "2", "--split", "optimal",
                 "--memory", "0.00001")
    assert r.returncode == 1 and "infeasible" in r.stdout, r.stdout + r.stderr
    assert "the proof holds in the declared space (--free unlike fixes splits between identical subtrees at 1/2): " \
           "--free all frees every class of groups" in r.stdout


def test_a_suggested_memory_says_it_is_one_limit_for_every_kind(tmp_path):
    """Kinds of unequal memory (0.0001 and 0.0002 GiB), no plan: --memory would set both; the
    top split is free either way (one level), so no --free all note."""
    (tmp_path / "eq3.yaml").write_text(EQ1.replace("0.15", "0.0001").replace("memory_GiB: 16", "memory_GiB: 0.0002"))
    r = subprocess.run([sys.executable, "-m", "explorer.app.cli", "--model", "lenet-c", "--array", "eq3.yaml", "--split",
                        "optimal"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 1 and "infeasible by joint" in r.stdout, r.stdout + r.stderr
    assert "try --memory 0.003971 (one limit for every kind, the larger kinds' too)" in r.stdout
    assert "--free all" not in r.stdout
