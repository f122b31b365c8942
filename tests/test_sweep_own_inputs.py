"""A sweep never writes over its own inputs (trial 12, finding 5): an output it writes, replaces
or removes in --out that is the sweep file, or a model, array or constraints file it reads (by
its own name, a hard link or a symlink) is refused in one line naming --out and the file, exit
status 2, with or without --force, and nothing in the folder is written or removed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from explorer import api
from explorer.core.errors import SpecError
from explorer.frontends import zoo

from .conftest import run_cli

SWEEP = "version: 1\nname: s\ngrid: {levels: [1, 2]}\nfixed: {model: MODEL}\n"


def snapshot(folder: Path) -> dict[str, tuple[int, bytes | str]]:
    """Every entry under ``folder``: (inode, contents or link target); folders by name."""
    out = {}
    for p in sorted(folder.rglob("*")):
        key = str(p.relative_to(folder))
        if p.is_symlink():
            out[key] = (p.lstat().st_ino, os.readlink(p))
        elif p.is_file():
            out[key] = (p.stat().st_ino, p.read_bytes())
        else:
            out[key] = (p.stat().st_ino, "dir")
    return out


def refused(args, capsys, where: Path) -> str:
    """Run explore sweep with ``args``, with and without --force: exit 2, one line, ``where``
    unchanged; the message."""
    before = snapshot(where)
    for force in ([], ["--force"]):
        code, out, err = run_cli(["sweep", *args, "--workers", "1", "--quiet", *force], capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
        assert snapshot(where) == before, "nothing written or removed"
    return err


def test_the_sweep_file_as_results_csv_is_refused_with_or_without_force(tmp_path, capsys, monkeypatch):
    out = tmp_path / "o"
    out.mkdir()
    (out / "results.csv").write_text(SWEEP.replace("MODEL", "lenet-c"))
    monkeypatch.chdir(out)  # the finding's command: explore sweep results.csv --out .
    err = refused(["results.csv", "--out", str(out)], capsys, tmp_path)
    assert err == (f"explore: error: --out: {out / 'results.csv'} is the sweep file; writing the sweep's results.csv "
                   "there would replace it (choose another folder)\n")
    err = refused(["results.csv", "--out", "."], capsys, tmp_path)
    assert "--out: results.csv is the sweep file; writing the sweep's results.csv there" in err


def test_a_model_yaml_as_plans_jsonl_is_refused(tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()
    shutil.copy(zoo.resolve_model("lenet-c"), out / "plans.jsonl")
    (out / "s.yaml").write_text(SWEEP.replace("MODEL", "plans.jsonl"))
    err = refused([str(out / "s.yaml"), "--out", str(out)], capsys, tmp_path)
    assert (f"--out: {out / 'plans.jsonl'} is the model file this sweep reads (model: plans.jsonl); writing the "
            "sweep's plans.jsonl there would replace it (choose another folder)") in err


def test_a_hard_link_to_an_onnx_model_is_refused(tmp_path, capsys):
    onnx = pytest.importorskip("onnx")
    from .onnx_nets import residual_net

    model = tmp_path / "cnn.onnx"
    onnx.save(residual_net(4), model)
    (tmp_path / "s.yaml").write_text(SWEEP.replace("MODEL", "cnn.onnx"))
    out = tmp_path / "o"
    out.mkdir()
    os.link(model, out / "plans.jsonl")  # another name, the same file
    err = refused([str(tmp_path / "s.yaml"), "--out", str(out)], capsys, tmp_path)
    assert (f"--out: {out / 'plans.jsonl'} is the model file this sweep reads (model: cnn.onnx) {model}; writing the "
            "sweep's plans.jsonl there would replace it") in err


def test_a_symlink_to_the_sweep_file_is_refused(tmp_path, capsys):
    spec = tmp_path / "s.yaml"
    spec.write_text(SWEEP.replace("MODEL", "lenet-c"))
    out = tmp_path / "o"
    out.mkdir()
    (out / "sweep.json").symlink_to(spec)
    err = refused([str(spec), "--out", str(out)], capsys, tmp_path)
    assert f"--out: {out / 'sweep.json'} is the sweep file {spec}; writing the sweep's sweep.json there" in err


def test_a_hard_link_to_a_constraints_file_and_the_array(tmp_path, capsys):
    cons = tmp_path / "cons.yaml"
    cons.write_text("version: 1\nweight_copies: 2\n")
    array = tmp_path / "arr.yaml"
    shutil.copy(zoo.resolve_array("hypar-16"), array)
    spec = tmp_path / "s.yaml"
    spec.write_text("version: 1\nname: s\ngrid: {levels: [1, 2]}\n"
                    "points: [{levels: 3, constraints: cons.yaml, array: arr.yaml}]\n")
    out = tmp_path / "o"
    out.mkdir()
    os.link(cons, out / "results.csv")
    err = refused([str(spec), "--out", str(out)], capsys, tmp_path)
    assert f"is the constraints file this sweep reads (constraints: cons.yaml) {cons}" in err
    os.unlink(out / "results.csv")
    os.link(array, out / "sweep.json")
    err = refused([str(spec), "--out", str(out)], capsys, tmp_path)
    assert f"is the array file this sweep reads (array: arr.yaml) {array}" in err


def test_a_copy_is_not_the_same_file_and_is_replaced_with_force(tmp_path, capsys):
    """Compared by identity, not by name or contents: a copy of the sweep file is a stray output."""
    spec = tmp_path / "s.yaml"
    spec.write_text(SWEEP.replace("MODEL", "lenet-c"))
    out = tmp_path / "o"
    out.mkdir()
    shutil.copy(spec, out / "results.csv")
    code, _, err = run_cli(["sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet"], capsys)
    assert code == 2 and "holds results.csv of no sweep" in err
    code, _, _ = run_cli(["sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet", "--force"], capsys)
    assert code == 0 and (out / "results.csv").read_text().startswith("levels,model,status")
    assert spec.read_text() == SWEEP.replace("MODEL", "lenet-c")


def test_a_plot_of_an_older_grid_that_is_an_input_is_not_removed(tmp_path, capsys):
    """The plots a rerun with another grid removes are checked too (a constraints file any name)."""
    cons = tmp_path / "cons.yaml"
    cons.write_text("version: 1\nweight_copies: 2\n")
    spec = tmp_path / "s.yaml"
    spec.write_text("version: 1\nname: s\ngrid: {levels: [1]}\nfixed: {model: lenet-c, constraints: cons.yaml}\n")
    out = tmp_path / "o"
    assert run_cli(["sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet"], capsys)[0] == 0
    held = json.loads((out / "sweep.json").read_text())
    (out / "sweep.json").write_text(json.dumps({**held, "plots": ["line.png"]}))
    os.link(cons, out / "line.png")
    spec.write_text(spec.read_text().replace("levels: [1]", "levels: [1, 2]"))  # another grid
    err = refused([str(spec), "--out", str(out)], capsys, tmp_path)
    assert (f"--out: {out / 'line.png'} is the constraints file this sweep reads (constraints: cons.yaml) {cons}; "
            "the sweep would remove it (a plot of an older grid)") in err


def test_the_api_refuses_in_its_words_before_any_point(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    shutil.copy(zoo.resolve_model("lenet-c"), out / "plans.jsonl")
    before = snapshot(tmp_path)
    spec = {"version": 1, "name": "s", "grid": {"levels": [1, 2]}, "fixed": {"model": str(out / "plans.jsonl")}}
    for force in (False, True):
        with pytest.raises(SpecError) as e:
            api.sweep(spec, out, force=force, workers=1)  # raised by the call, before the first row
        assert str(e.value).startswith(f"out: {out / 'plans.jsonl'} is the model file this sweep reads")
        assert "--" not in str(e.value)
    assert snapshot(tmp_path) == before
    f = out / "results.csv"
    f.write_text(SWEEP.replace("MODEL", "lenet-c"))
    before = snapshot(tmp_path)
    with pytest.raises(SpecError, match=r"^out: .*results\.csv is the sweep file; "):
        api.sweep(str(f), out, force=True, workers=1)
    assert snapshot(tmp_path) == before
