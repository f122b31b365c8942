"""The Python API (explorer.api): the same answers as the CLI, which calls it."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from explorer import api
from explorer.app.results import CheckReport, RunResult
from explorer.core.errors import Refused, SpecError
from explorer.core.partition import Space
from explorer.core.solution import Status
from explorer.frontends import load_array, load_model

from .conftest import arguments_for_options, fc, run_cli


def without_wall(obj):
    if isinstance(obj, dict):
        return {k: without_wall(v) for k, v in obj.items() if k != "wall_s"}
    if isinstance(obj, list):
        return [without_wall(v) for v in obj]
    return obj


def test_solve_equals_the_cli(capsys):
    args = ["--model", "lenet-c", "--space", "accpar", "--levels", "3", "--batch", "64", "--solver", "cpsat",
            "--workers", "1", "--cap", "2=1MB", "--pin", "ip1@0=II", "--forbid", "conv1=III"]
    code, out, _ = run_cli(args + ["--format", "json"], capsys)
    r = api.solve("lenet-c", space="accpar", levels=3, batch=64, solver="cpsat", workers=1, caps=["2=1MB"],
                  pins=["ip1@0=II"], forbids=["conv1=III"])
    assert isinstance(r, RunResult) and code == (0 if r.ok else 1)
    # the same object, but that the API says where a constraint came from by its argument (caps), the CLI by --cap
    assert without_wall(r.to_json()) == without_wall(json.loads(arguments_for_options(out)))
    assert r.to_json()["constraints"]["caps"][0]["from"] == "caps" and '"from": "--cap"' in out
    assert r.inputs.constraints.pins[0].name == "pin ip1@0=II"
    assert r.plan.at(0, r.inputs.layers.index("ip1")).value == "II"


def test_solve_takes_built_objects():
    net = load_model("alexnet").with_batch(128)
    arr = load_array("hypar-16").with_levels(2)
    by_object = api.solve(net, arr, space=Space.ACCPAR, solver="exact")
    by_name = api.solve("alexnet", "hypar-16", space="accpar", solver="exact", batch=128, levels=2)
    assert without_wall(by_object.to_json()) == without_wall(by_name.to_json())
    assert by_object.status is Status.OPTIMAL and by_object.bound == by_object.objective_value
    # an exact Fraction inside, the JSON form outside
    assert isinstance(by_object.objective_value, Fraction)
    assert by_object.to_json()["objective_value"] == int(by_object.objective_value)
    # a network built in code, overrides applied to it
    from explorer.core.network import Network

    mlp = Network.chain("mlp", 8, [fc("a", 16, 32), fc("b", 32, 4)])
    r = api.solve(mlp, levels=1, batch=16, solver="brute")
    assert r.inputs.batch == 16 and r.inputs.model == "mlp" and r.inputs.levels == 1
    assert [n.to_json() for n in r.inputs.nodes] == [{"name": "a", "kind": "fc", "inputs": []},
                                                      {"name": "b", "kind": "fc", "inputs": ["a"]}]


def test_check_equals_the_cli(capsys):
    code, out, _ = run_cli(["check", "--model", "sfc", "--levels", "2", "--workers", "1", "--solvers", "cpsat,exact",
                            "--format", "json"], capsys)
    c = api.check("sfc", levels=2, workers=1, solvers=("cpsat", "exact"))
    assert isinstance(c, CheckReport) and code == 0 and c.agree
    assert without_wall(c.to_json()) == without_wall(json.loads(out))
    assert [name for name, _ in c.solvers] == ["cpsat", "exact"]
    assert c.solver("exact").objective == c.optimum.objective


def test_bad_input_raises_spec_error():
    with pytest.raises(SpecError, match="space: unknown space 'mixed'"):
        api.solve("sfc", space="mixed")
    with pytest.raises(SpecError, match="objective: unknown objective 'speed'"):
        api.solve("sfc", objective="speed")
    with pytest.raises(SpecError, match="solver: unknown solver 'magic'"):
        api.solve("sfc", solver="magic")
    with pytest.raises(SpecError, match="solvers: unknown solver dp"):
        api.check("sfc", solvers=["dp"])
    # one rule: the API's errors name its arguments (model, array, levels, shard), never explore's flags
    with pytest.raises(SpecError, match="^model: unknown model 'nope'"):
        api.solve("nope")
    with pytest.raises(SpecError, match="^levels: must be between"):
        api.solve("sfc", levels=0)
    with pytest.raises(SpecError, match="^model: must be a model name, a path or a Network, got None$"):
        api.solve(None)
    with pytest.raises(SpecError, match="^array: unknown array 'nosuch'"):
        api.solve("sfc", "nosuch")
    with pytest.raises(SpecError, match="^array: must be an array name, a path or an ArraySpec, got 3$"):
        api.check("sfc", 3)
    with pytest.raises(SpecError, match="^shard: needs 0 <= I < N, got '5/2'$"):
        list(api.sweep({"version": 1}, shard="5/2"))
    with pytest.raises(Refused, match="exceeds its limit"):
        api.solve("lenet-c", space="accpar", solver="brute")


def test_the_cli_calls_the_api(capsys, monkeypatch):
    calls = []
    for name in ("solve", "check"):  # the CLI's call: the API function whose errors name its options
        real = getattr(api, name).with_option_names

        def spy(*args, _real=real, _name=name, **kwargs):
            calls.append((_name, args, kwargs))
            return _real(*args, **kwargs)

        monkeypatch.setattr(getattr(api, name), "with_option_names", spy)
    code, _, _ = run_cli(["--model", "sfc", "--levels", "1"], capsys)
    assert code == 0 and calls[-1][0] == "solve" and calls[-1][1] == ("sfc", "hypar-16")
    code, _, _ = run_cli(["check", "--model", "sfc", "--levels", "1", "--workers", "1"], capsys)
    assert code == 0 and calls[-1][0] == "check" and calls[-1][2]["workers"] == 1


def test_solve_and_check_list_the_run_options_as_their_keyword_arguments():
    import inspect

    from explorer.app.run_options import FIELDS

    for fn, own in ((api.solve, "solver"), (api.check, "solvers")):
        params = inspect.signature(fn).parameters
        assert list(params)[:3] == ["model", "array", own] and list(params)[3:] == list(FIELDS)
        assert all(params[name].kind is inspect.Parameter.KEYWORD_ONLY for name in FIELDS)
    with pytest.raises(SpecError, match=r"^colour: solve\(\) has no such argument \(solve\(\) takes model, array, solver, "):
        api.solve("sfc", colour="red")
    with pytest.raises(SpecError, match=r"^solver: check\(\) has no such argument; it is an argument of solve\(\) "):
        api.check("sfc", solver="exact")  # check takes solvers


def test_a_split_run_names_the_first_cpsat_option_given_in_the_clis_order():
    for fn in (api.solve, api.check):
        with pytest.raises(SpecError) as e:
            fn("lenet-c", "tpu-mix-16", split="optimal", dump_model="m.pb", seed=3)
        assert e.value.source == "seed" and "not with split" in str(e.value)
