"""Trial 6's findings (docs/… user trial of v0.2.0): each test fails without its fix."""

from __future__ import annotations

import pytest

from explorer.api import solve
from explorer.core.errors import SpecError
from explorer.core.network import Layer, LayerKind, Network
from explorer.frontends.network_yaml import load_network_text


def _fc(name: str, din: int, dout: int) -> Layer:
    return Layer(name, LayerKind.FC, din, dout)


# findings 1-3, 24, 26: a built Network gets the validation a YAML network gets
@pytest.mark.parametrize("net, message", [
    (Network.chain("m", 8, [_fc("a", -4, 4), _fc("b", 4, 4)]), "network 'm': layers[0].in_features: must be a positive integer, got -4"),
    (Network.chain("m", 0, [_fc("a", 4, 4)]), "network 'm': batch: must be a positive integer, got 0"),
    (Network.chain("m", 8, [_fc("a", 4, 4), _fc("b", 5, 4)]),
     "network 'm': layers[1].in_features: 5 does not match the 4 outputs of its input 'a'"),
    (Network.chain("m", 8, [Layer("c", LayerKind.CONV, 3, 8, (3, 3), (32, 32), (64, 64))]),
     "network 'm': layers[0].out_size: 64x64 cannot come out of a 3x3 conv on 32x32"),
    (Network.chain("m", 8, [Layer("c", LayerKind.CONV, 4, 8, (3, 3), (8, 8), (8, 8), groups=3)]),
     "network 'm': layers[0].groups: 3 groups must divide in_channels 4 and out_channels 8"),
])
@pytest.mark.parametrize("split", [None, "optimal"])
def test_api_validates_a_built_network(net, message, split):
    with pytest.raises(SpecError) as err:
        solve(net, levels=2, split=split)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_api_checks_the_network_after_the_batch_override():
    r = solve(Network.chain("m", 0, [_fc("a", 4, 4)]), levels=1, batch=8)  # the override replaces batch 0
    assert r.ok


def test_empty_chain_is_a_spec_error():
    with pytest.raises(SpecError, match=r"^network 'm': layers: must be a non-empty list$"):
        Network.chain("m", 8, [])


def test_built_join_channels_are_checked():
    a, b = _fc("a", 4, 4), _fc("b", 4, 6)
    add = Layer("s", LayerKind.ADD, 4, 4)
    net = Network("m", 8, (a, b, add), ((0, 1), (0, 2), (1, 2)))
    with pytest.raises(SpecError, match=r"layers\[2\]\.channels: add node 's' of 4 channels reads inputs of \[4, 6\]"):
        solve(net, levels=1)


def test_yaml_conv_geometry_is_checked():
    text = """version: 1
name: g
layers:
  - {name: c, kind: conv, in_channels: 3, out_channels: 8, kernel: 3, in_size: 32, out_size: 64}
"""
    with pytest.raises(SpecError, match=r"^<string>: layers\[0\]\.out_size: 64x64 cannot come out of a 3x3 conv on 32x32"):
        load_network_text(text)
    # a 'same' conv with a kernel wider than its input is possible (padding 49): accepted
    load_network_text(text.replace("kernel: 3", "kernel: 99").replace("out_size: 64", "out_size: 32"))


# finding 25: pins, forbids and caps given as one string are refused, as in a constraints file
@pytest.mark.parametrize("arg, value", [("pins", "fc6@0=III"), ("forbids", "fc6=III"), ("caps", "0=5MB")])
def test_api_refuses_a_bare_string_for_a_list(arg, value):
    with pytest.raises(SpecError, match=rf"^{arg}: must be a list of .* strings, got the string '{value}' \(write \['{value}'\]\)$"):
        solve("alexnet", space="accpar", **{arg: value})
    assert solve("alexnet", space="accpar", **{arg: [value]}).plan is not None


# findings 4 and 9: sweep overrides take the array file's range and the constraints file's hint
@pytest.mark.parametrize("key, value, problem", [
    ("link_bandwidth_GBps", 1e-300, "must be between 1e-30 and 1e100, got 1e-300"),
    ("peak_TFLOPS", 1e300, "must be between 1e-30 and 1e100, got 1e+300"),
    ("memory_GiB", 1e101, "must be between 1e-30 and 1e100, got 1e+101"),
    ("link_bandwidth_GBps", "2e3", "must be a positive number, got '2e3' (YAML reads a bare 2e3 as text: write 2.0e+3)"),
    ("link_bandwidth_GBps", [1.0, 1e-300], "must be a positive number or a non-empty list of them (one per level); level 1's bandwidth must be "
     "between 1e-30 and 1e100, got 1e-300"),
])
def test_sweep_override_ranges(key, value, problem):
    from explorer.app.sweep.spec import validator

    assert validator(key)(value) == problem


def test_sweep_file_2e3_hint(tmp_path):
    from explorer.app.sweep.spec import load_sweep

    f = tmp_path / "b.yaml"
    f.write_text("version: 1\ngrid: {model: [alexnet], link_bandwidth_GBps: [2e3]}\n")
    with pytest.raises(SpecError, match=r"grid\.link_bandwidth_GBps\[0\]: must be a positive number, got '2e3' "
                                        r"\(YAML reads a bare 2e3 as text: write 2\.0e\+3\)"):
        load_sweep(f)


def test_constraints_file_hint_is_the_same_function(tmp_path):
    from explorer.frontends.fields import check_pos_number

    errors: list[str] = []
    check_pos_number("1e30", "memory_GiB", errors)
    assert errors == ["memory_GiB: must be a positive number, got '1e30' (YAML reads a bare 1e30 as text: write 1.0e+30)"]


# finding 7: every shipped figure sweep's --reference plots the columns it names; 21: the paper's x get ticks
def test_shipped_reference_axes_are_columns():
    from explorer.app.sweep.point import FIGURES
    from explorer.frontends.yamlio import load_yaml_file

    from pathlib import Path

    names = 0
    root = Path(__file__).resolve().parent.parent / "spaces"
    for path in sorted(root.rglob("*.yaml")):
        name = path.name
        ref = load_yaml_file(path).get("reference")
        if ref and "series" in ref:
            data = load_yaml_file(path)
            swept = {*data.get("grid", {}), *data.get("fixed", {}), *FIGURES}
            assert ref["x"] in swept and ref["y"] in swept, (name, ref["x"], ref["y"])
            names += 1
    assert names >= 3


def test_fig11_reference_plots_with_ticks_for_the_papers_x(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import shutil

    from explorer.api import sweep
    from explorer.app.sweep.plot import Chart, chart_figure, plot_chart
    from pathlib import Path

    spec = tmp_path / "fig11.yaml"
    shutil.copy(Path(__file__).resolve().parent.parent / "spaces/hypar-2019/fig11-scalability.yaml", spec)
    list(sweep(spec, tmp_path / "f11", workers=1))
    done = plot_chart(tmp_path / "f11", Chart(reference=True), tmp_path / "f.png")
    assert done.path.stat().st_size > 0
    spec.write_text(spec.read_text().replace("{2: 1.026", "{1: 1.0, 2: 1.026"))
    fig, _ = chart_figure(tmp_path / "f11", Chart(x="accelerators", y="speedup_over_all_I", logx=True, reference=True))
    assert 1.0 in list(fig.axes[0].get_xticks())


# finding 10: --y on a text column says so, not the statuses
def test_plot_y_text_column(tmp_path):
    pytest.importorskip("matplotlib")
    from explorer.api import sweep
    from explorer.app.sweep.plot import Chart, chart_figure

    (tmp_path / "s.yaml").write_text("version: 1\ngrid: {model: [lenet-c], levels: [1, 2]}\n")
    list(sweep(tmp_path / "s.yaml", tmp_path / "o", workers=1))
    with pytest.raises(SpecError, match=r"^--y: model is a text column; numeric columns: levels, accelerators, "):
        chart_figure(tmp_path / "o", Chart(x="levels", y="model"))
    with pytest.raises(SpecError, match=r"^--y: no row has a number in bound \(statuses: level-optimal\)$"):
        chart_figure(tmp_path / "o", Chart(x="levels", y="bound"))


# finding 12: a time-budget cap is shown as given, with the bytes it comes to
def test_time_cap_is_shown_as_given(capsys):
    from .conftest import run_cli

    code, out, err = run_cli(["--model", "vgg-a", "--cap", "0=1ms"], capsys)
    assert "constraints: cap level 0 <= 1 ms (60 MB at 60 GB/s) (--cap)," in out
    assert "PLAN BREAKS: cap level 0 <= 1 ms (60 MB at 60 GB/s) (--cap) by" in out
    code, out, _ = run_cli(["--model", "vgg-a", "--cap", "0=60MB"], capsys)
    assert "constraints: cap level 0 <= 60 MB (--cap)," in out


def test_a_cap_reads_the_same_in_even_and_uneven_reports_and_conflict_lines(capsys):
    # one text of a cap (core.constraints.Cap.name): the even split's constraints line said
    # 'cap level 0 1 ms (767.200 kB at 767.2 MB/s)', the uneven one 'cap level 0 <= 1 ms (...) (--cap)',
    # and the constraints line '20.000 MB' where the conflict line said '20 MB'
    from .conftest import run_cli

    base = ["--model", "lenet-c", "--array", "tpu-mix-16", "--objective", "time"]
    for cap, text in (("0=1ms", "cap level 0 <= 1 ms (70 MB at 70 GB/s) (--cap)"), ("0=20MB", "cap level 0 <= 20 MB (--cap)")):
        _, even, _ = run_cli([*base, "--cap", cap], capsys)
        _, uneven, _ = run_cli([*base, "--split", "proportional", "--cap", cap], capsys)
        for out in (even, uneven):
            line = next(x for x in out.splitlines() if x.startswith("constraints: "))
            assert text in line and "(--cap)," in line + "," and ".000" not in line, line
    code, out, err = run_cli(["--model", "alexnet", "--array", "hypar-16", "--cap", "0=50MB", "--solver", "exact"],
                             capsys)
    assert code == 1 and "these conflict: cap level 0 <= 50 MB (--cap)" in err


# finding 13: check --uneven's table says `breaks` for a plan that breaks a rule; the JSON keeps explore's status
def test_check_uneven_table_says_breaks():
    from fractions import Fraction

    from explorer.app.check_uneven import SplitCheck, SplitCheckRow, _row_json, render_check_uneven
    from explorer.core.partition import Space
    from explorer.core.uneven import FreeAlphas

    row = SplitCheckRow("dp", "feasible", Fraction(1, 1000), None, 0.1, "breaks cap level 0 <= 2 MB (--cap)", True, True)
    ok = SplitCheckRow("search", "feasible", Fraction(2, 1000), None, 0.1, "", True, False)
    text = render_check_uneven(SplitCheck("sfc", "tpu-mix-16", Space.ACCPAR, 4, FreeAlphas.UNLIKE, (row, ok), None, (), ()))
    lines = text.splitlines()
    assert lines[2].split()[:2] == ["dp", "breaks"] and lines[3].split()[:2] == ["search", "feasible"]
    assert _row_json(row)["status"] == "feasible" and _row_json(row)["breaks"] is True


# finding 14: cells that differ at gap 0 are a tie, said so
def test_check_says_tie_at_gap_zero():
    from explorer.api import check
    from explorer.app.render import render_check

    r = check("resnet50", space="accpar", solvers=["exact"], time_limit=5)
    assert r.optimum is not None and r.optimum.dp_gap == 0 and r.optimum.cells_differing
    line = next(x for x in render_check(r).splitlines() if x.startswith("cells where"))
    assert line.endswith("(a tie: the DP's plan is an equally good optimum)")


# finding 17: explore reproduce says where AccPar's reproduction is
def test_reproduce_points_to_accpar(capsys):
    from .conftest import run_cli

    code, out, _ = run_cli(["reproduce", "--help"], capsys)
    assert code == 0 and "AccPar's TPU-v2/v3 mixes" in out and "spaces/accpar-mix.yaml" in out
    code, _, err = run_cli(["reproduce", "accpar"], capsys)
    assert code == 2 and err.startswith("explore: error: explore reproduce accpar: AccPar's figures are a sweep")
    assert len(err.strip().splitlines()) == 1


# findings 15, 16: the getting-started suite time agrees with the README; the constraints-file example runs as the page says
def test_docs_suite_time_and_constraints_example(tmp_path, capsys):
    import re
    from pathlib import Path

    from .conftest import run_cli

    root = Path(__file__).resolve().parent.parent
    readme = re.search(r"test suite \(about ([^,)]+)", (root / "README.md").read_text()).group(1)
    guide = re.search(r"test suite \(about ([^,)]+)", (root / "docs/getting-started.md").read_text()).group(1)
    assert readme.split()[:2] == guide.split()[:2], (readme, guide)
    page = (root / "docs/constraints.md").read_text()
    block = page.split("## Constraints file", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "c.yaml").write_text(block)
    assert "--space accpar --constraints c.yaml" in page
    code, _, err = run_cli(["--model", "vgg-a", "--space", "accpar", "--constraints", str(tmp_path / "c.yaml")], capsys)
    assert code == 0, err
    code, _, err = run_cli(["--model", "vgg-a", "--constraints", str(tmp_path / "c.yaml")], capsys)
    assert code == 2 and "forbids[0]: type III is not in the hypar space (I, II)" in err


# finding 19: a rerun with another grid removes the plots explore plot drew from the old results, and nothing else
def test_rerun_with_another_grid_removes_our_stale_plots(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from .conftest import run_cli

    spec, out = tmp_path / "s1.yaml", tmp_path / "r1"
    spec.write_text("version: 1\nname: s1\ngrid: {model: [lenet-c, alexnet], levels: [1, 2]}\n")
    assert run_cli(["sweep", str(spec), "--out", str(out), "--quiet"], capsys)[0] == 0
    assert run_cli(["plot", str(out), "--plan", "3"], capsys)[0] == 0
    assert run_cli(["plot", str(out), "--x", "levels", "--y", "traffic_bytes", "--hue", "model"], capsys)[0] == 0
    elsewhere = tmp_path / "kept.png"
    assert run_cli(["plot", str(out), "--plan", "0", "--out", str(elsewhere)], capsys)[0] == 0
    (out / "mine.png").write_bytes(b"not ours")
    assert run_cli(["sweep", str(spec), "--out", str(out), "--quiet"], capsys)[0] == 0  # same points: plots kept
    assert (out / "plan-3.png").exists()
    spec.write_text("version: 1\nname: s1\ngrid: {model: [lenet-c], levels: [1, 2]}\n")
    code, _, err = run_cli(["sweep", str(spec), "--out", str(out), "--quiet"], capsys)
    assert code == 0 and "removed 2 plots drawn from an older grid of this sweep" in err
    assert not (out / "plan-3.png").exists() and not (out / "line-traffic_bytes-vs-levels-by-model.png").exists()
    assert (out / "mine.png").exists() and elsewhere.exists()


# finding 23: 'an A100'
def test_gpu_memory_error_article(capsys):
    from explorer.frontends.graph_build import article

    from .conftest import run_cli

    code, _, err = run_cli(["--model", "gpt3-1.7b", "--array", "dgx-a100", "--gpus", "8", "--memory", "200"], capsys)
    assert code == 2 and "200 GiB is more than an A100-SXM4-80GB's 80 GiB" in err
    assert [article(w) for w in ("add", "concat", "H100", "V100", "MI250X", "T4", "attention")] == \
        ["an", "a", "an", "a", "an", "a", "an"]


# findings 20, 22: a series equal to another says so and stays visible; a categorical x is not joined by a line
def test_identical_series_and_categorical_x(tmp_path):
    pytest.importorskip("matplotlib")
    from explorer.api import sweep
    from explorer.app.sweep.plot import Chart, chart_figure

    (tmp_path / "s.yaml").write_text("version: 1\ngrid: {model: [lenet-c, sfc], levels: [1, 2], solver: [dp, exact]}\n")
    list(sweep(tmp_path / "s.yaml", tmp_path / "o", workers=1))
    fig, _ = chart_figure(tmp_path / "o", Chart(x="levels", y="traffic_bytes", hue=("model", "solver")))
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    assert "lenet-c exact (same as lenet-c dp)" in lines and "sfc exact (same as sfc dp)" in lines
    assert lines["lenet-c exact (same as lenet-c dp)"].get_linestyle() == "--"
    assert lines["lenet-c exact (same as lenet-c dp)"].get_markerfacecolor() == "none"
    assert lines["lenet-c dp"].get_linestyle() == "-"
    fig, _ = chart_figure(tmp_path / "o", Chart(x="model", y="traffic_bytes", hue=("solver",), where=(("levels", "2"),)))
    assert all(ln.get_linestyle() == "None" for ln in fig.axes[0].get_lines())
