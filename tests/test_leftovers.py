"""Left-over new-user findings: output paths checked before any work (sweep, merge, reproduce),
approximation notes in sweeps, the shapes the ONNX importer read, one way errors name options."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import run_cli

SWEEP = "version: 1\nname: s1\ngrid: {model: [lenet-c], levels: [1, 2]}\nfixed: {batch: 64}\n"


def sweep_file(tmp_path: Path, text: str = SWEEP) -> str:
    f = tmp_path / "s.yaml"
    f.write_text(text)
    return str(f)


@pytest.mark.parametrize("blocked", ["results.csv", "plans.jsonl", "sweep.json"])
def test_an_output_file_that_is_a_folder_is_refused_before_any_point(tmp_path, capsys, blocked):
    f = sweep_file(tmp_path)
    out = tmp_path / "o"
    (out / blocked).mkdir(parents=True)
    if blocked != "sweep.json":  # a folder of this sweep (else it holds results of no sweep)
        (out / "sweep.json").write_text('{"name": "s1"}')
    code, _, err = run_cli(["sweep", f, "--out", str(out), "--workers", "1"], capsys)
    assert code == 2
    assert err.strip().splitlines() == [f"explore: error: --out: cannot write {out / blocked}: is a directory"]
    assert sorted(p.name for p in out.iterdir()) == sorted({blocked, "sweep.json"})  # no cache, nothing written


def test_an_out_folder_that_cannot_be_made_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    code, _, err = run_cli(["sweep", sweep_file(tmp_path), "--out", str(tmp_path / "afile" / "o")], capsys)
    assert code == 2
    assert err.strip() == f"explore: error: --out: cannot write {tmp_path}/afile/o: {tmp_path}/afile is not a folder"
    code, _, err = run_cli(["sweep", sweep_file(tmp_path), "--out", "/proc/sweep-out"], capsys)
    assert code == 2
    assert err.strip() == "explore: error: --out: cannot write /proc/sweep-out: folder /proc is not writable"


def test_merge_checks_its_output_files_before_writing(tmp_path, capsys):
    f = sweep_file(tmp_path)
    assert run_cli(["sweep", f, "--out", str(tmp_path / "a"), "--workers", "1"], capsys)[0] == 0
    out = tmp_path / "m"
    (out / "results.csv").mkdir(parents=True)
    code, _, err = run_cli(["sweep", "merge", str(tmp_path / "a"), "--out", str(out)], capsys)
    assert code == 2
    assert err.strip() == f"explore: error: --out: cannot write {out / 'results.csv'}: is a directory"
    assert [p.name for p in out.iterdir()] == ["results.csv"]  # plans.jsonl not written first


def test_reproduce_out_that_is_a_file_says_so(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    code, _, err = run_cli(["reproduce", "hypar", "--figure", "5", "--out", str(tmp_path / "afile")], capsys)
    assert code == 2
    assert err.strip() == f"explore: error: --out: cannot write {tmp_path}/afile: {tmp_path}/afile is not a folder"


def test_the_uneven_bench_scripts_share_one_timed_solve():
    import ast
    import sys

    bench = Path(__file__).resolve().parent.parent / "bench"
    for script in ("bench_exact_prune.py", "bench_uneven_constrained.py"):
        defined = {n.name for n in ast.parse((bench / script).read_text()).body if isinstance(n, ast.FunctionDef)}
        assert not defined & {"run", "cell", "states"}, script
    sys.path.insert(0, str(bench))
    try:
        import uneven_runs
    finally:
        sys.path.remove(str(bench))
    from explorer.core.errors import Refused

    def refuse(*args, **kw):
        raise Refused("too large")

    def answer(net, arr, space, alphas, time_limit_s, **kw):
        return (net, space, time_limit_s, kw)

    from explorer.frontends import load_array

    arr = load_array("tpu-mix-16")
    sol, wall = uneven_runs.timed_solve(refuse, None, arr, None, 2, 1.0)
    assert isinstance(sol, Refused) and wall >= 0 and uneven_runs.cell(sol) == "refused"
    sol, _ = uneven_runs.timed_solve(answer, "net", arr, "space", 2, 3.0, rules="r")
    assert sol == ("net", "space", 3.0, {"rules": "r"})


def tied_gpt2(folder: Path) -> Path:
    """A two-block GPT-2 config.json: its tied LM head is an approximation note."""
    import json

    cfg = json.loads((Path(__file__).parent / "hf_configs" / "gpt2.json").read_text())
    cfg.update(n_layer=2, n_embd=64, n_head=4, vocab_size=1000, n_positions=128)
    path = folder / "config.json"
    path.write_text(json.dumps(cfg))
    return path


def test_a_sweep_carries_the_approximation_notes_explore_prints(tmp_path, capsys):
    import csv

    from explorer.api import sweep

    tied_gpt2(tmp_path)
    f = sweep_file(tmp_path, "version: 1\nname: hf\ngrid: {model: [config.json, lenet-c], levels: [1]}\n"
                             "fixed: {batch: 8}\npoints: [{model: config.json, levels: 2, batch: 8, seq: 32}]\n")
    code, _, err = run_cli(["sweep", f, "--out", str(tmp_path / "o"), "--workers", "1"], capsys)
    assert code == 0, err
    note = "LM head tied to the token embedding: its 64 x 1000 product (B*S*64*1000 forward MACs) is not modelled"
    assert err.splitlines()[-1] == f"explore: approximation: {note} (2 of 3 points; see the approximations column)"
    with open(tmp_path / "o" / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["approximations"] for r in rows] == [note, "", note]
    assert [r["approximations"] for r in sweep(f)] == [note, None, note]  # the API's rows too


def test_approximation_counts_split_notes_that_hold_semicolons():
    from explorer.app.sweep.table import note_counts

    rows = [{"approximations": "a; b | c"}, {"approximations": None}, {"approximations": "c"}]
    assert note_counts(rows, "approximations") == {"a; b": 1, "c": 2}


def test_explore_shows_the_shapes_the_onnx_importer_read(tmp_path, capsys):
    import json

    onnx = pytest.importorskip("onnx")
    from .onnx_nets import hf_bert, residual_net

    onnx.save(residual_net("batch_size"), tmp_path / "cnn.onnx")
    onnx.save(hf_bert(), tmp_path / "bert.onnx")
    code, out, _ = run_cli(["--model", str(tmp_path / "cnn.onnx"), "--batch", "8", "--levels", "2"], capsys)
    assert code == 0 and out.splitlines()[1] == "input 'x': 8 x 8 x 8 x 8 (batch_size = 8)"
    code, out, _ = run_cli(["check", "--model", str(tmp_path / "cnn.onnx"), "--batch", "8", "--levels", "1"], capsys)
    assert code == 0 and out.splitlines()[1] == "input 'x': 8 x 8 x 8 x 8 (batch_size = 8)"
    code, out, _ = run_cli(["--model", str(tmp_path / "bert.onnx"), "--batch", "4", "--seq", "16", "--levels", "1",
                            "--format", "json"], capsys)
    assert code == 0
    assert json.loads(out)["input_shapes"][0] == {
        "name": "input_ids", "shape": [4, 16],
        "symbolic": [{"axis": 0, "dim": "batch", "value": 4}, {"axis": 1, "dim": "sequence", "value": 16}]}
    code, out, _ = run_cli(["--model", "lenet-c", "--format", "json"], capsys)
    assert code == 0 and json.loads(out)["input_shapes"] == []  # a YAML network has no importer's shapes


def test_a_fixed_batch_input_follows_the_batch_used():
    from explorer.core.network import InputShape

    s = InputShape("x", (2, 8, 8, 8), (), 0)
    assert s.with_batch(8).describe() == "input 'x': 8 x 8 x 8 x 8"
    assert InputShape("ids", (4, 16), ((1, "seq"),), None).with_batch(8).shape == (4, 16)


DOC_MESSAGES = [  # (a file to write, the command, what docs/commands.md quotes with FILE for the file)
    ("m.yaml", (Path(__file__).resolve().parent.parent / "models" / "lenet-c.yaml").read_text().replace("version: 1", "version: 2"), ["--model", "{f}"],
     "FILE: version: unsupported version 2 (this explorer reads version 1)"),
    ("s.yaml", "version: 2\nname: s\ngrid: {model: [lenet-c]}\n", ["sweep", "{f}", "--out", "{d}/o"],
     "FILE: version: must be 1, got 2"),
    ("c.yaml", "version: 2\npins: []\n", ["--model", "lenet-c", "--constraints", "{f}"],
     "FILE: version: must be 1, got 2"),
]


@pytest.mark.parametrize("name,text,args,quoted", DOC_MESSAGES)
def test_the_messages_commands_md_quotes_are_the_ones_printed(tmp_path, capsys, name, text, args, quoted):
    doc = (Path(__file__).resolve().parent.parent / "docs" / "commands.md").read_text()
    assert f"`{quoted}`" in doc
    f = tmp_path / name
    f.write_text(text)
    code, _, err = run_cli([a.format(f=f, d=tmp_path) for a in args], capsys)
    assert code == 2 and err.strip() == f"explore: error: {quoted.replace('FILE', str(f))}"


def test_plot_help_names_every_default_image_name():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "explorer.app.cli", "plot", "--help"], capture_output=True, text=True).stdout
    help_text = " ".join(out.split())
    for part in ("[-vs-paper][-logx|-logy|-logxy].png", "heatmap-<z>-by-<y>-vs-<x>", "pareto-...", "plan-ROW.png"):
        assert part in help_text


def test_messages_name_inputs_as_the_running_front_end_does(tmp_path):
    from explorer.core.errors import SpecError
    from explorer.core.names import Frontend, given_as, how_to_set, named_for

    onnx = pytest.importorskip("onnx")
    from explorer.frontends.onnx import load_onnx

    from .onnx_nets import residual_net

    onnx.save(residual_net("batch_size"), tmp_path / "cnn.onnx")
    said = {}
    for where in Frontend:
        with named_for(where), pytest.raises(SpecError) as ex:
            load_onnx(tmp_path / "cnn.onnx")  # the message is made in the front end's words, never rewritten
        said[where] = str(ex.value).rsplit(": ", 1)[1]
        with named_for(where):
            assert how_to_set("--batch") == said[where]
    assert said == {Frontend.CLI: "pass --batch", Frontend.API: "pass batch", Frontend.SWEEP: "set batch in fixed or grid"}
    assert given_as("--pareto-by") == "--pareto-by"
    with named_for(Frontend.API):
        assert given_as("--pareto-by") == "pareto_by" and given_as("--memory") == "memory_GiB"


def test_the_api_renames_an_errors_source_not_its_text():
    from explorer import api
    from explorer.core.errors import SpecError

    with pytest.raises(SpecError) as ex:
        api.solve("lenet-c", seq=16)  # a network without a sequence: the message names seq as the API does
    assert ex.value.problems == ["seq: the spec declares no sequence (no top-level sequence: for seq to override), got seq 16"]
    with pytest.raises(SpecError) as ex:
        api.solve("lenet-c", levels=0)  # the error's source, renamed by the API
    assert ex.value.source == "levels"


def test_solver_refusals_name_the_options_as_the_front_end_does(tmp_path, capsys):
    """A refusal made in solvers/ says what to use in the words of the front end running it: the
    CLI's options, the API's arguments, a sweep row's keys (core.names), never rewritten after."""
    import csv

    from explorer import api
    from explorer.core.errors import Refused
    from explorer.core.names import Frontend, named_for
    from explorer.solvers.cpsat import no_plan_reason

    code, _, err = run_cli(["--model", "lenet-c", "--solver", "pruned", "--cap", "0=1GB"], capsys)
    assert code == 2 and err.strip().endswith("; use --solver cpsat (or exact, on graphs it can eliminate)")
    with pytest.raises(Refused) as ex:
        api.solve("lenet-c", solver="pruned", caps={0: "1GB"})
    assert str(ex.value).endswith("; use solver cpsat (or exact, on graphs it can eliminate)")
    with pytest.raises(Refused) as ex:
        api.solve("vgg-a", solver="brute")
    assert str(ex.value).endswith("; use solver exact or cpsat")
    f = sweep_file(tmp_path, "version: 1\nname: r\ngrid: {levels: [2]}\n"
                             "fixed: {model: lenet-c, solver: pruned, caps: ['0=1GB']}\n")
    assert run_cli(["sweep", f, "--out", str(tmp_path / "o"), "--workers", "1", "--quiet"], capsys)[0] == 0
    with open(tmp_path / "o" / "results.csv", newline="") as fh:
        row, = csv.DictReader(fh)
    assert row["status"] == "refused" and row["error"].endswith("; use solver cpsat (or exact, on graphs it can eliminate)")
    with named_for(Frontend.API):  # a reason in a result, too
        assert no_plan_reason("UNKNOWN", True).endswith("; raise time_limit")
    assert no_plan_reason("UNKNOWN", True).endswith("; raise --time-limit")


PF = "version: 1\nname: pf\ngrid: {model: [lenet-c, alexnet], levels: [1, 2, 3], solver: [dp]}\nfixed: {objective: time}\n"
FRONT = ["--pareto", "step_time_s,memory_bytes_per_accelerator"]


def pareto_column(folder: Path) -> list[tuple[str, str, str]]:
    import csv

    with open(folder / "results.csv", newline="") as fh:
        return [(r["model"], r["levels"], r["pareto"]) for r in csv.DictReader(fh)]


def test_pareto_by_gives_one_front_per_model(tmp_path, capsys):
    import json

    f = sweep_file(tmp_path, PF)
    code, _, err = run_cli(["sweep", f, "--out", str(tmp_path / "all"), "--workers", "1", *FRONT], capsys)
    assert code == 0, err
    whole = pareto_column(tmp_path / "all")
    assert [p for m, _, p in whole if m == "alexnet"] == ["no", "no", "no"]  # lenet-c dominates every alexnet point
    code, _, err = run_cli(["sweep", f, "--out", str(tmp_path / "by"), "--workers", "1", *FRONT, "--pareto-by", "model"],
                           capsys)
    assert code == 0, err
    by = pareto_column(tmp_path / "by")
    assert [p for m, _, p in by if m == "lenet-c"] == [p for m, _, p in whole if m == "lenet-c"]
    assert "level-optimal" in [p for m, _, p in by if m == "alexnet"]
    assert json.loads((tmp_path / "by" / "sweep.json").read_text())["pareto_by"] == ["model"]
    for i in (0, 1):  # shards keep the grouping; merge uses it, or --pareto-by '' for one front
        run_cli(["sweep", f, "--out", str(tmp_path / f"s{i}"), "--shard", f"{i}/2", *FRONT, "--pareto-by", "model",
                 "--quiet"], capsys)
    assert run_cli(["sweep", "merge", str(tmp_path / "s0"), str(tmp_path / "s1"), "--out", str(tmp_path / "m")], capsys)[0] == 0
    assert pareto_column(tmp_path / "m") == by
    assert run_cli(["sweep", "merge", str(tmp_path / "s0"), str(tmp_path / "s1"), "--out", str(tmp_path / "m"),
                    "--pareto-by", ""], capsys)[0] == 0
    assert pareto_column(tmp_path / "m") == whole


@pytest.mark.parametrize("args,message", [
    (["--pareto-by", "model"], "--pareto-by: groups the Pareto front: give --pareto COL,COL too"),
    ([*FRONT, "--pareto-by", "batch"], "--pareto-by: unknown key batch (the sweep's keys: model, levels, solver, objective)"),
    (["--pareto", "step_time_s,levels", "--pareto-by", "levels"], "--pareto-by: levels is also a --pareto column"),
    ([*FRONT, "--pareto-by", "step_time_s"], "--pareto-by: step_time_s is a --pareto column (a result), not a sweep key "
                                             "to group by (the sweep's keys: model, levels, solver, objective)"),
    ([*FRONT, "--pareto-by", "status"], "--pareto-by: status is a result column, not a sweep key to group by "
                                        "(the sweep's keys: model, levels, solver, objective)"),
])
def test_pareto_by_refusals(tmp_path, capsys, args, message):
    code, _, err = run_cli(["sweep", sweep_file(tmp_path, PF), "--out", str(tmp_path / "o"), *args], capsys)
    assert code == 2 and err.strip() == f"explore: error: {message}"
    assert not (tmp_path / "o").exists()


def test_pareto_by_in_the_api(tmp_path):
    from explorer.api import sweep
    from explorer.core.errors import SpecError

    f = sweep_file(tmp_path, PF)
    rows = list(sweep(f, pareto=FRONT[1].split(","), pareto_by=["model"]))
    assert "level-optimal" in [r["pareto"] for r in rows if r["model"] == "alexnet"]
    with pytest.raises(SpecError, match="^pareto_by: groups the Pareto front: give pareto COL,COL too$"):
        sweep(f, pareto_by=["model"])
