"""The JSON contract of ``explore split`` and ``explore check --uneven``: the full key set (nested
keys too), ``schema_version``, and ``exact_number``'s form (int, exact float or "p/q") for every
exact quantity, as ``explore`` and ``check`` write theirs (tests/test_results.py)."""

from __future__ import annotations

import json
from fractions import Fraction

from explorer.app.results import SCHEMA_VERSION, exact_number
from explorer.app.split import Split, split_run
from explorer.core.partition import Space
from explorer.frontends import load_array, load_model

from .conftest import run_cli
from .test_results import key_paths

SPLIT = {"schema_version", "network", "array", "space", "split", "alpha_grid", "grid_only", "status", "plan", "alphas",
         "step_time_s", "group_times_s", "idle_s", "compared", "wall_s", "bound_s", "gap", "equal_best_s", "memory",
         "weight_copies", "ok", "violations", "note", "free", "batch", "warnings", "objective", "objective_value",
         "objective_bound", "constraints", "solver"}
COMPARED = {"step_time_s", "speedup"}
MEMORY = {"accelerators", "memory_bytes", "limit_bytes", "ok", "excess_bytes"}
VIOLATION = {"constraint", "limit_bytes", "actual_bytes", "excess_bytes"}
CHECK = {"schema_version", "network", "array", "space", "alpha_grid", "grid_only", "free", "agree", "problems", "optimum_s",
         "proven_by", "solvers", "solvers[].solver", "solvers[].status", "solvers[].step_time_s", "solvers[].bound_s",
         "solvers[].wall_s", "solvers[].note", "solvers[].rescored", "solvers[].breaks", "solvers[].ok",
         "constraints"}


def split_keys(kinds=("v2", "v3"), violations: bool = False) -> set[str]:
    out = set(SPLIT)
    for name in ("all-I", "trick", "hypar"):
        out |= {f"compared.{name}"} | {f"compared.{name}.{k}" for k in COMPARED}
    for k in kinds:
        out |= {f"memory.{k}"} | {f"memory.{k}.{m}" for m in MEMORY}
    if violations:
        out |= {f"violations[].{k}" for k in VIOLATION}
    return out


def is_exact_form(v) -> bool:
    """exact_number's form: an int, a float that is exactly the value, or a 'p/q' string (not integral)."""
    if isinstance(v, bool):
        return False
    if isinstance(v, (int, float)):
        return True
    return isinstance(v, str) and "/" in v and Fraction(v).denominator > 1


def test_split_json_keys_and_exact_numbers(capsys):
    code, out, err = run_cli(["split", "--model", "alexnet", "--split", "proportional", "--format", "json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert key_paths(d) == split_keys() and d["schema_version"] == SCHEMA_VERSION
    assert not any(k.endswith("_exact") for k in key_paths(d))
    r = split_run(load_model("alexnet"), load_array("tpu-mix-16"), Space.ACCPAR, Split.PROPORTIONAL)
    # every exact quantity in exact_number's form and equal to the report's Fraction
    assert d["step_time_s"] == exact_number(r.step_time_s) and Fraction(d["step_time_s"]) == r.step_time_s
    assert isinstance(d["step_time_s"], str)  # this one is not a float exactly: "p/q"
    assert [Fraction(t) for t in d["group_times_s"]] == list(r.group_times_s) and Fraction(d["idle_s"]) == r.idle_s
    for name, t in r.compared:
        assert is_exact_form(d["compared"][name]["step_time_s"]) and Fraction(d["compared"][name]["step_time_s"]) == t
        assert isinstance(d["compared"][name]["speedup"], float)  # a ratio: a float, as in explore
    for m in r.memory:
        j = d["memory"][m.kind]
        assert Fraction(j["memory_bytes"]) == m.memory_bytes and Fraction(j["limit_bytes"]) == m.limit_bytes
        assert all(is_exact_form(j[k]) for k in ("memory_bytes", "limit_bytes", "excess_bytes"))
    assert Fraction(d["memory"]["v2"]["memory_bytes"]).denominator == 7  # 15/56 of the batch: not whole bytes
    assert d["bound_s"] is None and d["gap"] is None and d["equal_best_s"] is None


def test_split_json_with_a_bound_and_violations(capsys):
    code, out, err = run_cli(["split", "--model", "lenet-c", "--split", "optimal", "--alpha-grid", "8", "--format", "json"],
                             capsys)
    assert code == 0, err
    d = json.loads(out)
    assert key_paths(d) == split_keys()
    assert d["status"] == "optimal" and d["bound_s"] == d["step_time_s"] and is_exact_form(d["bound_s"])
    assert is_exact_form(d["equal_best_s"]) and Fraction(d["equal_best_s"]) >= Fraction(d["step_time_s"])
    args = ["split", "--model", "vgg-e", "--batch", "16384", "--space", "hypar", "--split", "equal", "--format", "json"]
    code, out, err = run_cli(args, capsys)
    d = json.loads(out)
    assert code == 1 and key_paths(d) == split_keys(violations=True)
    (v,) = d["violations"]
    assert v["actual_bytes"] == d["memory"]["v2"]["memory_bytes"] == 21564152576 and v["limit_bytes"] == 16 * 2**30
    assert v["excess_bytes"] == 21564152576 - 16 * 2**30 == d["memory"]["v2"]["excess_bytes"]


def test_check_uneven_json_keys_and_exact_numbers(capsys):
    code, out, err = run_cli(["check", "--uneven", "--model", "lenet-c", "--array", "tpu-mix-16", "--space", "hypar",
                              "--solvers", "joint,brute,search", "--format", "json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert key_paths(d) == CHECK and d["schema_version"] == SCHEMA_VERSION and d["agree"] is True
    rows = {r["solver"]: r for r in d["solvers"]}
    assert rows["brute"]["status"] == "refused" and rows["brute"]["step_time_s"] is None
    assert is_exact_form(d["optimum_s"]) and rows["joint"]["step_time_s"] == rows["joint"]["bound_s"] == d["optimum_s"]
    assert rows["search"]["bound_s"] is None
    assert Fraction(rows["search"]["step_time_s"]) >= Fraction(d["optimum_s"]) and is_exact_form(rows["search"]["step_time_s"])
