"""A new user's trial of the reports and docs (fresh clone, README and docs followed), its findings
fixed: each test fails without its fix."""

from __future__ import annotations

import os
import select
import time

import pytest

from explorer.app.cli_ticker import Ticker


def _pty_stream():
    """A terminal that reports 0 columns and 0 rows (a fresh pty: ``script`` without a terminal)."""
    pty = pytest.importorskip("pty")
    master, slave = pty.openpty()
    return master, os.fdopen(slave, "w", buffering=1)


def _read_all(fd: int) -> str:
    out = b""
    while select.select([fd], [], [], 0.2)[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        out += chunk
    return out.decode(errors="replace")


def test_time_bar_is_drawn_on_a_terminal_of_no_reported_size(monkeypatch):
    """Finding 5: on a terminal that reports 0 x 0 (the trial's ``script``), tqdm's dynamic width drew
    nothing: ``explore check`` ran 9.6 s with no bar. It now draws an 80-column bar."""
    master, stream = _pty_stream()
    assert os.get_terminal_size(stream.fileno()) == (0, 0)
    monkeypatch.setattr(Ticker, "DELAY_S", 0.0)
    monkeypatch.setattr(Ticker, "EVERY_S", 0.05)
    with Ticker(10.0, label="check", stream=stream):
        time.sleep(0.4)
    text = _read_all(master)
    stream.close()
    os.close(master)
    assert "[explore] check" in text and "of 10 s" in text


def test_step_bar_is_drawn_on_a_terminal_of_no_reported_size(monkeypatch):
    """Finding 5, the LLM check's bar (``StepProgress``: the exhaustive scoring's evaluations)."""
    import sys

    from explorer.app.cli import StepProgress

    master, stream = _pty_stream()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(StepProgress, "DELAY_S", 0.0)
    monkeypatch.setattr(StepProgress, "MININTERVAL_S", 0.0)
    with StepProgress() as say:
        for n in range(1, 200, 8):
            say("scoring every layout (no pruning)", n, 200)
            time.sleep(0.005)
    text = _read_all(master)
    stream.close()
    os.close(master)
    assert "scoring every layout (no pruning)" in text and "/200" in text


def _explore(*args: str, check: bool = True):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, "-m", "explorer.app.cli", *args], cwd=root, capture_output=True, text=True,
                       timeout=300)
    assert not check or r.returncode in (0, 1), r.stderr
    return r


def test_check_tables_name_the_solvers_own_time_not_a_wall():
    """Finding 2: ``explore`` says ``wall 423.96 ms`` (from the process's start), its check's table
    said ``wall`` over the dp row's ``0.000s`` (the solve alone): the column is now ``solve``."""
    even = _explore("check", "--model", "lenet-c", "--solvers", "exact").stdout
    header = next(x for x in even.splitlines() if x.strip().startswith("solver  status"))
    assert header.split()[-1] == "solve"
    uneven = _explore("check", "--uneven", "--model", "lenet-c", "--array", "tpu-mix-16", "--solvers",
                      "proportional").stdout
    header = next(x for x in uneven.splitlines() if x.startswith("solver "))
    assert "solve s  note" in header and "wall" not in header
