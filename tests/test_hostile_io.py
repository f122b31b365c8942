"""A hostile trial's findings on the files the tool owns and on plot text: a '$' in a title or a
layer name is drawn as written (matplotlib read it as mathtext: a traceback); a FIFO, or a file
larger than any the tool writes, where a cache entry, plans.jsonl or results.csv goes is refused in
one line (exit 2) or, a cache entry, solved again (it blocked or ate the memory); a title too long
to draw is refused; an interrupted sweep counts all the points cached, not only this run's."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading

import pytest

pytest.importorskip("matplotlib")

from explorer.api import sweep  # noqa: E402
from explorer.app.reproduce import points  # noqa: E402
from explorer.app.sweep import cache, fonts, plot, table  # noqa: E402
from explorer.core.errors import SpecError  # noqa: E402
from explorer.frontends import bounded  # noqa: E402

LAYER = "f$\\q{$"  # passes the spec reader's printable check; mathtext fails on it
TITLES = ("$x^{$", "$\\frac{1}{0}\\undefinedmacro$")


def _explore(cwd, *args, timeout=300):
    return subprocess.run([sys.executable, "-m", "explorer.app.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def dollar(tmp_path_factory):
    """A sweep of a model whose first layer is named LAYER, at batch 8 and 16."""
    root = tmp_path_factory.mktemp("dollar")
    (root / "m.yaml").write_text(
        'version: 1\nname: "m$\\\\bad{$"\nbatch: 8\nlayers:\n'
        '  - {name: "f$\\\\q{$", kind: fc, in_features: 4, out_features: 4}\n'
        '  - {name: fc2, kind: fc, in_features: 4, out_features: 4}\n')
    spec = {"version": 1, "name": "d", "grid": {"batch": [8, 16]},
            "fixed": {"model": str(root / "m.yaml"), "array": "hypar-16", "solver": "exact"}}
    list(sweep(spec, root / "out", workers=1))
    return root


@pytest.mark.parametrize("title", TITLES)
def test_a_title_with_dollars_is_drawn_as_written(dollar, title):
    r = _explore(dollar, "plot", "out", "--x", "batch", "--y", "step_time_s", "--title", title, "--out", "p.png")
    assert r.returncode == 0 and "Traceback" not in r.stderr and (dollar / "p.png").is_file(), r.stderr
    with fonts.literal_text():
        fig, _ = plot.chart_figure(dollar / "out", plot.Chart("line", "batch", "step_time_s", title=title))
        fig.canvas.draw()
    assert fig.axes[0].get_title().split("\n")[0] == title
    assert not any(t.get_parse_math() for t in fig.findobj(lambda a: hasattr(a, "get_parse_math")))
    plot.pyplot().close(fig)


def test_a_layer_name_with_dollars_is_drawn_as_written(dollar):
    r = _explore(dollar, "plot", "out", "--plan", "0", "--out", "d.png")
    assert r.returncode == 0 and "Traceback" not in r.stderr and (dollar / "d.png").is_file(), r.stderr
    with fonts.literal_text():
        fig = plot.plan_figure(dollar / "out", 0)
        fig.canvas.draw()
    assert LAYER in [t.get_text() for t in fig.axes[0].get_xticklabels()]
    plot.pyplot().close(fig)


# --- 2, 3: files the tool owns: a FIFO is refused or replaced, never waited on; sizes are bounded ----------------

SMALL = "version: 1\nname: s\ngrid:\n  batch: [8, 16, 32]\nfixed: {model: lenet-c, array: hypar-16, solver: dp}\n"


@pytest.fixture
def small(tmp_path):
    (tmp_path / "s.yaml").write_text(SMALL)
    r = _explore(tmp_path, "sweep", "s.yaml", "--out", "o", "--workers", "1")
    assert r.returncode == 0, r.stderr
    return tmp_path


def _entries(out):
    return sorted(p for p in (out / "cache").glob("??/*.json"))


def _one_line_refusal(r, *words):
    assert r.returncode == 2, r.stdout + r.stderr
    line = r.stderr.strip()
    assert "\n" not in line and "Traceback" not in line and all(w in line for w in words), line


def test_a_fifo_cache_entry_is_solved_again_and_replaced(small):
    """As reproduce's cache does: the FIFO is not opened (it would block), the point is solved and
    its entry written in its place."""
    entry = _entries(small / "o")[0]
    entry.unlink()
    os.mkfifo(entry)
    r = _explore(small, "sweep", "s.yaml", "--out", "o", "--workers", "1", timeout=120)
    assert r.returncode == 0 and "2 reused from the cache, 1 computed" in r.stderr, r.stderr
    assert stat.S_ISREG(entry.stat().st_mode)


def test_a_fifo_where_plans_or_results_go_is_refused_in_one_line(small):
    (small / "o" / "plans.jsonl").rename(small / "plans.keep")
    os.mkfifo(small / "o" / "plans.jsonl")
    r = _explore(small, "sweep", "merge", "o", "--out", "m", timeout=60)
    _one_line_refusal(r, "o/plans.jsonl: a FIFO (named pipe), not a regular file")
    assert not (small / "m").exists()
    r = _explore(small, "plot", "o", "--plan", "0", "--out", "p.png", timeout=60)
    _one_line_refusal(r, "o/plans.jsonl", "FIFO")
    (small / "o" / "plans.jsonl").unlink()
    (small / "plans.keep").rename(small / "o" / "plans.jsonl")
    (small / "o" / "results.csv").unlink()
    os.mkfifo(small / "o" / "results.csv")
    r = _explore(small, "plot", "o", "--x", "batch", "--y", "traffic_bytes", "--out", "p.png", timeout=60)
    _one_line_refusal(r, "o/results.csv: cannot read: a FIFO (named pipe), not a regular file")
    assert not (small / "p.png").exists()


def test_a_cache_entry_over_the_cap_is_damaged_and_solved_again(small, monkeypatch):
    key = _entries(small / "o")[0].stem
    c = cache.Cache(small / "o")
    assert c.get(key, 0) is not None and not c.rejected
    monkeypatch.setattr(cache, "MAX_ENTRY_BYTES", 100)  # the entries hold more: each is "larger than any we write"
    assert c.get(key, 0) is None and c.rejected == [_entries(small / "o")[0]]


def test_a_reproduce_cache_entry_over_the_cap_is_not_read(tmp_path, monkeypatch):
    path = tmp_path / ("0" * 24 + ".json")
    path.write_text("x" * 101)
    read = []
    monkeypatch.setattr(points, "_from_json", lambda *a: read.append(a))
    monkeypatch.setattr(points, "MAX_ENTRY_BYTES", 100)
    assert points._read(path, "k", None, 1, None) is None and not read
    assert not points._stale(path)  # not ours to remove either


def test_plans_and_results_are_read_a_line_at_a_time_with_a_cap(small, monkeypatch):
    manifest, entries = table.read_entries(small / "o")
    cols, rows = table.read_rows(small / "o")
    assert len(entries) == len(rows) == 3
    monkeypatch.setattr(bounded, "MAX_LINE_BYTES", 40)  # a plans.jsonl line is longer; results.csv's header too
    with pytest.raises(SpecError, match=r"o/plans.jsonl: a line longer than 40 bytes$"):
        table.read_entries(small / "o")
    with pytest.raises(SpecError, match=r"o/results.csv: cannot read: a line longer than 40 bytes$"):
        table.read_rows(small / "o")


def test_a_spec_file_keeps_its_cap_and_a_fifo_spec_is_still_read(tmp_path, monkeypatch):
    """The one rule (``bounded``) serves the spec reader too; a spec may come from a pipe (``<(...)``)."""
    from explorer.frontends import yamlio

    (tmp_path / "a.yaml").write_text("a: 1\n" * 30)
    monkeypatch.setattr(yamlio, "MAX_SPEC_BYTES", 100)
    with pytest.raises(SpecError, match=r"a.yaml: larger than 100 bytes: not a spec file$"):
        yamlio.load_yaml_file(tmp_path / "a.yaml")
    monkeypatch.undo()
    fifo = tmp_path / "f.yaml"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text("a: 1\n"))
    writer.start()
    assert yamlio.load_yaml_file(fifo) == {"a": 1}
    writer.join()


# --- 4: a title too long to lay out; 5: what an interrupted sweep leaves cached ---------------------------------

def test_a_title_too_long_is_refused_and_the_longest_drawn_without_warnings(small):
    for title, words in (("x" * 201, "--title: 201 characters: a title has at most 200 characters in 4 lines"),
                         ("a\nb\nc\nd\ne", "--title: 5 lines: a title has at most 200")):
        r = _explore(small, "plot", "o", "--x", "batch", "--y", "traffic_bytes", "--title", title, "--out", "p.png")
        _one_line_refusal(r, words)
        assert not (small / "p.png").exists()
    for title in ("w " * 100, "x" * 200, ("y" * 49 + "\n") * 3 + "z" * 50):
        r = _explore(small, "plot", "o", "--x", "batch", "--y", "traffic_bytes", "--title", title, "--out", "p.png")
        assert r.returncode == 0 and r.stderr == "wrote p.png\n", r.stderr  # no warning
    r = _explore(small, "plot", "o", "--pareto", "--x", "traffic_bytes", "--y", "step_time_s", "--title", "x" * 201,
                 "--out", "q.png")
    _one_line_refusal(r, "--title: 201 characters")


def test_an_interrupted_sweep_says_this_runs_points_and_all_the_cached(small):
    from explorer.app.cli_sweep import Reporter
    from explorer.app.sweep.engine import Progress

    out = str(small / "o")
    report = Reporter(quiet=True)
    assert report.cached_text(out) == f"0 points cached this run, 3 in all in {out}'s cache"  # stopped before any point
    report(Progress(2, 9, 2, 0))  # 2 reused
    report(Progress(6, 9, 2, 1))  # 4 more done, one of which raised (not cached)
    assert report.cached_text(out) == f"3 points cached this run, 3 in all in {out}'s cache"
