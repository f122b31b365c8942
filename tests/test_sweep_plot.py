"""explore plot: every kind renders a real PNG headlessly; bad requests are one-line errors."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from explorer.api import sweep  # noqa: E402

from .conftest import run_cli  # noqa: E402

SPEC = """\
version: 1
name: plots
grid:
  model: [lenet-c, alexnet]
  levels: [1, 2, 3]
  solver: [dp, exact]
fixed: {batch: 128}
points:
  - {model: lenet-c, levels: 2, solver: cpsat, memory_GiB: 0.0001}
"""


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    root = tmp_path_factory.mktemp("plots")
    (root / "s.yaml").write_text(SPEC)
    list(sweep(root / "s.yaml", root / "out", workers=2))
    return root / "out"


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR" and data[-8:-4] == b"IEND"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("args,name", [
    (["--x", "levels", "--y", "traffic_bytes", "--hue", "model,solver", "--kind", "line", "--logy"], "line"),
    (["--x", "model", "--y", "step_time_s", "--hue", "solver", "--kind", "bar", "--where", "levels=3", "--logy"], "bar"),
    (["--x", "levels", "--y", "traffic_bytes", "--hue", "solver", "--kind", "bar", "--where", "model=alexnet"], "bar-numeric"),
    (["--x", "step_time_s", "--y", "memory_bytes_per_accelerator", "--hue", "model", "--kind", "scatter"], "scatter"),
    (["--x", "levels", "--y", "model", "--z", "traffic_ratio_to_all_I", "--kind", "heatmap", "--where", "solver=dp"], "heatmap"),
    (["--pareto", "--x", "step_time_s", "--y", "memory_bytes_per_accelerator", "--hue", "model,levels,solver"], "pareto"),
    (["--plan", "10"], "plan"),
])
def test_each_kind_renders_a_png(done, tmp_path, capsys, args, name):
    target = tmp_path / f"{name}.png"
    code, out, err = run_cli(["plot", str(done), *args, "--out", str(target)], capsys)
    assert code == 0, err
    *warnings, last = err.strip().splitlines()
    assert last == f"wrote {target}"  # and nothing else but the count of points with no value (infeasible)
    assert all(w.startswith("explore plot: warning: not drawn: ") and "with no" in w for w in warnings), err
    w, h = png_size(target)
    assert 400 <= w <= 3000 and 250 <= h <= 2000, (w, h)
    assert target.stat().st_size > 8000  # axes, text and data, not a blank canvas


def test_default_name_and_svg(done, tmp_path, capsys):
    code, _, err = run_cli(["plot", str(done), "--x", "levels", "--y", "traffic_bytes", "--hue", "model,solver"], capsys)
    assert code == 0 and (done / "line-traffic_bytes-vs-levels-by-model+solver.png").exists()
    target = tmp_path / "f.svg"
    code, _, _ = run_cli(["plot", str(done), "--plan", "0", "--out", str(target)], capsys)
    assert code == 0 and target.read_text().lstrip().startswith("<?xml") and "conv1" in target.read_text()


def test_default_names_differ_by_y_and_filter_and_the_title_shows_the_filter(done, tmp_path, capsys):
    made = []
    for args in (["--y", "traffic_bytes", "--where", "model=alexnet"], ["--y", "traffic_bytes", "--where", "model=lenet-c"],
                 ["--y", "step_time_s", "--where", "model=lenet-c"]):
        code, _, err = run_cli(["plot", str(done), "--x", "levels", "--hue", "solver", *args], capsys)
        assert code == 0, err
        made.append(err.strip().splitlines()[-1].removeprefix("wrote "))
    assert len(set(made)) == 3 and all(Path(m).exists() for m in made), made
    assert Path(made[0]).name == "line-traffic_bytes-vs-levels-by-solver-model=alexnet.png"
    target = tmp_path / "t.svg"
    code, _, _ = run_cli(["plot", str(done), "--x", "levels", "--y", "traffic_bytes", "--hue", "solver",
                          "--where", "model=alexnet", "--out", str(target)], capsys)
    assert code == 0 and "traffic_bytes vs levels (model=alexnet)" in target.read_text()


REF_SPEC = """\
version: 1
name: ref
grid: {model: [lenet-c, sfc]}
fixed: {levels: 2}
reference:
  figure: 6
  x: model
  y: speedup_over_all_I
  series:
    HyPar: {lenet-c: 3.05, sfc: 23.48, vgg-a: 4.97}
"""


def test_reference_values_are_drawn_beside_ours(tmp_path, capsys):
    (tmp_path / "r.yaml").write_text(REF_SPEC)
    list(sweep(tmp_path / "r.yaml", tmp_path / "o", workers=1))
    target = tmp_path / "r.svg"
    code, _, err = run_cli(["plot", str(tmp_path / "o"), "--reference", "--kind", "bar", "--out", str(target)], capsys)
    assert code == 0, err  # --x and --y from the reference
    svg = target.read_text()
    assert "paper: HyPar" in svg and "ours" in svg and "speedup_over_all_I vs model, with the paper's values" in svg
    code, _, err = run_cli(["plot", str(tmp_path / "o"), "--reference", "--kind", "bar"], capsys)
    assert code == 0 and err.strip().endswith("bar-speedup_over_all_I-vs-model-vs-paper.png")
    code, _, err = run_cli(["plot", str(tmp_path / "o"), "--reference", "--x", "model", "--y", "traffic_bytes",
                            "--kind", "bar", "--out", str(target)], capsys)
    assert code == 0 and "paper: HyPar (speedup_over_all_I)" in target.read_text()  # another quantity: said


def test_reference_needs_one(done, capsys):
    code, _, err = run_cli(["plot", str(done), "--reference", "--x", "levels", "--y", "traffic_bytes", "--hue", "model,solver"], capsys)
    assert code == 2 and "--reference:" in err and "no reference.series" in err and err.count("\n") == 1


@pytest.mark.parametrize("args,message", [
    (["--x", "levels", "--y", "colour"], "explore: error: --y: unknown column colour ("),
    (["--x", "levels", "--y", "traffic_bytes"], "explore: error: --hue: several rows for levels=1; these columns also vary: model, solver"),
    (["--x", "levels", "--y", "traffic_bytes", "--out", "x.jpg"], "--out: must end in .png or .svg"),
    (["--plan", "12"], "--plan: point 12 has no plan (status infeasible"),
    (["--plan", "99"], "--plan: no point 99"),
    (["--x", "levels", "--y", "traffic_bytes", "--where", "foo=1"], "explore: error: --where: unknown column foo ("),
    (["--x", "levels", "--y", "model", "--kind", "heatmap"], "--z: a heatmap needs --z COL"),
    (["--x", "levels", "--y", "traffic_bytes", "--where", "model=vgg-z"], "--where model=vgg-z: no row has it (values: lenet-c, alexnet)"),
])
def test_bad_plot_requests(done, capsys, args, message):
    code, _, err = run_cli(["plot", str(done), *args], capsys)
    assert code == 2 and message in err and err.count("\n") == 1, err


def test_plan_layer_names_stay_level_when_they_fit(done, tmp_path):
    """Short names (lenet-c's conv1 .. ip2, alexnet's conv1 .. fc8) are written flat; a long row
    of long names (vgg-e's 19) is turned, and no two overlap either way."""
    from explorer.app.sweep import layout
    from explorer.app.sweep.plot import plan_figure

    for row in (0, 10):  # lenet-c, alexnet
        fig = plan_figure(done, row)
        labels = layout.shown_xticklabels(fig.axes[0])
        assert "conv1" in [t.get_text() for t in labels] and {t.get_rotation() for t in labels} == {0.0}
        assert not layout.overlapping(labels, fig.canvas.get_renderer())
    (tmp_path / "s.yaml").write_text("version: 1\nname: long\ngrid: {model: [vgg-e], levels: [2], solver: [dp]}\n")
    list(sweep(tmp_path / "s.yaml", tmp_path / "out", workers=1))
    fig = plan_figure(tmp_path / "out", 0)
    labels = layout.shown_xticklabels(fig.axes[0])
    assert len(labels) == 19 and {t.get_rotation() for t in labels} != {0.0}
    assert not layout.overlapping(labels, fig.canvas.get_renderer())


@pytest.mark.parametrize("kind", ["chart", "pareto", "plan"])
@pytest.mark.parametrize("bad", ["folder", "slash", "proc", "empty"])
def test_unwritable_out_is_one_line_before_any_work(done, tmp_path, capsys, monkeypatch, kind, bad):
    from explorer.app.sweep import plot

    def no_work(*a, **k):
        raise AssertionError("read or drew before checking --out")

    for name in ("plot_chart", "plot_pareto", "plot_plan", "with_reference_axes"):
        monkeypatch.setattr(plot, name, no_work)
    (tmp_path / "d.png").mkdir()
    out, why = {"folder": (str(tmp_path / "d.png"), "is a directory"),
                "slash": (str(tmp_path / "n.png") + "/", "names a folder (ends in /)"),
                "proc": ("/proc/x.png", "folder /proc is not writable"),
                "empty": ("", None)}[bad]
    if bad == "proc" and not Path("/proc/self").is_dir():
        pytest.skip("needs Linux /proc")
    args = {"chart": ["--x", "levels", "--y", "traffic_bytes", "--where", "model=alexnet", "--where", "solver=dp"],
            "pareto": ["--pareto", "--x", "step_time_s", "--y", "traffic_bytes"], "plan": ["--plan", "0"]}[kind]
    code, _, err = run_cli(["plot", str(done), *args, "--out", out], capsys)
    expected = f"--out: cannot write {out}: {why}" if why else "--out: must not be empty"
    assert (code, err) == (2, f"explore: error: {expected}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.png"]


def test_a_file_is_not_a_sweep_folder_and_workers_are_bounded(tmp_path, capsys):
    (tmp_path / "f.txt").write_text("x")
    code, _, err = run_cli(["plot", str(tmp_path / "f.txt"), "--x", "a", "--y", "b"], capsys)
    assert (code, err) == (2, f"explore: error: {tmp_path / 'f.txt'}: not a folder (explore plot reads a sweep output folder)\n")
    code, _, err = run_cli(["sweep", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o"), "--workers", "1000"], capsys)
    assert code == 2 and "1000 is not in the range 1<=x<=256" in err


@pytest.mark.parametrize("row", [0, 10])
def test_the_plan_title_writes_the_tables_units(done, row):
    """Trial 12: the title wrote 'traffic 0.00201 GB, step 0.0107 ms' where the tables write
    2.007 MB and 11 us: it writes the figures as the single run's table does."""
    import re

    import matplotlib.pyplot as plt

    from explorer import api
    from explorer.app.render import render_table
    from explorer.app.sweep.plot import plan_figure, read_plan

    point = read_plan(done, row)["point"]
    fig = plan_figure(done, row)
    title = fig.axes[0].get_title()
    plt.close(fig)
    m = re.search(r"traffic (\S+ [kMGT]?B), step (\S+ [mun]?s)\b", title)
    assert m, title
    table = render_table(api.solve(point["model"], levels=point["levels"], batch=point["batch"],
                                   solver=point["solver"]))
    mine = next(line for line in table.splitlines() if line.startswith(point["solver"] + " "))
    assert m.group(1) in mine and m.group(2) in mine.split(m.group(1))[1], (title, mine)
