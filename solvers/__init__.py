"""Solvers behind one interface, ``solve(problem, options) -> Solution``; a plain registry."""

from __future__ import annotations

from importlib import import_module
from typing import Callable

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
