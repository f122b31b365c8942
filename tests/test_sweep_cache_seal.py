"""A sweep's cache entries are sealed (``app.seal.seal``: the sha256 of the entry's text, checked
on every load): an entry edited by hand or damaged is solved again, with one line on stderr naming
it, never returned as if solved (it was, before the seal: an edited row came back as cached)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

from explorer.app.sweep import cache as cache_mod
from explorer.app import seal as seal_mod
from explorer.app.sweep.point import Outcome

SWEEP = "version: 1\nname: s\ngrid: {model: [lenet-c], levels: [1, 2, 3]}\n"


def _explore(cwd, *args):
    done = subprocess.run([sys.executable, "-m", "explorer.app.cli", *args], capture_output=True, text=True, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stderr


def _rows(out):
    with open(out / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_an_edited_entry_is_solved_again_and_said(tmp_path):
    (tmp_path / "s.yaml").write_text(SWEEP)
    args = ("sweep", "s.yaml", "--out", "o", "--workers", "1")
    _explore(tmp_path, *args)
    first = _rows(tmp_path / "o")
    entries = sorted((tmp_path / "o" / "cache").glob("*/*.json"))
    assert len(entries) == 3
    edited = []
    for path in entries[:2]:  # a user "fixes" two rows: well formed, its own key, a figure changed
        data = json.loads(path.read_text())
        data["summary"]["traffic_elements"] = 1
        result = json.loads(data["result_text"])
        result["traffic_elements"] = 1
        data["result_text"] = json.dumps(result)
        path.write_text(json.dumps(data))
        assert cache_mod.well_formed(data) and data["key"] == path.stem
        edited.append(path)
    err = _explore(tmp_path, *args)
    told = [line for line in err.splitlines() if "cache entr" in line and "failed" in line]
    assert len(told) == 1, err
    assert told[0].startswith("explore sweep: 2 cache entries failed their check (edited or damaged), solved again: ")
    assert told[0].endswith(" and 1 other") and any(str(p.relative_to(tmp_path)) in told[0] for p in edited)
    assert "3 points (1 reused from the cache, 2 computed" in err
    again = _rows(tmp_path / "o")
    assert [r["traffic_elements"] for r in again] == [r["traffic_elements"] for r in first]
    assert "1" not in [r["traffic_elements"] for r in again]
    assert sorted(r["cached"] for r in again) == ["false", "false", "true"]
    err = _explore(tmp_path, *args)  # rewritten sealed: trusted again, nothing said
    assert "cache entr" not in err and "3 points (3 reused from the cache, 0 computed" in err


def test_the_seal_covers_every_byte(tmp_path):
    """``unseal`` gives back what ``seal`` was given; a byte changed anywhere, an unsealed entry
    (an older format's plain object) or a truncated file: None, and ``Cache.get`` lists the path."""
    body = json.dumps({"key": "k", "status": "optimal", "error": "", "wall_s": 0.5, "summary": {"gap": 0},
                       "result_text": "{}"})
    text = seal_mod.seal(body)
    assert seal_mod.unseal(text) == body and json.loads(text)["digest"] and json.loads(text)["key"] == "k"
    for i in range(len(text)):
        changed = text[:i] + ("0" if text[i] != "0" else "1") + text[i + 1:]
        assert seal_mod.unseal(changed) is None, i
    assert seal_mod.unseal(body) is None and seal_mod.unseal(text[:-1]) is None and seal_mod.unseal("") is None
    cache = cache_mod.Cache(tmp_path)
    key = "ab" + "0" * 62
    out = Outcome(7, "optimal", "", 0.5, result_text="{}", summary={"gap": 0})
    cache.put(key, out)
    assert cache.get(key, 7) == Outcome(7, "optimal", "", 0.5, cached=True, result_text="{}", summary={"gap": 0})
    assert cache.get("cd" + "0" * 62, 7) is None and cache.rejected == []  # none stored: a miss, not a failure
    path = tmp_path / "cache" / "ab" / f"{key}.json"
    path.write_text(path.read_text().replace('"optimal"', '"feasible"'))
    assert cache.get(key, 7) is None and cache.rejected == [path]
