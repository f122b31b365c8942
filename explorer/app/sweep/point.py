"""Solve one sweep point: build its problem exactly as ``explore`` would, run it, never raise.

``solve_point`` is the one place a sweep calls the single-run pipeline; it runs inside a
worker process (local pool or Dask worker), where parsed networks and arrays are kept for
the next point.
"""

from __future__ import annotations

import json
import traceback
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ...core.errors import Refused, SpecError
from ...core.network import Network
from ...core.solution import SolveOptions, Status
from ...frontends import dense_only, load_model
from ...frontends.network_yaml import check_batch
from ...core.names import Frontend
from ..api_args import named_as
from ..results import conflict_line
from .mix import point_array
from ...core.uneven import DEFAULT_ALPHA_GRID, SPLIT_TIME_LIMIT
from .spec import defaults_for

# Statuses a row can have beyond the solver's own (optimal, level-optimal, feasible, infeasible, unknown)
REFUSED = Status.REFUSED.value  # the solver declined the instance (too large, a constraint it cannot enforce)
INVALID = "invalid"  # the point's options do not fit together (e.g. a cap on a level it lacks)
ERROR = "error"  # anything else raised: a bug, recorded and not cached


# a row's figures, copied from the single-run JSON object, in this order
FIGURES = (
    "accelerators", "traffic_elements", "traffic_bytes", "comm_time_s", "compute_s", "step_time_s",
    "memory_bytes_per_accelerator", "speedup_over_all_I", "traffic_ratio_to_all_I", "energy_J", "energy_efficiency_over_all_I",
    "objective_value", "bound", "gap",
)
SUMMARY_KEYS = (*FIGURES, "violations", "approximations", "warnings", "wall_s")  # the result keys a row shows (the rest stays in plans.jsonl)


# the figures of a split point's row, from ``explore split --format json``
SPLIT_KEYS = ("group0_time_s", "group1_time_s", "idle_s", "speedup_over_all_I_equal", "speedup_over_trick_equal",
              "speedup_over_hypar_equal")
ALPHAS_KEY = "alphas"  # in a split point's summary: one readable cell per level (level_alpha_cells)
ANSWERED_BY = "answered_by"  # a split point's answering solver (joint, or the one routed to; dp, search), after the alphas
NOTE = "note"  # a split point's note (its JSON's: the route taken, what a time limit cut, why not proven), after answered_by


def level_alpha_cells(alphas: list) -> list[str]:
    """One readable cell per level of ``explore split``'s alphas ([level][layer], or
    [level][group][layer] when groups of a level may differ): '15/56' when every layer and
    group of the level takes it; the distinct values in order of first appearance when layers
    differ ('1/4;1/2'); and when groups differ, each distinct group row with the groups that
    take it ('g0-2: 1/2 | g3: 15/56')."""
    return [_level_cell(row) for row in alphas]


def _level_cell(row: list) -> str:
    groups = row if row and isinstance(row[0], (list, tuple)) else [row]
    distinct: dict[tuple[str, ...], list[int]] = {}
    for g, layers in enumerate(groups):
        distinct.setdefault(tuple(str(a) for a in layers), []).append(g)
    cells = {key: ";".join(dict.fromkeys(key)) for key in distinct}
    if len(set(cells.values())) == 1:
        return next(iter(cells.values()))
    return " | ".join(f"g{_ranges(gs)}: {cells[key]}" for key, gs in distinct.items())


def _ranges(ids: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5'."""
    out: list[list[int]] = []
    for i in ids:
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in out)


def split_summary(result: dict[str, Any]) -> dict[str, Any]:
    base = result.get("baselines") or {}
    g = result.get("group_times_s") or [None, None]
    return {"group0_time_s": g[0], "group1_time_s": g[1], "idle_s": result.get("idle_s"),
            "speedup_over_all_I_equal": (base.get("all-I") or {}).get("split_speedup"),
            "speedup_over_trick_equal": (base.get("trick") or {}).get("split_speedup"),
            "speedup_over_hypar_equal": (base.get("hypar") or {}).get("split_speedup"),
            ALPHAS_KEY: level_alpha_cells(result.get("alphas") or []), ANSWERED_BY: result.get("solver"),
            NOTE: result.get(NOTE)}


@dataclass(frozen=True)
class Outcome:
    """What one point produced: the single-run result (serialised once, in the worker, so the
    cache and plans.jsonl copy it as text), the figures a row shows, or a status and message."""

    index: int
    status: str
    error: str  # "" when the solver answered
    wall_s: float
    cached: bool = False
    result_text: str | None = None  # the single-run JSON object (``explore --format json``), as JSON text
    summary: dict[str, Any] | None = None  # the result's SUMMARY_KEYS

    @classmethod
    def make(cls, index: int, result: dict[str, Any] | None, status: str, error: str, wall_s: float,
             cached: bool = False) -> "Outcome":
        if result is None:
            return cls(index, status, error, wall_s, cached)
        summary = {k: result.get(k) for k in SUMMARY_KEYS}
        if "split" in result:  # a split point (``explore split``): its own figures
            summary.update(split_summary(result))
        return cls(index, status, error, wall_s, cached, json.dumps(result), summary)

    @property
    def result(self) -> dict[str, Any] | None:
        return None if self.result_text is None else json.loads(self.result_text)

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "error": self.error, "wall_s": self.wall_s, "summary": self.summary,
                "result_text": self.result_text}

    @classmethod
    def from_json(cls, index: int, data: dict[str, Any], cached: bool = False) -> "Outcome":
        return cls(index, data["status"], data["error"], data["wall_s"], cached, data["result_text"], data["summary"])


@lru_cache(maxsize=64)
def _network(ref: str, batch: int | None, seq: int | None = None) -> Network:
    net = dense_only(load_model(ref, batch, seq), ref)
    return net.with_batch(batch) if batch is not None else net


def point_options(params: dict[str, Any]) -> SolveOptions:
    """One CP-SAT search worker per point: the pool supplies the parallelism."""
    return SolveOptions(time_limit_s=params.get("time_limit"), workers=1, seed=params.get("seed") or 0)


@named_as(Frontend.SWEEP)
def run_single(params: dict[str, Any]) -> dict[str, Any]:
    """The single-run result (``explore --format json``) for a point's resolved options; its errors
    and constraint origins name the sweep's keys (the API's arguments), not explore's options.

    The one call into the single-run pipeline: ``explorer.api.solve`` (``app.request.solve``), given
    this worker's parsed network and the point's array (with its overrides) as objects.
    """
    from .. import request as api

    p = {**defaults_for(params), **params}
    batch = p.get("batch")
    if batch is not None:
        check_batch(batch, "batch")
    if p.get("split") is not None:
        return run_split(p)
    opts = point_options(p)
    result = api.solve(_network(p["model"], batch, p.get("seq")), point_array(p), solver=p["solver"], **_problem_args(p),
                       time_limit=opts.time_limit_s, workers=opts.workers, seed=opts.seed)
    return result.to_json()


def _problem_args(p: dict[str, Any]) -> dict[str, Any]:
    """A point's options that make its problem (``request.build_problem``'s keywords)."""
    return {"space": p["space"], "objective": p["objective"], "batch": p.get("batch"), "caps": p.get("caps") or (),
            "memory_GiB": p.get("memory_GiB"), "weight_copies": p.get("weight_copies"), "pins": p.get("pins") or (),
            "forbids": p.get("forbids") or (), "constraints": p.get("constraints")}


def run_split(p: dict[str, Any]) -> dict[str, Any]:
    """A ``split`` point: what ``explore --split --format json`` prints for its options (its
    objective, caps, pins, forbids and constraints file too, ``request.split_problem``)."""
    from .. import request as api

    problem = api.build_problem(_network(p["model"], p.get("batch"), p.get("seq")), point_array(p), **_problem_args(p))
    report = api.split_problem(problem, p["split"], alpha_grid=p.get("alpha_grid") or DEFAULT_ALPHA_GRID,
                               free=p.get("free") or "unlike", grid_only=bool(p.get("grid_only")),
                               time_limit=float(p.get("time_limit") or SPLIT_TIME_LIMIT), solver=p.get("solver"))
    return report.to_json()


def answer_status(result: dict[str, Any]) -> tuple[str, str]:
    """(status, message) of a single-run result: why there is no plan, or why a plan is not proven."""
    if result.get("plan") is None:
        if result.get("conflict"):
            why = conflict_line(result["conflict"], result.get("suggestion"))
            return result["status"], why + (f"; explanation {result['explanation_note']}" if result.get("explanation_note") else "")
        return result["status"], result.get("reason") or "no plan"
    if result["status"] == "feasible":  # why it is not proven (a CP-SAT that never searched: the DP's plan)
        return result["status"], result.get("reason") or ""
    return result["status"], ""


def solve_point(index: int, params: dict[str, Any]) -> Outcome:
    """Solve one point; whatever happens, an Outcome (the sweep never stops for one point)."""
    import time

    t0 = time.perf_counter()
    try:
        result = run_single(params)
    except Refused as err:
        return Outcome.make(index, None, REFUSED, str(err), time.perf_counter() - t0)
    except SpecError as err:
        return Outcome.make(index, None, INVALID, str(err), time.perf_counter() - t0)
    except Exception as err:  # noqa: BLE001 - a point must not stop the sweep
        last = traceback.extract_tb(err.__traceback__)[-1]
        where = f" ({last.filename.rsplit('/', 1)[-1]}:{last.lineno})"
        return Outcome.make(index, None, ERROR, f"{type(err).__name__}: {err}{where}", time.perf_counter() - t0)
    status, message = answer_status(result)
    return Outcome.make(index, result, status, message, time.perf_counter() - t0)

