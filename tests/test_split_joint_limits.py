"""``--split optimal`` without ``--solver`` under caps and memory limits: the joint solver with the
limits' terms in its labels (``solvers.uneven_constrained.joint_under``), the route ``--solver
exact`` takes; the same status, value and bound as ``--solver exact`` and brute force, through
``split_run``, the CLI, the API and a sweep point; the traffic objective and what the joint solver
does not cover are one-line refusals (exit 2) naming what takes them."""

from __future__ import annotations

import json
import random
import textwrap
from fractions import Fraction as F

import pytest

from explorer.app.split import Split, split_run
from explorer.core.constraints import Cap, Constraints
from explorer.core.evaluate import evaluate_split
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.solution import Status
from explorer.core.split_rules import SplitRules
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.uneven_constrained import constrained_uneven

from .conftest import run_cli
from .test_split_trial_fixes import MIX4
from .test_uneven_joint import in_scope_instances


def _limits(rng, net, arr, space, aspace):
    """A cap and/or one memory limit for every kind, drawn around the free optimum's amounts."""
    ev = evaluate_split(net, arr, brute_split(net, arr, space, aspace).plan)
    caps, memory_GiB = (), None
    if rng.random() < 0.7:
        h = rng.randrange(arr.levels)
        caps = (Cap(h, ev.level_cost[h] * arr.dtype_bytes * F(rng.choice([7, 8, 12]), 8)),)
    if not caps or rng.random() < 0.5:
        memory_GiB = max(ev.leaf_memory_bytes) * F(rng.choice([5, 6, 7, 8]), 8) / 2**30
    return Constraints(caps=caps), memory_GiB


def test_plain_optimal_under_limits_equals_solver_exact_and_brute_force():
    rng = random.Random(20)
    seen = {"done": 0, "infeasible": 0, "binding": 0, "caps": 0, "memory": 0}
    for net, arr, space, aspace in in_scope_instances(rng):
        if seen["done"] == 14:
            break
        c, memory_GiB = _limits(rng, net, arr, space, aspace)
        kw = dict(grid=len(aspace.grid) + 1, free=aspace.free, grid_only=not aspace.proportional, constraints=c,
                  memory_GiB=memory_GiB, time_limit_s=60)
        plain = split_run(net, arr, space, Split.OPTIMAL, **kw)
        limits = None if memory_GiB is None else (memory_GiB * 2**30,) * arr.accelerators
        want = brute_split(net, arr, space, aspace, rules=SplitRules(Objective.TIME, c, limits))
        if plain.solver == "brute":  # a graph that is not series-parallel: routed past the joint solver
            assert "series-parallel" in plain.note or "one source and one sink" in plain.note, plain.note
            assert plain.status is want.status and plain.objective_value == want.split_value
            continue
        exact = split_run(net, arr, space, Split.OPTIMAL, solver="exact", **kw)
        assert plain.solver == "joint" and exact.solver == "exact"
        assert plain.status is exact.status is want.status, (plain.status, exact.status, want.status)
        assert plain.objective_value == exact.objective_value == want.split_value
        assert plain.objective_bound == exact.objective_bound and plain.gap == exact.gap
        if want.plan is not None:
            assert plain.ok and not plain.violations and plain.objective_bound == plain.objective_value
        seen["done"] += 1
        seen["infeasible"] += want.status is Status.INFEASIBLE
        seen["caps"] += bool(c.caps)
        seen["memory"] += memory_GiB is not None
        seen["binding"] += want.plan is not None and want.split_value > brute_split(net, arr, space, aspace).split_value
    assert seen["infeasible"] >= 2 and seen["binding"] >= 2 and min(seen["caps"], seen["memory"]) >= 4, seen


@pytest.fixture
def mix4(tmp_path):
    path = tmp_path / "mix4.yaml"
    path.write_text(MIX4)
    return str(path)


def _json(args, capsys):
    code, out, err = run_cli([*args, "--format", "json"], capsys)
    assert code in (0, 1), err
    got = json.loads(out)
    return code, {k: got.get(k) for k in ("status", "objective_value", "bound", "gap", "plan", "violations", "ok")}


@pytest.mark.parametrize("extra", [["--cap", "0=1MB"], ["--cap", "0=20KB"], ["--memory", "0.0003"],
                                   ["--memory", "0.002", "--cap", "1=1MB"]])
def test_the_cli_plain_optimal_under_limits_is_solver_exacts_answer(mix4, extra, capsys):
    base = ["--model", "lenet-c", "--array", mix4, "--space", "accpar", "--split", "optimal", "--alpha-grid", "4", *extra]
    code, plain = _json(base, capsys)
    assert _json([*base, "--solver", "exact"], capsys) == (code, plain)
    assert _json(["split", *base], capsys) == (code, plain)  # explore split: the alias
    assert plain["status"] in ("optimal", "infeasible") and (plain["status"] == "optimal") == (code == 0)


def test_the_api_and_a_sweep_point_take_limits_with_plain_optimal(mix4, tmp_path):
    from explorer.api import solve, sweep

    kw = dict(space="accpar", split="optimal", alpha_grid=4, memory_GiB=0.002, caps={0: "1MB"})
    plain, exact = solve("lenet-c", mix4, **kw), solve("lenet-c", mix4, solver="exact", **kw)
    assert plain.status is exact.status is Status.OPTIMAL
    assert plain.objective_value == exact.objective_value == plain.objective_bound
    spec = tmp_path / "s.yaml"
    spec.write_text(textwrap.dedent(f"""\
        version: 1
        points:
          - {{model: lenet-c, array: {mix4}, space: accpar, split: optimal, alpha_grid: 4, memory_GiB: 0.002,
              caps: ["0=1MB"]}}
        """))
    (row,) = list(sweep(spec, tmp_path / "out", workers=1))
    assert row["status"] == "optimal" and F(row["objective_value"]) == plain.objective_value == F(row["bound"])


def test_deeper_free_levels_are_refused_naming_what_takes_them(capsys):
    """(The traffic objective, refused here before, routes: ``test_split_routing``.)"""
    code, out, err = run_cli(["split", "--model", "lenet-c", "--split", "optimal", "--free", "all", "--memory", "1"],
                             capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("explore: error: --split: optimal: joint (uneven splits): only arrays"), err
    assert "exact (uneven splits): 59,049,000,000 columns" in err and "--free unlike" in err  # routed: each refuses


@pytest.mark.parametrize("model, step", [("lenet-c", F(1677089, 71750000000)), ("alexnet", F(3936030799, 1121093750000))])
def test_the_proven_tpu_mix_16_step_times_are_unchanged(model, step, capsys):
    code, out, err = run_cli(["split", "--model", model, "--split", "optimal", "--format", "json"], capsys)
    got = json.loads(out)
    assert code == 0 and got["status"] == "optimal" and F(got["objective_value"]) == F(got["bound"]) == step


def test_the_best_equal_split_line_is_left_out_where_a_limit_can_bind(mix4, capsys):
    # the joint solver's equal-split DP does not keep caps or memory: its "best equal-split plan"
    # (shown as a speedup) was reported beside a cap its plan broke (trial 7)
    base = ["--model", "lenet-c", "--array", mix4, "--space", "accpar", "--split", "optimal", "--alpha-grid", "4",
            "--format", "json"]
    free = json.loads(run_cli(base, capsys)[1])
    capped = json.loads(run_cli([*base, "--cap", "0=1MB"], capsys)[1])
    assert free["equal_best_s"] is not None and capped["status"] == "optimal" and capped["equal_best_s"] is None
    code, out, err = run_cli(base[:-2] + ["--cap", "0=1MB"], capsys)
    assert code == 0 and "best equal-split plan" not in out


def test_vgg_a_under_memory_is_proven_from_few_labels():
    # the labels' memory terms had no completion bound: vgg-a hypar under 3/4 of its free optimum's
    # largest footprint at grid 2 kept 39,683 labels (1.5 s, was 0.4 s on the Lagrangian path);
    # with the least the layers after a label must add, 476. The step time: proven by both paths.
    arr = load_array("tpu-mix-16")
    rules = SplitRules(leaf_memory_bytes=(273_923_136,) * arr.accelerators)
    sol = constrained_uneven(load_model("vgg-a"), arr, Space.HYPAR, alpha_space(arr, alpha_grid(2)), rules=rules,
                             time_limit_s=60)
    assert sol.status is Status.OPTIMAL and sol.step_time_s == sol.bound_s == F(287381737, 10253906250)
    assert sol.explored < 2_000
