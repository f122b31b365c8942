"""``explore split``: uneven splits on an array of kinds, reported against equal-split plans."""

import json
from fractions import Fraction as F

from explorer.app.split import Split, split_run
from explorer.core.hetero import HeteroPlan, evaluate_hetero
from explorer.core.partition import PartitionType, Space
from explorer.frontends import load_array, load_model

from .conftest import run_cli


def test_split_rules_on_the_tpu_mix():
    net, arr = load_model("alexnet"), load_array("tpu-mix-16")
    eq = split_run(net, arr, Space.ACCPAR, Split.EQUAL)
    prop = split_run(net, arr, Space.ACCPAR, Split.PROPORTIONAL)
    search = split_run(net, arr, Space.ACCPAR, Split.SEARCH)
    assert all(a == F(1, 2) for groups in eq.plan.alphas for row in groups for a in row)
    assert [groups[0][0] for groups in prop.plan.alphas] == [F(15, 56), F(1, 2), F(1, 2), F(1, 2)]
    # the step time reported is the evaluator's, and search never loses to its starting points
    for r in (eq, prop, search):
        assert r.step_time_s == evaluate_hetero(net, arr, r.plan).step_time_s
        assert r.step_time_s == max(r.group_times_s) and r.idle_s == abs(r.group_times_s[0] - r.group_times_s[1])
    assert search.step_time_s <= min(eq.step_time_s, prop.step_time_s) < eq.step_time_s
    # the equal-split baselines are the same in every report, and data parallelism is one of them
    assert eq.compared == search.compared
    dp = evaluate_hetero(net, arr, HeteroPlan(((PartitionType.I,) * 8,) * 4,
                                              ((F(1, 2),) * 8,) * 4)).step_time_s
    assert dict(search.compared)["all-I"] == dp and search.speedup("all-I") > 1


def test_split_cli_table_and_json(capsys):
    code, out, err = run_cli(["split", "--model", "lenet-c", "--split", "proportional"], capsys)
    assert code == 0, err
    assert "level 0: 15/56 (every layer)" in out and "data parallelism" in out and "the faster idles" in out
    code, out, err = run_cli(["split", "--model", "lenet-c", "--format", "json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["split"] == "search" and data["status"] == "feasible" and set(data["compared"]) == {"all-I", "trick", "hypar"}


def test_split_refuses_a_shared_medium(capsys):
    code, out, err = run_cli(["split", "--model", "lenet-c", "--array", "hypar-paper"], capsys)
    assert code == 2 and "per-level links of an H-tree only" in err and out == ""


def test_explore_on_an_array_of_kinds_is_the_equal_split_and_says_so(capsys):
    code, out, err = run_cli(["--model", "alexnet", "--array", "tpu-mix-16", "--objective", "time", "--format", "json"], capsys)
    assert code == 0, err
    r = json.loads(out)
    assert any("every split is equal (alpha 1/2)" in w for w in r["warnings"])
    from explorer.core.plan import Plan

    plan = HeteroPlan.equal(Plan.from_lists(r["plan"]))
    ev = evaluate_hetero(load_model("alexnet"), load_array("tpu-mix-16"), plan)
    assert r["step_time_s"] == float(ev.step_time_s)  # the slowest (v2) accelerator's step time


def test_split_refuses_nodes_it_does_not_model(capsys):
    code, out, err = run_cli(["split", "--model", "mobilenet-v2"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "grouped conv" in err and "uneven splits are modelled for conv, fc, add and concat nodes only" in err


def test_split_on_a_4_12_mix_has_alphas_per_group(capsys):
    """4 v2 + 12 v3: the groups of level 1 split differently (v2x4|v3x4 and v3x4|v3x4)."""
    from explorer.core.array import AcceleratorKind, ArraySpec

    v2, v3 = AcceleratorKind("v2", F(45), F(16)), AcceleratorKind("v3", F(123), F(32))
    arr = ArraySpec("mix-4-12", 4, 2, (F(70),) * 4, F(45), F(16), leaves=(v2,) * 4 + (v3,) * 12)
    net = load_model("lenet-c")
    prop = split_run(net, arr, Space.ACCPAR, Split.PROPORTIONAL)
    assert prop.plan.alphas[0][0][0] == F(28, 69) and [r[0] for r in prop.plan.alphas[1]] == [F(15, 56), F(1, 2)]
    search = split_run(net, arr, Space.ACCPAR, Split.SEARCH)
    eq = split_run(net, arr, Space.ACCPAR, Split.EQUAL)
    assert search.step_time_s <= min(eq.step_time_s, prop.step_time_s)
    assert search.alpha_space.free_classes() == [(0, 0), (1, 0)]
    from explorer.app.split import render_split

    text = render_split(prop)
    assert "level 1 [v2x4|v3x4]: 15/56 (every layer)" in text and "level 1 [v3x4|v3x4]: 1/2 (every layer)" in text
    assert "level 2: 1/2 (every layer)" in text
