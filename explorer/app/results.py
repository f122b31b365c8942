"""Typed results of ``explore`` and ``explore check``: frozen dataclasses, one ``to_json()`` each.

Inside, every exact quantity is a ``Fraction`` (elements, bytes, seconds of an exact model);
``to_json()`` writes each one with :func:`exact_number` (int when integral, float when the
float is exact, else the string "p/q"). Derived times, energies, ratios and percentages are
written as floats. ``render.py`` turns these objects into the readable tables.

JSON keys are a contract (``schema_version``); tests/test_results.py pins the full key set.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from .. import __version__
from ..core.array import ArraySpec
from ..core.constraints import Cap, Constraints
from ..core.evaluate import Evaluation, Violation, evaluate, violations
from ..core.network import InputShape, LayerKind, Network
from ..core.objective import Objective
from ..core.partition import PartitionType, Space
from ..core.plan import Plan
from ..core.problem import Problem
from ..core.solution import Status
from ..core.units import GiB, memory_text
from .figures_text import exact_number

SCHEMA_VERSION = 4  # bump when a key changes name, meaning or form (adding a key does not)
# 2: the time objective (objective_value, bound, gap; check's objective, bound) is the step time
# 3: explore split and check --uneven write exact quantities with exact_number (no float plus
#    *_exact string twins) and carry schema_version; explore's and check's keys are those of 2
# 4: one schema for both splits (docs/commands.md, "The JSON report"): explore --split and check
#    --uneven carry explore's header (model, layers, nodes, constraints as an object, ...), its
#    plan figures (step_time_s and the other evaluator times as floats, exact objective_value and
#    bound), baselines, and check's solvers object; explore's and check's own keys are those of 3


def _ratio(a: Fraction, b: Fraction) -> float | None:
    a, b = float(a), float(b)
    return None if b == 0 else a / b


# -- inputs ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Node:
    """One node of the network graph: its kind and the names of its producers ([] = network input)."""

    name: str
    kind: LayerKind
    inputs: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind.value, "inputs": list(self.inputs)}


def nodes_of(network: Network) -> tuple[Node, ...]:
    names = network.layer_names
    producers: list[list[str]] = [[] for _ in names]
    for u, v in network.edges:
        producers[v].append(names[u])
    return tuple(Node(n, L.kind, tuple(p)) for n, L, p in zip(names, network.layers, producers))


def cap_json(cap: Cap) -> dict[str, Any]:
    """A cap: its level, bytes and origin, and its seconds where it was given as a time budget
    (bytes = seconds x the level's bandwidth, as the text says '1 ms (60 MB at 60 GB/s)')."""
    seconds = {"seconds": exact_number(cap.seconds)} if cap.seconds else {}
    return {"level": cap.level, "bytes": exact_number(cap.bytes), **seconds, "from": cap.origin}


def constraints_json(c: Constraints) -> dict[str, Any]:
    return {
        "caps": [cap_json(cap) for cap in c.caps],
        "memory_bytes": exact_number(c.memory_bytes),
        "weight_copies": c.weight_copies,
        "pins": [p.name for p in c.pins],
        "forbids": [f.name for f in c.forbids],
    }


@dataclass(frozen=True, slots=True)
class TimeModel:
    """How the array times communication (explorer.core.timing), as the results show it."""

    communication: str
    topology: str
    overlap: bool
    bandwidth_beyond: str
    shared_bandwidth_GBps: Fraction | None
    level_bandwidth_GBps: tuple[Fraction, ...]  # effective b_h: time_h = c_h * dtype / b_h

    @staticmethod
    def of(arr: ArraySpec) -> "TimeModel":
        return TimeModel(arr.communication.value, arr.topology.value, arr.overlap, arr.bandwidth_beyond.value,
                         arr.shared_bandwidth_GBps, tuple(arr.bandwidth_Bps(h) / 10**9 for h in range(arr.levels)))

    @property
    def is_default(self) -> bool:
        """Per-level links on an H-tree, no overlap: the model every array had before it was a choice."""
        return self.communication == "per-level" and self.topology == "htree" and not self.overlap

    def describe(self) -> str:
        if self.shared_bandwidth_GBps is not None:
            comm = f"one shared medium of {float(self.shared_bandwidth_GBps):g} GB/s (both directions)"
        else:
            comm = f"per-level links on a{'n' if self.topology == 'htree' else ''} {self.topology}"
        levels = "/".join(f"{float(b):.4g}" for b in self.level_bandwidth_GBps)
        overlap = "overlapped with compute" if self.overlap else "not overlapped with compute"
        return f"time model: {comm}, {overlap}; level bandwidths b_h {levels} GB/s"

    def to_json(self) -> dict[str, Any]:
        return {"communication": self.communication, "topology": self.topology, "overlap": self.overlap,
                "bandwidth_beyond": self.bandwidth_beyond,
                "shared_bandwidth_GBps": None if self.shared_bandwidth_GBps is None else float(self.shared_bandwidth_GBps),
                "level_bandwidth_GBps": [float(b) for b in self.level_bandwidth_GBps]}


@dataclass(frozen=True, slots=True)
class Inputs:
    """What was solved: the self-describing header of every result."""

    explorer_version: str
    model: str
    model_source: str
    array: str
    array_source: str
    space: Space
    objective: Objective
    batch: int
    levels: int
    accelerators: int
    dtype_bytes: int
    nodes: tuple[Node, ...]
    constraints: Constraints
    warnings: tuple[str, ...] = ()  # sentences about the inputs (also 'warning:' lines in the tables)
    time_model: TimeModel | None = None
    sequence: int | None = None  # tokens per sample, when the network has a sequence axis
    approximations: tuple[str, ...] = ()  # what an importer could not model exactly (Network.approximations)
    input_shapes: tuple[InputShape, ...] = ()  # the data inputs an importer read, axes filled (ONNX)

    @staticmethod
    def of(problem: Problem) -> "Inputs":
        return Inputs.make(problem.network, problem.array, problem.space, problem.objective, problem.constraints,
                           input_warnings(problem))

    @staticmethod
    def make(net: Network, arr: ArraySpec, space: Space, objective: Objective, constraints: Constraints,
             warnings: tuple[str, ...]) -> "Inputs":
        """The header of a run on ``net`` and ``arr`` (even or uneven split: one header)."""
        return Inputs(__version__, net.name, net.source, arr.name, arr.source, space, objective, net.batch, arr.levels,
                      arr.accelerators, arr.dtype_bytes, nodes_of(net), constraints, tuple(warnings), TimeModel.of(arr),
                      net.sequence, net.approximations, net.input_shapes)

    @property
    def layers(self) -> tuple[str, ...]:
        return tuple(n.name for n in self.nodes)

    @property
    def objective_unit(self) -> str:
        return "elements" if self.objective is Objective.TRAFFIC else "s"

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "explorer_version": self.explorer_version,
            "model": self.model,
            "model_source": self.model_source,
            "array": self.array,
            "array_source": self.array_source,
            "space": self.space.value,
            "objective": self.objective.value,
            "batch": self.batch,
            "sequence": self.sequence,
            "levels": self.levels,
            "accelerators": self.accelerators,
            "dtype_bytes": self.dtype_bytes,
            "layers": list(self.layers),
            "nodes": [n.to_json() for n in self.nodes],
            "constraints": constraints_json(self.constraints),
            "warnings": list(self.warnings),
            "time_model": None if self.time_model is None else self.time_model.to_json(),
            "approximations": list(self.approximations),
            "input_shapes": [s.to_json() for s in self.input_shapes],
        }


def batch_warning(batch: int, n: int) -> str | None:
    """The warning for a batch smaller than the ``n`` accelerators (``explore`` and ``explore split``)."""
    if batch >= n:
        return None
    return (f"batch {batch} is smaller than the {n} accelerators: splitting the batch (type I) at every level "
            f"gives {Fraction(batch, n)} of a sample per accelerator (amounts are exact fractions, not whole samples)")


_BEYOND = {"repeat": "the last listed level's again", "halve": "halved level by level",
           "double": "doubled level by level"}


def beyond_warning(arr: ArraySpec) -> str | None:
    """The warning for --levels beyond the levels the array file lists bandwidths for."""
    n = arr.listed_levels
    if not n or arr.levels <= n:
        return None
    span = f"level {n} is" if arr.levels == n + 1 else f"levels {n}-{arr.levels - 1} are"
    return (f"{span} beyond the {n} levels array {arr.name} lists: their link bandwidth is "
            f"{_BEYOND[arr.bandwidth_beyond.value]} ({float(arr.bandwidth_GBps[n]):g} GB/s at level {n}; "
            f"the array's bandwidth_beyond: {arr.bandwidth_beyond.value})")


def input_warnings(problem: Problem) -> tuple[str, ...]:
    """What the user should know about the inputs."""
    arr = problem.array
    out = [w for w in (batch_warning(problem.network.batch, arr.accelerators), beyond_warning(arr)) if w]
    if arr.is_heterogeneous:
        smallest = arr.memory_GiB * GiB
        limit = problem.constraints.memory_bytes
        memory = (f"the memory limit the smallest ({memory_text(smallest)})" if limit == smallest else
                  f"the memory limit would be the smallest ({memory_text(smallest)}; "
                  + ("none is set" if limit is None else f"{memory_text(limit)} is set instead") + ")")
        out.append(f"accelerators of {len(arr.kinds)} kinds: every split is equal (alpha 1/2), so the compute time is the "
                   f"slowest kind's ({float(arr.peak_TFLOPS):g} TFLOPS) and {memory}; uneven splits: explore split")
    return tuple(out)


# -- one plan's figures -----------------------------------------------------------------------


def violation_json(v: Violation) -> dict[str, Any]:
    return {"constraint": v.constraint, "limit_bytes": exact_number(v.limit_bytes),
            "actual_bytes": exact_number(v.actual_bytes), "excess_bytes": exact_number(v.excess_bytes)}


@dataclass(frozen=True, slots=True)
class PlanFigures:
    """What the independent evaluator says about one plan (a solver's or a baseline's)."""

    traffic_elements: Fraction
    traffic_bytes: Fraction
    comm_time_s: Fraction
    compute_s: Fraction
    step_time_s: Fraction
    memory_bytes_per_accelerator: Fraction
    violations: tuple[Violation, ...]
    energy_J: Fraction | None = None

    @staticmethod
    def of(ev: Evaluation, broken: list[Violation] | tuple[Violation, ...]) -> "PlanFigures":
        return PlanFigures(ev.traffic_elements, ev.traffic_bytes, ev.comm_time_s, ev.compute_s, ev.step_time_s,
                           ev.memory_bytes, tuple(broken), ev.energy_J)

    @staticmethod
    def of_split(ev: Evaluation, broken: list[Violation] | tuple[Violation, ...]) -> "PlanFigures":
        """A plan with split fractions: ``compute_s`` and ``comm_time_s`` are the critical
        accelerator's (the slowest, the first in tree order on a tie), so they combine to
        ``step_time_s`` as an even plan's do (their sum, or their max where the array overlaps)."""
        i = max(range(len(ev.leaf_time_s)), key=lambda j: ev.leaf_time_s[j])
        return replace(PlanFigures.of(ev, broken), compute_s=ev.leaf_compute_s[i], comm_time_s=ev.leaf_comm_s[i])

    @property
    def ok(self) -> bool:
        """The plan satisfies every constraint."""
        return not self.violations

    def to_json(self) -> dict[str, Any]:
        out = {
            "traffic_elements": exact_number(self.traffic_elements),
            "traffic_bytes": exact_number(self.traffic_bytes),
            "comm_time_s": float(self.comm_time_s),
            "compute_s": float(self.compute_s),
            "step_time_s": float(self.step_time_s),
            "memory_bytes_per_accelerator": exact_number(self.memory_bytes_per_accelerator),
            "violations": [violation_json(v) for v in self.violations],
        }
        if self.energy_J is not None:
            out["energy_J"] = float(self.energy_J)
        return out


def plan_figures(problem: Problem, plan: Plan) -> tuple[Evaluation, PlanFigures]:
    """Evaluate a plan (the independent evaluator) and the figures every report shows for it."""
    ev = evaluate(problem.network, problem.array, problem.space, plan, problem.constraints.weight_copies)
    broken = violations(ev, problem.constraints, problem.array, plan)
    return ev, PlanFigures.of(ev, broken)


def conflict_line(conflict, suggestion: str | None = None) -> str:
    """An infeasible run in one line (explore's stderr, a sweep point's message, the table's first
    line): the constraints that conflict and, in parentheses, what to change."""
    return "no plan satisfies the constraints; these conflict: " + "; ".join(conflict) + (
        f" ({suggestion})" if suggestion else "")


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why no plan exists: a minimal conflicting set of constraints and the nearest feasible limit."""

    conflict: tuple[str, ...] | None
    suggestion: str | None
    note: str | None = None  # what the time limit left unsettled (``cpsat.explain_infeasible``)
    wall_s: float | None = None  # the explanation's own time, after the solve (None: none was searched)

    @staticmethod
    def of(why: dict[str, Any]) -> "Explanation":
        conflict = why.get("conflict")
        return Explanation(None if conflict is None else tuple(conflict), why.get("suggestion"), why.get("note"),
                           why.get("wall_s"))

    def to_json(self) -> dict[str, Any]:
        out = {"conflict": None if self.conflict is None else list(self.conflict), "suggestion": self.suggestion}
        if self.wall_s is not None:  # searched after the solve (not when the solver named the conflict itself)
            out.update(explanation_wall_s=self.wall_s, explanation_note=self.note)
        return out


@dataclass(frozen=True, slots=True)
class StepTerms:
    """The ``time`` objective's two terms: the slowest accelerator's compute (the same for every
    plan of the problem) and communication (a plan's, and its bound's); the objective and bound
    are ``step_time(compute, communication)`` (core.objective)."""

    compute_s: Fraction
    overlap: bool
    communication_s: Fraction | None = None  # the plan's (None: no plan, or a check's header)
    bound_communication_s: Fraction | None = None

    @staticmethod
    def of(problem: Problem, objective_units: int | None = None, bound_units: int | None = None) -> "StepTerms | None":
        """The terms of a time-objective problem (None for traffic or custom weights)."""
        w = problem.weights
        if w.compute_s is None:
            return None
        comm = [None if u is None else w.scale * u for u in (objective_units, bound_units)]
        return StepTerms(w.compute_s, w.overlap, *comm)

    @property
    def formula(self) -> str:
        return "max(compute, communication)" if self.overlap else "compute + communication"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"step_time": self.formula, "compute_s": exact_number(self.compute_s)}
        if self.communication_s is not None:
            out["communication_s"] = exact_number(self.communication_s)
        if self.bound_communication_s is not None:
            out["bound_communication_s"] = exact_number(self.bound_communication_s)
        return out


# -- explore ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Versus:
    """A plan against data parallelism (all-I) in the same run."""

    traffic_ratio_to_all_I: float | None
    speedup_over_all_I: float | None
    comm_speedup_over_all_I: float | None
    energy_efficiency_over_all_I: float | None = None  # all-I's energy / this plan's, when energy is modelled

    @staticmethod
    def of(figs: PlanFigures, all_i: PlanFigures) -> "Versus":
        eff = None
        if figs.energy_J is not None and all_i.energy_J is not None:
            eff = _ratio(all_i.energy_J, figs.energy_J)
        return Versus(_ratio(figs.traffic_elements, all_i.traffic_elements), _ratio(all_i.step_time_s, figs.step_time_s),
                      _ratio(all_i.comm_time_s, figs.comm_time_s), eff)

    def to_json(self, comm: bool) -> dict[str, Any]:
        """The ratios (the communication speedup when ``comm``; the energy one when modelled)."""
        out = {"traffic_ratio_to_all_I": self.traffic_ratio_to_all_I, "speedup_over_all_I": self.speedup_over_all_I}
        if comm:
            out["comm_speedup_over_all_I"] = self.comm_speedup_over_all_I
        if self.energy_efficiency_over_all_I is not None:
            out["energy_efficiency_over_all_I"] = self.energy_efficiency_over_all_I
        return out


@dataclass(frozen=True, slots=True)
class RunResult:
    """One solver's answer to one problem (``explore``), re-scored and compared with the baselines.

    ``plan`` is None when the solver found none (``status`` says why: infeasible, unknown);
    then the figures are absent, and ``explanation`` may name the conflicting constraints.
    """

    inputs: Inputs
    solver: str
    status: Status
    wall_s: float
    bound: Fraction | None  # proven lower bound on the objective (elements or step-time seconds), if any
    gap: float | None  # (objective - bound) / objective, on these values
    plan: Plan | None = None
    level_cost_elements: tuple[Fraction, ...] = ()  # c_h, one way, per sibling group
    level_cost_units: tuple[int, ...] = ()  # the same in the cost tables' unit 1/unit_per_element
    unit_per_element: int = 1
    objective_value: Fraction | None = None  # elements (traffic) or step-time seconds (time)
    figures: PlanFigures | None = None
    baselines: tuple[tuple[str, PlanFigures], ...] = ()  # (name, figures), all-I first
    reason: str | None = None
    cpsat_status: str | None = None
    limit: str | None = None
    explanation: Explanation | None = None
    time_terms: StepTerms | None = None  # the time objective's compute and communication terms
    bound_method: str | None = None  # the method that proved ``bound`` (e.g. exact:lagrangian+labels, cpsat)

    @property
    def ok(self) -> bool:
        """A plan that satisfies every constraint (``explore`` exits 0)."""
        return self.plan is not None and self.figures is not None and self.figures.ok

    def baseline(self, name: str) -> PlanFigures:
        return dict(self.baselines)[name]

    def versus(self, figs: PlanFigures) -> Versus:
        return Versus.of(figs, self.baseline("all-I"))

    def to_json(self) -> dict[str, Any]:
        out = self.inputs.to_json()
        out.update(solver=self.solver, status=self.status.value, ok=self.ok, wall_s=self.wall_s,
                   bound=exact_number(self.bound), gap=self.gap)
        for key in ("reason", "cpsat_status", "limit", "bound_method"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.time_terms is not None:
            out["time_objective"] = self.time_terms.to_json()
        if self.plan is None or self.figures is None:
            out["plan"] = None
            if self.explanation is not None:
                out.update(self.explanation.to_json())
            return out
        out["plan"] = self.plan.to_lists()
        out["level_cost_elements"] = [exact_number(c) for c in self.level_cost_elements]
        out["level_cost_units"] = list(self.level_cost_units)
        out["unit_elements"] = f"1/{self.unit_per_element}"
        out.update(self.figures.to_json())
        out["objective_value"] = exact_number(self.objective_value)
        out["baselines"] = {name: {**figs.to_json(), **self.versus(figs).to_json(comm=False)}
                            for name, figs in self.baselines}
        out.update(self.versus(self.figures).to_json(comm=True))
        return out


# -- explore check ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SolverReport:
    """One solver's answer inside a check. ``status`` ``Status.REFUSED``: the solver declined (``reason`` says why)."""

    status: Status
    wall_s: float | None = None
    objective: Fraction | None = None  # elements (traffic) or step-time seconds (time)
    bound: Fraction | None = None
    gap: float | None = None
    plan: Plan | None = None
    figures: PlanFigures | None = None
    cpsat_status: str | None = None
    variables: int | None = None
    reason: str | None = None
    method: str | None = None  # how the answer was reached (check.method_of), e.g. "exact:chain-dp"

    @property
    def refused(self) -> bool:
        return self.status is Status.REFUSED

    def to_json(self) -> dict[str, Any]:
        if self.refused:
            return {"status": "refused", "reason": self.reason}
        out: dict[str, Any] = {"status": self.status.value, "wall_s": self.wall_s}
        if self.plan is not None and self.figures is not None:
            out["objective"] = exact_number(self.objective)
            out["ok"] = self.figures.ok
            out.update(self.figures.to_json())
            out["plan"] = self.plan.to_lists()
        out["bound"] = exact_number(self.bound)
        out["gap"] = self.gap
        for key in ("method", "cpsat_status", "variables", "reason"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


@dataclass(frozen=True, slots=True)
class LevelCheck:
    """The DP's cost at one level against the level's optimum given the DP's levels above; a check
    cut short by the time limit has no optimum (None), the best level cost it found and its bound."""

    level: int
    dp_cost_elements: Fraction
    level_optimum_elements: Fraction | None  # None: not proven (``cut_short`` says why)
    method: str  # enumeration, exact, elimination or cpsat
    found_elements: Fraction | None = None  # cut short: the least level cost found (None: none)
    bound_elements: Fraction | None = None  # cut short: the proven lower bound (None: none)
    cut_short: str | None = None  # why the level's proof was not completed

    @property
    def dp_is_level_optimal(self) -> bool | None:
        """True or False where proven (a plan found below the DP's cost proves False); None: unknown."""
        if self.level_optimum_elements is not None:
            return self.dp_cost_elements == self.level_optimum_elements
        if self.found_elements is not None and self.found_elements < self.dp_cost_elements:
            return False
        return None

    def to_json(self) -> dict[str, Any]:
        out = {"level": self.level, "dp_cost_elements": exact_number(self.dp_cost_elements),
               "level_optimum_elements": exact_number(self.level_optimum_elements),
               "method": self.method, "dp_is_level_optimal": self.dp_is_level_optimal}
        if self.cut_short is not None:
            out.update(found_elements=exact_number(self.found_elements),
                       bound_elements=exact_number(self.bound_elements),
                       cut_short=self.cut_short)
        return out


@dataclass(frozen=True, slots=True)
class CellDiff:
    level: int
    layer: str
    dp: PartitionType
    optimum: PartitionType

    def to_json(self) -> dict[str, Any]:
        return {"level": self.level, "layer": self.layer, "dp": self.dp.value, "optimum": self.optimum.value}


@dataclass(frozen=True, slots=True)
class Optimum:
    """The proven joint optimum and the DP's distance from it."""

    objective: Fraction
    proven_by: tuple[str, ...]
    plan_from: str
    dp_objective: Fraction
    dp_satisfies_constraints: bool
    cells_differing: tuple[CellDiff, ...]
    method: str = ""  # how plan_from proved it (check.method_of)
    methods: tuple[tuple[str, str], ...] = ()  # (solver, method) for every solver that proved it

    @property
    def dp_gap(self) -> Fraction | None:
        """The DP's objective over the optimum; None when the DP's plan breaks the constraints
        (a plan that breaks them is no answer to the problem: no gap, as a sweep's ``dp_gap``)."""
        return self.dp_objective - self.objective if self.dp_satisfies_constraints else None

    @property
    def dp_gap_percent(self) -> float | None:
        if self.dp_gap is None:
            return None
        return float(100 * self.dp_gap / self.objective) if self.objective else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "objective": exact_number(self.objective),
            "proven_by": list(self.proven_by),
            "plan_from": self.plan_from,
            "method": self.method,
            "methods": dict(self.methods),
            "dp_objective": exact_number(self.dp_objective),
            "dp_gap": exact_number(self.dp_gap),
            "dp_gap_percent": self.dp_gap_percent,
            "cells_differing": [c.to_json() for c in self.cells_differing],
            "dp_satisfies_constraints": self.dp_satisfies_constraints,
        }


@dataclass(frozen=True, slots=True)
class CheckReport:
    """``explore check``: the DP level by level, the joint solvers, the optimum, and the verdict."""

    inputs: Inputs
    dp: SolverReport
    levels: tuple[LevelCheck, ...]
    solvers: tuple[tuple[str, SolverReport], ...]  # (name, report) in the order run
    optimum: Optimum | None
    infeasible: tuple[str, ...]  # solvers that proved no plan exists
    problems: tuple[str, ...]  # every disagreement found; empty when everything agrees
    wall_s: float
    explanation: Explanation | None = None  # set when infeasibility was proven and explained
    time_terms: StepTerms | None = None  # the time objective's compute term (every plan's)

    @property
    def agree(self) -> bool:
        return not self.problems

    def solver(self, name: str) -> SolverReport:
        return dict(self.solvers)[name]

    def to_json(self) -> dict[str, Any]:
        out = self.inputs.to_json()
        if self.time_terms is not None:
            out["time_objective"] = self.time_terms.to_json()
        out["dp"] = self.dp.to_json()
        out["levels"] = [lv.to_json() for lv in self.levels]
        out["solvers"] = {name: s.to_json() for name, s in self.solvers}
        out["optimum"] = None if self.optimum is None else self.optimum.to_json()
        out["infeasible"] = list(self.infeasible)
        if self.explanation is not None:
            out.update(self.explanation.to_json())
        out["agree"] = self.agree
        out["problems"] = list(self.problems)
        out["wall_s"] = self.wall_s
        return out
