"""``explore sweep merge`` checks each plans.jsonl record (trial hostile, finding 2): a point that is
not the sweep's at its index, a status its result contradicts, optimal with objective != bound, an
index out of range, two different records of one point and an edited total are refused in one line
naming the file and line (exit 2, nothing written); an identical copy is dropped with a note."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

SPEC = "version: 1\nname: s\ngrid: {model: [lenet-c], levels: [1, 2, 3, 4]}\nfixed: {solver: exact}\n"


def _explore(cwd, *args):
    return subprocess.run([sys.executable, "-m", "explorer.app.cli", *args], cwd=cwd, capture_output=True, text=True)


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    root = tmp_path_factory.mktemp("merge")
    (root / "s.yaml").write_text(SPEC)
    for i in (0, 1):
        r = _explore(root, "sweep", "s.yaml", "--shard", f"{i}/2", "--out", f"sh{i}", "--quiet")
        assert r.returncode == 0, r.stderr
    return root


def _edit(root, tmp_path, lines=None, manifest=None, cwd=None):
    """A copy of shard 0 edited (``lines``: its plans.jsonl lines -> new lines; ``manifest``: sweep.json -> new), merged with shard 1."""
    shutil.copy(root / "s.yaml", tmp_path / "s.yaml")
    for i in (0, 1):
        shutil.copytree(root / f"sh{i}", tmp_path / f"sh{i}")
    plans, sweep_json = tmp_path / "sh0" / "plans.jsonl", tmp_path / "sh0" / "sweep.json"
    if lines:
        plans.write_text("".join(x + "\n" for x in lines(plans.read_text().splitlines())))
    if manifest:
        sweep_json.write_text(json.dumps(manifest(json.loads(sweep_json.read_text()))))
    r = _explore(cwd or tmp_path, "sweep", "merge", str(tmp_path / "sh0"), str(tmp_path / "sh1"), "--out",
                 str(tmp_path / "m"))
    return r, str(plans)


def _set(line: str, path: tuple, value) -> str:
    d = json.loads(line)
    *head, last = path
    target = d
    for k in head:
        target = target[k]
    target[last] = value
    return json.dumps(d)


def _refused(r, tmp_path, *words):
    assert r.returncode == 2, r.stdout + r.stderr
    line = r.stderr.strip()
    assert "\n" not in line and "Traceback" not in line and all(w in line for w in words), line
    assert not (tmp_path / "m").exists()


def test_an_untouched_merge_is_written(shards, tmp_path):
    r, _ = _edit(shards, tmp_path)
    assert r.returncode == 0 and "4 of 4 points" in r.stderr and "note" not in r.stderr, r.stderr


def test_a_point_not_the_sweeps_is_refused_naming_the_line(shards, tmp_path):
    r, plans = _edit(shards, tmp_path, lambda ls: [_set(ls[0], ("point", "levels"), 7), *ls[1:]])
    _refused(r, tmp_path, f"{plans}, line 1: point:", "is not the sweep's point 0", '"levels": 1', "(s.yaml)")


def test_an_edited_point_without_the_sweep_file_is_refused_by_the_digest(shards, tmp_path):
    (tmp_path / "away").mkdir()
    r, _ = _edit(shards, tmp_path, lambda ls: [_set(ls[0], ("point", "levels"), 7), *ls[1:]], cwd=tmp_path / "away")
    _refused(r, tmp_path, "plans.jsonl", "the records' points are not those of sweep 's'", "digest")


def test_a_status_its_result_contradicts_is_refused(shards, tmp_path):
    r, plans = _edit(shards, tmp_path, lambda ls: [ls[0], _set(ls[1], ("status",), "infeasible")])
    _refused(r, tmp_path, f"{plans}, line 2: status: 'infeasible', but its result says 'optimal'")


def test_optimal_with_objective_not_its_bound_is_refused(shards, tmp_path):
    r, plans = _edit(shards, tmp_path, lambda ls: [_set(ls[0], ("result", "objective_value"), 1), ls[1]])
    _refused(r, tmp_path, f"{plans}, line 1: status: optimal, but its objective_value 1 is not its bound")


@pytest.mark.parametrize("index, words", [(99, "index: 99 is beyond the sweep's 4 points"),
                                          (-1, "index: -1 is not a point index"), ("0", "index: '0' is not")])
def test_an_index_out_of_range_is_refused(shards, tmp_path, index, words):
    r, plans = _edit(shards, tmp_path, lambda ls: [_set(ls[0], ("index",), index), ls[1]])
    _refused(r, tmp_path, f"{plans}, line 1: {words}")


def test_two_different_records_of_one_point_are_refused(shards, tmp_path):
    r, plans = _edit(shards, tmp_path, lambda ls: [*ls, _set(ls[0], ("result", "wall_s"), 12.5)])
    _refused(r, tmp_path, f"{plans}, line 3: point 0 again, unlike its record at {plans}, line 1")


def test_an_identical_copy_is_dropped_with_a_note(shards, tmp_path):
    r, _ = _edit(shards, tmp_path, lambda ls: [*ls, ls[0]])
    assert r.returncode == 0, r.stderr
    assert "note: 1 identical copy of a record dropped" in r.stderr and "4 of 4 points" in r.stderr
    assert len((tmp_path / "m" / "plans.jsonl").read_text().splitlines()) == 4


@pytest.mark.parametrize("total", [2, 6])
def test_an_edited_total_is_refused(shards, tmp_path, total):
    r, _ = _edit(shards, tmp_path, manifest=lambda m: {**m, "total": total})
    _refused(r, tmp_path, "sweep.json: total:", f"{total}, but the sweep's 4 points", "an edited total")
