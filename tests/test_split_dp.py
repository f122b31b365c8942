"""``--solver dp`` on uneven splits (issue 20, item 2): the level-by-level DP is the even DP's
uneven form (``solvers.uneven_levels.levels_uneven``), dispatched as brute, exact and cpsat are.

Cross-checks on seeded random instances: every dp plan is re-scored by ``evaluate_split``, lies
in the declared space, keeps the pins and forbids, is never better than brute force's proven
optimum when it keeps every rule, equals it where the even DP is exact (one level, one kind),
and on arrays of one kind it is the even DP's plan bit for bit."""

from __future__ import annotations

import json
import random
from fractions import Fraction as F

import pytest

from explorer.core.constraints import Constraints, Forbid, Pin
from explorer.core.errors import SpecError
from explorer.core.evaluate import evaluate, evaluate_split
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.problem import Problem
from explorer.core.randnet import random_chain, random_dag_spec
from explorer.core.solution import SolveOptions, Status
from explorer.core.split_rules import SplitRules
from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.frontends.network_yaml import parse_network
from explorer.solvers import get_solver
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.uneven_levels import levels_uneven

from .conftest import run_cli
from .test_split_pinned import PINNED
from .test_split_rules import MIX2, _mix2, _random_rules
from .test_uneven_joint import _instance
from .test_uneven_model import mix


def _dp(net, arr, space, aspace, rules):
    return levels_uneven(net, arr, space, aspace, rules=rules, name="dp")


def _keeps_pins_and_forbids(plan, rules):
    c = rules.constraints
    return (all(plan.types[h][p.layer] is p.type for p in c.pins for h in ([p.level] if p.level is not None
                                                                             else range(len(plan.types))))
            and all(plan.types[h][f.layer] is not f.type for f in c.forbids for h in range(len(plan.types))))


def test_dp_is_rescored_and_never_beats_brute_force_on_random_instances():
    rng = random.Random(2020)
    seen = {"kept every rule": 0, "equal to brute": 0, "broke a cap or memory": 0}
    for _ in range(40):
        net, arr, space, aspace = _instance(rng)
        rules = _random_rules(rng, net, arr, space, aspace)
        b = brute_split(net, arr, space, aspace, rules=rules)
        try:
            d = _dp(net, arr, space, aspace, rules)
        except Exception as err:  # pins and forbids may leave a node no candidate: a one-line refusal
            assert "no candidate" in str(err), err
            continue
        if d.plan is None:  # pins and forbids leave a layer no type at some level: proven, no plan
            assert d.status is Status.INFEASIBLE and any(not rules.types(net, space, h, n) for h in range(arr.levels)
                                                         for n in range(len(net.layers)))
            continue
        ev = evaluate_split(net, arr, d.plan, rules.weight_copies)
        assert rules.value(ev) == d.split_value and d.split_bound is None
        assert d.status in (Status.FEASIBLE, Status.LEVEL_OPTIMAL)  # never optimal: no bound
        assert aspace.contains(d.plan) and _keeps_pins_and_forbids(d.plan, rules)
        if rules.violations(ev, arr, d.plan):
            seen["broke a cap or memory"] += 1
            continue
        seen["kept every rule"] += 1
        assert b.plan is not None  # dp's plan keeps every rule, so one exists
        assert d.split_value >= b.split_value
        seen["equal to brute"] += d.split_value == b.split_value
    assert all(seen.values()), seen


def _even_instance(rng):
    H = rng.choice([1, 2, 3])
    arr = mix(H, [rng.choice([1, 2, 3])] * 2**H, bw=rng.choice([1, 10, 70]), dtype=rng.choice([1, 2, 4]))
    seed = rng.randrange(10**6)
    net = (parse_network(random_dag_spec(seed, rng.choice([3, 4, 5, 6])), "dag") if rng.random() < 0.4
           else random_chain(seed, rng.choice([2, 4, 8])))
    return net, arr, rng.choice([Space.HYPAR, Space.ACCPAR])


def test_on_one_kind_at_alpha_one_half_dp_is_the_even_dp_bit_for_bit():
    """Every declared alpha 1/2 (an array of one kind; --free all on the grid of 1/2 too): the uneven
    dp's plan, status and figures are the even DP's, under either objective and random pins and forbids."""
    rng = random.Random(7)
    for _ in range(60):
        net, arr, space = _even_instance(rng)
        objective = rng.choice(list(Objective))
        L = len(net.layers)
        pins = (Pin(rng.randrange(L), rng.choice([None, 0]), rng.choice(space.types)),) if rng.random() < 0.3 else ()
        forbids = (Forbid(rng.randrange(L), rng.choice(space.types)),) if rng.random() < 0.3 else ()
        problem = Problem(net, arr, space, objective, Constraints(pins, forbids))
        even = get_solver("dp")(problem, SolveOptions())
        free = rng.choice(list(FreeAlphas))
        aspace = alpha_space(arr, alpha_grid(2 if free is FreeAlphas.ALL else rng.choice([2, 4, 16])), free)
        if even.plan is None:  # the pins and forbids conflict: infeasible, as the even DP says
            d = _dp(net, arr, space, aspace, SplitRules(objective, Constraints(pins, forbids)))
            assert d.plan is None and d.status is even.status is Status.INFEASIBLE
            continue
        d = _dp(net, arr, space, aspace, SplitRules(objective, Constraints(pins, forbids)))
        assert d.plan == Plan.even(even.plan) and d.status is even.status is Status.LEVEL_OPTIMAL
        assert evaluate_split(net, arr, d.plan).step_time_s == evaluate(net, arr, space, even.plan).step_time_s


def test_on_one_level_of_one_kind_dp_equals_brute_forces_optimum():
    """One level, every alpha 1/2: the level is the whole problem and the even DP solves it exactly."""
    rng = random.Random(11)
    for _ in range(25):
        net, arr, space = _even_instance(rng)
        arr = mix(1, [arr.leaf_peaks_TFLOPS()[0]] * 2, bw=10, dtype=2)
        if len(net.layers) > 6:
            continue
        aspace = alpha_space(arr, alpha_grid(2), FreeAlphas.UNLIKE)
        for objective in Objective:
            rules = SplitRules(objective)
            assert _dp(net, arr, space, aspace, rules).split_value == brute_split(net, arr, space, aspace,
                                                                                 rules=rules).split_value


def _json(args, capsys):
    code, out, err = run_cli(args, capsys)
    return code, (json.loads(out) if out else None), err


def test_split_optimal_solver_dp_on_tpu_mix_16(capsys):
    """Labelled feasible (no bound), never below the proven optimum, the same plan as --split levels;
    --split proportional --solver dp keeps the proportional alphas and lets the DP choose the types."""
    base = ["--model", "alexnet", "--array", "tpu-mix-16", "--space", "accpar", "--format", "json"]
    code, dp, _ = _json([*base, "--split", "optimal", "--solver", "dp"], capsys)
    assert code == 0 and dp["status"] == "feasible" and dp["bound"] is None and dp["gap"] is None
    assert F(dp["objective_value"]) >= PINNED["alexnet"]
    code, levels, _ = _json([*base, "--split", "levels"], capsys)
    assert levels["plan"] == dp["plan"] and levels["alphas"] == dp["alphas"]
    code, prop, _ = _json([*base, "--split", "proportional", "--solver", "dp"], capsys)
    code, rule, _ = _json([*base, "--split", "proportional"], capsys)
    assert code == 0 and prop["status"] == "feasible" and prop["alphas"] == rule["alphas"]
    assert F(prop["objective_value"]) >= PINNED["alexnet"]
    code, eq, _ = _json([*base, "--split", "equal", "--solver", "dp"], capsys)
    code, eq0, _ = _json([*base, "--split", "equal"], capsys)
    assert eq == {**eq0, "wall_s": eq["wall_s"]}


def test_explore_split_takes_every_rule_option(tmp_path, capsys):
    """``explore split`` shares explore --split's rule options: the same report either way."""
    arr = _mix2(tmp_path)
    rules = ["--objective", "traffic", "--cap", "0=19MB", "--pin", "fc1@0=II", "--forbid", "fc2=I", "--memory", "20",
             "--solver", "dp", "--split", "optimal", "--alpha-grid", "2", "--space", "hypar", "--format", "json"]
    code, alias, _ = _json(["split", "--model", "sfc", "--array", arr, *rules], capsys)
    code2, full, _ = _json(["--model", "sfc", "--array", arr, *rules], capsys)
    assert code == code2 and alias == {**full, "wall_s": alias["wall_s"]}
    c = alias["constraints"]
    assert alias["objective"] == "traffic" and len(c["caps"]) == len(c["pins"]) == len(c["forbids"]) == 1
    assert alias["plan"][0][0] == "II" and alias["plan"][0][1] != "I"
    assert all(m["limit_bytes"] == 20 * 2**30 for m in alias["memory"].values())
    (tmp_path / "c.yaml").write_text("version: 1\nforbids: ['fc1=I']\n")
    code, r, _ = _json(["split", "--model", "sfc", "--array", arr, "--split", "levels", "--alpha-grid", "2",
                        "--constraints", str(tmp_path / "c.yaml"), "--format", "json"], capsys)
    assert code == 0 and r["plan"][0][0] != "I" and r["constraints"]


def test_dp_reports_the_cap_its_plan_breaks(tmp_path, capsys):
    """Caps and memory are not carried by the level DP: its plan is checked and what it breaks
    reported (PLAN BREAKS, JSON ok false and violations, one line on stderr, exit 1), where brute
    force proves that no plan keeps to the same cap."""
    arr = _mix2(tmp_path)
    args = ["--model", "sfc", "--array", arr, "--space", "hypar", "--alpha-grid", "2", "--split", "optimal",
            "--cap", "0=18MB"]
    code, out, err = run_cli([*args, "--solver", "dp"], capsys)
    assert code == 1 and "PLAN BREAKS: cap level 0 <= 18 MB (--cap) by 2.827 MB" in out
    assert err == ("explore: the dp (--split optimal) plan breaks cap level 0 <= 18 MB (--cap) (--split optimal "
                   "--solver brute, exact or cpsat keeps to caps and pins)\n")
    code, r, _ = _json([*args, "--solver", "dp", "--format", "json"], capsys)
    assert code == 1 and r["ok"] is False and r["status"] == "feasible"  # a plan that breaks a rule: feasible status, ok false
    assert [v["constraint"] for v in r["violations"]] == ["cap level 0 <= 18 MB (--cap)"]
    code, r, _ = _json([*args, "--solver", "brute", "--format", "json"], capsys)
    assert code == 1 and r["status"] == "infeasible" and r["plan"] is None


@pytest.mark.parametrize("args, text", [
    (["split", "--split", "search", "--solver", "dp"], "--solver: dp: not with --split search"),
    (["--split", "levels", "--solver", "exact"], "--solver: exact: not with --split levels"),
    (["split", "--memory", "nan"], "--memory: must be a finite number"),
    (["split", "--weight-copies", "-1"], "--weight-copies: must be >= 0"),
    (["split", "--cap", "7=1GB"], "--cap"),
    (["split", "--pin", "nosuch@0=I"], "--pin"),
    (["split", "--constraints", "/nonexistent.yaml"], "/nonexistent.yaml"),
    (["split", "--levels", "2"], "--levels"),
    (["split", "--objective", "sideways"], "--objective"),
    (["--array", "tpu-mix-16", "--split", "optimal", "--solver", "dp", "--cap", "9=1GB"], "--cap"),
    (["--array", "tpu-mix-16", "--split", "proportional", "--solver", "dp", "--pin", "conv1@9=I"], "--pin"),
    (["--array", "tpu-mix-16", "--split", "levels", "--solver", "dp", "--forbid", "nosuch=I"], "--forbid"),
    (["--array", "tpu-mix-16", "--split", "optimal", "--solver", "dp", "--alpha-grid", "0"], "--alpha-grid"),
    (["--array", "tpu-mix-16", "--split", "optimal", "--solver", "dp", "--workers", "2"], "--workers: not with --split"),
])
def test_bad_rule_options_are_refused_alike(args, text, capsys):
    code, out, err = run_cli(["--model", "lenet-c", *args] if args[0] != "split" else
                             ["split", "--model", "lenet-c", *args[1:]], capsys)
    assert code == 2 and out == "" and text in err and err.count("\n") == 1, (args, err)


def test_the_api_check_and_a_sweep_take_solver_dp(tmp_path):
    from explorer.api import check, solve, sweep

    arr = _mix2(tmp_path)
    r = solve("sfc", arr, space="hypar", split="optimal", solver="dp", alpha_grid=2)
    assert r.status is Status.FEASIBLE and r.bound_s is None
    assert evaluate_split(load_model("sfc"), load_array(arr), r.plan).step_time_s == r.step_time_s
    with pytest.raises(SpecError, match="solver.*dp: not with split search"):
        solve("sfc", arr, split="search", solver="dp")
    with pytest.raises(SpecError, match="^caps: "):
        solve("sfc", arr, split="optimal", solver="dp", caps=["9=1GB"])
    c = check("sfc", arr, space="hypar", split="optimal", alpha_grid=2)
    row = {x.solver: x for x in c.rows}["dp"]
    assert c.agree and row.status == "feasible" and row.step_time_s >= c.optimum_s and row.rescored
    spec = {"version": 1, "name": "split-dp", "fixed": {"model": "sfc", "array": arr, "alpha_grid": 2, "space": "hypar"},
            "points": [{"split": "optimal", "solver": "dp"}, {"split": "proportional", "solver": "dp"},
                       {"split": "optimal"}, {"split": "search", "solver": "dp"}]}
    rows = list(sweep(spec, workers=1))  # a solver that does not fit its split: an invalid row, the sweep goes on
    assert [x["status"] for x in rows] == ["feasible", "feasible", "optimal", "invalid"], [x["error"] for x in rows]
    assert rows[3]["error"].startswith("solver: dp: not with split search; split optimal and proportional take solver")
    assert F(rows[0]["objective_value"]) == r.step_time_s >= F(rows[2]["objective_value"])


def test_dp_is_never_worse_than_the_equal_split_it_contains(capsys):
    """Under the traffic objective the level DP left 1/2 at the top level for 1/16 and moved 124.1 M
    elements on alexnet / tpu-mix-16 against the equal split's 110.1 M (tryout finding): dp keeps
    the better of its plan and the even DP's equal split when that lies in the declared space. The
    report names the solver that chose the plan."""
    base = ["--model", "alexnet", "--array", "tpu-mix-16", "--space", "accpar", "--objective", "traffic",
            "--format", "json"]
    code, dp, _ = _json([*base, "--split", "optimal", "--solver", "dp"], capsys)
    code2, eq, _ = _json([*base, "--split", "equal"], capsys)
    assert code == code2 == 0 and dp["solver"] == "dp" and dp["status"] == "feasible"
    assert F(dp["objective_value"]) <= F(eq["objective_value"]) == 110_103_008


def test_the_levels_split_and_check_dp_row_keep_the_equal_split_when_it_is_better(capsys):
    """``--split levels`` and ``check --uneven``'s dp row run the same level DP as ``--solver dp``:
    none of them returns more traffic than the equal split on alexnet / tpu-mix-16 (trial 3)."""
    base = ["--model", "alexnet", "--array", "tpu-mix-16", "--space", "accpar", "--objective", "traffic",
            "--format", "json"]
    _, lv, _ = _json([*base, "--split", "levels"], capsys)
    assert F(lv["objective_value"]) <= 110_103_008


def test_the_joint_optimum_keeps_to_memory(tmp_path, capsys):
    """The joint solver keeps to memory limits (--memory, each kind's own), as --solver exact: its
    answer is exact's (trial 3: it said optimal with a plan over a kind's memory; then it refused
    --memory; now it keeps to it)."""
    arr = _mix2(tmp_path)
    base = ["--model", "sfc", "--array", arr, "--space", "hypar", "--alpha-grid", "2", "--split", "optimal"]
    code, r, _ = _json([*base, "--memory", "0.0005", "--format", "json"], capsys)
    code2, r2, _ = _json([*base, "--memory", "0.0005", "--solver", "exact", "--format", "json"], capsys)
    assert (code, r["status"], r.get("objective_value"), r["bound"]) == (code2, r2["status"], r2.get("objective_value"),
                                                                        r2["bound"])
    arr = _mix2(tmp_path, MIX2.replace("memory_GiB: 16", "memory_GiB: 0.0005").replace("memory_GiB: 32", "memory_GiB: 0.0005"))
    code, r, _ = _json(["--model", "sfc", "--array", arr, "--space", "hypar", "--alpha-grid", "2", "--split",
                        "optimal", "--format", "json"], capsys)
    assert r["solver"] == "joint" and r["status"] in ("optimal", "infeasible")
    assert r["ok"] is (r["status"] == "optimal") and (code == 0) is r["ok"]
    if r["plan"] is not None:
        assert r["bound"] == r["objective_value"] and not r["violations"]
