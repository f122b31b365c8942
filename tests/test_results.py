"""The JSON contract of ``explore`` and ``explore check``: the full key set (nested keys too),
``schema_version``, ``nodes``, and one exact-number form for every exact quantity."""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction

import pytest

from explorer.app.results import SCHEMA_VERSION, exact_number

from .conftest import run_cli as run

HEADER = {
    "schema_version", "explorer_version", "model", "model_source", "array", "array_source", "space", "objective",
    "batch", "levels", "accelerators", "dtype_bytes", "layers", "nodes", "nodes[].name", "nodes[].kind",
    "nodes[].inputs", "constraints", "constraints.caps", "constraints.memory_bytes", "constraints.weight_copies",
    "constraints.pins", "constraints.forbids", "warnings", "time_model", "time_model.communication",
    "time_model.topology", "time_model.overlap", "time_model.bandwidth_beyond", "time_model.shared_bandwidth_GBps",
    "time_model.level_bandwidth_GBps", "sequence", "approximations", "input_shapes",
}
CAP_KEYS = {"constraints.caps[].level", "constraints.caps[].bytes", "constraints.caps[].from"}
FIGURES = {"traffic_elements", "traffic_bytes", "comm_time_s", "compute_s", "step_time_s",
           "memory_bytes_per_accelerator", "violations"}
VIOLATION = {"constraint", "limit_bytes", "actual_bytes", "excess_bytes"}
BASELINE = FIGURES | {"traffic_ratio_to_all_I", "speedup_over_all_I"}
RUN = {"solver", "status", "ok", "wall_s", "bound", "gap", "plan"}  # ok: the plan keeps to every rule
RUN_PLAN = RUN | FIGURES | {"level_cost_elements", "level_cost_units", "unit_elements", "objective_value", "baselines",
                            "traffic_ratio_to_all_I", "speedup_over_all_I", "comm_speedup_over_all_I"}


def key_paths(obj, prefix: str = "") -> set[str]:
    """Every key path in a JSON value: 'a.b' for nested objects, 'a[].b' inside lists."""
    out = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            path = f"{prefix}.{k}" if prefix else k
            out.add(path)
            out |= key_paths(v, path)
    elif isinstance(obj, list):
        for v in obj:
            out |= key_paths(v, prefix + "[]")
    return out


def under(prefix: str, keys: set[str]) -> set[str]:
    return {f"{prefix}.{k}" for k in keys}


def baselines(with_violations: bool, energy: bool = False) -> set[str]:
    out = {"baselines"}
    for name in ("all-I", "all-II", "trick"):
        keys = BASELINE | ({"energy_J", "energy_efficiency_over_all_I"} if energy else set())
        out |= {f"baselines.{name}"} | under(f"baselines.{name}", keys)
        if with_violations:
            out |= under(f"baselines.{name}.violations[]", VIOLATION)
    return out


def explore_json(args, capsys, status: int):
    code, out, _ = run(args + ["--format", "json"], capsys)
    assert code == status
    return json.loads(out)


def test_explore_json_keys_dp_plan_breaking_a_cap(capsys):
    r = explore_json(["--model", "lenet-c", "--levels", "2", "--cap", "1=1kB"], capsys, 1)
    expected = HEADER | CAP_KEYS | RUN_PLAN | {"reason"} | under("violations[]", VIOLATION) | baselines(True)
    assert key_paths(r) == expected
    # the DP's plan breaks the cap: not proven infeasible, so it keeps its status; ok false, exit 1
    assert r["status"] == "level-optimal" and r["ok"] is False and r["bound"] is None and r["gap"] is None


@pytest.mark.parametrize("args", [["--model", "lenet-c", "--array", "hypar-paper", "--levels", "2"],
                                  ["split"]], ids=["even", "uneven"])
def test_a_cap_given_as_a_time_carries_its_seconds(capsys, args):
    """--cap 0=1ms: the bytes (seconds x the level's bandwidth, as the text shows) and the seconds,
    the same in an even and an uneven run's JSON; a cap in bytes has no seconds."""
    code, out, _ = run([*args, "--cap", "0=1ms", "--cap", "1=2MB", "--format", "json"], capsys)
    caps = json.loads(out)["constraints"]["caps"]
    b = json.loads(out)["time_model"]["level_bandwidth_GBps"][0]
    assert caps[0] == {"level": 0, "bytes": Fraction(str(b)) * 10**9 / 1000, "seconds": "1/1000", "from": "--cap"}
    assert caps[1] == {"level": 1, "bytes": 2 * 10**6, "from": "--cap"}


TIME_TERMS = {"time_objective", "time_objective.step_time", "time_objective.compute_s"}


def test_explore_json_keys_time_objective(capsys):
    """The time objective adds its terms; a bound (CP-SAT) adds the bound's communication."""
    r = explore_json(["--model", "lenet-c", "--levels", "2", "--objective", "time"], capsys, 0)
    assert key_paths(r) == HEADER | RUN_PLAN | TIME_TERMS | {"time_objective.communication_s"} | baselines(False)
    r = explore_json(["--model", "lenet-c", "--levels", "2", "--objective", "time", "--solver", "cpsat", "--workers", "1"],
                     capsys, 0)
    assert key_paths(r) == (HEADER | RUN_PLAN | TIME_TERMS | {"cpsat_status", "bound_method"} | baselines(False)
                            | {"time_objective.communication_s", "time_objective.bound_communication_s"})


def test_explore_json_keys_cpsat(capsys):
    r = explore_json(["--model", "lenet-c", "--levels", "2", "--solver", "cpsat", "--workers", "1"], capsys, 0)
    assert key_paths(r) == HEADER | RUN_PLAN | {"cpsat_status", "bound_method"} | baselines(False)
    assert r["status"] == "optimal" and r["bound"] == r["objective_value"] == r["traffic_elements"]
    assert r["bound_method"] == "exact:chain-dp"  # the array's memory limit: the exact method runs first


def test_explore_json_keys_no_plan(capsys):
    r = explore_json(["--model", "lenet-c", "--levels", "2", "--memory", "0.0001", "--solver", "cpsat", "--workers", "1"],
                     capsys, 1)
    assert key_paths(r) == HEADER | RUN | {"cpsat_status", "conflict", "suggestion"}  # named by the exact method first
    assert r["plan"] is None and r["conflict"] == ["memory <= 104.9 KiB per accelerator (--memory)"]


def test_explore_json_keys_with_energy(capsys, tmp_path):
    from explorer.frontends import zoo

    text = zoo.array_files()["hypar-16"].read_text() + "energy_pJ_per_FLOP: 1.0\nlink_energy_pJ_per_byte: 10\n"
    (tmp_path / "e.yaml").write_text(text)
    r = explore_json(["--model", "lenet-c", "--levels", "2", "--array", str(tmp_path / "e.yaml")], capsys, 0)
    assert key_paths(r) == HEADER | RUN_PLAN | {"energy_J", "energy_efficiency_over_all_I"} | baselines(False, energy=True)
    assert r["energy_J"] > 0
    all_i = r["baselines"]["all-I"]
    assert r["energy_efficiency_over_all_I"] == pytest.approx(all_i["energy_J"] / r["energy_J"])
    assert all_i["energy_efficiency_over_all_I"] == 1.0


SOLVED = {"status", "ok", "wall_s", "objective", "plan", "bound", "gap"} | FIGURES


def test_check_json_keys(capsys):
    code, out, _ = run(["check", "--model", "lenet-c", "--space", "accpar", "--workers", "1", "--format", "json"], capsys)
    assert code == 0
    r = json.loads(out)
    expected = HEADER | {"dp", "levels", "solvers", "optimum", "infeasible", "agree", "problems", "wall_s"}
    expected |= under("dp", SOLVED | {"method"})
    expected |= under("levels[]", {"level", "dp_cost_elements", "level_optimum_elements", "method", "dp_is_level_optimal"})
    expected |= {"solvers.cpsat", "solvers.exact", "solvers.brute"}
    expected |= under("solvers.cpsat", SOLVED | {"cpsat_status", "variables", "method"})
    expected |= under("solvers.exact", SOLVED | {"method"})
    expected |= {"solvers.brute.status", "solvers.brute.reason"}
    expected |= under("optimum", {"objective", "proven_by", "plan_from", "dp_objective", "dp_gap", "dp_gap_percent",
                                  "cells_differing", "dp_satisfies_constraints", "method", "methods"})
    expected |= {"optimum.methods.cpsat", "optimum.methods.exact"}
    expected |= under("optimum.cells_differing[]", {"level", "layer", "dp", "optimum"})
    assert key_paths(r) == expected


def test_check_json_keys_infeasible(capsys):
    code, out, _ = run(["check", "--model", "lenet-c", "--levels", "2", "--memory", "0.0001", "--workers", "1",
                        "--format", "json"], capsys)
    assert code == 0
    r = json.loads(out)
    no_plan = {"status", "wall_s", "bound", "gap"}
    expected = HEADER | {"dp", "levels", "solvers", "optimum", "infeasible", "agree", "problems", "wall_s",
                         "conflict", "suggestion"}
    # the DP cannot enforce memory: its plan is there, ok false, with the violation and the reason
    expected |= under("dp", SOLVED | {"reason", "method"}) | under("dp.violations[]", VIOLATION)
    expected |= under("levels[]", {"level", "dp_cost_elements", "level_optimum_elements", "method", "dp_is_level_optimal"})
    expected |= {"solvers.cpsat", "solvers.exact", "solvers.brute"}
    expected |= under("solvers.cpsat", no_plan | {"cpsat_status", "variables", "method"})
    expected |= under("solvers.exact", no_plan | {"reason", "method"})  # the exact solver proves it too
    expected |= under("solvers.brute", no_plan | {"reason", "method"})
    assert key_paths(r) == expected


def test_schema_version_and_nodes(capsys):
    r = explore_json(["--model", "resnet18", "--levels", "1"], capsys, 0)
    assert r["schema_version"] == SCHEMA_VERSION == 4  # 4: one schema for the even and the uneven split
    assert [n["name"] for n in r["nodes"]] == r["layers"]
    nodes = {n["name"]: n for n in r["nodes"]}
    assert nodes["conv1"] == {"name": "conv1", "kind": "conv", "inputs": []}
    assert nodes["s1b1_add"] == {"name": "s1b1_add", "kind": "add", "inputs": ["conv1", "s1b1_b"]}
    assert nodes["fc"]["kind"] == "fc"
    assert {n["kind"] for n in r["nodes"]} == {"conv", "add", "fc"}
    # every input names an earlier node: the list is in topological (layers) order
    seen = set()
    for n in r["nodes"]:
        assert set(n["inputs"]) <= seen
        seen.add(n["name"])
    # a chain: each node reads the one before it
    r = explore_json(["--model", "alexnet", "--levels", "1"], capsys, 0)
    assert [n["inputs"] for n in r["nodes"]] == [[]] + [[x] for x in r["layers"][:-1]]
    r = explore_json(["--model", "bert-base", "--levels", "1"], capsys, 0)
    att = [n for n in r["nodes"] if n["kind"] == "attention"]
    assert att and all(len(n["inputs"]) == 3 for n in att)


def test_exact_number_form():
    assert exact_number(Fraction(6, 2)) == 3 and isinstance(exact_number(Fraction(6, 2)), int)
    assert exact_number(Fraction(5, 4)) == 1.25
    assert exact_number(Fraction(1, 3)) == "1/3"
    assert Fraction(exact_number(Fraction(65677, 23437500))) == Fraction(65677, 23437500)


def test_exact_forms_write_a_missing_number_as_null():
    """exact_number and exact_decimal take None (JSON null), so no report spells the test out."""
    from explorer.app.llm_report import exact_decimal

    assert exact_number(None) is None and exact_decimal(None) is None
    assert exact_decimal(Fraction(49, 10)) == "4.9" and exact_decimal(Fraction(1, 3)) == "1/3"


def test_one_exact_form_for_objective_and_bound_in_both_commands(capsys):
    """explore's bound and objective_value and check's objective and bound: the same exact form."""
    args = ["--model", "lenet-c", "--levels", "2", "--objective", "time", "--workers", "1", "--format", "json"]
    code, out, _ = run(args + ["--solver", "cpsat"], capsys)
    r = json.loads(out)
    code, out, _ = run(["check"] + args, capsys)
    c = json.loads(out)
    cp = c["solvers"]["cpsat"]
    assert r["status"] == cp["status"] == "optimal"
    # a time objective is a fraction of seconds no double holds: "p/q" in every place
    assert isinstance(r["objective_value"], str) and "/" in r["objective_value"]
    assert r["bound"] == r["objective_value"] == cp["objective"] == cp["bound"] == c["optimum"]["objective"]
    assert Fraction(r["bound"]) == Fraction(r["objective_value"])
    # the time objective is the step time: compute + communication (no overlap on hypar-16)
    assert float(Fraction(r["bound"])) == pytest.approx(r["comm_time_s"] + r["compute_s"], rel=1e-12)
    assert Fraction(r["bound"]) == Fraction(r["time_objective"]["compute_s"]) + Fraction(r["time_objective"]["bound_communication_s"])
    assert c["time_objective"] == {"step_time": "compute + communication", "compute_s": r["time_objective"]["compute_s"]}


def test_results_are_frozen_and_json_ready():
    from explorer.api import check, solve

    r = solve("lenet-c", levels=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.status = None  # type: ignore[misc]
    assert json.loads(json.dumps(r.to_json())) == r.to_json()
    c = check("sfc", levels=1, workers=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.problems = ()  # type: ignore[misc]
    assert json.loads(json.dumps(c.to_json())) == c.to_json()
    assert c.agree and c.to_json()["agree"] is True
