"""The CP-SAT model of the formulation restricted to the cells that surviving type vectors use
(the constrained solve's last resort, ``solvers.constrained``).
"""

from __future__ import annotations

import numpy as np

from explorer.core.plan import Plan
from explorer.core.problem import Problem
from explorer.core.solution import SolveOptions

from .lagrangian import _Chain


MODEL_BASE_BYTES = 60 * 2**20  # OR-Tools loaded and an empty model (measured)
CELL_BYTES = 6_000  # per formulation cell: its variables, constraints and CP-SAT's search over them (measured)


def model_bytes(problem: Problem) -> int:
    """Bytes the restricted CP-SAT search holds, from the formulation's cells (layer, level, count
    state, type), counted without building it; measured on chains and ResNet-18 (``bench/bench_memory_guard.py``)."""
    tables = problem.tables
    per_layer = sum(len(tables.states(h)) for h in range(problem.levels))
    cells = sum(len(problem.node_types(n)) for n in range(problem.num_layers)) * per_layer
    return MODEL_BASE_BYTES + CELL_BYTES * cells


class _Restricted:
    """The CP-SAT model of the formulation, with the cells no surviving vector uses fixed to 0
    (fixings only accumulate), and the solver of its latest round."""

    def __init__(self, problem: Problem, ch: _Chain):
        from .cpsat import to_cp_model
        from .formulation import build

        self.problem, self.ch = problem, ch
        self.f = build(problem, ch.deadline)  # (``BuildTimeout`` past the constrained solve's deadline)
        self.model, self.xs, _ = to_cp_model(self.f, deadline=ch.deadline)
        self.fixed: set[int] = set()
        self.allowed: set | None = None
        self.solver = None

    def restrict(self, survivors: list[np.ndarray]) -> None:
        self.allowed = allowed = _allowed_cells(self.problem, self.ch, survivors)
        for key, var in self.f.x.items():
            if key not in allowed and var not in self.fixed:
                self.model.add(self.xs[var] == 0)
                self.fixed.add(var)

    def solve(self, U: int | None, seconds: float, options: SolveOptions):
        """One round, hinted with the incumbent when it lies in the model; returns the status
        (``KeyboardInterrupt`` after Ctrl-C stopped the round)."""
        from .cpsat import run_fresh
        from .cpsat_run import hint
        from .formulation import assignment

        self.model.clear_hints()
        if U is not None:
            values = assignment(self.problem, self.f, self.ch.incumbent[1])
            if all(cell in self.allowed for cell, var in self.f.x.items() if values[var]):
                hint(self.model, self.xs, values)
        self.solver, status = run_fresh(self.model, options.workers or 2, options.seed, seconds)
        return status

    def plan(self) -> Plan:
        from .formulation import extract_plan

        return extract_plan(self.problem, self.f, lambda v: self.solver.value(self.xs[v]))

    def lower_bound(self) -> int:
        return self.solver.response_proto.inner_objective_lower_bound * self.f.objective_gcd


def _allowed_cells(problem: Problem, ch: _Chain, survivors: list[np.ndarray]) -> set:
    """The formulation's (layer, level, count state, type) cells some surviving vector uses."""
    vc, tables = ch.vc, problem.tables
    allowed = set()
    for n, vecs in enumerate(survivors):
        d = vc.dom[n]
        for h in range(ch.H):
            states = tables.states(h)
            for ps, k in set(zip(d.pstate[h][vecs].tolist(), d.type_index[h][vecs].tolist())):
                allowed.add((n, h, states[ps], k))
    return allowed
