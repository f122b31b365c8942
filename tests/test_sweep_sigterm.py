"""SIGTERM (kill's default; Slurm's at a job's time limit) stops a sweep as Ctrl-C does (trial
hostile, finding 11): one "interrupted by SIGTERM" line, exit status 143 (128 + 15), the lock
released, no worker left, finished points cached and reused by the rerun. Sent to the sweep's
process alone and to its whole process group (a batch system's way)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from explorer.app.sweep.lock import LOCK_NAME

from .conftest import assert_group_ends, sweep_process

SPEC = ("version: 1\nname: term\ngrid: {model: [lenet-c, sfc], levels: [1, 2]}\n"
        "points: [{model: resnet50, levels: 7, space: accpar, solver: cpsat},"
        " {model: bert-base, levels: 8, space: accpar, solver: cpsat}]\n")


@pytest.mark.parametrize("group", [False, True])
def test_sigterm_stops_the_sweep_as_ctrl_c_does(tmp_path, group):
    (tmp_path / "s.yaml").write_text(SPEC)
    p = sweep_process(tmp_path / "s.yaml", tmp_path / "o", "--workers", "2")
    cache = tmp_path / "o" / "cache"
    deadline = time.time() + 60
    while time.time() < deadline and len(list(cache.rglob("*.json"))) < 4:
        time.sleep(0.1)
    time.sleep(0.3)
    (os.killpg if group else os.kill)(p.pid, signal.SIGTERM)
    t = time.time()
    err = p.communicate(timeout=30)[1]
    assert p.returncode == 143 and time.time() - t < 10, (p.returncode, err)
    lines = err.strip().splitlines()
    assert lines == ["explore: interrupted by SIGTERM; 4 points cached this run, 4 in all in " + str(tmp_path / "o") +
                     "'s cache: rerun the same command to resume"], err
    assert not (tmp_path / "o" / LOCK_NAME).exists() and not (tmp_path / "o" / "results.csv").exists()
    assert_group_ends(p, 10, "SIGTERM")
