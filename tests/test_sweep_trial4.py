"""Trial 4's sweep and plot findings: ONNX exports with a symbolic batch are swept with the point's
batch, plans that break a limit are marked in plots, a failed merge writes nothing, duplicate points
are refused, ``--out ''`` is refused, many series and non-Latin names are drawn legibly."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.api import sweep
from explorer.core.errors import SpecError

from .conftest import run_cli

onnx = pytest.importorskip("onnx")


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def exports(tmp_path):
    """A CNN and a BERT exported as torch does: symbolic batch (and sequence) axes."""
    from .onnx_nets import hf_bert, residual_net

    onnx.save(residual_net("batch_size"), tmp_path / "cnn.onnx")
    onnx.save(hf_bert(), tmp_path / "bert.onnx")
    return tmp_path


@pytest.mark.parametrize("body", [
    "grid: {model: [cnn.onnx], levels: [1, 2]}\nfixed: {batch: 8}\n",
    "grid: {model: [cnn.onnx], levels: [1], batch: [8, 16]}\n",
    "grid: {model: [bert.onnx], levels: [1], seq: [8, 16]}\nfixed: {batch: 4}\n",
    "grid: {model: [lenet-c], levels: [1]}\npoints: [{model: bert.onnx, batch: 2, seq: 8}]\n",
    "fixed: {model: cnn.onnx, levels: 1}\npoints: [{batch: 4}, {batch: 8}]\n",  # no grid: no grid point reads it
])
def test_a_symbolic_batch_is_filled_by_the_sweeps_batch(exports, body, capsys):
    f = write(exports / "s.yaml", "version: 1\n" + body)
    code, out, err = run_cli(["sweep", str(f), "--out", str(exports / "o"), "--workers", "1"], capsys)
    assert code == 0, err
    rows = (exports / "o" / "results.csv").read_text().splitlines()[1:]
    assert rows and all(",level-optimal," in r for r in rows)
    assert all(r["status"] == "level-optimal" for r in sweep(f))  # the API as the CLI


@pytest.mark.parametrize("body,message", [
    ("grid: {model: [cnn.onnx], levels: [1]}\n",
     "grid.model[0]: {d}/cnn.onnx: input 'x' has a symbolic batch dimension 'batch_size': set batch in fixed or grid"),
    ("grid: {model: [cnn.onnx], levels: [1]}\npoints: [{model: cnn.onnx, batch: 4}]\n",
     "grid.model[0]: {d}/cnn.onnx: input 'x' has a symbolic batch dimension 'batch_size': set batch in fixed or grid"),
    ("grid: {model: [bert.onnx], levels: [1], seq: [8, 16]}\n",
     "grid.model[0] with grid.seq[0]: {d}/bert.onnx: input 'input_ids' has a symbolic batch dimension 'batch': "
     "set batch in fixed or grid"),
    ("grid: {model: [bert.onnx], levels: [1]}\nfixed: {batch: 2}\n", "symbolic sequence dimension 'sequence' (axis 1): "
                                                                     "set seq in fixed or grid"),
])
def test_a_sweep_without_batch_names_its_keys_not_explores_flags(exports, body, message, capsys):
    f = write(exports / "s.yaml", "version: 1\n" + body)
    code, _, err = run_cli(["sweep", str(f), "--out", str(exports / "o")], capsys)
    assert code == 2 and err.count("\n") == 1 and message.format(d=exports) in err, err
    assert "--batch" not in err and "--seq" not in err
    with pytest.raises(SpecError, match="set (batch|seq) in fixed or grid"):
        sweep(f)


CSV_HEAD = "memory_GiB,solver,levels,status,traffic_bytes,memory_bytes_per_accelerator,violations,error\n"
CSV_ROWS = [  # the DP's plan breaks the limit at 0.03 and 0.05 GiB; CP-SAT proves 0.03 infeasible
    "0.03,dp,3,level-optimal,478,190,memory <= 32.21 MB per accelerator,",
    "0.05,dp,3,level-optimal,478,190,memory <= 53.69 MB per accelerator,",
    "1,dp,3,level-optimal,478,190,,",
    "0.03,cpsat,3,infeasible,,,,",
    "0.05,cpsat,3,optimal,1390,100,,",
    "1,cpsat,3,optimal,450,191,,",
]


@pytest.fixture
def limits(tmp_path):
    (tmp_path / "results.csv").write_text(CSV_HEAD + "\n".join(CSV_ROWS) + "\n")
    return tmp_path


def _legend_texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]


@pytest.mark.parametrize("kind", ["line", "scatter", "bar"])
def test_plans_over_a_limit_are_marked_in_charts(limits, kind):
    pytest.importorskip("matplotlib")
    from explorer.app.sweep import plot

    chart = plot.Chart(kind, "memory_GiB", "traffic_bytes", ("solver",))
    fig, notes = plot.chart_figure(limits, chart)
    how = "hatched" if kind == "bar" else "crossed"
    assert notes == (f"2 plans break a limit ({how}; see violations)",
                     "not drawn: 1 point with no traffic_bytes (1 infeasible)")
    assert plot.BROKEN in _legend_texts(fig)
    ax = fig.axes[0]
    if kind == "bar":
        assert sum(p.get_hatch() == "xx" for p in ax.patches) == 2
    else:
        crossed = [c for c in ax.collections if len(c.get_offsets()) and c.get_edgecolor().size and
                   tuple(c.get_offsets()[:, 0]) == (0.03, 0.05) and c.get_facecolor()[0][:3].tolist() == [0, 0, 0]]
        assert crossed, "the two DP plans over the limit carry a black cross"
    assert notes[0] in ax.get_title()


def test_heatmap_hatches_cells_over_a_limit_and_says_so(limits, capsys):
    pytest.importorskip("matplotlib")
    from explorer.app.sweep import plot

    fig, notes = plot.chart_figure(limits, plot.Chart("heatmap", "memory_GiB", "levels", z="traffic_bytes",
                                                      where=(("solver", "dp"),)))
    assert notes == ("2 plans break a limit (hatched; see violations)",)
    assert sum(p.get_hatch() == "xx" for p in fig.axes[0].patches) == 2
    code, _, err = run_cli(["plot", str(limits), "--kind", "heatmap", "--x", "memory_GiB", "--y", "levels",
                            "--z", "traffic_bytes", "--where", "solver=dp"], capsys)
    assert code == 0 and "explore plot: warning: 2 plans break a limit (hatched; see violations)" in err


def test_pareto_draws_plans_over_a_limit_crossed_off_the_front(limits):
    pytest.importorskip("matplotlib")
    from explorer.app.sweep import plot

    fig, notes = plot.pareto_figure(limits, plot.Chart(x="traffic_bytes", y="memory_bytes_per_accelerator"))
    assert notes == ("2 plans break a limit (crossed, not ranked; see violations)",)
    assert plot.BROKEN + ", not ranked" in _legend_texts(fig)


def test_a_merge_with_points_missing_writes_nothing(tmp_path, capsys):
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {model: [lenet-c], levels: [1, 2, 3]}\n")
    for i in range(3):
        assert run_cli(["sweep", str(f), "--out", str(tmp_path / f"s{i}"), "--shard", f"{i}/3", "--quiet"], capsys)[0] == 0
    code, out, err = run_cli(["sweep", "merge", str(tmp_path / "s0"), str(tmp_path / "s2"), "--out", str(tmp_path / "m")],
                             capsys)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert "1 point missing: 1 (2 of 3 points found); nothing written: merge the folders of every shard" in err
    assert not (tmp_path / "m").exists()


def test_plot_refuses_a_partial_merge_of_an_older_explore(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {model: [lenet-c], levels: [1, 2, 3]}\n")
    assert run_cli(["sweep", str(f), "--out", str(tmp_path / "o"), "--quiet"], capsys)[0] == 0
    for name in ("results.csv", "plans.jsonl"):  # as an older merge wrote it: 2 of 3 points, shard ""
        path = tmp_path / "o" / name
        path.write_text("".join(path.read_text().splitlines(keepends=True)[:-1]))
    code, _, err = run_cli(["plot", str(tmp_path / "o"), "--x", "levels", "--y", "traffic_bytes"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "holds 2 of the sweep's 3 points (sweep.json): a partial merge" in err


@pytest.mark.parametrize("cmd", [["sweep", "{f}"], ["sweep", "merge", "{d}"]])
def test_an_empty_out_is_refused_not_the_working_folder(tmp_path, capsys, monkeypatch, cmd):
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {model: [lenet-c], levels: [1]}\n")
    assert run_cli(["sweep", str(f), "--out", str(tmp_path / "d"), "--quiet"], capsys)[0] == 0
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    args = [a.format(f=f, d=tmp_path / "d") for a in cmd]
    for empty in ("", " "):
        code, _, err = run_cli([*args, "--out", empty], capsys)
        assert code == 2 and err == "explore: error: --out: must not be empty (a folder for the sweep's outputs)\n"
    assert list(work.iterdir()) == []
    with pytest.raises(SpecError, match="^out: must not be empty"):  # the API names its argument
        sweep(f, "")


@pytest.mark.parametrize("body,message", [
    ("grid: {levels: [1, 2]}\nfixed: {model: lenet-c, batch: 64}\npoints: [{levels: 1}]\n",
     "points[0]: the same point as grid point 0 (model=lenet-c, batch=64, levels=1): give it once"),
    ("grid: {levels: [1, 2]}\nfixed: {model: lenet-c}\npoints: [{levels: 3}, {levels: 3, solver: dp}]\n",
     "points[1]: the same point as points[0] (model=lenet-c, solver=dp, levels=3): give it once"),
    ("grid: {model: [lenet-c, lenet-c]}\n",
     "grid.model[1]: 'lenet-c' repeats grid.model[0] (each point would be computed twice)"),
    ("grid: {model: [lenet-c], memory_GiB: [1, 2, 1.0]}\n",
     "grid.memory_GiB[2]: 1.0 repeats grid.memory_GiB[0] (each point would be computed twice)"),
])
def test_duplicate_points_are_refused_up_front(tmp_path, capsys, body, message):
    f = write(tmp_path / "s.yaml", "version: 1\n" + body)
    code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and err == f"explore: error: {f}: {message}\n"
    assert not (tmp_path / "o").exists()


def test_a_points_key_overrides_fixed(tmp_path):
    from explorer.app.sweep.spec import load_sweep

    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {levels: [1]}\nfixed: {model: lenet-c, batch: 64}\n"
                                   "points: [{levels: 1, batch: 128}]\n")
    assert [p.get("batch") for p in load_sweep(f).points] == [64, 128]


def _series_csv(folder: Path, models: list[str], levels: int) -> Path:
    lines = [f"{m},{lv},optimal,{lv * 1000 + n},{lv / 10 + n / 100}," for n, m in enumerate(models) for lv in range(1, levels + 1)]
    (folder / "results.csv").write_text("model,levels,status,traffic_bytes,step_time_s,violations\n" + "\n".join(lines) + "\n")
    return folder


def test_more_series_than_colours_are_refused_naming_where_and_hue(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    _series_csv(tmp_path, ["alexnet", "resnet18", "vgg-a"], 7)  # 21 series
    code, _, err = run_cli(["plot", str(tmp_path), "--kind", "scatter", "--x", "traffic_bytes", "--y", "step_time_s",
                            "--hue", "model,levels"], capsys)
    assert code == 2 and err == ("explore: error: --hue: 21 series (model x levels), more than the 20 a plot can tell "
                                 "apart by colour: keep fewer with --where COL=VALUE, or fewer --hue columns\n")


def test_twenty_series_take_twenty_colours_and_the_legend_fits(tmp_path):
    pytest.importorskip("matplotlib")
    from explorer.app.sweep import plot

    _series_csv(tmp_path, ["alexnet", "resnet18", "vgg-a", "vgg-e", "resnet50"], 4)
    fig, _ = plot.chart_figure(tmp_path, plot.Chart("scatter", "traffic_bytes", "step_time_s", ("model", "levels")))
    colours = {tuple(c.get_facecolor()[0]) for c in fig.axes[0].collections}
    assert len(colours) == 20
    leg = fig.axes[0].get_legend().get_window_extent(fig.canvas.get_renderer())
    assert fig.bbox.contains(leg.x0, leg.y0) and fig.bbox.contains(leg.x1, leg.y1)


def _named_csv(folder: Path, name: str) -> Path:
    (folder / "results.csv").write_text("model,levels,status,traffic_bytes,violations\n"
                                        f"{name},1,optimal,10,\n{name},2,optimal,20,\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize("fallbacks,missing", [((), "2 characters (ᶁ网)"), (("STIXGeneral",), "1 character (网)")])
def test_names_without_glyphs_fall_back_or_are_said_once(tmp_path, capsys, monkeypatch, fallbacks, missing):
    import warnings

    mpl = pytest.importorskip("matplotlib")
    from explorer.app.sweep import fonts

    monkeypatch.setitem(mpl.rcParams, "font.family", list(mpl.rcParams["font.family"]))  # restored afterwards
    monkeypatch.setattr(fonts, "FALLBACKS", fallbacks)
    _named_csv(tmp_path, "网ᶁ")  # CJK: in no font of FALLBACKS; U+1D81: in STIXGeneral, not in DejaVu Sans
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no raw matplotlib warning reaches the user
        code, _, err = run_cli(["plot", str(tmp_path), "--x", "levels", "--y", "traffic_bytes", "--hue", "model"], capsys)
    assert code == 0 and "Glyph" not in err and "UserWarning" not in err
    assert [line for line in err.splitlines() if "have no glyph" in line] == [
        f"explore plot: warning: {missing} have no glyph in the installed fonts and are drawn as boxes: install a "
        "font that has them (e.g. Noto Sans CJK for Chinese or Japanese)"]
    assert list(mpl.rcParams["font.family"])[1:] == list(fallbacks)


WHERE_CSV = ("model,memory_GiB,levels,link_bandwidth_GBps,status,step_time_s,violations\n"
             "alexnet,1,1,10,optimal,0.5,\nalexnet,1,2,10;20,optimal,0.25,\nalexnet,8,1,10,optimal,0.4,\n")


@pytest.mark.parametrize("where,kept", [
    (["memory_GiB=1.0"], 2), (["model=AlexNet", "memory_GiB=8"], 1), (["memory_GiB=1", "levels=2.0"], 1)])
def test_where_compares_numbers_as_numbers_and_ignores_case(tmp_path, where, kept):
    from explorer.app.sweep import plot

    (tmp_path / "results.csv").write_text(WHERE_CSV)
    _, rows = plot.load_table(tmp_path, plot.Chart(x="levels", y="step_time_s", where=plot.parse_where(tuple(where))))
    assert len(rows) == kept


def test_where_names_the_filter_that_keeps_no_row(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    (tmp_path / "results.csv").write_text(WHERE_CSV)
    code, _, err = run_cli(["plot", str(tmp_path), "--x", "levels", "--y", "step_time_s", "--where", "model=alexnet",
                            "--where", "memory_GiB=2"], capsys)
    assert code == 2 and err == "explore: error: --where memory_GiB=2: no row has it (values: 1, 8)\n"


@pytest.mark.parametrize("column,row,cell", [("step_time_s", 3, "nan"), ("levels", 2, "abc")])
def test_a_hand_edited_cell_that_is_not_a_number_is_refused(tmp_path, capsys, column, row, cell):
    pytest.importorskip("matplotlib")
    lines = WHERE_CSV.splitlines()
    head = lines[0].split(",")
    cells = lines[row].split(",")
    cells[head.index(column)] = cell
    lines[row] = ",".join(cells)
    (tmp_path / "results.csv").write_text("\n".join(lines) + "\n")
    code, _, err = run_cli(["plot", str(tmp_path), "--x", "levels", "--y", "step_time_s", "--hue", "memory_GiB"], capsys)
    what = "a finite number" if cell == "nan" else "a number"  # trial hostile 10: nan is called what it is
    assert code == 2 and err == (f"explore: error: {tmp_path / 'results.csv'}, row {row} of the plotted rows, column "
                                 f"{column}: '{cell}' is not {what}\n")


def test_a_list_of_values_on_x_stays_a_category(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    (tmp_path / "results.csv").write_text(WHERE_CSV)
    code, _, err = run_cli(["plot", str(tmp_path), "--kind", "bar", "--x", "link_bandwidth_GBps", "--y", "step_time_s",
                            "--where", "memory_GiB=1"], capsys)
    assert code == 0, err


def test_a_cpsat_row_that_never_searched_says_so_in_results_csv(tmp_path, capsys):
    import csv

    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {model: [alexnet], levels: [10]}\n"
                                   "fixed: {array: array-1024, space: accpar, solver: cpsat, time_limit: 0.1}\n")
    assert run_cli(["sweep", str(f), "--out", str(tmp_path / "o"), "--quiet"], capsys)[0] == 0
    [row] = list(csv.DictReader(open(tmp_path / "o" / "results.csv")))
    assert row["status"] == "feasible" and row["bound"] == ""
    assert row["error"].startswith("the time limit ran out while building the CP-SAT model: the DP's plan, no bound")


def test_the_manuals_key_table_names_every_sweep_key():
    from explorer.app.sweep.spec import KEYS

    text = (Path(__file__).parent.parent / "docs" / "sweeps.md").read_text(encoding="utf-8")
    table = text[text.index("| key | value | default | split points |"):]
    table = table[: table.index("\n\n")]
    written = {k.strip(" `") for line in table.splitlines()[2:] for k in line.split("|")[1].split(",")}
    assert written == {*KEYS, "accelerators_<kind>"}


def test_plan_figure_of_a_plan_that_breaks_a_limit_says_so_in_its_title(tmp_path):
    """--plan of a DP point over the memory limit: its title names what the plan breaks (the charts
    mark such points; the plan figure did not)."""
    pytest.importorskip("matplotlib")
    from explorer.app.sweep.plot import plan_figure

    spec = write(tmp_path / "s.yaml", "version: 1\nname: tight\nfixed: {model: lenet-c, levels: 2, solver: dp}\n"
                                      "grid: {memory_GiB: [0.0001, 4]}\n")
    list(sweep(spec, tmp_path / "out", workers=1))
    titles = [plan_figure(tmp_path / "out", row).axes[0].get_title() for row in (0, 1)]
    assert "PLAN BREAKS: memory <= 104.9 KiB" in titles[0], titles[0]
    assert "PLAN BREAKS" not in titles[1]


def test_points_without_a_plan_are_counted_not_dropped_silently(tmp_path, capsys):
    """A chart of a sweep whose exact points are infeasible under a cap: they are not drawn, and the
    plot says how many and why (under the title and in a warning line); the no-cap category of a
    list column is labelled '(none)', not left blank."""
    pytest.importorskip("matplotlib")
    from explorer.app.sweep.plot import Chart, chart_figure

    spec = write(tmp_path / "s.yaml", "version: 1\nname: cap\nfixed: {model: alexnet, levels: 3, objective: traffic}\n"
                                      "grid: {caps: [[], ['2=1MB']], solver: [dp, exact]}\n")
    list(sweep(spec, tmp_path / "out", workers=1))
    fig, notes = chart_figure(tmp_path / "out", Chart(x="caps", y="traffic_bytes", hue=("solver",), kind="bar"))
    assert "not drawn: 1 point with no traffic_bytes (1 infeasible)" in notes, notes
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["(none)", "2=1MB"]
    code, _, err = run_cli(["plot", str(tmp_path / "out"), "--x", "caps", "--y", "traffic_bytes", "--hue", "solver",
                            "--kind", "bar", "--out", str(tmp_path / "c.png")], capsys)
    assert code == 0 and "warning: not drawn: 1 point with no traffic_bytes (1 infeasible)" in err, err
