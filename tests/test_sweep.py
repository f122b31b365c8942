"""Design-space sweeps: the sweep file, rows equal to single runs, failures as rows, grid order,
cache, shards and merge, Pareto and dp_gap, progress, and the Dask engine."""

from __future__ import annotations

import csv
import json
import shutil
import textwrap
from pathlib import Path

import pytest

from explorer.api import sweep
from explorer.app import code_stamp as stamp_mod
from explorer.app.sweep import cache as cache_mod
from explorer.app.sweep import point as point_mod
from explorer.app.sweep.engine import LocalEngine, run_points
from explorer.app.sweep.point import Outcome, solve_point
from explorer.app.sweep.spec import load_sweep
from explorer.app.sweep.table import FIGURES, add_dp_gap, pareto_labels
from explorer.core.errors import SpecError
from explorer.frontends import zoo

from .conftest import arguments_for_options, assert_group_ends, run_cli, sweep_process

ISSUE_EXAMPLE = """\
version: 1
name: scale-vgg
grid:                        # every combination of these lists
  model: [vgg-a, alexnet, lenet-c]
  levels: [1, 2, 3, 4, 5, 6]
  space: [hypar, accpar]
  solver: [dp, exact]
fixed:                       # the same for every point
  array: hypar-16
  batch: 256
  objective: traffic
  memory_GiB: 1000
"""


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def read_csv(folder: Path) -> list[dict[str, str]]:
    with open(folder / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_the_issue_example_is_accepted_as_written(tmp_path):
    sw = load_sweep(write(tmp_path / "s.yaml", ISSUE_EXAMPLE))
    assert sw.name == "scale-vgg" and len(sw.points) == 3 * 6 * 2 * 2
    assert sw.columns == ("model", "levels", "space", "solver", "array", "batch", "objective", "memory_GiB")
    # grid order: the last key varies fastest, like nested loops
    first = [p.as_dict() for p in sw.points[:3]]
    assert [(p["model"], p["levels"], p["space"], p["solver"]) for p in first] == [
        ("vgg-a", 1, "hypar", "dp"), ("vgg-a", 1, "hypar", "exact"), ("vgg-a", 1, "accpar", "dp")]
    assert sw.points[-1].as_dict() == {"model": "lenet-c", "levels": 6, "space": "accpar", "solver": "exact",
                                       "array": "hypar-16", "batch": 256, "objective": "traffic", "memory_GiB": 1000}
    assert [p.index for p in sw.points] == list(range(72))


@pytest.mark.parametrize("body,message", [
    ("version: 1\ngrid: {levels: [1]}\nfoo: 1\n", "s.yaml: foo: unknown key"),
    ("version: 2\ngrid: {levels: [1]}\n", "s.yaml: version: must be 1, got 2"),
    ("version: 1\ngrid: {levls: [1]}\n", "s.yaml: grid.levls: unknown key"),
    ("version: 1\ngrid: {levels: [1, x]}\n", "s.yaml: grid.levels[1]: must be an integer from 1 to 20, got 'x'"),
    ("version: 1\ngrid: {levels: 3}\n", "s.yaml: grid.levels: must be a non-empty list of values"),
    ("version: 1\ngrid:\n  levels: [1]\n  levels: [2]\n", "s.yaml: invalid YAML: duplicate key 'levels'"),
    ("version: 1\ngrid: {levels: [1]}\nfixed: {levels: 2}\n", "s.yaml: fixed.levels: also swept in grid"),
    ("version: 1\ngrid: {solver: [dp, greedy]}\n", "s.yaml: grid.solver[1]: must be one of dp, cpsat, exact, brute, pruned, got 'greedy'"),
    ("version: 1\nfixed: {batch: 0}\ngrid: {levels: [1]}\n", "s.yaml: fixed.batch: must be a positive integer, got 0"),
    ("version: 1\ngrid: {model: [vgg-z]}\n", "s.yaml: grid.model[0]: unknown model 'vgg-z'"),
    ("version: 1\ngrid: {model: [nets/missing.yaml]}\n", "s.yaml: grid.model[0]: no such file"),
    ("version: 1\ngrid: {caps: [[2GB]]}\n", "s.yaml: grid.caps[0]: '2GB' is not LEVEL=AMOUNT"),
    ("version: 1\ngrid: {link_bandwidth_GBps: [25, [10, -1]]}\n", "s.yaml: grid.link_bandwidth_GBps[1]: must be a positive number"),
    ("version: 1\npoints: [{levels: 2, colour: red}]\n", "s.yaml: points[0].colour: unknown key"),
    ("version: 1\nname: x\n", "s.yaml: grid: a sweep needs a grid or points"),
])
def test_bad_sweep_files_are_one_line_errors(tmp_path, capsys, body, message):
    f = tmp_path / "s.yaml"
    f.write_text(body)
    code, out, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "out")], capsys)
    assert code == 2
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out").exists()  # nothing written half-way


def test_bad_options_are_one_line_errors(tmp_path, capsys):
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {levels: [1]}\n")
    for args, message in ((["--shard", "2/2"], "--shard: needs 0 <= I < N"), (["--shard", "x"], "--shard: must be I/N"),
                          (["--pareto", "step_time_s"], "--pareto: needs two or more different columns"),
                          (["--pareto", "step_time_s,step_time_s"], "--pareto: needs two or more different columns"),
                          (["--pareto", "step_time_s,colour"], "--pareto: unknown column colour"),
                          (["--scheduler", "tcp://x:1"], "--scheduler: only with --engine dask")):
        code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o"), *args], capsys)
        assert code == 2 and message in err and err.count("\n") == 1, err


# ----------------------------------------------------------------------------------------------
# Each row equals what `explore` prints for that point alone.

SMALL = """\
version: 1
name: small
grid:
  model: [lenet-c, nets/tiny.yaml]
  levels: [2, 3]
  solver: [dp, exact]
fixed:
  array: hypar-16
  batch: 64
points:
  - {model: alexnet, levels: 3, space: accpar, objective: time, solver: cpsat, memory_GiB: 2, caps: ["0=20MB"]}
  - {model: lenet-c, levels: 2, constraints: cons.yaml}
  - {model: lenet-c, levels: 3, link_bandwidth_GBps: [10, 20, 40], peak_TFLOPS: 2}
  - {model: lenet-c, levels: 2, link_bandwidth_GBps: 7}
"""


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """The SMALL sweep, run once from another working folder with relative paths in it."""
    root = tmp_path_factory.mktemp("small")
    (root / "nets").mkdir()
    shutil.copy(zoo.resolve_model("lenet-c"), root / "nets" / "tiny.yaml")
    write(root / "cons.yaml", "version: 1\nweight_copies: 2\nforbids: [ip1=II]\n")
    spec = write(root / "small.yaml", SMALL)
    rows = list(sweep(spec, root / "out", workers=2))
    return root, spec, rows


def single_run(args, capsys) -> dict:
    code, out, _ = run_cli([*args, "--format", "json", "--workers", "1"], capsys)
    assert code in (0, 1)
    return json.loads(out)


def cli_args(p: dict, root: Path) -> list[str]:
    args = ["--model", str(root / p["model"]) if "/" in p["model"] else p["model"], "--array", p.get("array", "hypar-16"),
            "--levels", str(p["levels"]), "--solver", p.get("solver", "dp"), "--space", p.get("space", "hypar"),
            "--objective", p.get("objective", "traffic"), "--batch", str(p.get("batch", 64))]
    if "memory_GiB" in p:
        args += ["--memory", str(p["memory_GiB"])]
    for c in p.get("caps", []):
        args += ["--cap", c]
    if "constraints" in p:
        args += ["--constraints", str(root / p["constraints"])]
    return args


def overridden_array(root: Path, p: dict) -> Path:
    """The point's bandwidth/peak overrides written as an array file, for a single run to read."""
    bw = p["link_bandwidth_GBps"]
    bw = bw if isinstance(bw, list) else [bw] * p["levels"]
    path = root / f"arr-{p['levels']}-{len(str(bw))}.yaml"
    write(path, f"version: 1\nname: hypar-16\nlevels: {p['levels']}\ndtype_bytes: 4\nlink_bandwidth_GBps: {bw}\n"
                f"peak_TFLOPS: {p.get('peak_TFLOPS', 0.512)}\nmemory_GiB: 4\n")
    return path


def test_rows_equal_single_runs(small, capsys):
    root, _, rows = small
    plans = [json.loads(line) for line in (root / "out" / "plans.jsonl").read_text().splitlines()]
    table = read_csv(root / "out")
    assert len(rows) == len(plans) == len(table) == 12
    for row, line, cells in zip(rows, plans, table):
        p = line["point"]
        args = cli_args(p, root)
        if "link_bandwidth_GBps" in p:
            args[args.index("--array") + 1] = str(overridden_array(root, p))
        single = single_run(args, capsys)
        assert row["status"] == single["status"] == cells["status"], p
        assert single["plan"] is not None
        for key in FIGURES:
            assert row[key] == single.get(key), (p, key)
            assert cells[key] == ("" if single.get(key) is None else repr(single[key]) if isinstance(single[key], float) else str(single[key])), (p, key)
        if "link_bandwidth_GBps" not in p:  # same array file: the whole JSON object agrees
            drop = {"wall_s", "cpsat_status"}
            keyed = json.loads(arguments_for_options(json.dumps(single)))  # the sweep names its keys (caps), not --cap
            assert {k: v for k, v in line["result"].items() if k not in drop} == {k: v for k, v in keyed.items() if k not in drop}
        else:
            assert line["result"]["plan"] == single["plan"]


def test_relative_paths_resolve_against_the_sweep_folder(small):
    root, _, rows = small
    tiny = [r for r in rows if r["model"] == "nets/tiny.yaml"]
    assert len(tiny) == 4 and all(r["status"] in ("optimal", "level-optimal") for r in tiny)
    lenet = [r for r in rows if r["model"] == "lenet-c"][:4]
    assert [r["traffic_elements"] for r in tiny] == [r["traffic_elements"] for r in lenet]  # same contents


def test_overrides_change_the_answer(small):
    _, _, rows = small
    base = next(r for r in rows if r["model"] == "lenet-c" and r["levels"] == 3 and r["solver"] == "dp")
    fast = rows[10]
    assert fast["link_bandwidth_GBps"] == [10, 20, 40] and fast["peak_TFLOPS"] == 2
    assert fast["compute_s"] == pytest.approx(base["compute_s"] * 0.512 / 2)
    assert rows[11]["comm_time_s"] > rows[2]["comm_time_s"]  # 7 GB/s links instead of 60


def test_csv_holds_every_key_then_the_figures(small):
    root, _, _ = small
    header = (root / "out" / "results.csv").read_text().splitlines()[0].split(",")
    assert header[:11] == ["model", "levels", "solver", "array", "batch", "space", "objective", "memory_GiB", "caps",
                           "constraints", "link_bandwidth_GBps"]
    for col in ("status", "traffic_elements", "traffic_bytes", "comm_time_s", "step_time_s", "memory_bytes_per_accelerator",
                "speedup_over_all_I", "bound", "gap", "wall_s", "error", "dp_gap"):
        assert col in header
    assert read_csv(root / "out")[10]["link_bandwidth_GBps"] == "10;20;40"


def test_dp_gap_against_the_proven_optimum(small):
    _, _, rows = small
    for r in rows[:8]:
        if r["solver"] == "dp":
            opt = next(o for o in rows[:8] if o["solver"] == "exact" and o["model"] == r["model"] and o["levels"] == r["levels"])
            assert r["dp_gap"] == pytest.approx(r["objective_value"] / opt["objective_value"] - 1) and r["dp_gap"] >= 0
        else:
            assert r["dp_gap"] is None
    assert rows[9]["dp_gap"] is None  # no optimum of that point in the sweep


# ----------------------------------------------------------------------------------------------
# Failures are rows; order; cache.

class InProcess:
    """An engine that solves in this process, finishing points in REVERSE order."""

    name = "test"

    def run(self, tasks):
        for i, p in reversed(tasks):
            yield solve_point(i, p)

    def close(self):
        pass


FAILING = """\
version: 1
grid:
  model: [lenet-c]
  levels: [2]
  solver: [dp, cpsat]
points:
  - {model: resnet18, levels: 12, solver: exact, space: accpar}  # refused: too large for exact (3^12 vectors)
  - {model: lenet-c, levels: 2, solver: cpsat, memory_GiB: 0.0001}   # infeasible
  - {model: lenet-c, levels: 2, caps: ["5=1GB"]}          # invalid: no level 5
  - {model: lenet-c, levels: 3, seed: 7}                  # raises (see the test)
"""


def test_failures_are_rows_in_grid_order_and_errors_are_not_cached(tmp_path, monkeypatch):
    sw = load_sweep(write(tmp_path / "f.yaml", FAILING))
    point_mod._network.cache_clear()
    real = point_mod.run_single

    def flaky(params):
        if params.get("seed") == 7:
            raise RuntimeError("boom")
        return real(params)

    monkeypatch.setattr(point_mod, "run_single", flaky)
    cache = cache_mod.Cache(tmp_path)
    outs = list(run_points(sw.points, sw.base_dir, InProcess(), cache))
    assert [o.index for o in outs] == list(range(6))  # grid order although the engine ran backwards
    assert [o.status for o in outs] == ["level-optimal", "optimal", "refused", "infeasible", "invalid", "error"]
    assert "use solver cpsat" in outs[2].error  # the sweep's key, not explore's option
    assert "these conflict: memory" in outs[3].error
    assert "level 5 is out of range" in outs[4].error
    assert outs[5].error.startswith("RuntimeError: boom")
    assert point_mod._network.cache_info().hits >= 1  # lenet-c parsed once for its points
    monkeypatch.setattr(point_mod, "run_single", real)
    again = list(run_points(sw.points, sw.base_dir, InProcess(), cache))
    assert [o.cached for o in again] == [True] * 5 + [False]  # the error is retried, the answers reused
    assert again[5].status == "level-optimal"


def test_cache_key_is_the_contents(tmp_path):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    shutil.copy(zoo.resolve_model("lenet-c"), a)
    shutil.copy(a, b)
    key = cache_mod.point_key
    assert key({"model": str(a), "levels": 2}) == key({"model": str(b), "levels": 2})  # renamed copy: hit
    assert key({"model": "lenet-c", "levels": 2}) == key({"model": str(a), "levels": 2})
    assert key({"model": str(a), "levels": 2}) != key({"model": str(a), "levels": 3})
    before = key({"model": str(b), "levels": 2})
    b.write_text(b.read_text().replace("out_features: 500", "out_features: 400"))
    assert key({"model": str(b), "levels": 2}) != before  # edited contents: miss
    arr = tmp_path / "arr.yaml"
    shutil.copy(zoo.resolve_array("hypar-16"), arr)
    k1 = key({"model": "lenet-c", "array": str(arr)})
    arr.write_text(arr.read_text().replace("memory_GiB: 4", "memory_GiB: 8"))
    assert key({"model": "lenet-c", "array": str(arr)}) != k1


def test_a_default_array_is_part_of_the_key(tmp_path):
    """A sweep that never names the array still keys on the default array's contents."""
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {model: [lenet-c], levels: [2]}\n")
    sw = load_sweep(f)
    seen = []

    class Spy(InProcess):
        def run(self, tasks):
            seen.extend(p for _, p in tasks)
            return super().run(tasks)

    list(run_points(sw.points, sw.base_dir, Spy()))
    assert seen[0]["array"] == "hypar-16" and seen[0]["solver"] == "dp"
    assert cache_mod.point_key(seen[0]) != cache_mod.point_key({k: v for k, v in seen[0].items() if k != "array"})


def test_version_is_in_the_key(monkeypatch):
    k = cache_mod.point_key({"model": "lenet-c"})
    monkeypatch.setattr(stamp_mod, "__version__", "99.0")
    assert cache_mod.point_key({"model": "lenet-c"}) != k


def test_code_digest_is_in_the_key(monkeypatch, tmp_path):
    """Rows cached by older code are recomputed: the key holds a digest of the package's .py files."""
    k = cache_mod.point_key({"model": "lenet-c"})
    assert stamp_mod.code_digest() == stamp_mod.code_digest()  # once per process (lru_cache), the same
    monkeypatch.setattr(stamp_mod, "code_digest", lambda: "0" * 64)  # the code changed, the version did not
    assert cache_mod.point_key({"model": "lenet-c"}) != k
    # end to end: a sweep after a code change recomputes its points
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {model: [lenet-c], levels: [1, 2]}\n")
    first = list(sweep(f, tmp_path / "o", workers=1))
    same = list(sweep(f, tmp_path / "o", workers=1))
    monkeypatch.setattr(stamp_mod, "code_digest", lambda: "1" * 64)
    changed = list(sweep(f, tmp_path / "o", workers=1))
    assert [r["cached"] for r in first + same + changed] == [False, False, True, True, False, False]


def test_tree_digest_follows_the_python_files(tmp_path):
    pkg, other = tmp_path / "pkg", tmp_path / "other"
    (pkg / "sub").mkdir(parents=True)
    other.mkdir()
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "sub" / "b.py").write_text("y = 2\n")
    (other / "c.py").write_text("z = 3\n")
    d0 = stamp_mod.tree_digest((pkg, other))
    assert d0 == stamp_mod.tree_digest((pkg, other, pkg / "sub"))  # a file reached twice counts once
    (pkg / "notes.txt").write_text("not code")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "a.py").write_text("stale")
    assert stamp_mod.tree_digest((pkg, other)) == d0  # neither data nor caches
    (pkg / "sub" / "b.py").write_text("y = 3\n")
    d1 = stamp_mod.tree_digest((pkg, other))
    assert d1 != d0
    (pkg / "sub" / "b.py").write_text("y = 2\n")
    (other / "c.py").rename(other / "d.py")  # a renamed module is a change too
    assert stamp_mod.tree_digest((pkg, other)) not in (d0, d1)


def test_rerun_reuses_and_says_how_many(tmp_path, capsys):
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {model: [lenet-c, sfc], levels: [1, 2, 3]}\n")
    code, out, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o"), "--workers", "2"], capsys)
    assert code == 0 and out == ""
    assert err.count("\n") == 1 and "6 points (0 reused from the cache, 6 computed" in err  # not a terminal: one line
    keep = lambda r: {k: v for k, v in r.items() if k not in ("wall_s", "cached")}  # noqa: E731
    first = read_csv(tmp_path / "o")
    code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o"), "--workers", "2"], capsys)
    assert code == 0 and "6 points (6 reused from the cache, 0 computed" in err
    again = read_csv(tmp_path / "o")
    assert [r["cached"] for r in first] == ["false"] * 6 and [r["cached"] for r in again] == ["true"] * 6
    assert [keep(r) for r in again] == [keep(r) for r in first]
    code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o"), "--quiet"], capsys)
    assert code == 0 and err == ""


def test_an_interrupted_sweep_resumes_from_the_cache(tmp_path):
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {model: [lenet-c, sfc, sconv], levels: [1, 2, 3], solver: [dp, exact]}\n")
    gen = sweep(f, tmp_path / "o", workers=2)
    got = [next(gen) for _ in range(5)]
    gen.close()  # as Ctrl-C would: the pool is shut down, nothing written but the cache
    assert not (tmp_path / "o" / "results.csv").exists()
    rows = list(sweep(f, tmp_path / "o", workers=2))
    assert sum(r["cached"] for r in rows) >= 5 and len(rows) == 18
    assert [r["traffic_elements"] for r in rows[:5]] == [r["traffic_elements"] for r in got]


def test_shards_merge_into_the_full_sweep(tmp_path, capsys):
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {model: [lenet-c, sfc], levels: [1, 2, 3], solver: [dp, exact]}\n")
    full = list(sweep(f, tmp_path / "full", workers=2, pareto=("traffic_bytes", "memory_bytes_per_accelerator")))
    for i in range(3):
        code, _, _ = run_cli(["sweep", str(f), "--out", str(tmp_path / f"s{i}"), "--shard", f"{i}/3", "--workers", "1",
                              "--pareto", "traffic_bytes,memory_bytes_per_accelerator"], capsys)
        assert code == 0
        assert len(read_csv(tmp_path / f"s{i}")) == 4
    code, _, err = run_cli(["sweep", "merge", str(tmp_path / "s0"), str(tmp_path / "s1"), "--out", str(tmp_path / "m")], capsys)
    assert code == 1 and "4 points missing: 2, 5, 8, 11" in err
    code, _, err = run_cli(["sweep", "merge", *(str(tmp_path / f"s{i}") for i in (2, 0, 1)), "--out", str(tmp_path / "m")], capsys)
    assert code == 0 and "12 of 12 points" in err
    merged = read_csv(tmp_path / "m")
    keep = lambda r: {k: v for k, v in r.items() if k not in ("wall_s", "cached")}  # noqa: E731
    assert [keep(r) for r in merged] == [keep(r) for r in read_csv(tmp_path / "full")]
    assert {r["pareto"] for r in merged} >= {"level-optimal", "no"}
    assert [r["model"] for r in full] == [r["model"] for r in merged]
    other = write(tmp_path / "t.yaml", "version: 1\ngrid: {levels: [1]}\n")
    run_cli(["sweep", str(other), "--out", str(tmp_path / "t"), "--quiet"], capsys)
    code, _, err = run_cli(["sweep", "merge", str(tmp_path / "s0"), str(tmp_path / "t"), "--out", str(tmp_path / "x")], capsys)
    assert code == 2 and "holds sweep 't'" in err


# ----------------------------------------------------------------------------------------------
# Pareto

def prow(status, a, b, violations=None):
    return {"status": status, "a": a, "b": b, "violations": violations}


def test_pareto_labels_only_proven_points_are_pareto_optimal():
    rows = [
        prow("optimal", 1, 5),  # front, proven
        prow("level-optimal", 2, 3),  # front, DP: labelled level-optimal
        prow("feasible", 3, 2),  # front, not proven
        prow("optimal", 3, 4),  # dominated by (2, 3)
        prow("optimal", 0, 0, violations="memory"),  # breaks a constraint: not a candidate
        prow("infeasible", None, None),
        prow("optimal", "1/2", 9),  # exact rationals count: front
        prow("optimal", 2, 3),  # equal to a front point: not dominated
    ]
    assert pareto_labels(rows, ("a", "b")) == ["yes", "level-optimal", "unproven", "no", "", "", "yes", "yes"]


def test_dp_gap_unit():
    rows = [{"model": m, "solver": s, "status": st, "objective_value": v, "violations": viol}
            for m, s, st, v, viol in [("x", "dp", "level-optimal", 12, None), ("x", "cpsat", "optimal", 10, None),
                                      ("y", "dp", "level-optimal", 5, None), ("y", "cpsat", "feasible", 4, None),
                                      ("z", "dp", "level-optimal", 3, "memory"), ("z", "exact", "optimal", 4, None)]]
    for r in rows:
        r["dp_gap"] = None
    add_dp_gap(rows, ["model", "solver"])
    assert [r["dp_gap"] for r in rows] == [pytest.approx(0.2), None, None, None, None, None]


# ----------------------------------------------------------------------------------------------
# Engines

def test_workers_solve_cpsat_with_one_search_worker():
    assert point_mod.point_options({"time_limit": 3}).workers == 1


def test_dask_local_cluster_gives_the_local_results(tmp_path):
    pytest.importorskip("distributed")
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {model: [lenet-c, alexnet], levels: [2, 3], solver: [dp, exact, cpsat]}\n")
    local = list(sweep(f, workers=2))
    dask = list(sweep(f, tmp_path / "d", workers=2, engine="dask"))
    drop = lambda r: {k: v for k, v in r.items() if k not in ("wall_s", "cached")}  # noqa: E731
    assert [drop(r) for r in dask] == [drop(r) for r in local]
    assert len(local) == 12 and all(r["status"] in ("optimal", "level-optimal") for r in local)
    assert (tmp_path / "d" / "results.csv").exists()


def test_dask_scheduler_address_through_the_cli(tmp_path, capsys):
    """--engine dask --scheduler tcp://HOST:PORT: a running cluster (2 worker processes)."""
    distributed = pytest.importorskip("distributed")
    import logging

    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {model: [lenet-c, sconv], levels: [2, 3], solver: [dp, exact]}\n")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster:
        code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "d"), "--engine", "dask", "--scheduler",
                                cluster.scheduler_address], capsys)
    assert code == 0 and "8 points (0 reused from the cache, 8 computed" in err, err
    code, _, _ = run_cli(["sweep", str(f), "--out", str(tmp_path / "l"), "--workers", "2"], capsys)
    keep = lambda r: {k: v for k, v in r.items() if k not in ("wall_s", "cached")}  # noqa: E731
    assert [keep(r) for r in read_csv(tmp_path / "d")] == [keep(r) for r in read_csv(tmp_path / "l")]


def test_local_engine_reports_a_dead_worker_as_an_error_row():
    class Dead:
        def result(self):
            from concurrent.futures.process import BrokenProcessPool

            raise BrokenProcessPool("killed")

    from explorer.app.sweep.engine import _outcomes

    (out,) = _outcomes(Dead(), [3])
    assert out.status == "error" and "BrokenProcessPool" in out.error and out.index == 3
    assert LocalEngine(2).workers == 2


def test_outcome_round_trips_through_json():
    o = Outcome.make(4, {"a": 1, "step_time_s": 0.25}, "optimal", "", 0.5)
    back = Outcome.from_json(4, json.loads(json.dumps(o.to_json())), cached=True)
    assert back == Outcome.make(4, {"a": 1, "step_time_s": 0.25}, "optimal", "", 0.5, True)
    assert back.result == {"a": 1, "step_time_s": 0.25} and back.summary["step_time_s"] == 0.25


def test_api_raises_spec_error_for_a_bad_file(tmp_path):
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {levels: [0]}\n")
    with pytest.raises(SpecError, match="grid.levels"):
        sweep(f)  # at the call, before any row
    with pytest.raises(SpecError, match="^shard: needs 0 <= I < N"):
        sweep(write(tmp_path / "t.yaml", "version: 1\ngrid: {levels: [1]}\n"), shard="3/2")


SHIPPED = sorted((Path(__file__).resolve().parent.parent / "spaces").glob("*.yaml"))


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in SHIPPED])
def test_shipped_sweeps_load(path):
    sw = load_sweep(path)
    assert sw.name == path.stem and 50 <= len(sw.points) <= 300
    if any(p.get("split") for p in sw.points):  # uneven splits (explore split): proofs from --split optimal
        assert "optimal" in {p.get("split") for p in sw.points}
    else:
        assert {p.get("solver") for p in sw.points} & {"cpsat", "exact"}  # every shipped space carries proofs


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem) for p in sorted(
    (Path(__file__).resolve().parent.parent / "spaces").glob("*/*.yaml"))
    if p.parent.name not in ("arrays", "clusters", "llm-validation") and p.name != "paper-values.yaml"])
def test_figure_sweeps_in_subfolders_load(path):
    """Sweep files kept in subfolders of spaces/ (e.g. the HyPar figures) are valid sweeps too."""
    assert len(load_sweep(path).points) >= 1


def test_reference_must_be_a_mapping(tmp_path):
    with pytest.raises(SpecError, match="reference: must be a mapping"):
        load_sweep(write(tmp_path / "s.yaml", "version: 1\ngrid: {levels: [1]}\nreference: [1, 2]\n"))


def test_the_shipped_sweeps_are_there():
    from explorer.app.sweep.spec import shipped_sweeps

    assert {p.stem for p in SHIPPED} >= {"scalability", "bandwidth-batch", "dp-gap", "accpar-mix"}
    assert set(shipped_sweeps()) == {p.stem for p in SHIPPED}  # installed as data, found by name
    assert load_sweep("dp-gap").name == "dp-gap"


def test_ctrl_c_stops_at_once_and_the_rerun_resumes(tmp_path):
    """SIGINT to the whole process group (what Ctrl-C does): exit 130 within seconds, workers
    ended, finished points cached."""
    import os
    import signal
    import time

    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {model: [lenet-c, sfc], levels: [1, 2]}\n"
                                   "points: [{model: resnet50, levels: 7, space: accpar, solver: cpsat},"
                                   " {model: bert-base, levels: 8, space: accpar, solver: cpsat}]\n")
    p = sweep_process(f, tmp_path / "o", "--workers", "2")
    cache = tmp_path / "o" / "cache"
    deadline = time.time() + 20
    while time.time() < deadline and len(list(cache.rglob("*.json"))) < 4:
        time.sleep(0.1)
    time.sleep(0.3)
    os.killpg(p.pid, signal.SIGINT)
    t = time.time()
    err = p.communicate(timeout=20)[1]
    assert p.returncode == 130 and time.time() - t < 5
    assert "interrupted; 4 points cached this run, 4 in all in" in err and "rerun the same command to resume" in err, err
    assert not (tmp_path / "o" / "results.csv").exists()
    assert_group_ends(p, 5, "the sweep was interrupted")


def test_progress_bar_on_a_terminal(tmp_path):
    """stderr a terminal: a progress bar (done/total, rate, reused, failed), then the summary."""
    import fcntl
    import os
    import struct
    import subprocess
    import sys
    import termios

    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {model: [lenet-c, sfc], levels: [1, 2, 3]}\n"
                                   "points: [{levels: 2, caps: ['9=1GB']}]\n")
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    cmd = [sys.executable, "-c", "from explorer.app.cli import main; main()", "sweep", str(f), "--out", str(tmp_path / "o"),
           "--workers", "1"]
    p = subprocess.Popen(cmd, stderr=slave, stdout=subprocess.DEVNULL)
    os.close(slave)
    buf = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        buf += chunk
    assert p.wait() == 0
    text = buf.decode()
    assert "7/7 [" in text and "pt/s" in text and "invalid=1" in text and "failed=0" in text and "reused=0" in text, text
    assert "sweep s: 7 points (0 reused from the cache, 7 computed; 0 without a plan, 1 invalid, 0 failed)" in text


def test_a_dp_plan_over_a_cap_keeps_its_status_with_violations(tmp_path, capsys):
    """The DP's plan that breaks a cap is not proven infeasible: the row keeps the DP's status,
    its figures and the broken rule in ``violations``, and it counts as a point with a plan."""
    f = write(tmp_path / "s.yaml", 'version: 1\ngrid: {model: [lenet-c], levels: [2], caps: [["1=1kB"]]}\n')
    code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o"), "--workers", "1"], capsys)
    assert code == 0 and "0 without a plan" in err
    (row,) = read_csv(tmp_path / "o")
    assert row["status"] == "level-optimal" and row["violations"] == "cap level 1 <= 1 kB (caps)"
    assert row["traffic_elements"] != ""


def test_merge_of_a_missing_folder_says_it_does_not_exist(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code, _, err = run_cli(["sweep", "merge", str(tmp_path / "nonexist"), "--out", str(tmp_path / "o")], capsys)
    assert (code, err) == (2, f"explore: error: {tmp_path / 'nonexist'}: no such folder\n")
    code, _, err = run_cli(["sweep", "merge", str(tmp_path / "empty"), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and err.endswith("empty: not a sweep output folder (no sweep.json)\n")


def test_a_folder_given_as_a_model_is_named_a_directory(tmp_path, capsys):
    (tmp_path / "adir").mkdir()
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {model: [adir], levels: [1]}\n")
    code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and err.endswith(f"grid.model[0]: {str(tmp_path / 'adir')!r} is a directory, not a file\n"), err


def test_points_given_as_a_mapping_is_one_error(tmp_path, capsys):
    f = write(tmp_path / "s.yaml", "version: 1\npoints: {model: lenet-c}\n")
    code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o")], capsys)
    assert (code, err) == (2, f"explore: error: {f}: points: must be a list of mappings (- {{key: value}} each), got a dict\n")
