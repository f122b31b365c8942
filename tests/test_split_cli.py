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
    assert all(a == F(1, 2) for row in eq.plan.alphas for a in row)
    assert [row[0] for row in prop.plan.alphas] == [F(15, 56), F(1, 2), F(1, 2), F(1, 2)]
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
