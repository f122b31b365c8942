"""``--split optimal`` is never worse than the even split it contains (docs/uneven.md, "Seeds"): the
even split's proven optimum (``app.split_solve.even_optimum``: the even exact solver, every alpha 1/2)
seeds every uneven route (the joint solver, exact, cpsat, brute) under both objectives, and every
route's answer is floored by its seeds (``SeedPlans.floor``, ``solvers.uneven.seeded``). A user's
case: AlexNet on tpu-mix-16, accpar, traffic: 109,840,864 elements (the level DP's plan, the exact
Pareto DP ending at once) where the even exact solver's plan, in the space, has 105,384,416."""

from __future__ import annotations

import json
import random
import time
from dataclasses import replace
from fractions import Fraction as F

import pytest

from explorer.app import split as split_mod
from explorer.app.check import Clock
from explorer.app.run import run
from explorer.app.split import Split, render_split, split_run
from explorer.app.split_notes import proof_note
from explorer.app.split_solve import seed_plans
from explorer.core.evaluate import evaluate_split
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.solution import Status, split_solution
from explorer.core.split_rules import TIME_ONLY
from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space
from explorer.core.randnet import random_chain
from explorer.frontends import load_array, load_model
from explorer.solvers.brute import solve_split as brute_split

from .conftest import run_cli
from .test_split_rules import _random_case, _random_rules
from .test_uneven_levels import mix

ROUTES = (None, "exact", "cpsat", "brute")  # None: --split optimal's default (the joint solver, else routed)


def test_alexnet_tpu_mix_traffic_is_no_worse_than_the_even_solvers_optimum():
    """The user's case, compared with the even exact solver's proven optimum (``--split equal
    --solver exact``'s problem): the route (exact's Pareto DP, ending at once at the default 10 s:
    its column pairs need ~70 s) now returns its best seed, the even optimum among them."""
    net, arr = load_model("alexnet"), load_array("tpu-mix-16")
    even = run(Problem(net, arr, Space.ACCPAR, Objective.TRAFFIC), "exact")
    assert even.status is Status.OPTIMAL
    r = split_run(net, arr, Space.ACCPAR, Split.OPTIMAL, objective=Objective.TRAFFIC, time_limit_s=10.0)
    assert r.plan is not None and r.objective_value <= even.objective_value  # was 109,840,864 > 105,384,416
    assert r.objective_value == evaluate_split(net, arr, r.plan).traffic_elements  # re-scored by the one evaluator
    assert r.status is not Status.OPTIMAL or r.objective_value == r.objective_bound
    assert r.objective_bound is None or r.objective_bound <= r.objective_value


def test_check_uneven_exact_row_starts_from_the_even_optimum_too():
    """``explore check --uneven`` on the same case (trial finding): its exact row ended at once with
    the level DP's 109,840,864 while ``--split optimal`` gave the even optimum; now the same seed."""
    from explorer.app.check_uneven import check_uneven

    net, arr = load_model("alexnet"), load_array("tpu-mix-16")
    even = run(Problem(net, arr, Space.ACCPAR, Objective.TRAFFIC), "exact")
    rules = replace(TIME_ONLY, objective=Objective.TRAFFIC)
    c = check_uneven(net, arr, Space.ACCPAR, solvers=("dp", "exact"), time_limit_s=10.0, rules=rules)
    row = {r.solver: r for r in c.rows}["exact"]
    assert row.plan is not None
    value = evaluate_split(net, arr, row.plan).traffic_elements
    assert value <= even.objective_value < evaluate_split(net, arr, {r.solver: r for r in c.rows}["dp"].plan).traffic_elements


def _half(arr, aspace):
    """The declared space's alpha 1/2 alone (every class at 1/2): the even split in the uneven model."""
    return alpha_space(arr, (F(1, 2),), aspace.free, proportional=False)


def _even_best(net, arr, space, aspace, rules):
    """The even split's optimum by brute force in the uneven model (the evaluator's value), or None
    where 1/2 is not declared or no even plan keeps to the rules."""
    half = _half(arr, aspace)
    sol = brute_split(net, arr, space, half, rules=rules)
    if sol.plan is None or not aspace.contains(sol.plan):
        return None
    assert sol.status is Status.OPTIMAL
    return sol.split_value


def _seed_values(net, arr, space, aspace, rules, types, even):
    """The value of every seed plan the routes get that is in the space and keeps to the rules."""
    out = []
    for plan in seed_plans(net, arr, space, aspace, types, rules, None, even):
        ev = evaluate_split(net, arr, plan, rules.weight_copies)
        if aspace.contains(plan) and (not rules.side_constrained or rules.feasible(ev, arr, plan)):
            out.append(rules.value(ev))
    return out


def _optimal(net, arr, space, aspace, rules, solver, types, limit=60.0):
    """``--split optimal [--solver]``'s plan as ``split_run`` gets it (``split._split_plan``, with the
    even split's optimum ``_even_seed`` computes): (plan, status, bound, value, even seed)."""
    clock = Clock(time.perf_counter(), limit)
    say = lambda *a, **k: None  # noqa: E731
    even = split_mod._even_seed(net, arr, space, Split.OPTIMAL, aspace, solver, rules, clock, say)
    plan, status, bound, _, _, claimed, _ = split_mod._split_plan(
        net, arr, space, Split.OPTIMAL, aspace, types, clock, say, "", solver, rules, even)
    if plan is None:
        return None, status, bound, None, even
    value = rules.value(evaluate_split(net, arr, plan, rules.weight_copies))
    assert claimed is None or claimed == value  # the solver's own value is the evaluator's
    return plan, status, bound, value, even


def _routes_answer_unknown(monkeypatch):
    """Every route's solver cut before it found a plan (a limit it could not meet): no plan, no bound."""
    import explorer.solvers.brute as brute
    import explorer.solvers.uneven as uneven
    import explorer.solvers.uneven_constrained as constrained
    import explorer.solvers.uneven_cpsat as uneven_cpsat

    def unknown(name):
        def stub(*args, objective=None, **kwargs):
            rules = kwargs.get("rules")
            return split_solution(name, Status.UNKNOWN, None, None, None, 0.0, 0,
                                  objective=None if rules is None else rules.objective)
        return stub

    monkeypatch.setattr(uneven, "exact_uneven", unknown("exact"))
    monkeypatch.setattr(constrained, "constrained_uneven", unknown("exact"))
    monkeypatch.setattr(constrained, "joint_under", unknown("joint"))
    monkeypatch.setattr(uneven_cpsat, "cpsat_uneven", unknown("cpsat"))
    monkeypatch.setattr(brute, "solve_split", unknown("brute"))


def _wider_case(rng, k: int):
    """A random chain of 4 layers on a 2-level mix (where the even DP's plan is often worse than the
    even exact optimum), overlapped every third, with ``test_split_rules._random_rules``' pins,
    forbids, caps and per-kind memory drawn around the even split's optimum (brute force over alpha
    1/2; every fourth: no rules, the time objective). (net, arr, space, aspace, rules)"""
    peaks = [rng.choice([1, 2, 3, 5]) for _ in range(4)]
    arr = mix(2, peaks, bw=rng.choice([1, 10, 100]), dtype=rng.choice([1, 2, 4]), overlap=k % 3 == 0)
    net = random_chain(rng.randrange(10**6), 4, max_channels=16, max_size=4, consistent=True)
    space = rng.choice([Space.HYPAR, Space.ACCPAR])
    aspace = alpha_space(arr, alpha_grid(rng.choice([2, 4])), rng.choice(list(FreeAlphas)), proportional=True)
    rules = _random_rules(rng, net, arr, space, _half(arr, aspace)) if k % 4 else TIME_ONLY
    return net, arr, space, aspace, rules


def _types(net, arr, space, rules):
    """The even DP's plan under the rules' pins and forbids, as ``split_run`` takes its types (None: none)."""
    return split_mod._dp_plan(Problem(net, arr, space, rules.objective, replace(rules.constraints, caps=())))


def test_every_route_cut_short_returns_its_best_seed_the_even_optimum_among_them(monkeypatch):
    """On 30 seeded random chains (both objectives; pins, forbids, caps and per-kind memory from
    ``test_split_rules._random_rules``; every third overlapped), every route of ``--split optimal``
    whose solver ends without a plan returns the best of its seeds in the space and the rules, never
    worse than the even split's optimum (brute force over alpha 1/2) where 1/2 is declared and an
    even plan keeps to the rules; feasible, no bound. Before: no plan at all from the joint, cpsat
    and brute routes, and exact's best seed without the even optimum (worse on some draws, counted)."""
    _routes_answer_unknown(monkeypatch)
    rng = random.Random(4242)
    seen = {"the even optimum beat the other seeds": 0, "traffic": 0, "rules": 0, "no seed": 0}
    for k in range(30):
        net, arr, space, aspace, rules = _wider_case(rng, k)
        types = _types(net, arr, space, rules)
        if types is None:  # the pins and forbids leave a layer no type: split_run reports the conflict
            continue
        best_even = _even_best(net, arr, space, aspace, rules)
        others = _seed_values(net, arr, space, aspace, rules, types, ())
        for solver in ROUTES:
            plan, status, bound, value, even = _optimal(net, arr, space, aspace, rules, solver, types)
            seeds = _seed_values(net, arr, space, aspace, rules, types, even)
            if not seeds:  # no seed keeps to the rules: nothing to return
                assert plan is None and best_even is None, (k, solver)
                seen["no seed"] += 1
                continue
            # the default's joint solver starts from the alpha search's plan too: at most the best seed
            assert (value <= min(seeds) if solver is None else value == min(seeds)), (k, solver)
            assert status is Status.FEASIBLE and bound is None, (k, solver)
            assert best_even is None or value <= best_even, (k, solver)
        seen["the even optimum beat the other seeds"] += best_even is not None and (not others or best_even < min(others))
        seen["traffic"] += rules.objective is Objective.TRAFFIC
        seen["rules"] += rules.side_constrained
    assert seen["the even optimum beat the other seeds"] >= 2 and seen["traffic"] >= 5 and seen["rules"] >= 10, seen


def test_every_route_is_no_worse_than_the_even_optimum_and_its_seeds_on_seeded_random_chains():
    """The same draws, the solvers run (tiny instances: each proves its answer): every route's value
    <= the even split's optimum (where 1/2 is declared and an even plan keeps to the rules) and <= every
    seed's, optimal only with value == bound; the routes agree."""
    rng = random.Random(4242)
    for k in range(30):
        net, arr, space, aspace, rules = _random_case(rng, k)
        types = _types(net, arr, space, rules)
        if types is None:
            continue
        best_even = _even_best(net, arr, space, aspace, rules)
        values = set()
        for solver in ROUTES:
            plan, status, bound, value, even = _optimal(net, arr, space, aspace, rules, solver, types)
            if plan is None:
                assert status is Status.INFEASIBLE and best_even is None, (k, solver)
                continue
            assert value <= min(_seed_values(net, arr, space, aspace, rules, types, even), default=value), (k, solver)
            assert best_even is None or value <= best_even, (k, solver)
            assert status is not Status.OPTIMAL or value == bound, (k, solver)
            values.add(value)
        assert len(values) <= 1, (k, values)


def test_an_early_end_whose_seed_meets_the_bound_says_it_is_proven():
    """``proof_note`` was silent on an exact run ended at once whose seed plan met the bound (status
    optimal, time objective); under traffic a seed meeting the bound has the least traffic, proven,
    but the tie to the least step time stays open (feasible)."""
    info = {"reason": "", "ended_at_once": "9 column pairs: their column tables and completion bounds are estimated at no less than ~2 s", "proved_by": "exact:pareto-dp",
            "method": "pareto-dp", "separable_bound": True}
    note = proof_note("exact", Status.OPTIMAL, 2.0, info)
    assert note.startswith("exact: ended at once: 9 column pairs") and "the best seed plan, proven optimal: it meets " \
        "the bound; bound: each layer's least columns" in note, note
    traffic = proof_note("exact", Status.FEASIBLE, 2.0, dict(info, meets=True))
    assert "its traffic meets the bound, so it is proven least" in traffic and "not proven optimal" in traffic
    assert proof_note("exact", Status.FEASIBLE, 2.0, info).endswith(
        "the best seed plan, not proven optimal; bound: each layer's least columns, summed side by side, the edges "
        "left out (solvers.uneven_bound)")
    memory = dict(info, ended_at_once="", memory_end="the column tables need ~900 MiB, beyond 500 MiB")
    assert "(its incumbent or a seed plan), proven optimal: it meets the bound" in proof_note(
        "exact", Status.OPTIMAL, 2.0, memory)


ENERGY = "energy_pJ_per_FLOP: 1.0\nlink_energy_pJ_per_byte: 20\nstatic_power_W: 1.5\n"


@pytest.fixture
def mix_with_energy(tmp_path):
    """tpu-mix-16 with an energy model (the shipped file gives none)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "spaces" / "arrays" / "tpu-mix-16.yaml").read_text()
    path = tmp_path / "mix-energy.yaml"
    path.write_text(text.replace("name: tpu-mix-16", "name: mix-energy") + ENERGY)
    return str(path)


def test_the_uneven_report_gives_the_energy_as_the_even_report_does(mix_with_energy, capsys):
    """The uneven text report had no energy (the even one has its energy column): now a line with the
    evaluator's energy in the even report's units; the JSON has the even JSON's ``energy_J`` and
    ``energy_efficiency_over_all_I`` (baselines too)."""
    from explorer.app.render import fmt_joules

    net, arr = load_model("lenet-c"), load_array(mix_with_energy)
    r = split_run(net, arr, Space.ACCPAR, Split.PROPORTIONAL)
    ev = evaluate_split(net, arr, r.plan)
    assert ev.energy_J is not None and f"\nenergy {fmt_joules(ev.energy_J)}\n" in render_split(r)
    code, out, err = run_cli(["--model", "lenet-c", "--array", mix_with_energy, "--space", "accpar", "--split",
                              "proportional", "--format", "json"], capsys)
    assert code == 0, err
    split_json = json.loads(out)
    code, out, err = run_cli(["--model", "lenet-c", "--array", mix_with_energy, "--space", "accpar", "--format",
                              "json"], capsys)
    even_json = json.loads(out)
    assert split_json["energy_J"] == pytest.approx(float(ev.energy_J), rel=1e-12)
    for key in ("energy_J", "energy_efficiency_over_all_I"):
        assert key in even_json and key in split_json and key in split_json["baselines"]["all-II"]
    all_i = split_json["baselines"]["all-I"]["energy_J"]
    assert split_json["energy_efficiency_over_all_I"] == pytest.approx(all_i / float(ev.energy_J), rel=1e-12)
    code, out, err = run_cli(["--model", "lenet-c", "--array", "tpu-mix-16", "--split", "proportional"], capsys)
    assert code == 0 and "\nenergy " not in out  # no energy model: no line, as the even report has no column


@pytest.mark.parametrize("args", [
    ["--split", "optimal", "--cap", "1=20MB"],  # the joint solver (the default route) under a cap
    ["--split", "optimal", "--solver", "exact", "--cap", "1=20MB"],  # exact under caps: the joint solver too
    ["--split", "optimal", "--solver", "cpsat", "--memory", "0.05"],  # cpsat's exact path first
    ["check", "--uneven", "--solvers", "joint,exact", "--cap", "1=20MB"],  # both rows, the even optimum once
])
def test_the_even_optimum_is_solved_once_under_caps_and_memory(args, capsys, monkeypatch):
    """Under caps or memory the even exact solve (``solvers.uneven_seed.even_under_limits``) ran once as
    ``app.split_solve.even_optimum``'s seed and again in the joint solver's starts (``uneven_joint._cheap_plans``;
    check --uneven: once more for its exact row): 0.03-0.36 s each time on tpu-mix-16 (alexnet,
    resnet18, bert-base; docs/benchmarks.md). Now it is solved once and passed on; the answer keeps the
    even optimum among its starts (never worse than it)."""
    from explorer.solvers import uneven_seed

    calls = []
    real = uneven_seed.even_under_limits
    monkeypatch.setattr(uneven_seed, "even_under_limits", lambda *a, **k: calls.append(a) or real(*a, **k))
    head = args[:2] if args[0] == "check" else []
    rest = args[2:] if args[0] == "check" else args
    code, out, err = run_cli(head + ["--model", "alexnet", "--array", "tpu-mix-16", "--time-limit", "20", *rest], capsys)
    assert code in (0, 1), err
    assert len(calls) == 1, [c[4] for c in calls]
