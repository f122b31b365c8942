"""Timing helpers shared by the bench scripts (run as ``python bench/NAME.py``: this folder is on sys.path)."""

from __future__ import annotations

import os
import sys
import time


def best_of(fn, repeat: int) -> float:
    """The least wall time (seconds) of ``repeat`` calls of ``fn``."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def add_before_options(ap) -> None:
    """``--repeat`` and ``--before DIR`` of a bench that times whole ``explore`` processes against
    an older tree in the same rounds (``explore_runs``)."""
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--before", metavar="DIR", help="a tree with an older explorer package, run in the same rounds")


def explore_runs(before: str | None) -> list[tuple[str, list[str], dict | None]]:
    """(name, command, environment) of each side a round runs: this install's ``explore`` ("after"),
    and with ``before`` (a tree whose ``explorer`` package holds the older commit, its ``solvers``,
    ``models`` and ``spaces`` linked inside it) the same with ``PYTHONPATH=before`` ("before"). Run
    them from a temporary folder (``cwd=tempfile.gettempdir()``): from a checkout, ``-m`` would put
    its ``explorer`` before PYTHONPATH's."""
    runs = [("after", [sys.executable, "-m", "explorer.app.cli"], None)]
    if before:
        runs.append(("before", [sys.executable, "-m", "explorer.app.cli"], dict(os.environ, PYTHONPATH=before)))
    return runs
