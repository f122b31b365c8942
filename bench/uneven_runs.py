"""Helpers shared by the uneven-split bench scripts (run as ``python bench/NAME.py``: this folder
is on sys.path): one timed solve that keeps a refusal as its answer, and a cell of the table."""

from __future__ import annotations

import time

from explorer.core.errors import Refused
from explorer.core.uneven import alpha_grid, alpha_space


def timed_solve(solve, net, arr, space, grid: int, limit: float, **options):
    """(the solution, or the Refused it raised; wall seconds) of ``solve`` on an alpha grid of ``grid``."""
    t0 = time.perf_counter()
    try:
        sol = solve(net, arr, space, alpha_space(arr, alpha_grid(grid)), time_limit_s=limit, **options)
    except Refused as e:
        return e, time.perf_counter() - t0
    return sol, time.perf_counter() - t0


def cell(sol, gap: bool = False) -> str:
    """'refused', the status, or the status and step time in ms (with ``gap``: a feasible plan's gap)."""
    if isinstance(sol, Refused):
        return "refused"
    if sol.step_time_s is None:
        return sol.status.value
    text = f"{sol.status.value} {float(sol.step_time_s) * 1e3:.5f} ms"
    if gap and sol.status.value == "feasible" and sol.bound_s:
        text += f" (gap {float(1 - sol.bound_s / sol.step_time_s) * 100:.2f}%)"
    return text


def states(sol) -> str:
    """Pareto states the solver explored, '-' when it did not say."""
    return "-" if isinstance(sol, Refused) or "explored" not in sol.info else f"{sol.info['explored']:,}"
