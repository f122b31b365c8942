"""The evaluator's integer pass on arrays of many kinds (issue 23, item 2: ``--split proportional``
on 1,024 kinds took 8-19 s, one exact evaluation over D = the lcm of 1,023 ratios' denominators).
Each group's shares are now over its own path's D: the values are the Fraction reference's, every
field, on seeded arrays whose every accelerator is its own kind."""

from __future__ import annotations

import random
from fractions import Fraction as F
from math import lcm

import pytest

from explorer.core.array import AcceleratorKind, ArraySpec
from explorer.core.evaluate import evaluate_split, evaluate_split_rational
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.randnet import random_chain, random_dag_spec
from explorer.core import split_amounts as split_amounts_module
from explorer.core.split_amounts import _numerators, split_amounts
from explorer.core.split_costs import alpha_denominator
from explorer.core.uneven import ancestor_path, check_plan, proportional_plan, round_to_whole_units
from explorer.frontends import load_array, load_model
from explorer.frontends.network_yaml import parse_network

from .conftest import random_attention_spec, run_cli


def _kinds(rng, H: int) -> ArraySpec:
    """2^H accelerators, each its own random peak (whole, thirds, eighths): every group a free class."""
    peaks = [F(rng.randint(8, 2000), rng.choice([1, 3, 8])) for _ in range(2**H)]
    leaves = tuple(AcceleratorKind(f"k{i}", p, F(rng.choice([16, 32]))) for i, p in enumerate(peaks))
    bw = tuple(F(rng.choice([10, 70, 300])) for _ in range(H))
    return ArraySpec("kinds", H, rng.choice([1, 2, 4]), bw, min(peaks), min(k.memory_GiB for k in leaves), leaves=leaves)


def _network(rng):
    seed, kind = rng.randrange(10**6), rng.choice(["chain", "graph", "attention"])
    if kind == "chain":
        return random_chain(seed, rng.randint(1, 5), max_channels=32, max_size=8)
    if kind == "graph":
        return parse_network(random_dag_spec(seed, rng.randint(3, 6)), "dag")
    return parse_network(random_attention_spec(seed), "att")


def _types(rng, net, H: int, space: Space) -> Plan:
    return Plan(tuple(tuple(rng.choice([t for t in space.types if x.offers(t, h)]) for x in net.layers)
                      for h in range(H)))


def _alphas(rng, net, H: int):
    """Per level per group per layer a ratio of its own denominator (primes and products of them)."""
    dens = [2, 3, 5, 7, 11, 13, 56, 97, 210, 1009]
    def one():
        d = rng.choice(dens)
        return F(rng.randint(1, d - 1), d)
    return tuple(tuple(tuple(one() for _ in net.layers) for _ in range(2**h)) for h in range(H))


@pytest.mark.parametrize("one_d_bits", [0, 64, 10**9])
def test_proportional_and_random_plans_on_arrays_of_kinds_equal_the_reference(monkeypatch, one_d_bits):
    """80 seeded instances, 2 to 6 levels of 2^H distinct kinds: the proportional plan (every
    group's ratio its own) and a plan with per-layer alphas of unlike denominators on every group;
    both spaces, 0 to 2 weight copies: the integer pass equals the Fraction pass, every field,
    with each path's D (``ONE_D_BITS`` 0), the plan's one D (10^9) and the default's choice."""
    monkeypatch.setattr(split_amounts_module, "ONE_D_BITS", one_d_bits)
    rng = random.Random(1024)
    for _ in range(80):
        net, H = _network(rng), rng.randint(2, 6)
        arr, space = _kinds(rng, H), rng.choice([Space.HYPAR, Space.ACCPAR])
        types = _types(rng, net, H, space)
        wc = rng.choice([0, 1, 2])
        for plan in (proportional_plan(net, arr, types), round_to_whole_units(net, Plan(types.types, _alphas(rng, net, H)))):
            check_plan(net, arr, plan)
            assert evaluate_split(net, arr, plan, wc) == evaluate_split_rational(net, arr, plan, wc), net.name


def test_a_groups_denominator_is_its_own_paths_where_the_plans_is_too_long():
    """Where the plan's lcm passes ``ONE_D_BITS`` (64 kinds, 63 ratios: dozens of digits), each
    group's D is the lcm of 2 and the alphas' denominators on its path, its own included (a
    leaf's: its parent's); on tpu-mix-16 (the grid and one ratio: D = 112) every group has the
    plan's D."""
    net, arr = load_model("lenet-c"), _kinds(random.Random(6), 6)
    plan = proportional_plan(net, arr, _types(random.Random(7), net, 6, Space.ACCPAR))
    whole = alpha_denominator(a for level in plan.alphas for row in level for a in row)
    assert whole.bit_length() > split_amounts_module.ONE_D_BITS
    rows = _numerators(net, plan)[0]
    for h in range(7):
        for g, (_, D) in enumerate(rows[h]):
            path = [plan.alphas[k][a] for k, a, _ in ancestor_path(h, g)] + ([plan.alphas[h][g]] if h < 6 else [])
            assert D == lcm(2, *(alpha_denominator(a) for a in path))
    assert max(D for _, D in rows[6]) ** 3 < whole
    mix = load_array("tpu-mix-16")
    plan = proportional_plan(net, mix, _types(random.Random(8), net, 4, Space.ACCPAR))
    whole = alpha_denominator(a for level in plan.alphas for row in level for a in row)
    assert {D for row in _numerators(net, plan)[0] for _, D in row} == {whole}


def test_the_1024_kind_arrays_proportional_plan_equals_the_reference():
    """The bench's array (``bench/bench_time_limit.py``, many-kinds: 1,024 kinds, peaks 40 + i/8)
    and alexnet's proportional plan on the even DP's types: sides, compute and memory are the
    reference's."""
    H = 10
    leaves = tuple(AcceleratorKind(f"k{i}", F(40) + F(i, 8), F(32)) for i in range(2**H))
    arr = ArraySpec("kinds-1024", H, 2, (F(70),) * H, F(40), F(32), leaves=leaves)
    net = load_model("alexnet")
    rng = random.Random(10)
    plan = proportional_plan(net, arr, _types(rng, net, H, Space.ACCPAR))
    ev, ref = evaluate_split(net, arr, plan), evaluate_split_rational(net, arr, plan)
    assert (ev.group_amounts, ev.leaf_compute_s, ev.leaf_memory_bytes) == (ref.group_amounts, ref.leaf_compute_s,
                                                                           ref.leaf_memory_bytes)
    assert ev == ref and split_amounts(net, arr, plan)[0] == ref.group_amounts


def _kinds_file(tmp_path):
    """The bench's 1,024-kind array as a file (``bench/bench_time_limit.py``, group many-kinds)."""
    path = tmp_path / "kinds-1024.yaml"
    path.write_text("version: 1\nname: kinds-1024\nlevels: 10\ndtype_bytes: 2\nkinds:\n"
                    + "".join(f"  k{i}: {{peak_TFLOPS: {40 + i / 8}, memory_GiB: 32}}\n" for i in range(1024))
                    + f"accelerators: [{', '.join(f'k{i}' for i in range(1024))}]\n"
                    + f"link_bandwidth_GBps: [{', '.join(['70'] * 10)}]\n")
    return str(path)


@pytest.mark.parametrize("split, solver, instead", [
    ("optimal", "exact", "--solver dp (--split levels: the level DP, no proof) takes it, or --split proportional or equal"),
    ("optimal", "cpsat", "--solver dp (--split levels: the level DP, no proof) takes it, or --split proportional or equal"),
    ("optimal", "brute", "--solver dp (--split levels: the level DP, no proof) takes it, or --split proportional or equal"),
    ("proportional", "exact", "or --split proportional without --solver (the even DP's types)"),
    ("proportional", "cpsat", "or --split proportional without --solver (the even DP's types)"),
])
def test_the_proving_solvers_refuse_1024_kinds_in_one_line_naming_what_answers(tmp_path, capsys, split, solver, instead):
    """Each refuses at once (exit 2, one line, no traceback: ``--split proportional --solver exact``
    was a TypeError re-raising exact's MemoryLimit), and names a route that answers there, not one
    that refuses too (cpsat and brute sent the user to exact, which refuses 3e+1237 columns)."""
    code, out, err = run_cli(["--model", "alexnet", "--array", _kinds_file(tmp_path), "--space", "accpar",
                              "--split", split, "--solver", solver, "--time-limit", "5"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.rstrip().endswith(instead) and "--solver exact (the exact DP on chains" not in err, err
