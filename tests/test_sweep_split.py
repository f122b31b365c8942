"""Sweeps of uneven splits (``split`` points: ``explore split``) over mixes of accelerator kinds
(``mix``, ``accelerators_<kind>``): rows equal single runs, the mix keys' checks, the cache."""

from __future__ import annotations

import csv
import json
import textwrap
from fractions import Fraction
from pathlib import Path

import pytest

from explorer.api import sweep
from explorer.app.sweep.cache import point_key
from explorer.app.sweep.mix import parse_mix
from explorer.app.sweep.point import level_alpha_cells, point_array, solve_point
from explorer.app.sweep.spec import DEFAULTS, SPLIT_DEFAULTS, defaults_for, load_sweep, resolve_paths
from explorer.app.sweep.table import FIGURES
from explorer.app.sweep.table import number as N
from explorer.frontends import load_array

from .conftest import run_cli

SPLITS = """\
version: 1
name: splits
grid:
  accelerators_v3: [0, 4, 8, 16]
  split: [equal, proportional, search]
fixed:
  model: lenet-c
  array: tpu-mix-16
  space: accpar
  alpha_grid: 8
points:
  - {mix: "8 v3 + 8 v2", split: proportional}
  - {mix: "2 v2 + 2 v3", levels: 2, split: search, batch: 32}
  - {mix: "8 v2 + 8 v3", split: search, space: hypar, alpha_grid: 32}
  - {mix: "2 v2 + 2 v3", levels: 2, split: search, batch: 32, grid_only: true}
"""
SPLIT_COLUMNS = ("group0_time_s", "group1_time_s", "idle_s", "speedup_over_all_I_equal", "speedup_over_trick_equal",
                 "speedup_over_hypar_equal")


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    root = tmp_path_factory.mktemp("splits")
    spec = write(root / "splits.yaml", SPLITS)
    rows = list(sweep(spec, root / "out", workers=2))
    return root, rows


def mix_array_file(root: Path, point: dict) -> Path:
    """The point's array written out (kinds and leaves), for ``explore split --array`` to read."""
    arr = point_array(resolve_paths({**DEFAULTS, **point}, str(root)))
    kinds = "\n".join(f"  {k.name}: {{peak_TFLOPS: {k.peak_TFLOPS}, memory_GiB: {k.memory_GiB}}}" for k in arr.kinds)
    bw = [float(b) for b in arr.bandwidth_GBps]
    path = root / f"arr-{point['index']}.yaml"
    path.write_text(f"version: 1\nname: {arr.name}\nlevels: {arr.levels}\ndtype_bytes: {arr.dtype_bytes}\n"
                    f"kinds:\n{kinds}\naccelerators: [{', '.join(k.name for k in arr.leaves)}]\n"
                    f"link_bandwidth_GBps: {bw}\n")
    return path


def test_split_rows_equal_single_explore_split_runs(splits, capsys):
    root, rows = splits
    lines = [json.loads(x) for x in (root / "out" / "plans.jsonl").read_text().splitlines()]
    with open(root / "out" / "results.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert len(rows) == len(lines) == len(table) == 16
    ran = 0
    for row, line, cells in zip(rows, lines, table):
        p = {**line["point"], "index": line["index"]}
        if row["status"] == "invalid":
            continue
        args = ["split", "--model", p["model"], "--array", str(mix_array_file(root, p)), "--space", p.get("space", "accpar"),
                "--split", p["split"], "--alpha-grid", str(p["alpha_grid"]), "--format", "json"]
        if "batch" in p:
            args += ["--batch", str(p["batch"])]
        if p.get("grid_only"):
            args += ["--grid-only"]
        code, out, err = run_cli(args, capsys)
        assert code == 0, err
        single = json.loads(out)
        drop = {"wall_s", "array_source"}  # the sweep mixes the array in memory: its source is the base file
        assert {k: v for k, v in line["result"].items() if k not in drop} == {k: v for k, v in single.items() if k not in drop}, p
        assert row["status"] == cells["status"] == single["status"]
        assert row["step_time_s"] == single["step_time_s"]
        assert [row["group0_time_s"], row["group1_time_s"]] == single["group_times_s"]
        assert row["idle_s"] == single["idle_s"] == pytest.approx(abs(row["group0_time_s"] - row["group1_time_s"]))
        for col in ("step_time_s", *SPLIT_COLUMNS[:3]):  # the evaluator's times: floats, as explore's; the CSV cell the same
            assert float(cells[col]) == row[col] and isinstance(row[col], float)
        assert row["objective_value"] == single["objective_value"]  # exact
        for col, name in zip(SPLIT_COLUMNS[3:], ("all-I", "trick", "hypar")):
            assert row[col] == single["baselines"][name]["split_speedup"]
            assert cells[col] == repr(single["baselines"][name]["split_speedup"])
        for h, cell in enumerate(level_alpha_cells(single["alphas"])):  # (the cells' form: test_alpha_cells_...)
            assert row[f"alpha_level{h}"] == cells[f"alpha_level{h}"] == cell
        ran += 1
    assert ran == 16  # every point: an alpha per group, so any mix


def test_split_columns_and_what_the_mix_changes(splits):
    root, rows = splits
    header = (root / "out" / "results.csv").read_text().splitlines()[0].split(",")
    i = header.index("gap")
    assert header[header.index("status"):i + 1] == [  # split points alone: explore's figures a split reports
        "status", "accelerators", "traffic_elements", "traffic_bytes", "comm_time_s", "compute_s", "step_time_s",
        "memory_bytes_per_accelerator", "speedup_over_all_I", "energy_J", "energy_efficiency_over_all_I",
        "objective_value", "bound", "gap"]
    assert header[i + 1 : i + 13] == [*SPLIT_COLUMNS, "alpha_level0", "alpha_level1", "alpha_level2", "alpha_level3",
                                      "answered_by", "note"]
    by = {(r["accelerators_v3"], r["split"]): r for r in rows[:12]}
    # 8 + 8: the top level splits v2 from v3, proportionally 8*45 : 8*123 = 15/56
    assert by[8, "proportional"]["alpha_level0"] == "15/56"
    assert [by[8, "proportional"][f"alpha_level{h}"] for h in (1, 2, 3)] == ["1/2", "1/2", "1/2"]
    assert by[8, "equal"]["alpha_level0"] == "1/2" and N(by[8, "equal"]["idle_s"]) > 0
    # LeNet's step is mostly exchanges: the proportional split (larger v3 shares, larger exchanges
    # below level 0) is slower than the equal one here; the search keeps the better of them
    assert N(by[8, "search"]["step_time_s"]) <= min(N(by[8, "proportional"]["step_time_s"]), N(by[8, "equal"]["step_time_s"]))
    # one kind: nothing to balance, the groups finish together; all v3 is faster than all v2
    for k in (0, 16):
        assert by[k, "search"]["idle_s"] == 0 and by[k, "proportional"]["alpha_level0"] == "1/2"
    assert N(by[16, "equal"]["step_time_s"]) < N(by[0, "equal"]["step_time_s"])
    # written the other way round, the v3 chips first: subgroup 0 gets the larger share
    assert rows[12]["mix"] == "8 v3 + 8 v2" and rows[12]["alpha_level0"] == "41/56"
    assert rows[12]["step_time_s"] == by[8, "proportional"]["step_time_s"]
    # 2 levels: the search starts from proportional's 15/56 (declared besides the grid of 1/8), its
    # block moves then give some layers other values ('15/56;3/8;1/2'); with grid_only it stays
    # on the grid: 15/56 moved to its nearest 2/8
    assert rows[13]["alpha_level0"].split(";")[0] == "15/56" and "alpha_level2" not in rows[13]
    assert rows[13]["grid_only"] is None and rows[15]["grid_only"] is True
    assert all((Fraction(a) * 8).denominator == 1 for a in rows[15]["alpha_level0"].split(";"))
    assert N(rows[13]["step_time_s"]) <= N(rows[15]["step_time_s"])
    # 4 v3 chips: the groups of level 1 differ (4 v2 | 4 v2 and 4 v2 | 4 v3)
    assert by[4, "equal"]["status"] == "level-optimal"
    # an alpha per group: 12 v2 + 4 v3 splits 8*45 : (4*45 + 4*123) = 15/43, then 1/2 and 15/56
    r = by[4, "proportional"]
    assert r["status"] == "feasible" and r["error"] is None
    assert [r[f"alpha_level{h}"] for h in range(4)] == ["15/43", "g0: 1/2 | g1: 15/56", "1/2", "1/2"]
    assert N(by[4, "search"]["step_time_s"]) <= min(N(r["step_time_s"]), N(by[4, "equal"]["step_time_s"]))


def test_mix_forms_fill_the_leaves_in_tree_order(tmp_path):
    arr = load_array("tpu-mix-16")
    base = {"array": "tpu-mix-16"}
    names = lambda a: [k.name for k in a.leaves]  # noqa: E731
    assert names(point_array({**base, "accelerators_v3": 5})) == ["v2"] * 11 + ["v3"] * 5
    assert names(point_array({**base, "accelerators_v2": 5})) == ["v2"] * 5 + ["v3"] * 11
    assert names(point_array({**base, "mix": "5 v3 + 11 v2"})) == ["v3"] * 5 + ["v2"] * 11
    assert names(point_array({**base, "mix": "16 v3"})) == ["v3"] * 16
    one = point_array({**base, "accelerators_v3": 0})
    assert not one.is_heterogeneous and one.peak_TFLOPS == Fraction(45) and one.memory_GiB == 16
    assert point_array({**base, "accelerators_v3": 16}).peak_TFLOPS == Fraction(123)
    small = point_array({**base, "levels": 2, "mix": "1 v2 + 3 v3"})
    assert small.levels == 2 and names(small) == ["v2", "v3", "v3", "v3"] and small.bandwidth_GBps == arr.bandwidth_GBps[:2]
    assert point_array(base) == arr  # no mix: the array as written
    assert parse_mix("8 v2 + 8 x v3") == (("v2", 8), ("v3", 8)) == parse_mix("8v2+8v3")


@pytest.mark.parametrize("body,message", [
    ("grid: {mix: ['8 v2 + 8 v3', '8 v2 + 8 v4']}\nfixed: {array: tpu-mix-16}",
     "grid.mix[1]: unknown kind 'v4' (array 'tpu-mix-16' has kinds v2, v3)"),
    ("grid: {mix: ['8 v2 + 8 v3', '16 v2 + 0 v3', '4 v2 + 12 v3', '8 v2 + 7 v3']}\nfixed: {array: tpu-mix-16}",
     "grid.mix[3]: 8 v2 + 7 v3 is 15 accelerators, the array has 16 (2^4)"),
    ("grid: {mix: ['eight v2']}\nfixed: {array: tpu-mix-16}", "grid.mix[0]: 'eight v2' is not COUNT KIND"),
    ("grid: {mix: ['8 v2 + 8 v2']}\nfixed: {array: tpu-mix-16}", "grid.mix[0]: kind 'v2' written twice"),
    ("grid: {levels: [2]}\nfixed: {mix: '2 v2 + 2 v3'}", "fixed.mix: array 'hypar-16' has no kinds"),
    ("grid: {accelerators_v3: [0, 17]}\nfixed: {array: tpu-mix-16}",
     "grid.accelerators_v3[1]: 17 accelerators of v3 exceed the array's 16"),
    ("grid: {accelerators_v3: [0, -1]}\nfixed: {array: tpu-mix-16}",
     "grid.accelerators_v3[1]: must be a non-negative integer"),
    ("grid: {accelerators_v4: [1]}\nfixed: {array: tpu-mix-16}", "grid.accelerators_v4[0]: unknown kind 'v4'"),
    ("grid: {accelerators_v3: [1]}\nfixed: {array: tpu-mix-16, mix: '8 v2 + 8 v3'}", "fixed.mix: give the mix once"),
    ("grid: {peak_TFLOPS: [50]}\nfixed: {array: tpu-mix-16}", "grid.peak_TFLOPS[0]: array 'tpu-mix-16' gives its peaks per kind"),
    ("grid: {split: [search, best]}", "grid.split[1]: must be one of equal, proportional, search"),
    ("grid: {split: [search]}\nfixed: {alpha_grid: 1}", "fixed.alpha_grid: must be an integer from 2 to 1024"),
    ("grid: {levels: [2]}\nfixed: {alpha_grid: 8}", "fixed.alpha_grid: only with split"),
    ("grid: {levels: [2]}\nfixed: {grid_only: true}", "fixed.grid_only: only with split"),
    ("grid: {split: [search]}\nfixed: {grid_only: 1}", "fixed.grid_only: must be true or false, got 1"),
    ("grid: {split: [search]}\nfixed: {seed: 1}", "fixed.seed: not with split"),
    ("points: [{split: search, solver: exact}]", "points[0].solver: not with split"),
    ("grid: {splitt: [search]}", "grid.splitt: unknown key (allowed: model, "),
])
def test_bad_split_and_mix_values_are_one_line_errors(tmp_path, capsys, body, message):
    f = tmp_path / "s.yaml"
    f.write_text("version: 1\n" + body + "\n")
    code, out, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "out")], capsys)
    assert code == 2, err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out").exists()


def test_a_split_point_with_objective_time_is_accepted(tmp_path):
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {split: [equal]}\nfixed: {objective: time, array: tpu-mix-16}\n")
    assert load_sweep(f).points[0].as_dict() == {"split": "equal", "objective": "time", "array": "tpu-mix-16"}


def test_an_edited_mix_or_split_is_a_cache_miss(tmp_path):
    def key(**kw):
        return point_key(resolve_paths({**DEFAULTS, "model": "lenet-c", "array": "tpu-mix-16", **kw}, str(tmp_path)))

    keys = {key(accelerators_v3=8), key(accelerators_v3=7), key(mix="8 v2 + 8 v3"), key(mix="8 v3 + 8 v2"),
            key(accelerators_v3=8, split="search"), key(accelerators_v3=8, split="equal"),
            key(accelerators_v3=8, split="search", alpha_grid=32)}
    assert len(keys) == 7
    assert key(accelerators_v3=8) == key(accelerators_v3=8)
    spec = tmp_path / "s.yaml"
    text = "version: 1\ngrid: {accelerators_v3: [0, 8]}\nfixed: {model: lenet-c, array: tpu-mix-16, split: equal}\n"
    spec.write_text(text)
    first = list(sweep(spec, tmp_path / "out", workers=1))
    spec.write_text(text.replace("[0, 8]", "[0, 16]"))
    again = list(sweep(spec, tmp_path / "out", workers=1))
    assert [r["cached"] for r in first] == [False, False] and [r["cached"] for r in again] == [True, False]
    assert N(again[1]["step_time_s"]) < N(first[1]["step_time_s"])  # 16 v3 chips: faster than 8 + 8 at equal splits


def test_the_shipped_mix_sweep_parses_and_its_first_points_run():
    sw = load_sweep("accpar-mix")
    assert len(sw.points) == 5 * 17 * 3 + 5  # and the joint solver on 8 + 8
    assert {p.get("split") for p in sw.points[-5:]} == {"optimal"}
    assert sw.columns == ("model", "accelerators_v3", "split", "array", "space", "alpha_grid")
    picked = [sw.points[i] for i in (0, 1, 3, 24)]  # alexnet: 16 v2 (proportional, search), 15 + 1, 8 + 8 (proportional)
    assert [(p.get("accelerators_v3"), p.get("split")) for p in picked] == [
        (0, "proportional"), (0, "search"), (1, "proportional"), (8, "proportional")]
    outs = [solve_point(p.index, resolve_paths({**defaults_for(p.as_dict()), **p.as_dict()}, sw.base_dir)) for p in picked]
    # 16 v2 chips: one kind, no free class: the declared space is the equal split alone (explore split says level-optimal)
    assert [o.status for o in outs] == ["level-optimal", "level-optimal", "feasible", "feasible"], [o.error for o in outs]
    # 15 v2 + 1 v3: the top level splits 8 x 45 : (7 x 45 + 123) = 60/133; the v3 chip's pair 15/56
    assert outs[2].summary["alphas"][0] == "60/133" and outs[2].summary["alphas"][3] == "g0-6: 1/2 | g7: 15/56"
    outs = outs[:2] + outs[3:]
    assert outs[0].summary["idle_s"] == outs[1].summary["idle_s"] == 0  # 16 v2 chips: one kind
    assert outs[2].summary["alphas"][0] == "15/56" and N(outs[2].summary["step_time_s"]) < N(outs[0].summary["step_time_s"])
    assert set(FIGURES) <= set(outs[0].summary)


def test_alpha_cells_per_level_per_layer_and_per_group():
    # explore split's alphas: [level][layer] today, [level][group][layer] when groups of a level may differ
    assert level_alpha_cells([["15/56", "15/56"], ["1/4", "1/2", "1/4"]]) == ["15/56", "1/4;1/2"]
    per_group = [[["15/56", "15/56"]],
                 [["1/2", "1/2"], ["15/56", "15/56"]],
                 [["1/2", "1/2"], ["1/2", "1/2"], ["1/2", "1/2"], ["1/4", "1/2"]],
                 [["1/2", "1/2"]] * 8]
    assert level_alpha_cells(per_group) == ["15/56", "g0: 1/2 | g1: 15/56", "g0-2: 1/2 | g3: 1/4;1/2", "1/2"]


def test_split_and_plain_points_in_one_sweep(tmp_path):
    spec = write(tmp_path / "s.yaml", """\
        version: 1
        points:
          - {model: lenet-c, levels: 2, objective: time, mix: "2 v2 + 2 v3", array: tpu-mix-16}
          - {model: lenet-c, levels: 2, split: proportional, mix: "2 v2 + 2 v3", array: tpu-mix-16}
        """)
    plain, split = list(sweep(spec, tmp_path / "out", workers=1))
    header = (tmp_path / "out" / "results.csv").read_text().splitlines()[0].split(",")
    assert {"traffic_bytes", "speedup_over_all_I", "idle_s", "alpha_level0", "alpha_level1"} <= set(header)
    assert plain["status"] == "level-optimal" and plain["traffic_bytes"] > 0 and plain["idle_s"] is None
    assert split["status"] == "feasible" and split["alpha_level0"] == "15/56"
    assert N(split["traffic_bytes"]) > 0 and split["comm_time_s"] > 0  # explore's figures, from the split's JSON too
    # explore splits equally: the v2 pair sets the pace; the proportional split is faster than it
    assert N(split["step_time_s"]) < N(plain["step_time_s"])


def test_a_point_explore_split_refuses_is_an_invalid_row():
    out = solve_point(7, {**SPLIT_DEFAULTS, "model": "bert-base", "array": "hypar-paper", "split": "search", "space": "accpar"})
    assert out.status == "invalid" and out.index == 7 and out.summary is None
    assert "communication: shared: uneven splits are modelled on per-level links" in out.error and "\n" not in out.error
    ok = solve_point(8, {**SPLIT_DEFAULTS, "model": "bert-base", "array": "tpu-mix-16", "split": "proportional", "space": "accpar"})
    assert ok.status == "feasible" and not ok.error  # attention and embeddings are modelled


def test_pareto_columns_of_a_split_sweep(tmp_path, capsys):
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {accelerators_v3: [0, 8, 16]}\n"
                                   "fixed: {model: lenet-c, array: tpu-mix-16, split: proportional}\n")
    code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o"), "--pareto", "traffic_ratio_to_all_I,step_time_s"], capsys)
    assert code == 2 and "--pareto: unknown column traffic_ratio_to_all_I" in err and err.count("\n") == 1, err
    rows = list(sweep(f, tmp_path / "out", workers=1, pareto=("step_time_s", "idle_s")))
    # all v3 is fastest with no idle time: it dominates the other two (one kind: the equal split, level-optimal)
    assert [r["pareto"] for r in rows] == ["no", "no", "level-optimal"]


def test_an_optimal_split_point_reports_its_bound_and_gap(tmp_path, capsys):
    f = write(tmp_path / "s.yaml", "version: 1\npoints:\n  - {model: lenet-c, array: tpu-mix-16, space: accpar, "
                                   "split: optimal, alpha_grid: 8, time_limit: 20}\n")
    (row,) = list(sweep(f, tmp_path / "out", workers=1))
    code, out, err = run_cli(["split", "--model", "lenet-c", "--split", "optimal", "--alpha-grid", "8", "--time-limit", "20",
                              "--format", "json"], capsys)
    single = json.loads(out)
    assert code == 0 and single["status"] == row["status"] == "optimal"
    assert row["bound"] == single["bound"] == row["objective_value"] == single["objective_value"]
    assert row["step_time_s"] == single["step_time_s"] == float(N(single["bound"])) and row["gap"] == single["gap"] == 0
    line = json.loads((tmp_path / "out" / "plans.jsonl").read_text())
    assert {k: v for k, v in line["result"].items() if k != "wall_s"} == {k: v for k, v in single.items() if k != "wall_s"}


def test_plot_plan_of_a_split_point_draws_its_types(splits, capsys):
    """`explore plot DIR --plan N` on a split point raised KeyError 'layers' (a traceback, exit 1),
    then refused it; a split point's result now names its layers as explore's does (schema 4), so
    its types are drawn as any plan's."""
    root, rows = splits
    code, out, err = run_cli(["plot", str(root / "out"), "--plan", "0", "--out", str(root / "plan.png")], capsys)
    assert code == 0 and "Traceback" not in err, err
    assert (root / "plan.png").stat().st_size > 0


def test_plot_plan_of_an_old_split_point_says_why_in_one_line(splits, capsys, tmp_path):
    """plans.jsonl written by schema 3 (a split point's plan without layer names): refused in one
    line naming the file, the point and why (it said "an explore split point", which now plot)."""
    import shutil

    root, _ = splits
    old = tmp_path / "old"
    shutil.copytree(root / "out", old)
    lines = [json.loads(line) for line in (old / "plans.jsonl").read_text().splitlines()]
    for d in lines:
        del d["result"]["layers"]
        d["result"]["schema_version"] = 3
    (old / "plans.jsonl").write_text("".join(json.dumps(d) + "\n" for d in lines))
    code, out, err = run_cli(["plot", str(old), "--plan", "0", "--out", str(tmp_path / "plan.png")], capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"explore: error: {old / 'plans.jsonl'}: point 0 ") and "schema_version 3" in err
    assert "names no layers" in err and not (tmp_path / "plan.png").exists()


def test_pareto_plot_with_tied_points(splits, capsys):
    """Points with the same figures and label on the front (every split rule on one kind gives the
    equal split) made `explore plot --pareto` compare two row dicts: TypeError, a traceback."""
    root, rows = splits
    target = root / "pareto.png"
    code, out, err = run_cli(["plot", str(root / "out"), "--pareto", "--x", "step_time_s", "--y", "idle_s",
                              "--out", str(target)], capsys)
    assert code == 0, err
    assert target.stat().st_size > 0


# trial2 (G): a split point takes explore split's memory_GiB, weight_copies, free and seq, within its bounds

def test_a_split_point_takes_memory_weight_copies_and_free_as_explore_split_does(tmp_path, capsys):
    f = write(tmp_path / "s.yaml", "version: 1\npoints:\n  - {model: lenet-c, array: tpu-mix-16, levels: 2, "
                                   "mix: '2 v2 + 2 v3', split: search, space: accpar, alpha_grid: 8, free: all, memory_GiB: 0.0001, "
                                   "weight_copies: 2}\n")
    (row,) = list(sweep(f, tmp_path / "out", workers=1))
    arr = mix_array_file(tmp_path, {"index": 0, "model": "lenet-c", "array": "tpu-mix-16", "levels": 2, "mix": "2 v2 + 2 v3"})
    code, out, err = run_cli(["split", "--model", "lenet-c", "--array", str(arr), "--split", "search", "--alpha-grid", "8",
                              "--free", "all", "--memory", "0.0001", "--weight-copies", "2", "--format", "json"], capsys)
    single = json.loads(out)
    assert code == 1 and not single["ok"] and single["constraints"]["weight_copies"] == 2 and single["free"] == "all"
    line = json.loads((tmp_path / "out" / "plans.jsonl").read_text())
    assert {k: v for k, v in line["result"].items() if k not in ("wall_s", "array", "array_source")} == \
           {k: v for k, v in single.items() if k not in ("wall_s", "array", "array_source")}
    # the row says the plan breaks memory, as explore split does (its violations)
    assert row["violations"] and "memory of v2 <= " in row["violations"], row
    (plain,) = list(sweep(write(tmp_path / "p.yaml", "version: 1\npoints:\n  - {model: lenet-c, array: tpu-mix-16, "
                                "levels: 2, mix: '2 v2 + 2 v3', split: search, space: accpar, alpha_grid: 8}\n"), tmp_path / "o2", workers=1))
    assert not plain["violations"]


@pytest.mark.parametrize("body,message", [
    ("grid: {split: [search]}\nfixed: {time_limit: 0.01}",
     "fixed.time_limit: must be a finite number of seconds >= 0.1, got 0.01"),
    ("grid: {split: [search]}\nfixed: {weight_copies: -1}", "fixed.weight_copies: must be a non-negative integer"),
    ("grid: {split: [search]}\nfixed: {memory_GiB: 0}", "fixed.memory_GiB: must be > 0, got 0"),
    ("grid: {split: [search]}\nfixed: {free: some}", "fixed.free: must be one of unlike, all, got 'some'"),
    ("grid: {levels: [2]}\nfixed: {free: all}", "fixed.free: only with split"),
    ("grid: {split: [search], seq: [0]}", "grid.seq[0]: must be a positive integer, got 0"),
    ("grid: {split: [search], seq: [8]}\nfixed: {model: lenet-c}",
     "fixed.model with grid.seq[0]: "),
])
def test_bad_split_point_keys_are_one_line_errors(tmp_path, capsys, body, message):
    f = tmp_path / "s.yaml"
    f.write_text("version: 1\n" + body + "\n")
    code, out, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "out")], capsys)
    assert code == 2, err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()


def test_an_invalid_split_row_names_the_sweep_keys_not_the_cli_options():
    out = solve_point(0, {**SPLIT_DEFAULTS, "model": "lenet-c", "array": "tpu-mix-16", "space": "accpar", "split": "optimal",
                          "free": "all", "alpha_grid": 16})  # every solver the default routes to refuses it
    assert out.status == "invalid", out
    assert out.error.startswith("split: optimal: ") and "--" not in out.error, out.error
    assert "free all" in out.error and "use split search or solver dp" in out.error, out.error


def test_seq_key_reads_the_model_with_that_sequence(tmp_path):
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {seq: [16, 32]}\nfixed: {model: gpt2-small, levels: 1}\n")
    rows = list(sweep(f, tmp_path / "out", workers=1))
    assert [r["seq"] for r in rows] == [16, 32]
    assert N(rows[1]["traffic_elements"]) > N(rows[0]["traffic_elements"]) > 0


def test_mix_writes_kind_names_with_spaces(tmp_path):
    arr = write(tmp_path / "a.yaml", "version: 1\nname: spaced\nlevels: 2\ndtype_bytes: 2\nkinds:\n"
                                     "  tpu v2: {peak_TFLOPS: 45, memory_GiB: 16}\n  xla: {peak_TFLOPS: 123, memory_GiB: 32}\n"
                                     "accelerators: [tpu v2, tpu v2, xla, xla]\nlink_bandwidth_GBps: [70, 70]\n")
    assert parse_mix("1 tpu v2 + 3 xla") == (("tpu v2", 1), ("xla", 3))  # "xla" is not "x la"
    assert parse_mix("1 x tpu v2 + 3*xla") == (("tpu v2", 1), ("xla", 3))
    f = write(tmp_path / "s.yaml", f"version: 1\ngrid: {{mix: ['1 tpu v2 + 3 xla', '3 tpu v2 + 1 xla']}}\n"
                                   f"fixed: {{model: lenet-c, array: {arr}, split: proportional}}\n")
    rows = list(sweep(f, tmp_path / "out", workers=1))
    assert [r["status"] for r in rows] == ["feasible", "feasible"], rows
    assert N(rows[0]["step_time_s"]) < N(rows[1]["step_time_s"])  # more of the fast kind


def test_a_grid_crossing_split_with_solver_makes_the_misfits_invalid_rows(tmp_path, capsys):
    """Trial 10, finding 15: split [equal, optimal] x solver [dp, exact, ...] was refused whole,
    every solver value called incompatible with split (exact fits optimal). The misfits (by
    check_split_solver, the CLI's rule, whatever it admits) are invalid rows naming the rule and the
    sweep goes on; a sweep with no fitting split point is refused once, naming the pair."""
    from explorer.app.split import Split, check_split_solver
    from explorer.core.errors import SpecError

    def fits(split, solver):
        try:
            check_split_solver(Split(split), solver)
        except SpecError:
            return False
        return True

    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {split: [levels, optimal], solver: [dp, exact, pruned]}\n"
                                   "fixed: {model: lenet-c, array: tpu-mix-16, alpha_grid: 2, space: accpar}\n")
    rows = {(r["split"], r["solver"]): r for r in sweep(str(f), tmp_path / "out", workers=1)}
    invalid = {k for k, r in rows.items() if r["status"] == "invalid"}
    assert invalid == {k for k in rows if not fits(*k)} >= {("levels", "exact"), ("optimal", "pruned")}, \
        {k: r["error"] for k, r in rows.items()}
    assert rows["levels", "exact"]["error"].startswith("solver: exact: not with split levels; split optimal and proportional")
    assert rows["optimal", "exact"]["status"] == "optimal"
    f.write_text("version: 1\ngrid: {model: [lenet-c, sfc]}\nfixed: {array: tpu-mix-16, split: levels, solver: exact}\n")
    code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o2")], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "fixed.solver: not with split (split levels with solver exact; no split point" in err
    assert err.count("exact") == 2, err  # the pair and the rule, not once per model


def test_sweep_out_is_made_with_its_parents_unlike_a_report_file(tmp_path, capsys):
    """Trial 10, finding 18: `sweep --out` makes missing parents (a folder the sweep owns, as
    documented in docs/sweeps.md), while `--output FILE` refuses a missing folder."""
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {levels: [1]}\nfixed: {model: lenet-c}\n")
    code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "no" / "such" / "o"), "--quiet"], capsys)
    assert code == 0 and (tmp_path / "no" / "such" / "o" / "results.csv").is_file(), err
    code, _, err = run_cli(["--model", "lenet-c", "--levels", "1", "--output", str(tmp_path / "none" / "r.txt")], capsys)
    assert code == 2 and "does not exist" in err, err


def test_the_answering_solver_is_a_column_where_the_default_is_routed(tmp_path):
    """Trial 13, finding 7: a `split: optimal` point without `solver` on an array the joint solver
    does not cover (mix-4 frees level 1 too) is answered by exact; results.csv said so nowhere
    (its `solver` column is empty). `answered_by`, after the alpha columns, holds the JSON's
    `solver` on every split point: exact there, joint on tpu-mix-16, the heuristics' own."""
    from .conftest import MIX4

    (tmp_path / "mix-4.yaml").write_text(MIX4)
    spec = write(tmp_path / "r.yaml", """\
        version: 1
        name: r
        grid: {array: [mix-4.yaml, tpu-mix-16], split: [optimal, search]}
        fixed: {model: sfc, alpha_grid: 2, space: hypar}
        points:
          - {array: mix-4.yaml, split: optimal, solver: exact}
        """)
    rows = list(sweep(spec, tmp_path / "out", workers=1))
    header = (tmp_path / "out" / "results.csv").read_text().splitlines()[0].split(",")
    k = header.index("answered_by")
    assert header[k - 1:k + 3] == ["alpha_level3", "answered_by", "note", "violations"]  # tpu-mix-16: 4 levels
    plans = [json.loads(line) for line in (tmp_path / "out" / "plans.jsonl").read_text().splitlines()]
    got = [(r["array"], r["split"], r["solver"], r["answered_by"]) for r in rows]
    assert got == [("mix-4.yaml", "optimal", None, "exact"), ("mix-4.yaml", "search", None, "search"),
                   ("tpu-mix-16", "optimal", None, "joint"), ("tpu-mix-16", "search", None, "search"),
                   ("mix-4.yaml", "optimal", "exact", "exact")], got
    assert [p["result"]["solver"] for p in plans] == [r["answered_by"] for r in rows]
    assert rows[0]["objective_value"] == rows[4]["objective_value"] and rows[0]["status"] == "optimal"
