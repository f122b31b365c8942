"""Solvers behind one interface, ``solve(problem, options) -> Solution``; a plain registry."""

from __future__ import annotations

from importlib import import_module
from typing import Callable

MAX_WORKERS = 256  # --workers (CP-SAT's threads; a sweep's processes)
MAX_SEED = 2**31 - 1  # --seed: CP-SAT's random_seed is an int32

# name -> module holding ``solve``; imported on use so that ``explore`` starts fast.
REGISTRY: dict[str, str] = {
    "dp": "explorer.solvers.dp",
    "cpsat": "explorer.solvers.cpsat",
    "exact": "explorer.solvers.exact",
    "brute": "explorer.solvers.brute",
    "pruned": "explorer.solvers.pruned",
}


def get_solver(name: str) -> Callable:
    try:
        module = REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown solver {name!r} (known: {', '.join(REGISTRY)})") from None
    return import_module(module).solve
