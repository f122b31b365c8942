"""One model: the even split's formulas are the alpha = 1/2 case of the uneven split's (issue 20).

The re-layout, inter-layer, footprint and compute formulas exist once (``core.partition``,
``core.comm``); the even path's coefficients are computed by the same functions at 1/2. These
tests would fail if a second copy drifted: every node behaviour, every pair of types."""

from __future__ import annotations

from fractions import Fraction as F
from itertools import product

from explorer.core.comm import edge_split, footprint_elements, held_elements, scaled_sizes, share_flops, training_flops
from explorer.core.network import Layer, LayerKind
from explorer.core.partition import (
    ALL_TYPES,
    EMBEDDING_TYPES,
    GROUPED_TYPES,
    HALF,
    JOIN_NODE_TYPES,
    LAYER_TYPES,
    Layout,
    inter_coeff,
    node_inter_coeff,
    node_inter_split,
    relayout_fraction,
    relayout_split,
)
from explorer.core.randnet import random_chain

BEHAVIOURS = (LAYER_TYPES, JOIN_NODE_TYPES, GROUPED_TYPES, EMBEDDING_TYPES)


def test_binary_relayout_is_the_even_case_of_relayout_split():
    # hand values of model.md section 4: row <-> col 1/4, split -> dup 1/2, else 0
    want = {(Layout.ROW, Layout.COL): F(1, 4), (Layout.COL, Layout.ROW): F(1, 4), (Layout.ROW, Layout.DUP): F(1, 2),
            (Layout.COL, Layout.DUP): F(1, 2)}
    for src, dst in product(Layout, Layout):
        assert relayout_fraction(src, dst, 2) == want.get((src, dst), 0)
        assert relayout_split(src, HALF, dst, HALF) == (relayout_fraction(src, dst, 2),) * 2


def test_every_behaviours_inter_coefficient_is_the_even_case_of_the_uneven_one():
    seen = 0
    for producer, consumer in product(BEHAVIOURS, BEHAVIOURS):
        for a, b in product(producer.offered, consumer.offered):
            c = node_inter_coeff(a, b, producer, consumer)
            assert node_inter_split(a, HALF, b, HALF, producer, consumer) == (c.total, c.total)
            # uneven: both sides together move at least nothing and at most the whole tensor twice (F and E)
            s0, s1 = node_inter_split(a, F(3, 16), b, F(11, 16), producer, consumer)
            assert 0 <= s0 <= 2 and 0 <= s1 <= 2
            seen += 1
    assert seen >= 40
    for a, b in product(ALL_TYPES, ALL_TYPES):
        assert node_inter_split(a, HALF, b, HALF, LAYER_TYPES, LAYER_TYPES) == (inter_coeff(a, b).total,) * 2


def test_edge_split_takes_each_nodes_layouts():
    fc = Layer("fc", LayerKind.FC, 8, 8)
    for a, b in product(ALL_TYPES, ALL_TYPES):
        assert edge_split(fc, a, HALF, fc, b, HALF) == (inter_coeff(a, b).total,) * 2


def test_footprint_and_flops_are_the_even_case_of_the_shares():
    net = random_chain(3, 5)
    B = net.batch
    for layer in net.layers:
        for counts in ((0, 0, 0), (1, 0, 0), (0, 2, 1), (2, 1, 1)):
            s = scaled_sizes(layer, B, counts)
            assert footprint_elements(layer, B, counts, 2) == held_elements(layer, s.f_in, s.weights, 2)
        assert share_flops(layer, B, (F(1),) * 4) == training_flops(layer, B)
        assert share_flops(layer, B, (HALF, HALF, F(1), F(1))) * 4 == training_flops(layer, B)


# ---- one command: explore --split ---------------------------------------------------------------

def _json(args, capsys):
    import json

    from .conftest import run_cli

    code, out, err = run_cli(args, capsys)
    return code, (json.loads(out) if code == 0 else None), err


def test_explore_split_is_explore_with_split(capsys):
    """``explore --array tpu-mix-16 --split optimal`` answers what ``explore split`` does (the same
    proven step time, bound, plan and alphas)."""
    common = ["--model", "lenet-c", "--array", "tpu-mix-16", "--space", "accpar", "--format", "json"]
    code, one, _ = _json([*common, "--split", "optimal"], capsys)
    code2, alias, _ = _json(["split", *common, "--split", "optimal"], capsys)
    assert code == code2 == 0 and one["status"] == alias["status"] == "optimal"
    for key in ("step_time_s", "objective_value", "bound", "plan", "alphas", "group_times_s", "memory", "baselines"):
        assert one[key] == alias[key], key
    assert F(one["objective_value"]) == F(1677089, 71750000000)  # tests/test_split_pinned.py


def test_a_split_policy_on_one_kind_is_the_even_split(capsys):
    """On an array of one kind every policy is the even split: the plan and step time of the even
    path's DP under the time objective."""
    code, even, _ = _json(["--model", "lenet-c", "--objective", "time", "--format", "json"], capsys)
    assert code == 0
    for split in ("equal", "proportional", "search"):
        code, r, _ = _json(["--model", "lenet-c", "--split", split, "--format", "json"], capsys)
        assert code == 0 and r["plan"] == even["plan"], split
        assert float(F(r["step_time_s"])) == even["step_time_s"]
        assert all(a == "1/2" for level in r["alphas"] for row in level for a in row)


def test_split_options_are_refused_cleanly(capsys):
    from .conftest import run_cli

    cases = [
        (["--split", "optimal", "--cap", "9=1GB"], "--cap"),  # a level the array lacks (the joint solver takes caps)
        (["--split", "equal", "--workers", "2"], "--workers: not with --split"),
        (["--split", "equal", "--cap", "7=1GB"], "--cap"),
        (["--split", "equal", "--pin", "nosuch@0=I"], "--pin"),
        (["--split", "equal", "--constraints", "/nonexistent.yaml"], "/nonexistent.yaml"),
        (["--split", "levels", "--solver", "exact"], "--solver: exact: not with --split levels"),
        (["--split", "search", "--solver", "dp"], "--solver: dp: not with --split search"),
        (["--alpha-grid", "8"], "--alpha-grid: only with --split"),
        (["--grid-only"], "--grid-only: only with --split"),
        (["--split", "equal", "--memory", "nan"], "--memory: must be a finite number"),
        (["--split", "equal", "--memory", "-1"], "--memory: must be > 0"),
        (["--split", "equal", "--weight-copies", "-1"], "--weight-copies: must be >= 0"),
        (["--split", "equal", "--alpha-grid", "1"], "--alpha-grid"),
        (["--split", "sideways"], "--split"),
        (["--split", "optimal", "--time-limit", "0.01"], "'--time-limit': must be a finite number of seconds >= 0.1, got 0.01"),
        (["split", "--split", "search", "--solver", "exact"], "--solver: exact: not with --split search"),
    ]
    for args, text in cases:
        code, out, err = run_cli(["--model", "lenet-c", *args], capsys)
        assert code == 2 and out == "" and text in err and err.count("\n") == 1, (args, err)
        assert "Traceback" not in err


def test_the_api_takes_split():
    import pytest

    from explorer.api import solve
    from explorer.core.errors import SpecError
    from explorer.core.evaluate import evaluate_split
    from explorer.frontends import load_array, load_model

    r = solve("lenet-c", "tpu-mix-16", space="accpar", split="optimal")
    assert r.status.value == "optimal" and r.step_time_s == r.bound_s == F(1677089, 71750000000)
    assert evaluate_split(load_model("lenet-c"), load_array("tpu-mix-16"), r.plan).step_time_s == r.step_time_s
    even = solve("lenet-c", objective="time")
    assert solve("lenet-c", split="equal").plan.types == even.plan.types  # one kind: the even split
    for kwargs, name in (({"solver": "nosuch"}, "^solver: "),
                         ({"levels": 2}, "^levels: "), ({"caps": ["9=1GB"]}, "^caps: "), ({"dump_model": "m.pb"}, "dump_model"),
                         ({"alpha_grid": 1}, "alpha_grid"), ({"memory_GiB": float("nan")}, "^memory_GiB: "),
                         ({"split": "sideways"}, "split"), ({"free": "some"}, "free")):
        with pytest.raises(SpecError, match=name):
            solve("lenet-c", "tpu-mix-16", **{"split": "equal", **kwargs})


def test_split_optimal_takes_every_proving_solver_and_they_agree():
    """``solve(..., split="optimal", solver=...)`` (``explore --split optimal --solver``): the joint
    solver (default) and the uneven forms of brute, exact and cpsat prove the same optimum on
    seeded random instances; every plan re-scored by the evaluator (split_run checks it too)."""
    import random

    from explorer.api import solve
    from explorer.core.errors import Refused
    from explorer.core.uneven import FreeAlphas
    from explorer.core.evaluate import evaluate_split

    from .test_uneven_joint import _instance

    rng = random.Random(20)
    compared = joint_ran = all_four = 0
    for _ in range(100):
        if compared == 12:
            break
        net, arr, space, aspace = _instance(rng)
        if aspace.free is not FreeAlphas.UNLIKE or not aspace.proportional:
            continue  # the API's defaults: free classes unlike, with their proportional ratios
        grid = len(aspace.grid) + 1
        answers = {}
        for solver in ("joint", "brute", "exact", "cpsat"):
            try:
                r = solve(net, arr, space=space.value, split="optimal", alpha_grid=grid,
                          solver=None if solver == "joint" else solver, time_limit=20.0)
            except Refused as err:  # joint: the top split only; exact and cpsat: chains only
                assert solver == "joint" or (solver in ("exact", "cpsat") and not net.is_chain), (solver, err)
                continue
            except Exception as err:  # the joint solver's scope is a SpecError naming --split
                assert solver == "joint" and "optimal" in str(err), err
                continue
            assert r.status.value == "optimal" and r.bound_s == r.step_time_s, (solver, r.status)
            assert evaluate_split(net, arr, r.plan).step_time_s == r.step_time_s
            answers[solver] = r.step_time_s
        assert len(set(answers.values())) == 1 and "brute" in answers, answers
        if len(answers) < 2:
            continue  # a graph outside the joint solver's scope: brute alone
        joint_ran += "joint" in answers
        all_four += len(answers) == 4
        compared += 1
    assert compared == 12 and joint_ran >= 3 and all_four >= 2


def test_split_solver_refusals():
    import pytest

    from explorer.api import solve
    from explorer.core.errors import SpecError

    with pytest.raises(SpecError, match="solver: exact: not with split levels"):  # equal: the even solvers
        solve("lenet-c", "tpu-mix-16", split="levels", solver="exact")
    with pytest.raises(SpecError, match="solver: unknown solver 'nope' \\(choose from brute, exact, cpsat, dp\\)"):
        solve("lenet-c", "tpu-mix-16", split="optimal", solver="nope")
    for kw in ({"workers": 2}, {"seed": 3}):  # the CLI refuses --workers and --seed with --split: the API too
        with pytest.raises(SpecError, match=f"{next(iter(kw))}: not with split"):
            solve("lenet-c", "tpu-mix-16", split="optimal", **kw)


def test_a_sweep_split_optimal_point_takes_a_proving_solver(tmp_path):
    """``explore sweep``: a ``split: optimal`` point takes ``solver`` brute, exact or cpsat (the
    uneven forms) besides the joint solver; all prove the same step time. A solver on another
    split is refused before any point runs."""
    import pytest

    from explorer.api import sweep
    from explorer.core.errors import SpecError

    spec = {"version": 1, "name": "split-solvers",
            "fixed": {"model": "sfc", "array": "tpu-mix-16", "levels": 1, "mix": "1 v2 + 1 v3", "split": "optimal",
                      "alpha_grid": 4, "space": "hypar"},
            "points": [{}, {"solver": "brute"}, {"solver": "exact"}, {"solver": "cpsat"}]}
    rows = list(sweep(spec, workers=1))
    assert [r["status"] for r in rows] == ["optimal"] * 4, [r["error"] for r in rows]
    assert len({r["step_time_s"] for r in rows}) == 1
    assert [r["solver"] for r in rows][1:] == ["brute", "exact", "cpsat"]
    bad = {**spec, "points": [{"solver": "exact", "split": "search"}]}
    with pytest.raises(SpecError, match="solver: not with split"):
        list(sweep(bad, workers=1))


def _random_even_plan(rng, net, H, space):
    from explorer.core.plan import Plan

    return Plan(tuple(tuple(rng.choice([t for t in space.types if L.offers(t, h)]) for L in net.layers) for h in range(H)))


def test_one_evaluator_even_plans_per_leaf_and_per_group_equal_the_split_reference():
    """``evaluate``'s integer pass fills every per-leaf and per-group figure of an even plan; they
    equal ``evaluate_split`` (Fractions, group by group) at alpha 1/2, on arrays of kinds too
    (each leaf computes at its own peak), on seeded random chains and graphs, with memory."""
    import random

    from explorer.core.evaluate import evaluate, evaluate_split
    from explorer.core.partition import Space
    from explorer.core.plan import Plan

    from .test_uneven_joint import _instance

    rng = random.Random(2020)
    kinds = 0
    for _ in range(40):
        net, arr, space, _ = _instance(rng)
        plan = _random_even_plan(rng, net, arr.levels, space)
        wc = rng.choice([0, 1])
        ev, ref = evaluate(net, arr, space, plan, wc), evaluate_split(net, arr, Plan.even(plan), wc)
        for name in ("step_time_s", "traffic_bytes", "traffic_elements", "level_cost", "level_time_s", "comm_time_s",
                     "compute_s", "memory_bytes", "energy_J", "leaf_compute_s", "leaf_comm_s", "leaf_time_s",
                     "group_amounts", "group_comm_s", "leaf_memory_bytes"):
            assert getattr(ev, name) == getattr(ref, name), name
        assert evaluate_split(net, arr, plan, wc) == ref  # no alphas: every split 1/2
        assert ev.top_groups() == ref.top_groups()
        kinds += len(set(arr.leaf_peaks_TFLOPS())) > 1
    assert kinds >= 20
    assert Space.HYPAR.types  # both spaces drawn by _instance


def test_one_evaluator_scores_uneven_plans():
    """``evaluate`` takes a plan with alphas: uneven ones are ``evaluate_split``'s figures (the
    busiest side of each level's links as ``level_cost``, the slowest leaf's step time), the
    per-layer even amounts empty; the space is still checked; bad alphas are a PlanError-like
    ValueError naming the level."""
    import random

    import pytest

    from explorer.core.evaluate import PlanError, evaluate, evaluate_split
    from explorer.core.plan import Plan

    def with_level_alphas(plan, alphas):  # one alpha per level for every group and layer
        return Plan(plan.types, tuple((a,) * len(row) for a, row in zip(alphas, plan.types)))
    from explorer.core.partition import PartitionType, Space

    from .test_uneven_joint import _instance

    rng = random.Random(21)
    for _ in range(30):
        net, arr, space, _ = _instance(rng)
        plan = _random_even_plan(rng, net, arr.levels, space)
        uneven = with_level_alphas(plan, [F(rng.choice([1, 3]), 4) for _ in range(arr.levels)])
        ev, ref = evaluate(net, arr, space, uneven), evaluate_split(net, arr, uneven)
        assert ev == ref and ev.intra_units == ev.inter_units == ev.final_counts == ()
        assert ev.step_time_s == max(ev.leaf_time_s)
        assert ev.level_cost == tuple(max(max(p) for p in row) for row in ev.group_amounts)
        assert ev.traffic_bytes == 2 * ev.traffic_elements * arr.dtype_bytes
        if space is Space.HYPAR:
            bad = with_level_alphas(type(plan)(tuple((PartitionType.III,) * len(row) for row in plan.types)),
                                    [F(1, 4)] * arr.levels)
            with pytest.raises(PlanError, match="not in the hypar space"):
                evaluate(net, arr, space, bad)
    with pytest.raises(ValueError, match="alpha must be strictly between 0 and 1"):
        evaluate(net, arr, space, with_level_alphas(plan, [F(1)] * arr.levels))


def test_check_takes_split_optimal(capsys):
    """``explore check --split optimal`` is ``check --uneven``: the same solvers, statuses and step
    times; another split, or a side constraint with it, is one line and exit 2."""
    import json

    from .conftest import run_cli

    args = ["--model", "lenet-c", "--array", "tpu-mix-16", "--space", "hypar", "--solvers", "joint,accpar,search",
            "--format", "json"]
    runs = []
    for flag in (["--split", "optimal"], ["--uneven"]):
        code, out, err = run_cli(["check", *flag, *args], capsys)
        assert code == 0, err
        r = json.loads(out)
        runs.append([(n, s["status"], s.get("objective"), s.get("bound")) for n, s in r["solvers"].items()]
                    + [r["optimum"]["objective"]])
    assert runs[0] == runs[1] and runs[0][-1] == "1330477/52500000000"
    for extra, text in ((["--split", "search"], "--split: check takes --split optimal"),
                        (["--split", "optimal", "--cap", "7=1MB"], "--cap: '7=1MB': level 7 is out of range"),
                        (["--split", "optimal", "--workers", "2"], "--workers: not with --split optimal")):
        code, out, err = run_cli(["check", "--model", "lenet-c", *extra], capsys)
        assert code == 2 and out == "" and text in err and err.count("\n") == 1, err


def test_the_api_check_takes_split():
    """``explorer.api.check(..., split="optimal")`` is ``explore check --split optimal``: the
    uneven-split solvers agree on lenet-c on tpu-mix-16 (the pinned optimum); bad arguments
    are a SpecError naming them."""
    import pytest

    from explorer.api import check
    from explorer.core.errors import SpecError

    r = check("lenet-c", "tpu-mix-16", space="hypar", split="optimal", solvers=["joint", "accpar", "search"])
    assert r.agree and r.optimum_s == F(1330477, 52500000000) and [x.solver for x in r.rows] == ["joint", "accpar", "search"]
    for kwargs, name in (({"split": "search"}, "^split: "), ({"caps": ["9=1GB"]}, "^caps: "), ({"levels": 2}, "^levels: "),
                         ({"memory_GiB": 0.0}, "memory"), ({"solvers": ["nosuch"]}, "solvers"), ({"workers": 2}, "workers"),
                         ({"objective": "nosuch"}, "objective"),  # traffic: taken (tests/test_check_uneven_traffic.py)
                         ({"alpha_grid": 1}, "alpha_grid"), ({"free": "some"}, "free")):
        with pytest.raises(SpecError, match=name):
            check("lenet-c", "tpu-mix-16", **{"split": "optimal", **kwargs})
