"""The JSON contract of ``explore --split`` (``explore split``) and ``explore check --uneven``: one
schema with ``explore`` and ``explore check`` (tests/test_results.py): the same header, the same
key names and value types for the same concept (plan figures, exact objective and bound,
baselines, solvers by name), layer names beside every plan, and only what a split alone has
(alphas, top groups' times, memory per kind) on top; ``schema_version`` 4."""

from __future__ import annotations

import json
from fractions import Fraction
from fractions import Fraction as F

from explorer.app.results import SCHEMA_VERSION, exact_number
from explorer.app.split import Split, split_run
from explorer.core.partition import Space
from explorer.frontends import load_array, load_model

from .conftest import run_cli
from .test_results import BASELINE as EVEN_BASELINE
from .test_results import CAP_KEYS, FIGURES, HEADER, RUN, SOLVED, VIOLATION, key_paths, under

SPLIT_OWN = {"split", "alpha_grid", "grid_only", "free", "alphas", "group_times_s", "idle_s", "equal_best_s", "memory",
             "note"}
SPLIT = HEADER | RUN | FIGURES | SPLIT_OWN | {"level_cost_elements", "objective_value", "baselines", "speedup_over_all_I",
                                             "traffic_ratio_to_all_I", "comm_speedup_over_all_I"}
BASELINE = EVEN_BASELINE | {"split_speedup"}  # explore's baseline and the split plan's speedup over it
MEMORY = {"accelerators", "memory_bytes", "limit_bytes", "ok", "excess_bytes"}
ROW_OWN = {"alphas", "rescored", "breaks"}  # a check --uneven row: check's row keys and these
CHECK = HEADER | {"split", "alpha_grid", "grid_only", "free", "solvers", "optimum", "optimum.objective",
                  "optimum.proven_by", "infeasible", "agree", "problems", "wall_s"}
# the keys of schema 3 that name a concept explore already names otherwise: gone
RENAMED = {"network": "model", "objective_bound": "bound", "bound_s": "bound", "compared": "baselines",
           "weight_copies": "constraints.weight_copies", "optimum_s": "optimum.objective"}
FLOAT_KEYS = {"comm_time_s", "compute_s", "step_time_s", "gap", "wall_s", "speedup_over_all_I"}  # explore's floats
EXACT_KEYS = {"traffic_elements", "traffic_bytes", "memory_bytes_per_accelerator", "objective_value", "bound"}
ROW_EXACT = EXACT_KEYS | {"objective"}  # in check's rows and optimum: the objective's value


def split_keys(kinds=("v2", "v3"), violations: bool = False, caps: bool = False) -> set[str]:
    out = set(SPLIT) | (CAP_KEYS if caps else set())
    for name in ("all-I", "all-II", "trick", "hypar"):
        out |= {f"baselines.{name}"} | under(f"baselines.{name}", BASELINE)
    for k in kinds:
        out |= {f"memory.{k}"} | under(f"memory.{k}", MEMORY)
    if violations:
        out |= under("violations[]", VIOLATION)
    return out


def is_exact_form(v) -> bool:
    """exact_number's form: an int, a float that is exactly the value, or a 'p/q' string (not integral)."""
    if isinstance(v, bool):
        return False
    if isinstance(v, (int, float)):
        return True
    return isinstance(v, str) and "/" in v and Fraction(v).denominator > 1


def same_forms(even: dict, uneven: dict, exact: set[str] = EXACT_KEYS) -> list[str]:
    """The keys both objects hold whose values differ in form (explore's floats, exact numbers)."""
    bad = []
    for k in set(even) & set(uneven):
        a, b = even[k], uneven[k]
        if a is None or b is None:
            continue
        if k in FLOAT_KEYS and not (isinstance(a, float) and isinstance(b, float)):
            bad.append(k)
        elif k in exact and not (is_exact_form(a) and is_exact_form(b)):
            bad.append(k)
        elif k not in FLOAT_KEYS | exact and type(a) is not type(b):
            bad.append(k)
    return sorted(bad)


def test_split_json_keys_and_exact_numbers(capsys):
    code, out, err = run_cli(["split", "--model", "alexnet", "--split", "proportional", "--format", "json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert key_paths(d) == split_keys() and d["schema_version"] == SCHEMA_VERSION == 4
    assert not any(k.endswith("_exact") for k in key_paths(d)) and not set(RENAMED) & set(d)
    r = split_run(load_model("alexnet"), load_array("tpu-mix-16"), Space.ACCPAR, Split.PROPORTIONAL)
    # explore's forms: the evaluator's times as floats, the objective exact ("p/q": not a float exactly)
    assert d["step_time_s"] == float(r.step_time_s) and isinstance(d["step_time_s"], float)
    assert d["objective"] == "time" and d["objective_value"] == exact_number(r.step_time_s)
    assert isinstance(d["objective_value"], str) and Fraction(d["objective_value"]) == r.step_time_s
    assert d["group_times_s"] == [float(t) for t in r.group_times_s] and d["idle_s"] == float(r.idle_s)
    all_i = dict(r.compared)["all-I"]
    for name, t in r.compared:
        b = d["baselines"][name]
        assert b["step_time_s"] == float(t) and b["split_speedup"] == float(t / r.step_time_s)
        assert b["speedup_over_all_I"] == float(all_i / t)
    assert d["speedup_over_all_I"] == float(all_i / r.step_time_s)
    for m in r.memory:
        j = d["memory"][m.kind]
        assert Fraction(j["memory_bytes"]) == m.memory_bytes and Fraction(j["limit_bytes"]) == m.limit_bytes
        assert all(is_exact_form(j[k]) for k in ("memory_bytes", "limit_bytes", "excess_bytes"))
    assert Fraction(d["memory"]["v2"]["memory_bytes"]).denominator == 7  # 15/56 of the batch: not whole bytes
    assert d["bound"] is None and d["gap"] is None and d["equal_best_s"] is None
    assert d["constraints"]["memory_bytes"] is None  # no limit for every kind: each kind's own (memory)


def test_split_json_with_a_bound_and_violations(capsys):
    code, out, err = run_cli(["split", "--model", "lenet-c", "--split", "optimal", "--alpha-grid", "8", "--format", "json"],
                             capsys)
    assert code == 0, err
    d = json.loads(out)
    assert key_paths(d) == split_keys()
    assert d["status"] == "optimal" and d["bound"] == d["objective_value"] and is_exact_form(d["bound"])
    assert d["gap"] == 0.0 and float(Fraction(d["bound"])) == d["step_time_s"]  # the float of the exact value
    assert isinstance(d["equal_best_s"], float) and d["equal_best_s"] >= d["step_time_s"]
    args = ["split", "--model", "vgg-e", "--batch", "16384", "--space", "hypar", "--split", "equal", "--format", "json"]
    code, out, err = run_cli(args, capsys)
    d = json.loads(out)
    assert code == 1 and key_paths(d) == split_keys(violations=True) and d["ok"] is False
    (v,) = d["violations"]
    assert v["actual_bytes"] == d["memory"]["v2"]["memory_bytes"] == 21564152576 and v["limit_bytes"] == 16 * 2**30
    assert v["excess_bytes"] == 21564152576 - 16 * 2**30 == d["memory"]["v2"]["excess_bytes"]


def test_split_json_names_the_layers_of_its_plan(capsys):
    """Layer names beside every uneven plan: ``layers`` (and ``nodes``) as explore's, one per
    column of ``plan`` and of every group's row of ``alphas``; --memory and --cap in
    ``constraints`` as explore writes them."""
    code, out, err = run_cli(["split", "--model", "resnet18", "--split", "proportional", "--memory", "64",
                              "--cap", "3=1GB", "--format", "json"], capsys)
    d = json.loads(out)
    assert code == 0, err
    names = [L.name for L in load_model("resnet18").layers]
    assert d["layers"] == names == [n["name"] for n in d["nodes"]]
    assert all(len(row) == len(names) for row in d["plan"])
    assert all(len(row) == len(names) for groups in d["alphas"] for row in groups)
    assert d["constraints"]["memory_bytes"] == 64 * 2**30 and d["constraints"]["caps"][0]["level"] == 3
    assert key_paths(d) == split_keys(caps=True) | under("baselines.all-II.violations[]", VIOLATION)  # all-II breaks the cap


def test_explore_and_explore_split_share_their_keys(capsys):
    """The same model and array, the even split (explore) and an uneven one (explore --split): the
    header is the same object but for the split's memory (each kind's) and warnings (explore
    warns that every split is equal); every key both write has the same form; the split adds
    only its own keys."""
    base = ["--model", "lenet-c", "--array", "tpu-mix-16", "--objective", "time", "--format", "json"]
    code, out, _ = run_cli(base, capsys)
    even = json.loads(out)
    code2, out, err = run_cli(base + ["--split", "optimal"], capsys)
    uneven = json.loads(out)
    assert code == code2 == 0, err
    for k in HEADER:
        if "." not in k and k not in ("warnings", "constraints"):
            assert even[k] == uneven[k], k
    assert even["constraints"] == {**uneven["constraints"], "memory_bytes": even["constraints"]["memory_bytes"]}
    assert same_forms(even, uneven) == []
    assert same_forms(even["baselines"]["all-I"], uneven["baselines"]["all-I"]) == []
    assert set(uneven) - set(even) == SPLIT_OWN
    assert set(even) - set(uneven) == {"level_cost_units", "unit_elements", "time_objective"}  # docs/commands.md
    # the even DP's time optimum is the best equal split here; the joint optimum is below it
    assert even["objective_value"] == "1448401/52500000000" and uneven["equal_best_s"] == float(F(1448401, 52500000000))
    assert Fraction(uneven["objective_value"]) == F(1330477, 52500000000)


def test_check_uneven_json_keys_and_exact_numbers(capsys):
    code, out, err = run_cli(["check", "--uneven", "--model", "lenet-c", "--array", "tpu-mix-16", "--space", "hypar",
                              "--solvers", "joint,brute,search", "--format", "json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    rows = d["solvers"]
    assert list(rows) == ["joint", "brute", "search"]
    expected = CHECK | {"solvers.joint", "solvers.brute", "solvers.search", "solvers.brute.status", "solvers.brute.reason",
                        "solvers.search.reason"}  # search: a heuristic, no bound (app.split_notes.HEURISTIC)
    expected |= under("solvers.joint", SOLVED | ROW_OWN | {"method"}) | under("solvers.search", SOLVED | ROW_OWN | {"method"})
    assert key_paths(d) == expected and d["schema_version"] == SCHEMA_VERSION and d["agree"] is True
    assert not set(RENAMED) & set(d)
    assert rows["brute"]["status"] == "refused" and "plan" not in rows["brute"]
    assert is_exact_form(d["optimum"]["objective"]) and d["optimum"]["proven_by"] == ["joint"]
    assert rows["joint"]["objective"] == rows["joint"]["bound"] == d["optimum"]["objective"] and rows["joint"]["gap"] == 0
    assert rows["search"]["bound"] is None and isinstance(rows["search"]["step_time_s"], float)
    assert rows["search"]["reason"] == "search: a heuristic, no bound"
    assert Fraction(rows["search"]["objective"]) >= Fraction(d["optimum"]["objective"])
    for name in ("joint", "search"):  # every row with a plan names its layers through the header
        assert all(len(row) == len(d["layers"]) for row in rows[name]["plan"])
        assert all(len(row) == len(d["layers"]) for groups in rows[name]["alphas"] for row in groups)


def test_check_and_check_uneven_rows_share_their_keys(capsys):
    """explore check's rows and check --uneven's: the same keys (the uneven row adds its alphas,
    rescored and breaks) in the same forms, a refusal as check writes one."""
    code, out, _ = run_cli(["check", "--model", "lenet-c", "--levels", "2", "--objective", "time", "--solvers",
                            "exact,brute", "--workers", "1", "--format", "json"], capsys)
    even = json.loads(out)
    code2, out, err = run_cli(["check", "--uneven", "--model", "lenet-c", "--array", "tpu-mix-16", "--solvers",
                               "joint,brute", "--format", "json"], capsys)
    uneven = json.loads(out)
    assert code == code2 == 0, err
    e, u = even["solvers"]["exact"], uneven["solvers"]["joint"]
    assert set(u) - ROW_OWN == set(e) and same_forms(e, u, ROW_EXACT) == []
    assert (e["method"], u["method"]) == ("exact:chain-dp", "joint:bound+label-setting")  # how each answer was reached
    assert uneven["solvers"]["brute"] == {"status": "refused", "reason": uneven["solvers"]["brute"]["reason"]}
    assert set(uneven["optimum"]) <= set(even["optimum"]) and same_forms(even["optimum"], uneven["optimum"], ROW_EXACT) == []
    assert {k for k in HEADER if "." not in k} <= set(uneven)


def test_split_json_without_a_plan_is_explores_without_a_plan(capsys):
    """Pins and forbids that leave a layer no type: as explore, ``plan`` null and no figures; the
    header's constraints are the run's (the cap too, though no solver ran under it)."""
    args = ["--model", "sfc", "--array", "tpu-mix-16", "--pin", "fc1@0=I", "--forbid", "fc1=I", "--cap", "0=1GB",
            "--format", "json"]
    code, out, _ = run_cli(args + ["--split", "proportional"], capsys)
    d = json.loads(out)
    assert code == 1 and d["status"] == "infeasible" and d["plan"] is None and d["alphas"] is None and d["ok"] is False
    assert not FIGURES & set(d) and d["constraints"]["caps"] == [{"level": 0, "bytes": 10**9, "from": "--cap"}]
    assert not {"objective_value", "baselines", "level_cost_elements"} & set(d)  # as explore: keys left out, not null
    assert d["constraints"]["pins"] == ["pin fc1@0=I"] and d["constraints"]["forbids"] == ["forbid fc1=I"]
    code, out, _ = run_cli(args, capsys)
    even = json.loads(out)
    assert even["plan"] is None and not FIGURES & set(even) and even["constraints"]["caps"] == d["constraints"]["caps"]
    # the conflict as explore names it, in its keys (not only in the split's note)
    assert (d["conflict"], d["suggestion"]) == (even["conflict"], even["suggestion"]) == (["pin fc1@0=I", "forbid fc1=I"], None)


TINY = ["--memory", "0.00001"]  # 10.74 kB per accelerator: no plan of lenet-c fits


def test_infeasible_explore_and_explore_split_share_their_keys(capsys):
    """A proven infeasible run: explore --solver exact and explore --split optimal --solver exact
    both write ``conflict`` and ``suggestion`` (the lone memory rule is the conflict; the same
    smallest feasible memory), not the conflict in ``note`` alone."""
    base = ["--model", "lenet-c", "--array", "tpu-mix-16", "--objective", "time", "--solver", "exact", *TINY,
            "--format", "json"]
    code, out, _ = run_cli(base, capsys)
    even = json.loads(out)
    code2, out, err = run_cli(base + ["--split", "optimal", "--alpha-grid", "4"], capsys)
    uneven = json.loads(out)
    assert code == code2 == 1 and even["status"] == uneven["status"] == "infeasible", err
    assert {"conflict", "suggestion"} <= set(even) & set(uneven)
    assert even["conflict"] == uneven["conflict"] == ["memory <= 10.49 KiB per accelerator (--memory)"]
    assert "smallest feasible memory" in even["suggestion"] and uneven["suggestion"] == even["suggestion"]
    # no objective_value or baselines without a plan, as explore; the split names what proved there is none
    assert set(uneven) - set(even) == SPLIT_OWN | {"bound_method"} and uneven["bound_method"] == "exact:joint:bound+labels"
    assert set(even) - set(uneven) == {"reason", "time_objective"}


def test_infeasible_check_and_check_uneven_share_their_keys(capsys):
    """A proven infeasible check: the rows of check and check --uneven have the same keys (the
    uneven row adds its own), ``method`` among them, and both reports name the conflict."""
    code, out, _ = run_cli(["check", "--model", "lenet-c", "--levels", "2", "--objective", "time", "--solvers",
                            "exact,brute", "--workers", "1", *TINY, "--format", "json"], capsys)
    even = json.loads(out)
    code2, out, err = run_cli(["check", "--uneven", "--model", "lenet-c", "--array", "tpu-mix-16", "--solvers",
                               "exact,brute", "--alpha-grid", "4", *TINY, "--format", "json"], capsys)
    uneven = json.loads(out)
    assert code == code2 == 0 and even["infeasible"] == ["exact", "brute"] and uneven["infeasible"] == ["exact"], err
    e, u = even["solvers"]["exact"], uneven["solvers"]["exact"]
    assert e["status"] == u["status"] == "infeasible" and set(u) - ROW_OWN == set(e)
    assert e["method"] == "exact:least-resource" and u["method"] == "exact:joint:bound+labels"  # the constrained paths
    assert even["conflict"] == uneven["conflict"] == ["memory <= 10.49 KiB per accelerator (--memory)"]
    assert uneven["suggestion"] is None and set(uneven) - set(even) == {"split", "alpha_grid", "grid_only", "free"}


def test_several_rules_proven_infeasible_name_no_conflict():
    """Under one rule that rule is the conflict; under several, which conflict is not known: null."""
    from explorer.app.split import proven_conflict

    assert proven_conflict(("cap 0 <= 1 GB",)).conflict == ("cap 0 <= 1 GB",)
    assert proven_conflict(("cap 0 <= 1 GB", "memory <= 1 kB per accelerator")).conflict is None
    assert proven_conflict(()).conflict is None
