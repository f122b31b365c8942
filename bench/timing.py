"""Timing helpers shared by the bench scripts (run as ``python bench/NAME.py``: this folder is on sys.path)."""

from __future__ import annotations

import time


def best_of(fn, repeat: int) -> float:
    """The least wall time (seconds) of ``repeat`` calls of ``fn``."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
