"""Hostile input, round 3 (issue 24): an anchor bomb in a constraints file, sweep folders and
result files that are not what they should be, a double Ctrl-C, the API given wrong types, and
destinations that would replace an input. Each case: one line and exit 2 (or a right answer),
never a traceback, a hang or a silent replacement."""

from __future__ import annotations

import csv
import json
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from explorer import api
from explorer.core.errors import SpecError
from explorer.frontends import zoo

from .conftest import run_cli

ANCHORS = """\
x:
  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
  g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
  h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
"""  # *h stands for 9^8 = 43 million strings


@contextmanager
def deadline(seconds: int):
    """Fail (instead of hanging the suite) when the block runs longer than ``seconds``."""
    def alarm(signum, frame):
        raise AssertionError(f"still running after {seconds} s: a hang")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# --- an anchor bomb in a constraints file -------------------------------------------------------


@pytest.mark.parametrize("field, message", [
    ("pins: *h", "pins[0]: must be a LAYER@LEVEL=TYPE string, got [[[["),
    ("pins: [*h]", "pins[0]: must be a LAYER@LEVEL=TYPE string, got [[[["),
    ("forbids: *h", "forbids[0]: must be a LAYER=TYPE string, got [[[["),
    ("caps: {0: *h}", "caps.0: cannot read [[[["),
    ("weight_copies: *h", "weight_copies: must be a non-negative integer up to 2^40, got [[[["),
], ids=["pins", "pins-item", "forbids", "caps", "weight_copies"])
def test_an_anchor_bomb_in_a_constraints_file_is_refused_at_once(tmp_path, capsys, field, message):
    c = write(tmp_path / "c.yaml", f"version: 1\n{ANCHORS}{field}\n")
    t0 = time.perf_counter()
    with deadline(30):
        code, out, err = run_cli(["--model", "sfc", "--constraints", str(c)], capsys)
    assert time.perf_counter() - t0 < 10
    assert code == 2 and out == "" and err.count("\n") == 1 and len(err) < 2000, err[:300]
    assert message in err


def test_a_long_list_of_bad_pins_is_one_short_line(tmp_path, capsys):
    c = write(tmp_path / "c.yaml", "version: 1\npins: [" + ", ".join(["5"] * 5000) + "]\n")
    code, _, err = run_cli(["--model", "sfc", "--constraints", str(c)], capsys)
    assert code == 2 and err.count("\n") == 1 and len(err) < 1000
    assert err.count("must be a LAYER@LEVEL=TYPE string, got 5") == 10 and "and 4,990 more problems" in err


# --- sweep folders ---------------------------------------------------------------------------

SWEEP = "version: 1\ngrid: {model: [lenet-c], levels: [1, 2]}\n"


def test_a_file_where_the_cache_goes_is_bad_input(tmp_path, capsys):
    f = write(tmp_path / "s.yaml", SWEEP)
    out = tmp_path / "o"
    out.mkdir()
    (out / "cache").write_text("not a folder")
    code, _, err = run_cli(["sweep", str(f), "--out", str(out), "--workers", "1"], capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"{out / 'cache'} is not a folder (the sweep keeps its cache there)" in err
    assert sorted(p.name for p in out.iterdir()) == ["cache"], "nothing written"


def test_a_file_where_a_cache_entry_folder_goes_is_bad_input(tmp_path, capsys):
    f = write(tmp_path / "s.yaml", SWEEP)
    out = tmp_path / "o"
    assert run_cli(["sweep", str(f), "--out", str(out), "--workers", "1", "--quiet"], capsys)[0] == 0
    for sub in (out / "cache").iterdir():  # every entry's folder becomes a file
        shutil.rmtree(sub)
        sub.write_text("")
    code, _, err = run_cli(["sweep", str(f), "--out", str(out), "--workers", "1", "--quiet"], capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err and "cannot write the cache entry" in err


def test_a_cache_entry_of_another_point_is_not_trusted(tmp_path):
    f = write(tmp_path / "s.yaml", SWEEP)
    first = list(api.sweep(str(f), tmp_path / "o", workers=1))
    entries = sorted((tmp_path / "o" / "cache").glob("*/*.json"))
    assert len(entries) == 2 and first[0]["traffic_elements"] != first[1]["traffic_elements"]
    by_levels = {}
    for e in entries:  # which entry is which point
        by_levels[json.loads(json.loads(e.read_text())["result_text"])["levels"]] = e
    shutil.copyfile(by_levels[1], by_levels[2])  # a valid entry, of levels 1, over levels 2's
    again = list(api.sweep(str(f), tmp_path / "o", workers=1))
    assert [r["cached"] for r in again] == [True, False], "the copied entry is recomputed"
    assert [r["traffic_elements"] for r in again] == [r["traffic_elements"] for r in first]
    assert [r["cached"] for r in api.sweep(str(f), tmp_path / "o", workers=1)] == [True, True]


def test_another_sweeps_outputs_are_not_replaced_without_force(tmp_path, capsys):
    a = write(tmp_path / "a.yaml", "version: 1\nname: a\ngrid: {model: [lenet-c], levels: [1, 2]}\n")
    b = write(tmp_path / "b.yaml", "version: 1\nname: b\ngrid: {model: [lenet-c], levels: [3]}\n")
    out = tmp_path / "o"
    assert run_cli(["sweep", str(a), "--out", str(out), "--workers", "1", "--quiet"], capsys)[0] == 0
    before = {n: (out / n).read_text() for n in ("results.csv", "plans.jsonl", "sweep.json")}
    code, _, err = run_cli(["sweep", str(b), "--out", str(out), "--workers", "1", "--quiet"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert f"--out: {out} holds the results of sweep 'a', not of sweep 'b'" in err and "--force" in err
    assert {n: (out / n).read_text() for n in before} == before
    with pytest.raises(SpecError, match="holds the results of sweep 'a'"):
        api.sweep(str(b), out, workers=1)
    # the same sweep again (edited: a point more) resumes; --force replaces another's
    write(a, "version: 1\nname: a\ngrid: {model: [lenet-c], levels: [1, 2, 3]}\n")
    assert run_cli(["sweep", str(a), "--out", str(out), "--workers", "1", "--quiet"], capsys)[0] == 0
    assert run_cli(["sweep", str(b), "--out", str(out), "--workers", "1", "--quiet", "--force"], capsys)[0] == 0
    assert json.loads((out / "sweep.json").read_text())["name"] == "b"


def test_results_of_no_sweep_are_not_replaced(tmp_path, capsys):
    f = write(tmp_path / "s.yaml", SWEEP)
    out = tmp_path / "o"
    out.mkdir()
    write(out / "results.csv", "mine\n")
    code, _, err = run_cli(["sweep", str(f), "--out", str(out), "--workers", "1"], capsys)
    assert code == 2 and "holds results.csv of no sweep (no sweep.json)" in err
    assert (out / "results.csv").read_text() == "mine\n"


def test_merge_into_another_sweeps_folder_needs_force(tmp_path, capsys):
    a = write(tmp_path / "a.yaml", "version: 1\nname: a\ngrid: {model: [lenet-c], levels: [1, 2]}\n")
    b = write(tmp_path / "b.yaml", "version: 1\nname: b\ngrid: {model: [lenet-c], levels: [3]}\n")
    for i in range(2):
        assert run_cli(["sweep", str(a), "--out", str(tmp_path / f"s{i}"), "--shard", f"{i}/2", "--workers", "1",
                        "--quiet"], capsys)[0] == 0
    other = tmp_path / "other"
    assert run_cli(["sweep", str(b), "--out", str(other), "--workers", "1", "--quiet"], capsys)[0] == 0
    before = (other / "results.csv").read_text()
    shards = [str(tmp_path / "s0"), str(tmp_path / "s1")]
    code, _, err = run_cli(["sweep", "merge", *shards, "--out", str(other)], capsys)
    assert code == 2 and "holds the results of sweep 'b', not of sweep 'a'" in err
    assert (other / "results.csv").read_text() == before
    assert run_cli(["sweep", "merge", *shards, "--out", str(tmp_path / "s0")], capsys)[0] == 0, "into a shard: same sweep"
    assert run_cli(["sweep", "merge", *shards, "--out", str(other), "--force"], capsys)[0] == 0
    assert json.loads((other / "sweep.json").read_text())["name"] == "a"


def test_a_grid_beyond_the_integer_limit_is_refused_up_front(tmp_path, capsys):
    for key, value in (("batch", 2**70), ("seq", 2**70), ("weight_copies", 2**41), ("seed", -1), ("seed", 2**31)):
        f = write(tmp_path / "s.yaml", f"version: 1\ngrid: {{model: [lenet-c], {key}: [{value}]}}\n")
        code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o")], capsys)
        assert code == 2 and err.count("\n") == 1 and f"grid.{key}[0]: must be" in err, (key, err)
        assert not (tmp_path / "o").exists()


# --- result files cut short --------------------------------------------------------------------


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished sweep folder (3 points) to copy and damage."""
    root = tmp_path_factory.mktemp("finished")
    f = write(root / "s.yaml", "version: 1\ngrid: {model: [lenet-c], levels: [1, 2, 3]}\n")
    list(api.sweep(str(f), root / "o", workers=1))
    return root / "o"


def damaged(finished: Path, tmp_path: Path, name: str, edit) -> Path:
    out = tmp_path / "o"
    shutil.copytree(finished, out)
    (out / name).write_text(edit((out / name).read_text()))
    return out


def test_plot_plan_on_a_truncated_plans_file_is_bad_input(finished, tmp_path, capsys):
    out = damaged(finished, tmp_path, "plans.jsonl", lambda t: t[: len(t) * 2 // 3])
    code, _, err = run_cli(["plot", str(out), "--plan", "2", "--out", str(tmp_path / "p.png")], capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "plans.jsonl: line 3: not a sweep result (truncated or edited?)" in err
    code, _, err = run_cli(["plot", str(out), "--plan", "0", "--out", str(tmp_path / "p.png")], capsys)
    assert code == 0, "a point before the cut still draws"


@pytest.mark.parametrize("cut", ["mid-line", "whole-line", "extra-cell"])
def test_plot_notices_a_truncated_results_table(finished, tmp_path, capsys, cut):
    edit = {"mid-line": lambda t: t[:-7],
            "whole-line": lambda t: "".join(t.splitlines(keepends=True)[:-1]),
            "extra-cell": lambda t: t.replace("\n", ",x\n", 2).replace(",x\n", "\n", 1)}[cut]
    out = damaged(finished, tmp_path, "results.csv", edit)
    code, _, err = run_cli(["plot", str(out), "--x", "levels", "--y", "traffic_bytes", "--out", str(tmp_path / "p.png")],
                           capsys)
    assert code == 2 and err.count("\n") == 1 and not (tmp_path / "p.png").exists()
    assert {"mid-line": "results.csv: truncated (the last line is cut short)",
            "whole-line": "results.csv: 2 rows, but plans.jsonl beside it holds 3 points",
            "extra-cell": "line 2 does not have the header's"}[cut] in err


def test_plot_of_a_number_beyond_floats_is_bad_input(finished, tmp_path, capsys):
    def huge(text):
        rows = list(csv.reader(text.splitlines()))
        rows[2][rows[0].index("traffic_bytes")] = "1e400"
        return "".join(",".join(r) + "\n" for r in rows)

    out = damaged(finished, tmp_path, "results.csv", huge)
    for extra in (["--logy"], [], ["--pareto"], ["--kind", "heatmap", "--z", "traffic_bytes", "--y", "model"]):
        args = ["plot", str(out), "--x", "levels", "--y", "traffic_bytes", *extra, "--out", str(tmp_path / "p.png")]
        code, _, err = run_cli(args, capsys)
        assert code == 2 and err.count("\n") == 1, (extra, err)
        assert "column traffic_bytes: '1e400' is beyond the range a plot can draw" in err


def test_a_reference_value_beyond_floats_is_bad_input(tmp_path, capsys):
    f = write(tmp_path / "s.yaml", "version: 1\nname: r\ngrid: {model: [lenet-c], levels: [1, 2]}\nreference:\n"
                                   "  x: levels\n  y: traffic_bytes\n  series:\n    paper: {1: '1e400', 2: 5}\n")
    list(api.sweep(str(f), tmp_path / "o", workers=1))
    code, _, err = run_cli(["plot", str(tmp_path / "o"), "--reference", "--out", str(tmp_path / "p.png")], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "reference.series.paper.1: '1e400' is beyond the range a plot can draw" in err


# --- a double Ctrl-C -------------------------------------------------------------------------


def test_a_second_ctrl_c_during_the_pool_shutdown_is_ignored(tmp_path):
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {model: [resnet50, vgg-a], levels: [6, 7], solver: [cpsat], "
                                   "space: [accpar]}\n")
    for n, gap in enumerate((0.0, 0.02)):
        out = tmp_path / f"o{n}"
        p = subprocess.Popen([sys.executable, "-m", "explorer.app.cli", "sweep", str(f), "--out", str(out),
                              "--workers", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline_s = time.time() + 60
        while not out.exists() and time.time() < deadline_s:  # made once the handler is set, just before the pool
            time.sleep(0.05)
        assert out.exists()
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        time.sleep(gap)
        p.send_signal(signal.SIGINT)
        time.sleep(0.01)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 130 and "Traceback" not in err, err[-2000:]
        assert err.strip().splitlines()[-1].startswith("explore: interrupted;")


# --- the API given wrong types ---------------------------------------------------------------


@pytest.mark.parametrize("call, message", [
    (lambda: api.check("sfc", solvers=["exact", 3]), "solvers: must be a list of solver names"),
    (lambda: api.check("sfc", solvers=5), "solvers: must be a list of solver names"),
    (lambda: api.check("sfc", solvers=[]), "solvers: no solvers given (choose from exact, cpsat, brute, pruned)"),
    (lambda: api.check("sfc", solvers=["exact"], time_limit=-1), "time_limit: must be a finite number of seconds >= 0.1, got -1"),
    (lambda: api.solve("sfc", time_limit=-1), "time_limit: must be a finite number of seconds >= 0.1, got -1"),
    (lambda: api.solve("sfc", time_limit=0), "time_limit: must be a finite number"),
    (lambda: api.solve("sfc", time_limit=float("nan")), "time_limit: must be a finite number"),
    (lambda: api.solve("sfc", time_limit=float("inf")), "time_limit: must be a finite number"),
    (lambda: api.solve("sfc", workers=0), "workers: must be an integer from 1 to 256, got 0"),
    (lambda: api.solve("sfc", seed=-1), "seed: must be an integer from 0 to 2,147,483,647, got -1"),
    (lambda: api.solve("sfc", seed=None), "seed: must be an integer"),
    (lambda: api.solve("sfc", solver="cpsat", dump_model=5), "dump_model: must be a path, got 5"),
    (lambda: api.solve("sfc", progress=5), "progress: must be a function or None, got 5"),
    (lambda: api.sweep(SWEEP_DICT, out=123), "out: must be a folder path or None, got 123"),
    (lambda: api.sweep(123), "spec: must be a sweep file path, a mapping or a Sweep, got 123"),
    (lambda: api.sweep(SWEEP_DICT, workers=0), "workers: must be an integer from 1 to 256, got 0"),
    (lambda: api.sweep(SWEEP_DICT, workers="2"), "workers: must be an integer from 1 to 256, got '2'"),
    (lambda: api.sweep(SWEEP_DICT, shard=5), "shard: must be 'I/N'"),
    (lambda: api.sweep(SWEEP_DICT, shard=(3, 2)), "shard: needs 0 <= I < N"),
    (lambda: api.sweep(SWEEP_DICT, pareto="ab"), "pareto: must be a list of column names"),
    (lambda: api.sweep(SWEEP_DICT, max_points="x"), "max_points: must be an integer >= 1"),
    (lambda: api.sweep(SWEEP_DICT, engine=3), "engine: must be 'local' or 'dask'"),
    (lambda: api.sweep(SWEEP_DICT, force="yes"), "force: must be True or False"),
    (lambda: api.sweep(SWEEP_DICT, progress=1), "progress: must be a function or None"),
])
def test_the_api_refuses_wrong_types_by_name(call, message):
    with pytest.raises(SpecError) as ex:
        call()
    assert message in str(ex.value) and "\n" not in str(ex.value)


SWEEP_DICT = {"version": 1, "grid": {"model": ["lenet-c"], "levels": [1]}}


def test_the_api_still_takes_good_arguments(tmp_path):
    r = api.check("sfc", solvers="exact", time_limit=5, workers=1, seed=3)
    assert r.agree
    rows = list(api.sweep(SWEEP_DICT, out=tmp_path / "o", workers=1, shard=(0, 1), pareto=[], force=False))
    assert len(rows) == 1 and rows[0]["status"] == "level-optimal"


# --- destinations that are inputs ---------------------------------------------------------------


def test_output_naming_an_input_is_refused(tmp_path, capsys):
    model = tmp_path / "m.yaml"
    shutil.copyfile(zoo.resolve_model("lenet-c"), model)
    text = model.read_text()
    link = tmp_path / "link.yaml"
    link.symlink_to(model)
    cons = write(tmp_path / "c.yaml", "version: 1\nweight_copies: 1\n")
    cases = [
        (["--model", str(model), "--output", str(model)], "--output", "--model"),
        (["--model", str(link), "--output", str(model)], "--output", "--model"),
        (["--model", str(model), "--output", str(tmp_path / "." / "m.yaml")], "--output", "--model"),
        (["--model", str(model), "--constraints", str(cons), "--output", str(cons)], "--output", "--constraints"),
        (["--model", str(model), "--solver", "cpsat", "--dump-model", str(model)], "--dump-model", "--model"),
        (["check", "--model", str(model), "--solvers", "exact", "--output", str(model)], "--output", "--model"),
        (["split", "--model", str(model), "--output", str(model)], "--output", "--model"),
    ]
    for args, option, which in cases:
        code, out, err = run_cli(args, capsys)
        assert code == 2 and err.count("\n") == 1, (args, err)
        assert f"{option}: " in err and f"is the {which} file; writing there would replace it" in err
    assert model.read_text() == text and cons.read_text() == "version: 1\nweight_copies: 1\n"


def test_output_naming_the_shipped_file_of_a_zoo_name_is_refused(tmp_path, capsys, monkeypatch):
    # the zoo is pointed at copies: were the refusal broken, the shipped files must not be the victims
    shipped = {"lenet-c": tmp_path / "lenet-c.yaml", "hypar-16": tmp_path / "hypar-16.yaml"}
    shutil.copyfile(zoo.resolve_model("lenet-c"), shipped["lenet-c"])
    shutil.copyfile(zoo.resolve_array("hypar-16"), shipped["hypar-16"])
    before = {k: p.read_text() for k, p in shipped.items()}
    monkeypatch.setattr(zoo, "resolve_model", lambda name: shipped.get(name))
    monkeypatch.setattr(zoo, "resolve_array", lambda name: shipped.get(name))
    code, _, err = run_cli(["--model", "lenet-c", "--output", str(shipped["lenet-c"])], capsys)
    assert code == 2 and "is the --model file" in err
    code, _, err = run_cli(["--model", "lenet-c", "--output", str(shipped["hypar-16"])], capsys)  # the default array
    assert code == 2 and "is the --array file" in err
    assert {k: p.read_text() for k, p in shipped.items()} == before
