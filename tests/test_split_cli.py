"""``explore split``: uneven splits on an array of kinds, reported against equal-split plans."""

import dataclasses
import json
import sys
from fractions import Fraction as F

from explorer.app.split import Split, split_run
from explorer.app.split_start import search_start
from explorer.core.uneven import with_group_alphas
from explorer.core.evaluate import evaluate_split
from explorer.core.partition import PartitionType, Space
from explorer.core.plan import Plan
from explorer.frontends import load_array, load_model

from .conftest import run_cli


def test_split_rules_on_the_tpu_mix():
    net, arr = load_model("alexnet"), load_array("tpu-mix-16")
    eq = split_run(net, arr, Space.ACCPAR, Split.EQUAL)
    prop = split_run(net, arr, Space.ACCPAR, Split.PROPORTIONAL)
    search = split_run(net, arr, Space.ACCPAR, Split.SEARCH)
    assert all(a == F(1, 2) for groups in eq.plan.alphas for row in groups for a in row)
    assert [groups[0][0] for groups in prop.plan.alphas] == [F(15, 56), F(1, 2), F(1, 2), F(1, 2)]
    # the step time reported is the evaluator's, and search never loses to its starting points (the
    # equal and the proportional split, 15/56 being declared); under --grid-only 15/56 moves to 1/4
    # (the search's block moves then beat proportional, off that grid: tests/test_split_grid.py)
    for r in (eq, prop, search):
        assert r.step_time_s == evaluate_split(net, arr, r.plan).step_time_s
        assert r.step_time_s == max(r.group_times_s) and r.idle_s == abs(r.group_times_s[0] - r.group_times_s[1])
    on_grid_prop = evaluate_split(net, arr, with_group_alphas(eq.plan.plan, [[F(1, 4)], [F(1, 2)] * 2, [F(1, 2)] * 4,
                                                                             [F(1, 2)] * 8])).step_time_s
    assert search.step_time_s <= min(eq.step_time_s, prop.step_time_s, on_grid_prop) < eq.step_time_s
    only = split_run(net, arr, Space.ACCPAR, Split.SEARCH, grid_only=True)
    assert only.step_time_s <= min(eq.step_time_s, on_grid_prop)
    # the equal-split baselines are the same in every report, and data parallelism is one of them
    assert eq.compared == search.compared
    dp = evaluate_split(net, arr, Plan(((PartitionType.I,) * 8,) * 4,
                                              ((F(1, 2),) * 8,) * 4)).step_time_s
    assert dict(search.compared)["all-I"] == dp and search.speedup("all-I") > 1


def test_split_cli_table_and_json(capsys):
    code, out, err = run_cli(["split", "--model", "lenet-c", "--split", "proportional"], capsys)
    assert code == 0, err
    assert "level 0: 15/56 (every layer)" in out and "data parallelism" in out and "the faster idles" in out
    code, out, err = run_cli(["split", "--model", "lenet-c", "--format", "json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["split"] == "search" and data["status"] == "feasible" and set(data["baselines"]) == {"all-I", "all-II", "trick", "hypar"}


def test_split_refuses_a_shared_medium(capsys):
    code, out, err = run_cli(["split", "--model", "lenet-c", "--array", "hypar-paper"], capsys)
    assert code == 2 and "communication: shared: uneven splits are modelled on per-level links" in err and out == ""


def test_explore_on_an_array_of_kinds_is_the_equal_split_and_says_so(capsys):
    code, out, err = run_cli(["--model", "alexnet", "--array", "tpu-mix-16", "--objective", "time", "--format", "json"], capsys)
    assert code == 0, err
    r = json.loads(out)
    assert any("every split is equal (alpha 1/2)" in w for w in r["warnings"])
    from explorer.core.plan import Plan

    plan = Plan.even(Plan.from_lists(r["plan"]))
    ev = evaluate_split(load_model("alexnet"), load_array("tpu-mix-16"), plan)
    assert r["step_time_s"] == float(ev.step_time_s)  # the slowest (v2) accelerator's step time


def test_split_models_attention_and_embeddings(capsys):
    """bert-base (an embedding, 12 attention nodes of 12 heads): split unevenly (the embedding's
    hidden-width split and every other layer at 15/56 at the top), never slower than the equal-split
    plans it is compared with, each kind's memory checked; a bad array is still a one-line error."""
    code, out, err = run_cli(["split", "--model", "bert-base", "--split", "proportional", "--format", "json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["alphas"][0][0][0] == "15/56" and data["plan"][0][0] == "III"  # tok: its hidden width, unevenly
    assert all(data["step_time_s"] < c["step_time_s"] for c in data["baselines"].values()) and set(data["memory"]) == {"v2", "v3"}
    code, out, err = run_cli(["split", "--model", "bert-base", "--array", "hypar-paper"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "communication: shared: uneven splits are modelled on per-level links" in err


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
    start = search_start(net, arr, eq.plan.plan, search.alpha_space)  # 28/69 and 15/56 are declared
    assert start == prop.plan and search.alpha_space.contains(prop.plan)
    assert search.step_time_s <= min(eq.step_time_s, prop.step_time_s)
    only = dataclasses.replace(search.alpha_space, proportional=False)
    start = search_start(net, arr, eq.plan.plan, only)  # --grid-only: 28/69 -> 3/8, 15/56 -> 1/4
    assert [r[0] for r in start.alphas[0]] == [F(3, 8)] and [r[0] for r in start.alphas[1]] == [F(1, 4), F(1, 2)]
    assert search.alpha_space.contains(search.plan)
    assert search.alpha_space.free_classes() == [(0, 0), (1, 0)]
    from explorer.app.split import render_split

    text = render_split(prop)
    assert "level 1 [v2x4|v3x4]: 15/56 (every layer)" in text and "level 1 [v3x4|v3x4]: 1/2 (every layer)" in text
    assert "level 2: 1/2 (every layer)" in text


# ---- memory per kind under uneven splits ------------------------------------------------------


def _one_fc_on_two_kinds(mem_a=16, mem_b=16):
    from explorer.core.array import AcceleratorKind, ArraySpec
    from explorer.core.network import Layer, LayerKind, Network

    net = Network.chain("one-fc", 8, [Layer("f", LayerKind.FC, 4, 2)])  # A(F) = 32, A(W) = 8
    a, b = AcceleratorKind("a", F(1), F(mem_a)), AcceleratorKind("b", F(3), F(mem_b))
    arr = ArraySpec("ab", 1, 2, (F(10),), F(1), F(min(mem_a, mem_b)), leaves=(a, b))
    return net, arr


def test_memory_per_accelerator_under_an_uneven_split_by_hand():
    """Footprint = (2 + weight copies) * A(W) * share(D_i) * share(D_o) + A(F) * share(B) * share(D_i), times dtype.
    One fc 4 -> 2, batch 8: A(W) = 8, A(F) = 32; dtype 2 bytes; alpha 1/4."""
    from explorer.core.evaluate import evaluate_split

    net, arr = _one_fc_on_two_kinds()
    I_, II_ = PartitionType.I, PartitionType.II
    # I splits B: leaf 0 holds 1/4 of F, all of W: 2*8 + 32/4 = 24 elements; leaf 1: 16 + 24 = 40
    ev = evaluate_split(net, arr, Plan(((I_,),), (((F(1, 4),),),)))
    assert ev.leaf_memory_bytes == (F(48), F(80))
    # II splits D_i: W and F both by 1/4 : 3/4: 2*8/4 + 32/4 = 12; 2*8*3/4 + 32*3/4 = 36
    ev = evaluate_split(net, arr, Plan(((II_,),), (((F(1, 4),),),)))
    assert ev.leaf_memory_bytes == (F(24), F(72))
    # one weight copy (momentum) under I: 3*8 + 8 = 32; 3*8 + 24 = 48
    ev = evaluate_split(net, arr, Plan(((I_,),), (((F(1, 4),),),)), weight_copies=1)
    assert ev.leaf_memory_bytes == (F(64), F(96))


def test_memory_of_the_equal_split_is_explores():
    """With every alpha 1/2 the per-accelerator footprint is ``evaluate``'s memory_bytes (a chain and a graph)."""
    from explorer.core.evaluate import evaluate
    from explorer.core.objective import Objective
    from explorer.core.problem import Problem
    from explorer.solvers import get_solver
    from explorer.core.solution import SolveOptions

    arr = load_array("tpu-mix-16")
    for name in ("alexnet", "resnet18"):
        net = load_model(name)
        p = Problem(net, arr, Space.ACCPAR, Objective.TIME)
        plan = get_solver("dp")(p, SolveOptions()).plan
        for wc in (0, 2):
            want = evaluate(net, arr, Space.ACCPAR, plan, weight_copies=wc).memory_bytes
            got = evaluate_split(net, arr, Plan.even(plan), weight_copies=wc).leaf_memory_bytes
            assert set(got) == {want}, (name, wc)


def test_split_reports_memory_per_kind_and_exits_1_over_it(capsys):
    """vgg-e at batch 16384 split equally: the v2 chips need 20.08 GiB of their 16 GiB (as ``explore`` says)."""
    args = ["split", "--model", "vgg-e", "--batch", "16384", "--space", "hypar"]
    code, out, err = run_cli(args + ["--split", "equal"], capsys)
    assert code == 1 and "explore: the equal plan does not fit in memory: v2 needs 20.08 GiB per accelerator, has 16 GiB" in err
    assert "v2       x8        20.08 GiB of 16 GiB  OVER by 4.083 GiB" in out and "PLAN BREAKS: memory of v2 <= 16 GiB" in out
    code, out, err = run_cli(args + ["--split", "equal", "--format", "json"], capsys)
    d = json.loads(out)
    assert code == 1 and d["ok"] is False and d["memory"]["v2"]["ok"] is False and d["memory"]["v3"]["ok"] is True
    assert d["memory"]["v2"]["memory_bytes"] == 21564152576 and [v["constraint"] for v in d["violations"]] == [
        "memory of v2 <= 16 GiB per accelerator"]
    # the proportional split gives the v2 chips 15/56 of the batch: it fits; --memory 8 (every kind) does not
    code, out, err = run_cli(args + ["--split", "proportional", "--format", "json"], capsys)
    d = json.loads(out)
    assert code == 0 and d["ok"] is True and F(d["memory"]["v2"]["memory_bytes"]) < 16 * 2**30 < F(d["memory"]["v3"]["memory_bytes"])
    code, out, err = run_cli(args + ["--split", "proportional", "--memory", "8"], capsys)
    assert code == 1 and "v2 needs" in err and "v3 needs" in err and "has 8 GiB" in err


# ---- the search: fast on large grids, one-point spaces, progress and Ctrl-C ---------------------


def test_the_fast_evaluator_matches_the_definitions_on_random_alphas():
    """evaluate_split scores groups alike once: its amounts and FLOPs equal group_amounts and
    leaf_flops (the per-group definitions) on random alphas of a 4 v2 + 12 v3 mix."""
    import random

    from explorer.core.array import AcceleratorKind, ArraySpec
    from explorer.core.uneven import group_amounts, leaf_flops

    v2, v3 = AcceleratorKind("v2", F(45), F(16)), AcceleratorKind("v3", F(123), F(32))
    arr = ArraySpec("mix-4-12", 4, 2, (F(70),) * 4, F(45), F(16), leaves=(v2,) * 4 + (v3,) * 12)
    net = load_model("lenet-c")
    rng = random.Random(7)
    types = tuple(tuple(rng.choice((PartitionType.I, PartitionType.II, PartitionType.III)) for _ in net.layers) for _ in range(4))
    for alphas in (  # all 1/2 (every group alike), one alpha per level, random per group
        tuple(((F(1, 2),) * 4,) * 2**h for h in range(4)),
        tuple(((F(h + 1, 7),) * 4,) * 2**h for h in range(4)),
        tuple(tuple(tuple(F(rng.randint(1, 15), 16) for _ in range(4)) for _ in range(2**h)) for h in range(4)),
    ):
        plan = Plan(types, alphas)
        ev = evaluate_split(net, arr, plan)
        for h in range(4):
            assert ev.group_amounts[h] == tuple(group_amounts(net, plan, h, g) for g in range(2**h))
        peaks = arr.leaf_peaks_TFLOPS()
        assert ev.leaf_compute_s == tuple(leaf_flops(net, plan, i) / (peaks[i] * 10**12) for i in range(16))


def test_search_on_a_fine_grid_evaluates_few_plans():
    """grid 1/1024: coarse to fine (about 50 evaluations per class or block), not 1023 per class per round."""
    from explorer.core.uneven import alpha_grid, alpha_space
    from explorer.solvers.uneven import _best_on_grid, grid_probes, search_level_alphas
    from explorer.solvers.uneven_blocks import block_probes

    assert grid_probes(16) == 16 and grid_probes(1023) < 60
    net, arr = load_model("alexnet"), load_array("tpu-mix-16")
    eq = split_run(net, arr, Space.ACCPAR, Split.EQUAL)
    sol = search_level_alphas(net, arr, eq.plan, alpha_space(arr, alpha_grid(1024)))
    # one class: scanned once, not again in round 2; then at most 3 rounds of block moves, each
    # block's values coarse to fine too
    assert sol.explored <= 1 + grid_probes(1023) + 3 * block_probes(net, alpha_space(arr, alpha_grid(1024)), eq.plan)
    assert sol.step_time_s < eq.step_time_s and sol.step_time_s == evaluate_split(net, arr, sol.plan).step_time_s
    # the pattern search finds the minimum of a unimodal function on a large grid
    grid = alpha_grid(1000)
    i, best = _best_on_grid(grid, lambda a: abs(a - F(377, 1000)), F(10))
    assert grid[i] == F(377, 1000) and best == 0


def test_search_on_an_array_of_one_kind_is_the_equal_split_and_says_so(capsys):
    code, out, err = run_cli(["split", "--model", "lenet-c", "--array", "hypar-16", "--format", "json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert d["status"] == "level-optimal" and "the declared space is the equal split alone" in d["note"]
    assert all(a == "1/2" for groups in d["alphas"] for row in groups for a in row)


def test_no_grid_is_shown_where_none_is_used(capsys):
    for split, shown in (("equal", False), ("proportional", False), ("search", True)):
        code, out, err = run_cli(["split", "--model", "lenet-c", "--split", split], capsys)
        assert code == 0 and ("alpha grid 1/16" in out) == shown, split
        code, out, err = run_cli(["split", "--model", "lenet-c", "--split", split, "--format", "json"], capsys)
        assert (json.loads(out)["alpha_grid"] == 16) == shown


def test_extreme_peaks_print_readable_alphas_and_ratios(tmp_path, capsys):
    (tmp_path / "a.yaml").write_text(
        "version: 1\nname: extreme\nlevels: 1\ndtype_bytes: 2\nlink_bandwidth_GBps: [70]\naccelerators: [slow, fast]\n"
        "kinds:\n  slow: {peak_TFLOPS: 1.0e-30, memory_GiB: 16}\n  fast: {peak_TFLOPS: 1.0e+100, memory_GiB: 16}\n")
    args = ["split", "--model", "lenet-c", "--array", str(tmp_path / "a.yaml"), "--split", "proportional"]
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    assert "level 0: ~1e-130 (every layer)" in out and "x2.17e+32" in out
    assert max(len(line) for line in out.splitlines()) < 120
    code, out, err = run_cli(args + ["--format", "json"], capsys)
    assert F(json.loads(out)["alphas"][0][0][0]) == F(1, 10**130 + 1)  # exact in JSON


def test_split_progress_and_ctrl_c_name_the_step(capsys, monkeypatch):
    import explorer.solvers.search_scorer as hs  # (the search scores its plans there)
    from explorer.app.cli_ticker import Ticker

    from .test_ticker import _slow_first_evaluation

    monkeypatch.setattr(Ticker, "DELAY_S", 0)
    monkeypatch.setattr(Ticker, "EVERY_S", 0.01)
    with monkeypatch.context() as m:  # the bar is drawn on a terminal only
        m.setattr(sys.stderr, "isatty", lambda: True, raising=False)
        _slow_first_evaluation(m)  # (the bar up before the search's steps)
        code, out, err = run_cli(["split", "--model", "lenet-c", "--alpha-grid", "128"], capsys)
    assert code == 0 and "split: search: level 0, class 1 of 1, round 1" in err, err
    real, calls = hs.evaluate_split, []

    def stop_on_the_fifth(*a, **k):
        calls.append(1)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(hs, "evaluate_split", stop_on_the_fifth)
    code, out, err = run_cli(["split", "--model", "lenet-c"], capsys)
    assert code == 130 and out == ""
    assert err.rstrip().splitlines()[-1] == ("explore: interrupted (Ctrl-C) during split: search: level 0, class 1 of 1, "
                                             "round 1; no report written")


def test_split_on_a_graph_too_wide_for_the_dp_elimination_gets_a_plan(tmp_path, capsys):
    """The DP hands the levels its elimination cannot hold to CP-SAT (issue 23): split gets its types."""
    from .test_bad_inputs import KINDS, densenet_yaml

    (tmp_path / "d.yaml").write_text(densenet_yaml())
    (tmp_path / "a.yaml").write_text(KINDS)
    code, out, err = run_cli(["split", "--model", str(tmp_path / "d.yaml"), "--array", str(tmp_path / "a.yaml")], capsys)
    assert code == 0, err
    assert "step time" in out


def test_split_search_on_mobilenet_v2(capsys):
    """A zoo network with depthwise convs splits unevenly (grouped convs are modelled)."""
    code, out, err = run_cli(["split", "--model", "mobilenet-v2", "--split", "search"], capsys)
    assert code == 0 and "mobilenet-v2 on tpu-mix-16: split search" in out and "step time" in out


def test_split_optimal_stops_when_the_joint_solver_misreports_its_plan(monkeypatch):
    """--split optimal re-scores the joint solver's plan with evaluate_split: a solver whose own
    step time differs from the definition's is a bug that stops the run, as in ``explore``."""
    import dataclasses

    import pytest

    from explorer.app.run import EvaluatorMismatch
    from explorer.solvers import uneven_constrained

    real = uneven_constrained.joint_uneven  # the route split_run takes to the joint solver

    def lying(*args, **kwargs):
        sol = real(*args, **kwargs)
        return dataclasses.replace(sol, step_time_s=sol.step_time_s * F(99, 100))

    net, arr = load_model("lenet-c"), load_array("tpu-mix-16")
    honest = split_run(net, arr, Space.HYPAR, Split.OPTIMAL, grid=4)
    assert honest.step_time_s == evaluate_split(net, arr, honest.plan).step_time_s
    monkeypatch.setattr(uneven_constrained, "joint_uneven", lying)
    with pytest.raises(EvaluatorMismatch, match="joint: step time .* does not re-score"):
        split_run(net, arr, Space.HYPAR, Split.OPTIMAL, grid=4)


def test_split_draws_no_progress_bar_when_stderr_is_not_a_terminal(monkeypatch):
    """Through click's CliRunner (stderr a buffer, not a tty), even with the bar's delay at 0:
    stderr holds no bar text (no step, no 'eval' counter, no carriage return), only what a
    failure would say: nothing here."""
    from click.testing import CliRunner

    from explorer.app.cli import cli
    from explorer.app.cli_ticker import Ticker

    monkeypatch.setattr(Ticker, "DELAY_S", 0)
    monkeypatch.setattr(Ticker, "EVERY_S", 0.01)
    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2: stderr is always kept apart
        runner = CliRunner()
    result = runner.invoke(cli, ["split", "--model", "lenet-c", "--alpha-grid", "128"])
    assert result.exit_code == 0, result.output
    assert "lenet-c on tpu-mix-16: split search" in result.stdout
    assert result.stderr == "", result.stderr


def test_the_split_report_writes_times_as_the_even_report_does(capsys):
    # new-user trial, item 3: `--split search` printed "step time 2858 ms", the even report "2.858 s"
    from explorer.app.render import fmt_seconds

    code, even, err = run_cli(["--objective", "time"], capsys)
    assert code == 0 and "    2.858 s   1.011x" in even
    code, out, err = run_cli(["--split", "search"], capsys)
    assert code == 0, err
    assert "step time 2.858 s (the slowest accelerator)" in out
    assert f"top-level groups: 2.858 s and 2.858 s; the faster idles {fmt_seconds(0)}" in out
    assert "  data parallelism                      2.889 s  x1.011" in out
    assert " ms" not in out
