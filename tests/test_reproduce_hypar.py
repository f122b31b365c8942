"""HyPar's figures: the paper-figure accounting (goldens by hand, the model's case against the
evaluator and the DP solver), the uniform-link torus, and ``explore reproduce hypar`` on two
small figures and its bad input."""

import json
from fractions import Fraction

import pytest

from explorer.api import build_problem, solve
from explorer.app.cli import main
from explorer.app.reproduce import points as points_mod
from explorer.app.seal import seal
from explorer.core.evaluate import evaluate
from explorer.core.network import Layer, LayerKind, Network
from explorer.core.paper_accounting import (
    Accounting,
    AccountingError,
    hierarchical_dp,
    level_costs,
    torus_uniform_level_bandwidths,
)
from explorer.core.partition import PartitionType
from explorer.core.plan import Plan
from explorer.core.randnet import random_chain
from explorer.frontends import load_model

I, II = PartitionType.I, PartitionType.II


def conv_pool_fc() -> Network:
    """conv 2->4 (1x1 kernel) on 4x4, pooled to 2x2, then fc 16->3; batch 2.
    conv: A(F_in) = 2*2*16 = 64, W = 8, A(F_out) = 2*4*16 = 128, pooled 2*4*4 = 32 (fc's input).
    fc:   A(F_in) = 32, W = 48, A(F_out) = 2*3 = 6."""
    return Network.chain("cpf", 2, [Layer("conv", LayerKind.CONV, 2, 4, (1, 1), (4, 4), (4, 4)),
                                    Layer("fc", LayerKind.FC, 16, 3)])


@pytest.mark.parametrize("types,model,figures", [
    ((I, I), 8 + 48, 8 + 48),  # dW + dW, no re-layout
    ((I, II), 8 + 6 + 16, 8 + 6 + 16),  # dW + fc's F_out + I->II (F/4 + E/4 = 32/2)
    ((II, I), 128 + 48 + 16, 32 + 48),  # model: F_out 128 + II->I E/2; figures: pooled 32, re-layout free
    ((II, II), 128 + 6 + 16, 32 + 6),  # model: II->II E/2 = 16; figures: free
])
def test_level_costs_by_hand(types, model, figures):
    net = conv_pool_fc()
    plan = Plan((types,))
    assert level_costs(net, plan, Accounting.MODEL) == (model,)
    assert level_costs(net, plan, Accounting.HYPAR_FIGURES) == (figures,)


def test_second_level_halves_by_the_first_levels_types():
    # level 0 (I, II): conv's batch halves, fc's D_i halves. Level 1 (II, II) under the figures'
    # accounting: conv's pooled output 32 / 2 = 16, fc's F_out (D_i split, B not) 6, re-layout 0.
    net = conv_pool_fc()
    assert level_costs(net, Plan(((I, II), (II, II))), Accounting.HYPAR_FIGURES) == (30, 22)
    # the model: conv F_out 128/2 = 64, fc 6, II->II E/2 of fc's input 32/2/2 = 8 -> 78
    assert level_costs(net, Plan(((I, II), (II, II))), Accounting.MODEL) == (30, 78)


@pytest.mark.parametrize("seed", range(12))
def test_model_accounting_is_the_evaluator_and_the_dp(seed):
    """The accounting module's MODEL case is model.md: the evaluator's level costs on random
    plans and the dp solver's plan on seeded random chains."""
    import random

    net = random_chain(seed, 2 + seed % 5, consistent=True)
    levels = 1 + seed % 3
    p = build_problem(net, "hypar-paper", batch=net.batch, levels=levels, memory_GiB=10**6)
    rng = random.Random(seed)
    for _ in range(5):
        plan = Plan(tuple(tuple(rng.choice((I, II)) for _ in net.layers) for _ in range(levels)))
        assert level_costs(net, plan, Accounting.MODEL) == evaluate(p.network, p.array, p.space, plan).level_cost
    r = solve(net, "hypar-paper", batch=net.batch, levels=levels, memory_GiB=10**6)
    assert hierarchical_dp(net, levels, Accounting.MODEL) == r.plan


def test_vgg_a_conv5_2_at_h4_needs_both_changes():
    """HyPar's Fig. 5 has VGG-A's conv5_2 model-parallel at H4. At H4 (batch 256/8 = 32 after
    three I levels; fc6 II above): I costs dW 2,359,296 + I->II into fc6 401,408 = 2,760,704.
    II under the figures' accounting: pooled output 32*512*7*7 = 802,816 + I->II from conv5_1
    32*512*14*14/2 = 1,605,632 + II->II into fc6 0 = 2,408,448 < I. The model charges the
    unpooled 3,211,264 and 401,408 into fc6."""
    net = load_model("vgg-a").with_batch(256)
    names = [x.name for x in net.layers]
    k = names.index("conv5_2")
    figures = hierarchical_dp(net, 4, Accounting.HYPAR_FIGURES)
    model = hierarchical_dp(net, 4, Accounting.MODEL)
    assert figures.at(3, k) is II and model.at(3, k) is I
    assert [figures.at(h, k) for h in range(3)] == [I, I, I]
    rows = [list(r) for r in model.types]
    rows[3][k] = II
    flipped = Plan(tuple(tuple(r) for r in rows))
    d_model = level_costs(net, flipped, Accounting.MODEL)[3] - level_costs(net, model, Accounting.MODEL)[3]
    d_fig = level_costs(net, flipped, Accounting.HYPAR_FIGURES)[3] - level_costs(net, model, Accounting.HYPAR_FIGURES)[3]
    assert d_model == 3_211_264 + 1_605_632 - 2_359_296 == 2_457_600
    assert d_fig == 802_816 + 1_605_632 - 401_408 - 2_359_296 == -352_256


def test_accounting_refuses_graphs():
    net = load_model("resnet18")
    with pytest.raises(AccountingError, match="chains"):
        level_costs(net, Plan(((I,) * len(net.layers),)), Accounting.HYPAR_FIGURES)


def test_uniform_torus_bandwidths():
    assert torus_uniform_level_bandwidths(4, Fraction(959, 10)) == (Fraction(959, 10),) * 4


def run(args, capsys):
    with pytest.raises(SystemExit) as e:
        main(args)
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def test_reproduce_figure_9_json_png_and_cache(tmp_path, capsys):
    code, out, err = run(["reproduce", "hypar", "--figure", "9", "--out", str(tmp_path), "--format", "json",
                          "--accounting", "hypar-figures"], capsys)
    assert code == 0, err
    d = json.loads(out)
    rows = {(r["series"], r["x"]): r for r in d["figures"][0]["rows"]}
    # the figures' accounting finds the paper's Lenet-c plan: H1 0011, H4 0011
    assert rows[("hypar", "plan")]["ours"] == rows[("hypar", "plan")]["paper"] == "0011,0011"
    assert rows[("hypar", "performance")]["paper"] == 3.05
    assert abs(rows[("hypar", "performance")]["error"]) < 0.05
    png = tmp_path / "hypar-fig9.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    cached = sorted((tmp_path / ".cache").glob("*.json"))
    assert cached
    cached[0].write_text("{not json")  # a damaged entry is solved again
    points_mod._memo.cache_clear()  # else the rerun takes this process's memo and never reads the folder
    code, out2, _ = run(["reproduce", "hypar", "--figure", "9", "--out", str(tmp_path), "--format", "json",
                         "--accounting", "hypar-figures"], capsys)
    assert code == 0 and json.loads(out2)["figures"][0]["rows"] == d["figures"][0]["rows"]


def test_reproduce_figure_13_table(tmp_path, capsys):
    code, out, err = run(["reproduce", "hypar", "--figure", "13", "--out", str(tmp_path)], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1].split() == ["series", "x", "ours", "paper", "unit", "error"]
    assert any(line.split()[:2] == ["hypar", "fc3-b4096-h4"] and "2.4" in line for line in lines)
    assert (tmp_path / "hypar-fig13.png").is_file()


@pytest.mark.parametrize("args,message", [
    (["--figure", "4"], "'4' is not one of"),
    (["--figure", "14"], "'14' is not one of"),
    ([], "give --figure N (5..13) or --all"),
])
def test_reproduce_bad_figure(tmp_path, capsys, args, message):
    code, out, err = run(["reproduce", "hypar", *args, "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_reproduce_unwritable_out(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, out, err = run(["reproduce", "hypar", "--figure", "9", "--out", str(blocker / "sub")], capsys)
    assert code == 2 and out == "" and err.startswith("explore: error: --out: cannot write") and len(err.splitlines()) == 1
    code, out, err = run(["reproduce", "hypar", "--figure", "9", "--out", str(blocker)], capsys)
    assert code == 2 and "--out: cannot write" in err and len(err.splitlines()) == 1


def test_plot_reference_units():
    """explore plot --reference puts Fig. 8's GB on our traffic_bytes axis (1e9), nothing else."""
    from explorer.app.sweep.plot import reference_scale

    assert reference_scale("GB", "traffic_bytes") == 10**9
    assert reference_scale("GB", "step_time_s") == 1
    assert reference_scale(None, "traffic_bytes") == 1


def test_paper_values_file_is_complete():
    """Every per-network series names the ten networks and the gmean; Fig. 5's plans fit the zoo
    networks' layers; Fig. 13's workloads build."""
    from explorer.app.reproduce.paper import FIGURES, paper_values

    pv = paper_values()
    assert sorted(pv.figures) == list(FIGURES) and all(pv.figure(n).get("title") and pv.figure(n).get("read") for n in FIGURES)
    for n in (6, 7, 8):
        for name, values in pv.figure(n)["series"].items():
            assert list(values) == [*pv.networks, "gmean"], (n, name)
    for name, rows in pv.figure(5)["plans"].items():
        layers = len(pv.network(name).layers)
        assert len(rows) == 4 and all(len(r) == layers and set(r) <= {"0", "1"} for r in rows), name
    for w in pv.figure(13)["workloads"]:
        net, levels = pv.workload(w)
        assert net.batch in (32, 4096) and levels in (2, 3, 4)


def test_the_commands_figure_list_is_the_papers():
    # the CLI names the figures without importing the reproduction; both lists must agree
    from explorer.app.reproduce import cli, paper

    assert cli.FIGURES == paper.FIGURES


def _boxes(f):
    f.canvas.draw()
    r = f.canvas.get_renderer()
    ax = f.axes[0]
    ticks = [t.get_window_extent(r) for t in ax.get_xticklabels() if t.get_text()]
    return r, ax, ticks, f.legends[0].get_window_extent(r) if f.legends else ax.get_legend().get_window_extent(r)


def test_figure_9_legend_covers_no_cell(tmp_path):
    """Fig. 9's legend sat inside the heatmap, over its top-left cells: now it is under the axes,
    clear of the image, the tick labels and the axis label."""
    pytest.importorskip("matplotlib")
    from explorer.app.reproduce.draw import render
    from explorer.app.reproduce.hypar import Context, reproduce

    f = render(reproduce(9, Context(Accounting.MODEL, tmp_path)), "model")
    r, ax, ticks, legend = _boxes(f)
    image = ax.images[0].get_window_extent(r)
    assert not legend.overlaps(image) and all(not legend.overlaps(t) for t in ticks)
    assert not legend.overlaps(ax.xaxis.label.get_window_extent(r)) and legend.y1 < image.y0


@pytest.mark.parametrize("n", [6, 11])
def test_bar_figure_legends_sit_just_under_the_tick_labels(tmp_path, n):
    """Figs. 6-8, 11-13: the legend under the turned tick labels (or the axis label) with no empty
    band between them (it was anchored at a fixed offset: a band of ~30 px at 90 dpi) and none below."""
    pytest.importorskip("matplotlib")
    from explorer.app.reproduce.draw import render
    from explorer.app.reproduce.hypar import Context, reproduce

    f = render(reproduce(n, Context(Accounting.MODEL, tmp_path)), "model")
    f.set_dpi(90)
    r, ax, ticks, legend = _boxes(f)
    above = min([t.y0 for t in ticks] + ([ax.xaxis.label.get_window_extent(r).y0] if ax.xaxis.label.get_text() else []))
    assert 0 <= above - legend.y1 <= 15, (above, legend.y1)  # pixels between the labels and the legend
    assert legend.y0 <= 15  # and the legend at the figure's foot


def test_figure_5_names_level_where_they_fit(tmp_path):
    """Fig. 5's panels: SFC's fc1 .. fc4 and VGG-A's names are written level (they fit); VGG-B's
    13 names in a narrow panel are turned upright, every one kept; none overlap."""
    pytest.importorskip("matplotlib")
    from explorer.app.reproduce.draw import render
    from explorer.app.reproduce.hypar import Context, reproduce
    from explorer.app.sweep import layout

    f = render(reproduce(5, Context(Accounting.MODEL, tmp_path)), "model")
    f.canvas.draw()
    panels = {ax.get_title().split(" (")[0]: layout.shown_xticklabels(ax) for ax in f.axes}
    assert {t.get_rotation() for t in panels["SFC"]} == {t.get_rotation() for t in panels["VGG-A"]} == {0.0}
    assert {t.get_rotation() for t in panels["VGG-B"]} == {90.0} and len(panels["VGG-B"]) == 13
    r = f.canvas.get_renderer()
    assert not layout.overlapping(panels["SFC"], r) and not layout.overlapping(panels["VGG-A"], r)
    for labels in panels.values():  # turned ones may stand closer than the level ones' padding, never touch
        boxes = sorted((t.get_window_extent(r) for t in labels), key=lambda b: b.x0)
        assert all(a.x1 <= b.x0 for a, b in zip(boxes, boxes[1:]))


def test_the_point_cache_is_keyed_by_the_code_as_the_sweep_cache_is(tmp_path, monkeypatch):
    """An entry written by other code (another code digest or version) is not read: the point is
    solved again (trial 14, finding 5: a rerun after an upgrade printed the old plans and traffic).
    An entry of the same code is read (a doubled cost, sealed as an entry is written, stands in for one
    written by older code)."""
    from explorer.app import code_stamp as stamp_mod

    net = load_model("lenet-c")
    solve_point = lambda: points_mod.point(net, 2, Accounting.HYPAR_FIGURES, tmp_path)  # noqa: E731
    points_mod._memo.cache_clear()  # solve, or read the folder: not this process's memo
    fresh = solve_point()
    (entry,) = tmp_path.glob("*.json")
    data = json.loads(entry.read_text())
    data["plans"][0][2] = [str(2 * Fraction(x)) for x in data["plans"][0][2]]
    del data["digest"]
    entry.write_text(seal(json.dumps(data)))  # resealed: an entry written so, not an edited one (app.seal)
    points_mod._memo.cache_clear()
    stale = solve_point()
    assert stale.costs("hypar") == tuple(2 * c for c in fresh.costs("hypar"))  # the same code reads its entry
    for name, other in (("code_digest", lambda: "0" * 64), ("__version__", "0.0.0")):
        with monkeypatch.context() as m:
            m.setattr(stamp_mod, name, other)  # the code changed (or the version did)
            points_mod._memo.cache_clear()
            again = solve_point()
        assert again.costs("hypar") == fresh.costs("hypar") and again.plans == fresh.plans
    assert len(list(tmp_path.glob("*.json"))) == 3  # one entry per code
    points_mod._memo.cache_clear()


def test_an_edited_point_cache_entry_is_solved_again_not_read(tmp_path):
    """Review finding: the sweep cache's seal was not the point cache's: an entry edited by hand (its
    HyPar level costs halved, well formed, its own key and stamp) was read as solved, and the figures
    drawn from it. Sealed (``app.seal``), it is solved again and rewritten."""
    net = load_model("lenet-c")
    solve_point = lambda: points_mod.point(net, 2, Accounting.HYPAR_FIGURES, tmp_path)  # noqa: E731
    points_mod._memo.cache_clear()
    fresh = solve_point()
    (entry,) = tmp_path.glob("*.json")
    data = json.loads(entry.read_text())
    data.pop("digest", None)
    data["plans"][0][2] = [str(Fraction(x) / 2) for x in data["plans"][0][2]]
    entry.write_text(json.dumps(data))
    ledger = points_mod.Ledger()
    points_mod._memo.cache_clear()
    again = points_mod.point(net, 2, Accounting.HYPAR_FIGURES, tmp_path, ledger)
    assert again.costs("hypar") == fresh.costs("hypar") and again.plans == fresh.plans
    assert ledger.solved and not ledger.reused
    assert points_mod.unseal(entry.read_text()) is not None  # rewritten, sealed
    points_mod._memo.cache_clear()


def test_the_point_cache_says_what_it_reused_and_prunes_only_its_entries_of_other_code(tmp_path, capsys):
    """The output says how many points came from the cache (JSON: ``cache``; text: one stderr
    line); a run removes the entries of other code (another stamp, or none: written before
    entries held theirs) and leaves every file it did not write, and a damaged entry."""
    args = ["reproduce", "hypar", "--figure", "9", "--out", str(tmp_path), "--accounting", "hypar-figures"]
    points_mod._memo.cache_clear()
    code, out, err = run([*args, "--format", "json"], capsys)
    folder = tmp_path / ".cache"
    assert code == 0 and json.loads(out)["cache"] == {"folder": str(folder), "reused": 0, "solved": 1, "removed": 0,
                                                    "leftovers": 0}
    (entry,) = folder.glob("*.json")
    data = json.loads(entry.read_text())
    assert data["stamp"] == points_mod.code_stamp() and data["format"] == points_mod.CACHE_FORMAT
    old = {"a" * 24: {**data, "stamp": {**data["stamp"], "code": "0" * 64}},  # another code digest
           "b" * 24: {**data, "stamp": {**data["stamp"], "version": "0.0.0"}},  # another version
           "c" * 24: {"plans": data["plans"]}}  # written before entries held their stamp
    for name, body in old.items():
        (folder / f"{name}.json").write_text(json.dumps(body))
    keep = {"notes.txt": "mine", f"{'d' * 24}.json": '{"x": 1}', f"{'e' * 24}.json": "{damaged",
            f"{'f' * 23}.json": json.dumps(old["c" * 24]), f"{'0' * 23}.tmp": "x"}  # (not an entry's .tmp)
    for name, text in keep.items():
        (folder / name).write_text(text)
    (tmp_path / "elsewhere.json").write_text(json.dumps(old["c" * 24]))
    (folder / f"{'1' * 24}.json").symlink_to(tmp_path / "elsewhere.json")
    points_mod._memo.cache_clear()  # read the folder, not this process's memo
    code, out, err = run(args, capsys)
    assert code == 0 and err == f"[explore] 1 point: 1 from the cache ({folder}), 0 solved; removed 3 entries of other code\n"
    assert sorted(p.name for p in folder.iterdir()) == sorted([entry.name, *keep, f"{'1' * 24}.json"])
    assert (tmp_path / "elsewhere.json").exists()
    points_mod._memo.cache_clear()
    code, out, err = run([*args, "--format", "json"], capsys)
    assert json.loads(out)["cache"] == {"folder": str(folder), "reused": 1, "solved": 0, "removed": 0,
                                          "leftovers": 0}
    points_mod._memo.cache_clear()


def test_a_run_removes_the_leftover_tmp_files_of_a_stopped_run_and_nothing_else(tmp_path, capsys):
    """CLI polish, item 3: an entry is written as <key>.tmp, then renamed; a run stopped in between
    left the .tmp for ever. A run removes those older than its start, in its cache folder, of that
    name, regular files; nothing else (a newer one: a run under way elsewhere is writing it)."""
    import os
    import time

    args = ["reproduce", "hypar", "--figure", "9", "--out", str(tmp_path), "--accounting", "hypar-figures"]
    folder = tmp_path / ".cache"
    folder.mkdir()
    hour_ago, soon = time.time() - 3600, time.time() + 3600
    leftovers = [f"{'0' * 24}.tmp", f"{'9abc' * 6}.tmp"]
    keep = [f"{'0' * 23}.tmp", f"{'A' * 24}.tmp", f"{'1' * 24}.tmp.bak", "notes.tmp", f"{'2' * 24}.json.tmp",
            f"{'5' * 24}.tmp"]  # the last: newer than the run's start
    for name in leftovers + keep:
        (folder / name).write_text("{half")
        os.utime(folder / name, (hour_ago, hour_ago))
    os.utime(folder / keep[-1], (soon, soon))
    (folder / f"{'3' * 24}.tmp").mkdir()  # a folder of that name
    (tmp_path / "target.tmp").write_text("mine")
    (folder / f"{'4' * 24}.tmp").symlink_to(tmp_path / "target.tmp")
    os.utime(folder / f"{'4' * 24}.tmp", (hour_ago, hour_ago), follow_symlinks=False)
    (tmp_path / f"{'6' * 24}.tmp").write_text("{half")  # beside the cache folder, not in it
    os.utime(tmp_path / f"{'6' * 24}.tmp", (hour_ago, hour_ago))
    points_mod._memo.cache_clear()
    code, out, err = run(args, capsys)
    assert code == 0 and err.endswith("1 solved; removed 2 leftover .tmp files of a stopped run\n"), err
    names = {p.name for p in folder.iterdir()}
    assert not names & set(leftovers) and set(keep) <= names
    assert {f"{'3' * 24}.tmp", f"{'4' * 24}.tmp"} <= names and (tmp_path / "target.tmp").read_text() == "mine"
    assert (tmp_path / f"{'6' * 24}.tmp").exists()
    assert len([n for n in names if n.endswith(".json") and len(n) == 29]) == 1  # the run's own entry, renamed
    points_mod._memo.cache_clear()
    code, out, err = run([*args, "--format", "json"], capsys)
    assert json.loads(out)["cache"]["leftovers"] == 0 and set(keep) <= {p.name for p in folder.iterdir()}
    points_mod._memo.cache_clear()
