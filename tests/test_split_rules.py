"""Side constraints and the traffic objective on uneven splits (``core.split_rules``): pins and
forbids restrict the types every solver may choose, a cap binds on the busiest side of a level's
links, memory is per accelerator against its kind's limit, and ``traffic`` is sum_h 2^h c_h of the
busiest sides. Brute force, the exact Pareto DP and CP-SAT agree on seeded random instances (status
and value), and every plan is re-scored by the evaluator and keeps to every rule."""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction as F

from explorer.core.constraints import Cap, Constraints, Forbid, Pin
from explorer.core.errors import Refused
from explorer.core.evaluate import evaluate, evaluate_split
from explorer.core.objective import Objective
from explorer.core.partition import PartitionType, Space
from explorer.core.plan import Plan
from explorer.core.solution import Status
from explorer.core.split_rules import TIME_ONLY, SplitRules, leaf_memory_limits, traffic_elements
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.uneven import exact_uneven
from explorer.solvers.uneven_cpsat import cpsat_uneven

from .test_uneven_joint import _instance


def _chain_instance(rng):
    while True:
        net, arr, space, aspace = _instance(rng)
        if net.is_chain:
            return net, arr, space, aspace


def _random_case(rng, k: int):
    """The k-th of a seeded series of random chain instances (exact_prune's and uneven_bound's
    cross-checks): every third with overlap, every fourth free of rules (time objective), the rest
    with ``_random_rules``. (net, arr, space, aspace, rules)."""
    net, arr, space, aspace = _chain_instance(rng)
    if k % 3 == 0:
        arr = replace(arr, overlap=True)
    rules = _random_rules(rng, net, arr, space, aspace) if k % 4 else TIME_ONLY
    return net, arr, space, aspace, rules


def _random_rules(rng, net, arr, space, aspace) -> SplitRules:
    """Pins, forbids, caps and per-leaf memory limits drawn around the unconstrained optimum's
    amounts (so that they often bind and sometimes leave no plan)."""
    objective = rng.choice([Objective.TIME, Objective.TRAFFIC])
    free = brute_split(net, arr, space, aspace, rules=SplitRules(objective))
    ev = evaluate_split(net, arr, free.plan)
    L, H = len(net.layers), arr.levels
    pins, forbids, caps, memory = [], [], [], None
    if rng.random() < 0.5:
        pins.append(Pin(rng.randrange(L), rng.choice([None, *range(H)]), rng.choice(space.types)))
    if rng.random() < 0.5:
        forbids.append(Forbid(rng.randrange(L), rng.choice(space.types)))
    if rng.random() < 0.6:
        h = rng.randrange(H)
        caps.append(Cap(h, ev.level_cost[h] * arr.dtype_bytes * F(rng.choice([2, 3, 4, 4, 6]), 4)))
    if rng.random() < 0.5:
        memory = tuple(m * F(rng.choice([3, 4, 4, 5]), 4) for m in ev.leaf_memory_bytes)
    return SplitRules(objective, Constraints(tuple(pins), tuple(forbids), tuple(caps)), memory)


def _check(net, arr, space, aspace, rules, sol):
    """The solver's plan keeps to the rules and its value is the evaluator's."""
    ev = evaluate_split(net, arr, sol.plan, rules.weight_copies)
    assert rules.violations(ev, arr, sol.plan) == [], sol.solver
    assert rules.value(ev) == sol.split_value == sol.split_bound, sol.solver
    assert aspace.contains(sol.plan)


def test_brute_exact_cpsat_agree_under_pins_caps_memory_and_both_objectives():
    rng = random.Random(2020)
    seen = {"infeasible": 0, "bound by rules": 0, "traffic": 0, "time": 0}
    for _ in range(40):
        net, arr, space, aspace = _chain_instance(rng)
        rules = _random_rules(rng, net, arr, space, aspace)
        sols = [brute_split(net, arr, space, aspace, rules=rules),
                exact_uneven(net, arr, space, aspace, rules=rules),
                cpsat_uneven(net, arr, space, aspace, time_limit_s=20, rules=rules)]
        assert len({s.status for s in sols}) == 1, [(s.solver, s.status) for s in sols]
        seen[rules.objective.value] += 1
        if sols[0].status is Status.INFEASIBLE:
            assert all(s.plan is None for s in sols)
            seen["infeasible"] += 1
            continue
        assert sols[0].status is Status.OPTIMAL
        for s in sols:
            _check(net, arr, space, aspace, rules, s)
        assert len({s.split_value for s in sols}) == 1, [(s.solver, s.split_value) for s in sols]
        unconstrained = brute_split(net, arr, space, aspace, rules=SplitRules(rules.objective)).split_value
        assert sols[0].split_value >= unconstrained
        seen["bound by rules"] += sols[0].split_value > unconstrained
    assert seen["infeasible"] >= 3 and seen["bound by rules"] >= 5 and min(seen["traffic"], seen["time"]) >= 10, seen


def test_the_traffic_objective_of_an_even_plan_is_the_even_splits():
    """With every alpha 1/2, c_h (the busiest side) and sum_h 2^h c_h are ``evaluate``'s."""
    rng = random.Random(7)
    for _ in range(10):
        net, arr, space, _ = _chain_instance(rng)
        types = Plan(tuple(tuple(rng.choice([t for t in space.types if L.offers(t, h)]) for L in net.layers)
                           for h in range(arr.levels)))
        even, split = evaluate(net, arr, space, types), evaluate_split(net, arr, Plan.even(types))
        assert split.level_cost == even.level_cost
        assert traffic_elements(split.level_cost) == even.traffic_elements


def test_a_cap_binds_on_the_busiest_side_by_hand():
    """Two accelerators (H = 1), one fc layer split II (D_i) at alpha: each side sends its partial
    sums of the whole output, B * D_o, whatever alpha; a cap below that leaves no plan of type II."""
    from explorer.core.uneven import alpha_grid, alpha_space
    from explorer.core.randnet import random_chain

    from .test_uneven_model import mix

    net = random_chain(3, 1, max_channels=8, max_size=1)
    arr = mix(1, [1, 3], bw=1, dtype=2)
    aspace = alpha_space(arr, alpha_grid(4))
    layer = net.layers[0]
    rules = SplitRules(Objective.TIME, Constraints(pins=(Pin(0, 0, PartitionType.II),)))
    sol = brute_split(net, arr, Space.HYPAR, aspace, rules=rules)
    ev = evaluate_split(net, arr, sol.plan)
    assert sol.plan.types == ((PartitionType.II,),)
    assert ev.level_cost[0] == layer.output_elements(net.batch)
    tight = SplitRules(Objective.TIME, Constraints(pins=rules.constraints.pins,
                                                   caps=(Cap(0, ev.level_cost[0] * 2 - 1),)))
    for solve in (brute_split, exact_uneven, cpsat_uneven):
        assert solve(net, arr, Space.HYPAR, aspace, rules=tight).status is Status.INFEASIBLE
    loose = SplitRules(Objective.TIME, Constraints(pins=rules.constraints.pins, caps=(Cap(0, ev.level_cost[0] * 2),)))
    assert exact_uneven(net, arr, Space.HYPAR, aspace, rules=loose).split_value == sol.split_value


def test_leaf_memory_limits_are_per_kind_or_one_for_all():
    from .test_uneven_model import mix

    arr = mix(1, [1, 3], bw=1)
    assert leaf_memory_limits(arr) == (16 * 2**30, 16 * 2**30)
    assert leaf_memory_limits(arr, F(5)) == (5, 5)


# ---- explore --split with the even split's options -------------------------------------------

MIX2 = """version: 1
name: mix-2
levels: 1
dtype_bytes: 2
kinds:
  v2: {peak_TFLOPS: 45, memory_GiB: 16}
  v3: {peak_TFLOPS: 123, memory_GiB: 32}
accelerators: [v2, v3]
link_bandwidth_GBps: [70]
"""


def _mix2(tmp_path, text=MIX2):
    path = tmp_path / "mix-2.yaml"
    path.write_text(text)
    return str(path)


def _run(args, capsys):
    import json

    from .conftest import run_cli

    code, out, err = run_cli(args + ["--format", "json"], capsys)
    return code, (json.loads(out) if out else None), err


CAP_19MB = {"level": 0, "bytes": 19000000, "from": "--cap"}  # constraints.caps[] as explore writes it


def test_a_cap_binds_on_the_proving_solvers_and_every_one_proves_the_same(tmp_path, capsys):
    """sfc on a v2 + v3 pair (hypar space, alphas 1/2 and the ratio 15/56): a 19 MB cap on the
    busiest side leaves a slower optimum, 18 MB none (exit 1, status infeasible)."""
    arr = _mix2(tmp_path)
    base = ["--model", "sfc", "--array", arr, "--space", "hypar", "--alpha-grid", "2", "--split", "optimal", "--solver"]
    free = {s: _run(base + [s], capsys)[1] for s in ("brute", "exact", "cpsat")}
    assert {F(d["objective_value"]) for d in free.values()} == {F(11375117, 7177734375)}
    for s in ("brute", "exact", "cpsat"):
        code, d, _ = _run(base + [s, "--cap", "0=19MB"], capsys)
        assert code == 0 and d["status"] == "optimal" and d["ok"] and d["constraints"]["caps"] == [CAP_19MB]
        assert F(d["objective_value"]) == F(d["bound"]) == F(67175251, 25634765625)
        assert d["step_time_s"] == float(F(67175251, 25634765625))
        code, d, err = _run(base + [s, "--cap", "0=18MB"], capsys)
        assert code == 1 and d["status"] == "infeasible" and d["plan"] is None and d["ok"] is False
        assert err.startswith("explore: no plan satisfies the constraints") and err.count("\n") == 1


def test_the_traffic_objective_and_memory_on_the_proving_solvers(tmp_path, capsys):
    """Traffic: every proving solver finds the even split's traffic optimum here (the alphas do
    not lower sfc's busiest side) and the even DP's value; memory 0.3 GiB (every kind) binds,
    0.25 leaves none."""
    arr = _mix2(tmp_path)
    base = ["--model", "sfc", "--array", arr, "--space", "hypar", "--alpha-grid", "2"]
    even = _run(["--model", "sfc", "--array", arr, "--space", "hypar"], capsys)[1]
    for s in ("brute", "exact", "cpsat"):
        code, d, _ = _run(base + ["--split", "optimal", "--solver", s, "--objective", "traffic"], capsys)
        assert code == 0 and d["objective"] == "traffic" and F(d["objective_value"]) == F(d["bound"])
        assert F(d["objective_value"]) == F(even["objective_value"]) == 9439744
        code, d, _ = _run(base + ["--split", "optimal", "--solver", s, "--memory", "0.3"], capsys)
        assert code == 0 and d["ok"] and F(d["objective_value"]) == F(67175251, 25634765625)
        assert all(F(m["memory_bytes"]) <= F(3, 10) * 2**30 for m in d["memory"].values())
        code, d, _ = _run(base + ["--split", "optimal", "--solver", s, "--memory", "0.25"], capsys)
        assert code == 1 and d["status"] == "infeasible"


def test_heuristic_splits_keep_pins_and_report_a_cap_they_break(tmp_path, capsys):
    from .conftest import run_cli

    arr = _mix2(tmp_path)
    base = ["--model", "sfc", "--array", arr, "--space", "hypar", "--alpha-grid", "4", "--pin", "fc1@0=I"]
    for split in ("equal", "proportional", "search", "levels"):
        base = base[:4] + (["--space", "hypar", "--pin", "fc1@0=I"] if split == "equal" else  # every alpha 1/2
                           ["--space", "hypar", "--alpha-grid", "4", "--pin", "fc1@0=I"])
        code, d, err = _run(base + ["--split", split], capsys)
        assert code == 0 and d["ok"] and d["plan"][0][0] == "I", split
        code, d, err = _run(base + ["--split", split, "--cap", "0=3MB"], capsys)
        assert code == 1 and d["ok"] is False and d["plan"][0][0] == "I"
        assert [v["constraint"] for v in d["violations"]] == ["cap level 0 <= 3 MB (--cap)"]
        which = "proportional (its alphas) or optimal" if split == "proportional" else "optimal"
        assert err == f"explore: the {split} plan breaks cap level 0 <= 3 MB (--cap) (--split {which} --solver brute, " \
                      "exact or cpsat keeps to caps and pins)\n"
    code, out, _ = run_cli(base + ["--split", "search", "--cap", "0=3MB"], capsys)
    assert "constraints: pin fc1@0=I; cap level 0 <= 3 MB (--cap)" in out and "PLAN BREAKS: cap level 0 <= 3 MB" in out
    code, d, _ = _run(base + ["--split", "search", "--objective", "traffic"], capsys)
    assert code == 0 and d["objective"] == "traffic" and F(d["objective_value"]) >= 9439744


def test_a_constraints_file_and_the_api_take_the_same(tmp_path, capsys):
    from explorer.api import solve
    from explorer.frontends import load_array, load_model

    arr = _mix2(tmp_path)
    cfile = tmp_path / "c.yaml"
    cfile.write_text("version: 1\ncaps: {0: 19MB}\npins: ['fc4@0=II']\n")
    code, d, _ = _run(["--model", "sfc", "--array", arr, "--space", "hypar", "--alpha-grid", "2", "--split", "optimal",
                       "--solver", "exact", "--constraints", str(cfile)], capsys)
    assert code == 0 and F(d["objective_value"]) == F(67175251, 25634765625) and d["plan"][0][3] == "II"
    r = solve("sfc", arr, space="hypar", split="optimal", solver="cpsat", alpha_grid=2, caps={0: "19MB"},
              pins=["fc4@0=II"])
    assert r.ok and r.status is Status.OPTIMAL and r.step_time_s == F(67175251, 25634765625)
    ev = evaluate_split(load_model("sfc"), load_array(arr), r.plan)
    assert ev.step_time_s == r.step_time_s and ev.level_cost[0] * 2 <= 19 * 10**6
    r = solve("sfc", arr, space="hypar", split="search", alpha_grid=4, forbids=["fc1=II"], objective="traffic")
    assert all(row[0] is not PartitionType.II for row in r.plan.types) and r.objective is Objective.TRAFFIC


def test_a_sweep_split_point_takes_caps_pins_and_the_objective(tmp_path):
    from explorer.api import sweep

    arr = _mix2(tmp_path)
    spec = {"version": 1, "name": "split-rules",
            "fixed": {"model": "sfc", "array": arr, "split": "optimal", "solver": "exact", "alpha_grid": 2, "space": "hypar"},
            "points": [{}, {"caps": ["0=19MB"]}, {"caps": ["0=18MB"]}, {"objective": "traffic"}, {"pins": ["fc1@0=I"]}]}
    rows = list(sweep(spec, workers=1))
    assert [r["status"] for r in rows] == ["optimal", "optimal", "infeasible", "optimal", "optimal"], [r["error"] for r in rows]
    assert [F(r["objective_value"]) for r in rows[:2]] == [F(11375117, 7177734375), F(67175251, 25634765625)]


def test_heuristics_on_random_instances_keep_pins_and_say_what_they_break():
    """Every heuristic split under random rules: pins and forbids hold, the reported value and
    violations are the evaluator's, and a plan is ``ok`` exactly when it keeps to every rule."""
    from explorer.app.split import Split, split_run

    rng = random.Random(11)
    broke = 0
    for _ in range(12):
        net, arr, space, aspace = _chain_instance(rng)
        rules = _random_rules(rng, net, arr, space, aspace)
        c = rules.constraints
        for split in (Split.EQUAL, Split.PROPORTIONAL, Split.SEARCH, Split.LEVELS):
            if split is Split.LEVELS and rules.objective is Objective.TRAFFIC:
                continue
            try:
                r = split_run(net, arr, space, split, len(aspace.grid) + 1, aspace.free, grid_only=not aspace.proportional,
                              objective=rules.objective, constraints=c)
            except Refused:
                continue  # a pin no type of the node's offers at that level: the DP finds no plan
            ev = evaluate_split(net, arr, r.plan)
            assert r.objective_value == SplitRules(rules.objective).value(ev)
            assert list(r.violations) == SplitRules(rules.objective, c).violations(ev, arr, r.plan)
            assert not any("pin" in v.constraint or "forbid" in v.constraint for v in r.violations)
            assert r.ok == (not r.violations and r.memory_ok)
            broke += bool(r.violations)
    assert broke >= 3


def test_the_joint_solver_takes_pins_and_forbids_and_agrees_with_brute_force():
    """``--split optimal`` without ``--solver``: the joint solver's columns of a type pins or forbids
    exclude cost INF (as a type the node does not offer). On seeded random instances (chains and
    graphs in its scope) its proven optimum equals brute force's under the same pins and forbids,
    and its plan keeps to them."""
    from explorer.solvers.uneven_joint import JointOptions, joint_uneven

    rng = random.Random(31)
    ran = moved = graphs = 0
    for _ in range(400):
        if ran == 60:
            break
        net, arr, space, aspace = _instance(rng)
        L, H = len(net.layers), arr.levels
        pins = tuple(Pin(rng.randrange(L), rng.choice([None, *range(H)]), rng.choice(space.types))
                     for _ in range(rng.choice([0, 1, 2])))
        forbids = tuple(Forbid(rng.randrange(L), rng.choice(space.types)) for _ in range(rng.choice([0, 1])))
        if not pins and not forbids:
            continue
        rules = SplitRules(Objective.TIME, Constraints(pins, forbids))
        want = brute_split(net, arr, space, aspace, rules=rules)
        if want.status is Status.INFEASIBLE:
            continue
        try:
            got = joint_uneven(net, arr, space, aspace, JointOptions(time_limit_s=20),
                               types_allowed=lambda h, l: rules.types(net, space, h, l))  # noqa: E741
        except Refused:
            continue  # outside the joint solver's scope (the top split alone)
        ev = evaluate_split(net, arr, got.plan)
        assert rules.violations(ev, arr, got.plan) == [] and ev.step_time_s == got.step_time_s
        assert got.status is Status.OPTIMAL and got.step_time_s == want.step_time_s, (got.status, got.step_time_s, want.step_time_s)
        ran += 1
        graphs += not net.is_chain
        moved += want.step_time_s > brute_split(net, arr, space, aspace).step_time_s
    assert ran == 60 and moved >= 10 and graphs >= 2, (ran, moved, graphs)


def test_the_joint_solver_keeps_pins_on_networks_of_several_sources():
    """Several sources: the joint solver sees a virtual source before them (the real layers shifted
    by one); pins and forbids name the real layers, and its optimum equals brute force's."""
    from explorer.core.uneven import alpha_grid, alpha_space
    from explorer.solvers.uneven_joint import JointOptions, joint_uneven

    from .test_uneven_joint import _plans, _sources
    from .test_uneven_model import mix

    rng = random.Random(77)
    done = moved = 0
    while done < 8:
        net = _sources(rng, done)
        arr = mix(1, [rng.choice([1, 2]), rng.choice([3, 5])], bw=rng.choice([1, 10]), dtype=2)
        space = rng.choice([Space.HYPAR, Space.ACCPAR])
        aspace = alpha_space(arr, alpha_grid(3))
        if _plans(net, space, aspace, 1) > 1500:
            continue
        real = [l for l, L in enumerate(net.layers) if not L.is_join]  # noqa: E741
        rules = SplitRules(Objective.TIME, Constraints((Pin(rng.choice(real), 0, rng.choice(space.types)),),
                                                       (Forbid(rng.choice(real), rng.choice(space.types)),)))
        want = brute_split(net, arr, space, aspace, rules=rules)
        if want.status is Status.INFEASIBLE:
            continue
        done += 1
        got = joint_uneven(net, arr, space, aspace, JointOptions(time_limit_s=60),
                           types_allowed=lambda h, l: rules.types(net, space, h, l))  # noqa: E741
        assert got.status is Status.OPTIMAL and got.step_time_s == want.step_time_s
        assert rules.violations(evaluate_split(net, arr, got.plan), arr, got.plan) == []
        moved += want.step_time_s > brute_split(net, arr, space, aspace).step_time_s
    assert moved >= 2, moved


def test_split_optimal_on_tpu_mix_16_keeps_a_pin(capsys):
    """The joint solver under a pin on AlexNet: proven, the pin kept, slower than the pinned-free
    optimum of tests/test_split_pinned.py; the evaluator re-scores it (split_run checks)."""
    code, d, _ = _run(["--model", "alexnet", "--array", "tpu-mix-16", "--space", "accpar", "--split", "optimal",
                       "--pin", "fc6@0=I"], capsys)
    assert code == 0 and d["status"] == "optimal" and d["constraints"]["pins"] == ["pin fc6@0=I"] and d["gap"] == 0
    assert d["plan"][0][5] == "I" and F(d["objective_value"]) > F(3936030799, 1121093750000)


def test_check_split_optimal_takes_caps_pins_and_memory(tmp_path, capsys):
    """``explore check --split optimal`` under side constraints: the proving solvers agree (on the
    optimum, or that no plan exists), the joint solver takes pins and caps, a heuristic's
    plan that breaks a cap is marked, not counted as beating the optimum; exit 0 when they agree."""
    arr = _mix2(tmp_path)
    base = ["check", "--split", "optimal", "--model", "sfc", "--array", arr, "--space", "hypar", "--alpha-grid", "2"]
    code, d, _ = _run(base + ["--cap", "0=19MB"], capsys)
    rows = d["solvers"]
    assert code == 0 and d["agree"] and F(d["optimum"]["objective"]) == F(67175251, 25634765625)
    assert d["optimum"]["proven_by"] == ["brute", "exact", "cpsat", "joint"] and d["constraints"]["caps"] == [CAP_19MB]
    assert rows["joint"]["status"] == "optimal" and rows["accpar"]["status"] == "refused"
    assert any(r.get("breaks") and F(r["objective"]) < F(d["optimum"]["objective"]) for r in rows.values())
    assert all(r["ok"] is (not r["breaks"]) for r in rows.values() if "plan" in r)
    assert rows["brute"]["ok"] and rows["accpar"] == {"status": "refused", "reason": rows["accpar"]["reason"]}  # no plan
    code, d, _ = _run(base + ["--cap", "0=18MB"], capsys)
    assert code == 0 and d["agree"] and d["optimum"] is None
    assert [r["status"] for r in list(d["solvers"].values())[:4]] == ["infeasible"] * 4 == [d["solvers"][s]["status"] for s in d["infeasible"]]
    code, d, _ = _run(base + ["--pin", "fc1@0=I", "--solvers", "joint,brute,exact,cpsat"], capsys)
    assert code == 0 and d["agree"] and d["optimum"]["proven_by"] == ["joint", "brute", "exact", "cpsat"]
    code, d, _ = _run(base + ["--memory", "0.3"], capsys)
    assert code == 0 and d["agree"] and F(d["optimum"]["objective"]) == F(67175251, 25634765625)


def test_check_split_optimal_says_when_a_proving_solver_breaks_a_cap(tmp_path, monkeypatch):
    """A proving solver whose plan breaks a rule it was given is a disagreement (exit 1)."""
    from explorer.api import check
    from explorer.app import check_uneven

    arr = _mix2(tmp_path)
    real = check_uneven.exact_uneven  # a cap routes exact to the constrained path: it drops the rules instead
    monkeypatch.setattr(check_uneven, "constrained_uneven", lambda *a, rules=None, even=None, **k: real(*a, **k))
    r = check("sfc", arr, space="hypar", split="optimal", alpha_grid=2, caps=["0=19MB"], solvers=["brute", "exact"])
    assert not r.agree and any(p.startswith("exact: breaks cap level 0") for p in r.problems), r.problems


def test_traffic_ties_go_to_the_least_step_time_on_every_proving_solver():
    """Under traffic, brute force, the exact DP and CP-SAT return the lexicographic optimum
    (traffic, then step time): the same traffic and the same step time, re-scored by the
    evaluator; brute force's is the least step time of every plan of least traffic."""
    rng = random.Random(2026)
    for _ in range(24):
        net, arr, space, aspace = _chain_instance(rng)
        rules = SplitRules(Objective.TRAFFIC)
        sols = [brute_split(net, arr, space, aspace, rules=rules),
                exact_uneven(net, arr, space, aspace, rules=rules),
                cpsat_uneven(net, arr, space, aspace, time_limit_s=20, rules=rules)]
        assert all(s.status is Status.OPTIMAL for s in sols), [(s.solver, s.status) for s in sols]
        evs = [evaluate_split(net, arr, s.plan) for s in sols]
        for s, ev in zip(sols, evs):
            _check(net, arr, space, aspace, rules, s)
        assert len({(rules.value(ev), ev.step_time_s) for ev in evs}) == 1, [(s.solver, ev.step_time_s) for s, ev in zip(sols, evs)]


def test_traffic_ties_on_the_v2_v3_pair_give_one_step_time(tmp_path, capsys):
    """sfc on the v2 + v3 pair under traffic (alphas 1/4, 1/2, 3/4 and the ratio): exact and
    CP-SAT proved the same 9,439,744 elements with plans of 2.04 ms and 3.19 ms; both now return
    the least step time of the plans of least traffic (2.04 ms, brute force's too)."""
    arr = _mix2(tmp_path)
    base = ["--model", "sfc", "--array", arr, "--alpha-grid", "4", "--split", "optimal", "--objective", "traffic", "--solver"]
    got = {s: _run(base + [s], capsys)[1] for s in ("exact", "cpsat")}
    assert {d["status"] for d in got.values()} == {"optimal"}
    assert {F(d["objective_value"]) for d in got.values()} == {9439744}
    assert {d["step_time_s"] for d in got.values()} == {float(F(10482551, 5126953125))}  # traffic: the step time as a float


def test_cpsat_under_traffic_is_optimal_only_when_the_tie_break_is_proven(monkeypatch):
    """With the second stage (the least step time at the proven traffic) given no time, CP-SAT
    keeps the first stage's plan: its traffic is the optimum, its status FEASIBLE, not OPTIMAL."""
    import explorer.solvers.uneven_cpsat as uneven_cpsat

    calls = []
    real = uneven_cpsat._minimise

    def minimise(m, T, time_limit_s):
        calls.append(T)
        if len(calls) == 2:  # no plan within the time limit
            from ortools.sat.python import cp_model

            return cp_model.CpSolver(), cp_model.UNKNOWN, False
        return real(m, T, time_limit_s)

    monkeypatch.setattr(uneven_cpsat, "_minimise", minimise)
    net, arr, space, aspace = _chain_instance(random.Random(2026))
    rules = SplitRules(Objective.TRAFFIC)
    sol = cpsat_uneven(net, arr, space, aspace, time_limit_s=20, rules=rules)
    assert len(calls) == 2 and sol.status is Status.FEASIBLE
    assert sol.split_value == brute_split(net, arr, space, aspace, rules=rules).split_value
    assert rules.value(evaluate_split(net, arr, sol.plan)) == sol.split_value
