"""Findings 3-12 of the second new-user trial, on the uneven split path: each test fails without its fix."""

from __future__ import annotations

import json
from fractions import Fraction

from explorer.app.split import Split, split_run
from explorer.core.evaluate import evaluate_split
from explorer.core.partition import Space
from explorer.core.solution import Status
from explorer.frontends import load_array, load_model

from .conftest import run_cli


# -- 3: the uneven JSON's shared keys mean what the even JSON's do ------------------------------


def test_split_compute_and_comm_are_the_critical_accelerators(capsys):
    """compute_s + comm_time_s = step_time_s (tpu-mix-16 does not overlap) as in the even JSON:
    the slowest accelerator's two terms, not each term's maximum over different accelerators."""
    code, out, err = run_cli(["split", "--model", "alexnet", "--split", "optimal", "--format", "json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    r = split_run(load_model("alexnet"), load_array("tpu-mix-16"), Space.ACCPAR, Split.OPTIMAL)
    ev = evaluate_split(load_model("alexnet"), load_array("tpu-mix-16"), r.plan)
    assert max(ev.leaf_compute_s) + max(ev.leaf_comm_s) > ev.step_time_s  # the maxima come from different accelerators
    f = r.figures
    assert f.compute_s + f.comm_time_s == r.step_time_s
    assert d["compute_s"] == float(f.compute_s) and d["comm_time_s"] == float(f.comm_time_s)
    assert [Fraction(c) for c in d["level_cost_elements"]] == list(ev.level_cost)
    all_i = d["baselines"]["all-I"]
    assert set(d["baselines"]) == {"all-I", "all-II", "trick", "hypar"}
    assert d["traffic_ratio_to_all_I"] == float(Fraction(d["traffic_elements"]) / Fraction(all_i["traffic_elements"]))
    assert abs(d["comm_speedup_over_all_I"] - all_i["comm_time_s"] / d["comm_time_s"]) < 1e-12
    for b in d["baselines"].values():  # equal splits: their two terms add up too
        assert abs(b["compute_s"] + b["comm_time_s"] - b["step_time_s"]) < 1e-15


# -- 5: one run, one status --------------------------------------------------------------------


def test_levels_is_optimal_solver_dp_with_its_status():
    """--split levels and --split optimal --solver dp are the same run: the same plan and status
    (level-optimal where every level is the even DP's, as on one kind)."""
    net, arr = load_model("alexnet"), load_array("hypar-16")
    levels = split_run(net, arr, Space.ACCPAR, Split.LEVELS)
    dp = split_run(net, arr, Space.ACCPAR, Split.OPTIMAL, solver="dp")
    assert levels.plan == dp.plan and levels.status is dp.status is Status.LEVEL_OPTIMAL


# -- 7: --help says what the split commands do -------------------------------------------------


def _help(args, capsys) -> str:
    code, out, _ = run_cli([*args, "--help"], capsys)
    assert code == 0
    return " ".join(out.split())


def test_help_gives_the_split_defaults(capsys):
    split = _help(["split"], capsys)
    assert "time (the default)" in split and "traffic (the default)" not in split and "dp (the default)" not in split
    explore = _help([], capsys)
    assert "With --split and in check --uneven (default: 10 s): the whole run from the process's start too" in explore
    check = _help(["check"], capsys)
    assert "[default: exact,cpsat,brute]" not in check and "with --uneven: all eight" in check


# -- 8: the API's errors name its arguments, the CLI's its options ------------------------------


def test_api_errors_name_the_argument_and_the_cli_the_option(capsys):
    import pytest

    from explorer import api
    from explorer.core.errors import SpecError

    cases = [(dict(caps=["9=1MB"]), "caps: ", ["--cap", "9=1MB"], "--cap: "),
             (dict(memory_GiB=float("nan")), "memory_GiB: ", ["--memory", "nan"], "--memory: "),
             (dict(pins=["fc6@0=III"]), "pins: ", ["--pin", "fc6@0=III"], "--pin: ")]
    for kwargs, arg, option, named in cases:
        with pytest.raises(SpecError) as err:
            api.solve("lenet-c", "tpu-mix-16", space="accpar", split="optimal", **kwargs)
        assert str(err.value).startswith(arg) and "--" not in str(err.value)
        code, _, stderr = run_cli(["split", "--model", "lenet-c", "--split", "optimal", *option], capsys)
        assert code == 2 and stderr.startswith(f"explore: error: {named}")
    with pytest.raises(SpecError, match="^memory_GiB: "):  # the even split and build_problem alike
        api.solve("lenet-c", "hypar-16", memory_GiB=float("nan"))
    with pytest.raises(SpecError, match="^caps: "):
        api.build_problem("lenet-c", "hypar-16", caps=["9=1MB"])


# -- 10: a constraint names where it came from -------------------------------------------------


def test_conflicting_pins_name_their_sources(capsys, tmp_path):
    """A constraints file's pin against a --pin: contradictory input (exit 2, the split as the even
    run), naming the option's pin and the file's, with the file's path and the pin's place in it;
    a pin against a forbid is an infeasible problem (exit 1), naming each one's source."""
    f = tmp_path / "cp.yaml"
    f.write_text('version: 1\npins: ["fc6@*=II"]\nforbids: ["fc7=III"]\n')
    for cmd in (["split", "--split", "optimal"], ["--space", "accpar"]):
        code, out, err = run_cli([*cmd, "--model", "alexnet", "--constraints", str(f), "--pin", "fc6@0=III"], capsys)
        assert code == 2 and err.strip().splitlines()[-1] == (
            f"explore: error: --pin: 'fc6@0=III': pin fc6@0=III contradicts pin fc6@*=II ({f} pins[0]): layer 'fc6' "
            "takes one type at level 0, not both II and III"), err
        code, out, err = run_cli([*cmd, "--model", "alexnet", "--constraints", str(f), "--pin", "fc7@0=III"], capsys)
        assert code == 1 and f"pin fc7@0=III (--pin); forbid fc7=III ({f})" in out + err


def test_a_sweep_cap_names_the_sweep_key(tmp_path):
    """A cap from a sweep file's ``caps`` (or the API's ``caps=``) is labelled caps, not --cap."""
    from explorer import api
    from explorer.app.sweep.point import run_single

    row = run_single({"model": "alexnet", "split": "search", "array": "tpu-mix-16", "space": "accpar", "caps": ["0=1MB"]})
    assert [v["constraint"] for v in row["violations"]] == ["cap level 0 <= 1 MB (caps)"]
    assert api.build_problem("alexnet", "hypar-16", caps=["0=1MB"]).constraints.caps[0].name == "cap level 0 <= 1 MB (caps)"


# -- 6: one violation, one text ----------------------------------------------------------------


def test_a_kind_over_its_memory_reads_the_same_in_explore_and_check(capsys, tmp_path):
    base = ["--model", "sfc", "--array", "tpu-mix-16", "--space", "hypar", "--memory", "0.001", "--format", "json"]
    code, out, _ = run_cli(["--split", "proportional", *base], capsys)
    split = json.loads(out)["violations"]
    code2, out, _ = run_cli(["check", "--split", "optimal", "--solvers", "proportional", *base], capsys)
    row = json.loads(out)["solvers"]["proportional"]["violations"]
    assert code == 1 and split == row and [v["constraint"] for v in row] == [
        "memory of v2 <= 1.024 MiB per accelerator", "memory of v3 <= 1.024 MiB per accelerator"]


def test_accpar_refuses_in_its_own_name():
    import pytest

    from explorer.core.errors import Refused
    from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space
    from explorer.solvers.uneven_joint import accpar_uneven

    arr = load_array("tpu-mix-16")
    aspace = alpha_space(arr, alpha_grid(16), FreeAlphas.ALL)
    with pytest.raises(Refused, match=r"^accpar \(uneven splits\): only arrays"):
        accpar_uneven(load_model("lenet-c"), arr, Space.ACCPAR, aspace)


# -- 4: --plan on a split point draws its alphas -----------------------------------------------


def test_plot_plan_writes_a_split_points_alphas(tmp_path, monkeypatch):
    import pytest

    pytest.importorskip("matplotlib")
    from matplotlib.axes import Axes

    from explorer import api
    from explorer.app.sweep.plot import plot_plan

    spec = {"version": 1, "name": "s", "grid": {"model": ["lenet-c"], "split": ["proportional"]},
            "fixed": {"array": "tpu-mix-16", "space": "accpar"}}
    list(api.sweep(spec, out=tmp_path / "o", workers=1))
    texts: list[str] = []
    real = Axes.text
    monkeypatch.setattr(Axes, "text", lambda self, x, y, s, *a, **k: (texts.append(s), real(self, x, y, s, *a, **k))[1])
    plot_plan(tmp_path / "o", 0, tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 0
    assert len(texts) == 4 * 4 and all(t.endswith("\n15/56") for t in texts[:4])  # lenet-c: 4 layers, level 0
    assert all(t.endswith("\n1/2") for t in texts[4:])  # below the top split: the equal split


# -- 11: the uneven table names its layers ----------------------------------------------------


def test_split_table_names_the_layers_of_its_types(capsys):
    code, out, err = run_cli(["split", "--model", "lenet-c", "--split", "proportional"], capsys)
    assert code == 0, err
    assert "level  conv1  conv2  ip1  ip2  c_h (elements)" in out
    assert "0      I      I      II   II   330,100+40/49" in out


# -- 12: a file of the wrong kind says which kind it is ----------------------------------------


def test_a_network_as_array_and_an_array_or_cluster_as_model(capsys):
    from explorer.frontends import zoo

    net = str(zoo.zoo_files()["alexnet"])
    code, _, err = run_cli(["split", "--array", net], capsys)
    assert code == 2 and "is a network file" in err and "give it as --model" in err and "unknown key" not in err
    cluster = str(zoo.resolve_cluster("dgx-a100"))
    code, _, err = run_cli(["split", "--model", cluster], capsys)
    assert code == 2 and "is a GPU cluster file" in err and "give it as --array" in err and "unknown key" not in err
    array = str(zoo.resolve_array("hypar-16"))
    code, _, err = run_cli(["split", "--model", array], capsys)
    assert code == 2 and "is an accelerator array file" in err and "unknown key" not in err


# -- 9: sweeps.md says what a split point takes ------------------------------------------------


def test_a_split_point_takes_weight_copies_beyond_16_as_sweeps_md_says():
    from pathlib import Path

    from explorer.app.sweep.point import run_single

    row = run_single({"model": "lenet-c", "split": "proportional", "array": "tpu-mix-16", "space": "accpar",
                      "weight_copies": 100})
    assert row["constraints"]["weight_copies"] == 100
    text = " ".join((Path(__file__).parent.parent / "docs" / "sweeps.md").read_text().split())
    assert "`weight_copies` at most 16" not in text and "`weight_copies` up to 2^40, as on every point" in text



def test_check_errors_name_the_options_typed_and_the_api_its_arguments(capsys):
    """explore check names --pin / --cap (what the user typed); api.check names pins (third trial)."""
    import pytest

    from explorer.api import check
    from explorer.core.errors import SpecError

    for args, option in ((["--pin", "nol@0=I"], "--pin"), (["--cap", "9=2GB"], "--cap")):
        code, out, err = run_cli(["check", "--model", "alexnet", *args], capsys)
        assert code == 2 and out == "" and err.startswith(f"explore: error: {option}:") and err.count("\n") == 1
    with pytest.raises(SpecError) as e:
        check("alexnet", pins=["nol@0=I"])
    assert str(e.value).startswith("pins:")


def test_unknown_model_names_every_kind_of_input():
    import pytest

    from explorer.core.errors import SpecError

    with pytest.raises(SpecError) as e:
        load_model("nosuch")
    assert ".onnx" in str(e.value) and "config.json" in str(e.value)
