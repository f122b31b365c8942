"""The cap floor (``solvers.joint_floor``): a lower bound on a capped level's busiest side over
every plan, which proves a cap below it infeasible before any label pass. Checked against brute
force on seeded random chains and graphs, with pins and forbids: no plan's busiest side is below
the floor (a cap a millionth of a byte below it admits none), the floor is often the least
itself, and the joint solver answers such a cap at once, as brute force does."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction as F

from explorer.core.constraints import Cap, Constraints, Forbid, Pin
from explorer.core.errors import Refused
from explorer.core.evaluate import evaluate_split
from explorer.core.partition import Space
from explorer.core.solution import Status
from explorer.core.split_rules import SplitRules
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.joint_floor import bound_bytes, cap_floors
from explorer.solvers.uneven_joint import _setup, joint_uneven

from .test_joint_table import _instance as _deep
from .test_uneven_joint import _nested, _plans, in_scope_instances
from .test_uneven_model import mix

BIG = F(10**9)  # bytes: a cap no plan of these tiny networks reaches (the floor is computed for any cap)


def _floor_bytes(net, arr, space, aspace, rules, h: int) -> int:
    types = (lambda g, l: rules.types(net, space, g, l)) if rules.restricts_types else None  # noqa: E741
    _, t, _ = _setup(net, arr, space, aspace, types, rules, 1024, math.inf)
    levels = sorted(c.level for c in rules.constraints.caps)
    least, _ = cap_floors(t, levels)[levels.index(h)]
    return bound_bytes(t, least, arr.dtype_bytes)


def _rules(rng, net, arr, space, h: int, cap) -> SplitRules:
    pins = (Pin(rng.randrange(len(net.layers)), rng.choice([None, *range(arr.levels)]), rng.choice(space.types)),) \
        if rng.random() < 0.3 else ()
    forbids = (Forbid(rng.randrange(len(net.layers)), rng.choice(space.types)),) if rng.random() < 0.3 else ()
    return SplitRules(constraints=Constraints(pins, forbids, (Cap(h, cap),)))


def _instances(rng):
    """Seeded draws: ``in_scope_instances``' (one level, mostly chains) and deeper mixes of one kind
    per half (two or three levels, chains and graphs), each with at most 3,000 plans."""
    tiny, k = in_scope_instances(rng), 0
    while True:
        r = rng.random()
        if r < 0.3:
            yield next(tiny)
            continue
        if r < 0.55:  # a nested series-parallel graph on two kinds
            k += 1
            net, arr = _nested(rng, k), mix(1, rng.sample([1, 2, 3, 5], 2), bw=rng.choice([1, 10]), dtype=2)
            space = rng.choice([Space.HYPAR, Space.ACCPAR])
            aspace = alpha_space(arr, alpha_grid(rng.choice([2, 3])))
            if _plans(net, space, aspace, 1) <= 600:
                yield net, arr, space, aspace
            continue
        net, arr, space, aspace = _deep(rng, rng.choice([2, 2, 3]), rng.choice([2, 3]), 2)
        if _plans(net, space, aspace, arr.levels) <= 3000:
            yield net, arr, space, aspace


def test_no_plan_is_below_the_floor_on_seeded_random_instances():
    rng = random.Random(4242)
    seen = {"cases": 0, "tight": 0, "positive": 0, "deep": 0, "lower": 0, "graphs": 0}
    for net, arr, space, aspace in _instances(rng):
        if seen["cases"] == 70:
            break
        h = rng.randrange(arr.levels)
        rules = _rules(rng, net, arr, space, h, BIG)
        try:
            floor = _floor_bytes(net, arr, space, aspace, rules, h)
        except Refused:  # not series-parallel with one source and one sink
            continue
        if brute_split(net, arr, space, aspace, rules=rules).status is not Status.OPTIMAL:  # pins and forbids conflict
            continue
        below = _rules_with_cap(rules, h, floor - F(1, 10**6))
        assert brute_split(net, arr, space, aspace, rules=below).status is Status.INFEASIBLE, (h, floor)
        at = _rules_with_cap(rules, h, F(floor + 1))  # (the floor is rounded down to whole bytes)
        for key, hit in (("cases", True), ("positive", floor > 0), ("deep", arr.levels > 1), ("lower", h > 0),
                         ("graphs", not net.is_chain),
                         ("tight", brute_split(net, arr, space, aspace, rules=at).status is not Status.INFEASIBLE)):
            seen[key] += hit
    assert seen["positive"] >= 50 and seen["tight"] >= 10 and min(seen["deep"], seen["lower"], seen["graphs"]) >= 8, seen


def _rules_with_cap(rules: SplitRules, h: int, cap) -> SplitRules:
    c = rules.constraints
    return SplitRules(rules.objective, Constraints(c.pins, c.forbids, (Cap(h, cap),)), rules.leaf_memory_bytes)


def test_a_cap_below_its_floor_is_proven_infeasible_at_once():
    """AlexNet on tpu-mix-16, --cap 0=10MB at grid 2 (trial: 5-20 s to `unknown` at a 5 s limit):
    its floor is 20.61 MB, the least cap rounded down (``least_limits`` proves 20,605,702.5 bytes), so the
    joint solver answers infeasible before any pass; the note names the floor."""
    arr, net = load_array("tpu-mix-16"), load_model("alexnet")
    aspace = alpha_space(arr, alpha_grid(2))
    rules = SplitRules(constraints=Constraints(caps=(Cap(0, F(10**7)),)))
    assert _floor_bytes(net, arr, Space.ACCPAR, aspace, rules, 0) == 20_605_702
    sol = joint_uneven(net, arr, Space.ACCPAR, aspace, rules=rules)
    assert sol.status is Status.INFEASIBLE and sol.plan is None and sol.wall_s < 5.0
    assert "busiest side at level 0 is at least 20.61 MB" in sol.info["reason"]
    above = SplitRules(constraints=Constraints(caps=(Cap(0, F(20_605_703)),)))  # the least cap: a plan keeps it
    plan = joint_uneven(net, arr, Space.ACCPAR, aspace, rules=above).plan
    assert plan is None or evaluate_split(net, arr, plan).level_cost[0] * arr.dtype_bytes <= 20_605_703


def test_a_cap_past_every_plan_is_no_limit_not_a_crash():
    """Review: ``--cap 0=1000TB`` under ``--split optimal`` crashed (OverflowError: the cap's units
    held in int64); a cap no plan can reach answers as the uncapped run does."""
    from click.testing import CliRunner

    from explorer.app.cli import cli

    def run(*extra):
        out = CliRunner().invoke(cli, ["--array", "tpu-mix-16", "--model", "alexnet", "--split", "optimal",
                                        "--format", "json", *extra])
        assert out.exit_code == 0, out.output
        d = json.loads(out.stdout)
        return d["status"], d["objective_value"]

    from .test_split_pinned import PINNED_HYPAR  # the proven step time, recorded there

    assert run("--cap", "0=1000TB") == run() == ("optimal", str(PINNED_HYPAR["alexnet"]))
