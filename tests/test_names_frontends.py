"""One naming helper (``core.names``) for every message: the split's rules, the uneven solvers'
refusals, the LLM planner's checks and the limits' suggestions name an input as the front end
running the code calls it (explore's ``--option``, the API's argument, a sweep file's key), when
the message is made; nothing renames a message afterwards."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from explorer import api
from explorer.core.constraints import limit_suggestion
from explorer.core.errors import Refused, SpecError
from explorer.core.names import Frontend, named_for, setting
from explorer.core.objective import Objective
from explorer.core.partition import Space
from explorer.core.split_rules import SplitRules
from explorer.core.uneven import alpha_grid, alpha_space
from explorer.frontends import load_array, load_model
from explorer.solvers.uneven_joint import joint_uneven

from .conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z-]*")


def test_a_setting_is_written_as_each_front_end_writes_it():
    assert setting("--cap", "0=2GB", listed=True) == "--cap 0=2GB"
    assert setting("--memory", "0.3") == "--memory 0.3"
    with named_for(Frontend.API):
        assert setting("--cap", "0=2GB", listed=True) == 'caps=["0=2GB"]'
        assert setting("--memory", "0.3") == "memory_GiB=0.3"
    with named_for(Frontend.SWEEP):
        assert setting("--cap", "0=2GB", listed=True) == "caps: [0=2GB]"
        assert setting("--memory", "0.3") == "memory_GiB: 0.3"


def test_the_least_limit_suggestion_names_the_running_front_ends_input():
    assert limit_suggestion(0, 2**20).endswith("try --cap 0=1.048576MB")
    with named_for(Frontend.API):
        assert limit_suggestion(0, 2**20).endswith('try caps=["0=1.048576MB"]')
        assert limit_suggestion(None, 2**30).endswith("try memory_GiB=1.0")
    with named_for(Frontend.SWEEP):
        assert limit_suggestion(0, 2**20).endswith("try caps: [0=1.048576MB]")


def test_an_infeasible_cap_suggests_a_cap_as_the_cli_the_api_and_a_sweep_row_set_it(capsys, tmp_path):
    code, _, err = run_cli(["--model", "alexnet", "--array", "hypar-16", "--cap", "0=50MB", "--solver", "exact"], capsys)
    assert code == 1 and "try --cap 0=51.634304MB" in err
    r = api.solve("alexnet", "hypar-16", caps={0: "50MB"}, solver="exact")
    assert r.explanation.suggestion.endswith('try caps=["0=51.634304MB"]')
    spec = {"version": 1, "name": "cap", "fixed": {"model": "alexnet", "array": "hypar-16", "solver": "exact",
                                                  "caps": ["0=50MB"]}, "grid": {"space": ["hypar"]}}
    row = next(iter(api.sweep(spec, workers=1)))
    assert row["status"] == "infeasible" and row["error"].endswith("try caps: [0=51.634304MB])")


def test_the_splits_solver_rule_names_the_apis_arguments():
    with pytest.raises(SpecError) as e:
        api.solve("lenet-c", "tpu-mix-16", split="levels", solver="exact")
    assert e.value.source == "solver" and "--" not in str(e.value)
    assert "not with split levels; split optimal and proportional take solver brute" in str(e.value)
    assert "(split optimal without solver: the joint solver)" in str(e.value)


def test_a_split_refusal_in_a_sweep_row_names_the_sweeps_keys(capsys):
    point = {"model": "lenet-c", "array": "tpu-mix-16", "split": "optimal", "free": "all", "memory_GiB": 1}
    row = next(iter(api.sweep({"version": 1, "name": "free", "fixed": point, "grid": {"space": ["hypar"]}}, workers=1)))
    assert row["status"] == "invalid" and "--" not in row["error"]
    assert "(free all frees every class of groups below the top split too; free unlike frees the top split alone " \
           "here); exact (uneven splits):" in row["error"]
    assert row["error"].endswith("use split search or solver dp (the level DP, no proof), or free unlike")
    code, _, err = run_cli(["--model", "lenet-c", "--array", "tpu-mix-16", "--split", "optimal", "--free", "all",
                            "--memory", "1"], capsys)
    assert code == 2 and err.rstrip().endswith("use --split search or --solver dp (the level DP, no proof), or --free unlike")


def test_the_llm_planners_checks_name_plan_llms_arguments(capsys):
    code, _, err = run_cli(["--model", "gpt3-1.3b", "--array", "dgx-a100", "--layout", "zero3", "--degrees", "tensor=2"],
                           capsys)
    assert code == 2 and "--degrees: tensor=2 with --layout zero3" in err and "or --layout megatron" in err
    with pytest.raises(SpecError) as e:
        api.plan_llm("gpt3-1.3b", layout="zero3", degrees="tensor=2")
    assert e.value.source == "degrees" and "--" not in str(e.value)
    assert "tensor=2 with layout zero3" in str(e.value) and "or layout megatron" in str(e.value)


def test_what_takes_a_traffic_instance_brute_refuses_names_the_apis_options():
    """Under traffic the default routes past the joint solver (``routed_optimal``): brute force's
    refusal names what the default runs on a chain, as each front end writes it."""
    from explorer.app.split_solve import _instead

    net, arr = load_model("lenet-c"), load_array("tpu-mix-16")
    instance, traffic = (net, arr, alpha_space(arr, alpha_grid(2)), Space.HYPAR), SplitRules(objective=Objective.TRAFFIC)
    words = "exact (the exact DP on chains, which {0}split optimal without {0}solver runs here) takes it"
    with named_for(Frontend.API):
        assert words.format("") in _instead("brute", traffic, False, instance)
    assert words.format("--") in _instead("brute", traffic, False, instance)
    with pytest.raises(Refused, match=r"^joint \(uneven splits\): the step time only, not the traffic objective$"):
        joint_uneven(net, arr, Space.HYPAR, instance[2], rules=traffic)


LENET = {"version": 1, "name": "a", "grid": {"model": ["lenet-c"], "levels": [1, 2]}}


@pytest.mark.parametrize("args, cli, api_words, cli_words", [
    ({"max_points": 1}, ["--max-points", "1"], "exceed the limit of 1 point (raise it with max_points)",
     "exceed the limit of 1 point (raise it with --max-points)"),
    ({"scheduler": "tcp://x:1"}, ["--scheduler", "tcp://x:1"], "only with engine dask",
     "--scheduler: only with --engine dask"),
    ({"split": "optimal", "seed": 1}, [], "not with split (a split point is solve(split=...): it takes",
     "not with split (a split point is explore --split: it takes"),
    ({"array": "dgx-a100"}, [], "a GPU cluster is planned by plan_llm(model, 'dgx-a100') (docs/llm-training.md)",
     "a GPU cluster is planned by explore --array dgx-a100 --model ... (docs/llm-training.md)"),
], ids=["max_points", "engine", "split-seed", "cluster"])
def test_a_sweeps_messages_name_the_apis_arguments_and_explores_options(args, cli, api_words, cli_words, tmp_path,
                                                                        capsys):
    keys = {k: v for k, v in args.items() if k in ("split", "seed", "array")}
    spec = {**LENET, "grid": {**LENET["grid"], **{k: [v] for k, v in keys.items()}},
            **({"fixed": {"array": "tpu-mix-16"}} if "split" in keys else {})}
    with pytest.raises(SpecError) as e:
        api.sweep(spec, **{k: v for k, v in args.items() if k not in keys})
    assert api_words in str(e.value) and not OPTION.search(str(e.value))
    f = tmp_path / "s.yaml"
    f.write_text(json.dumps(spec))
    code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o"), *cli], capsys)
    assert code == 2 and cli_words in err and not (tmp_path / "o").exists()


def test_a_folder_of_another_sweep_says_how_to_force_in_the_front_ends_words(tmp_path, capsys):
    list(api.sweep(LENET, tmp_path / "o", workers=1))
    with pytest.raises(SpecError) as e:
        api.sweep({**LENET, "name": "b"}, tmp_path / "o")
    assert str(e.value).endswith("choose another folder, or pass force=True to replace them")
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "results.csv").write_text("")
    with pytest.raises(SpecError, match=r"or pass force=True to replace them$"):
        api.sweep(LENET, tmp_path / "p")
    f = tmp_path / "b.yaml"
    f.write_text(json.dumps({**LENET, "name": "b"}))
    code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and err.rstrip().endswith("choose another folder, or pass --force to replace them")


def test_a_broken_plans_note_names_the_solver_option_of_the_front_end():
    from explorer.app.render import render_table

    r = api.solve("vgg-a", "hypar-16", caps={3: "55MB"})
    assert "(use --solver exact or cpsat to enforce caps and memory)" in render_table(r)
    with named_for(Frontend.API):
        assert "(use solver exact or cpsat to enforce caps and memory)" in render_table(r)


# every module of the library but the command line's own: explore's options, explore list, explore
# reproduce (its command and its output checks, reproduce/files.py), and explore plot's drawing
# (sweep/plot.py and its checks, sweep/plot_checks.py: no API or sweep-file front end reaches them)
NAMED = ["solvers", "explorer"]
COMMAND_LINE = {"explorer/app/cli.py", "explorer/app/cli_common.py", "explorer/app/cli_sweep.py",
                "explorer/app/listing.py", "explorer/app/reproduce/cli.py", "explorer/app/reproduce/files.py",
                "explorer/app/sweep/plot.py", "explorer/app/sweep/plot_checks.py"}


def _messages(path: Path):
    """String constants of ``path`` that are not docstrings, with their lines."""
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            yield n.lineno, n.value


def test_no_library_message_spells_an_option_itself():
    # an option alone ("--cap") is a name given_as, how_to_set or setting turns into the front end's;
    # an option inside a message's text would reach the API and sweeps as the CLI's
    files = [p for x in NAMED for p in sorted((ROOT / x).rglob("*.py"))
             if str(p.relative_to(ROOT)) not in COMMAND_LINE]
    assert len(files) > 120 and ROOT / "explorer/app/sweep/spec.py" in files and ROOT / "explorer/app/render.py" in files
    assert all((ROOT / c).is_file() for c in COMMAND_LINE)  # (a moved module is not silently skipped)
    found = [f"{p.relative_to(ROOT)}:{line}: {text[:60]!r}" for p in files if p.name != "names.py"
             for line, text in _messages(p) if OPTION.search(text) and not OPTION.fullmatch(text)]
    assert found == []
