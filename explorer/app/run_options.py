"""The options of one run, shared by ``explorer.api.solve`` and ``check`` (their keyword
arguments) and ``app.request``: one frozen dataclass, documented once."""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, fields
from os import PathLike
from typing import Any, Callable, Iterable, Mapping

from ..core.errors import SpecError, shown
from ..core.objective import Objective
from ..core.partition import Space
from ..core.solution import SolveOptions
from .api_args import check_solve_args, unknown_argument

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    """The keyword arguments of ``solve`` and ``check`` (``explore``'s options), checked as the CLI
    checks its options (a bad one: ``SpecError`` naming the argument).

    ``space`` hypar ({I, II}) or accpar ({I, II, III}); ``objective`` traffic (sum_h 2^h c_h,
    elements; the default) or time (sum_h c_h*dtype/bw_h, seconds; the default with ``split``);
    ``batch`` and ``levels`` override the network's and the array's; ``seq`` fills an ONNX model's
    symbolic sequence (or overrides a YAML spec's); ``caps`` "LEVEL=AMOUNT" strings (["3=55MB",
    "2=5ms"]) or a mapping ({3: "55MB"}); ``memory_GiB`` the memory limit (per kind with
    ``split``); ``weight_copies`` optimizer-state buffers; ``pins`` "LAYER@LEVEL=TYPE"; ``forbids``
    "LAYER=TYPE"; ``constraints`` a constraints YAML file; ``time_limit`` (s), ``workers``,
    ``seed`` and ``dump_model`` control CP-SAT (``check``: ``time_limit`` bounds the whole
    check); ``progress`` receives one-line messages while solving; ``started`` the
    ``time.perf_counter()`` value ``time_limit`` counts from (``explore`` passes its process's
    start; default: the call's).

    ``split`` (``explore --split``): equal, proportional, search, optimal or levels, the split
    fractions between subgroups (``check``: optimal or equal), with ``alpha_grid`` (default 16),
    ``free`` (unlike or all) and ``grid_only`` (only with ``split``); ``workers``, ``seed`` and
    ``dump_model`` are refused with it (docs/api.md, docs/uneven.md).
    """

    space: str | Space = "hypar"
    objective: str | Objective | None = None
    batch: int | None = None
    levels: int | None = None
    seq: int | None = None
    caps: Iterable[str] | Mapping[int, str] = ()
    memory_GiB: float | None = None
    weight_copies: int | None = None
    pins: Iterable[str] = ()
    forbids: Iterable[str] = ()
    constraints: str | PathLike | None = None
    time_limit: float | None = None
    workers: int | None = None
    seed: int = 0
    dump_model: str | None = None
    progress: Progress | None = None
    split: str | None = None
    alpha_grid: int | None = None
    free: str | None = None
    grid_only: bool = False
    started: float | None = None

    def problem_args(self, objective: str) -> dict[str, Any]:
        """``build_problem``'s keywords (``objective``: the default when none was given)."""
        return {name: getattr(self, name) for name in PROBLEM_KEYS} | {
            "objective": objective if self.objective is None else self.objective}

    def solve_options(self) -> SolveOptions:
        return SolveOptions(time_limit_s=self.time_limit, workers=self.workers, seed=self.seed,
                            dump_model=self.dump_model, progress=self.progress, started=self.started)

    def cpsat_given(self) -> list[str]:
        """The CP-SAT options given (refused with ``split``), in the CLI's order."""
        given = {"workers": self.workers is not None, "seed": self.seed != 0, "dump_model": self.dump_model is not None}
        return [name for name, g in given.items() if g]

    def split_only(self, why: str) -> None:
        """SpecError naming the first split-only argument given (``alpha_grid``, ``free``, a true
        ``grid_only``), as the CLI refuses --alpha-grid, --free and --grid-only without --split."""
        given = {"alpha_grid": self.alpha_grid is not None, "free": self.free is not None,
                 "grid_only": self.grid_only not in (None, False)}
        first = next((name for name, g in given.items() if g), None)
        if first is not None:
            raise SpecError(first, why)


PROBLEM_KEYS = ("space", "batch", "levels", "seq", "caps", "memory_GiB", "weight_copies", "pins", "forbids",
                "constraints")
FIELDS = tuple(f.name for f in fields(RunOptions))


def run_options(where: str, options: dict[str, Any]) -> RunOptions:
    """``options`` (keyword arguments of ``where``) as RunOptions, their solver options and
    ``started`` checked; an unknown keyword is a SpecError naming it and the accepted ones."""
    unknown = [name for name in options if name not in FIELDS]
    if unknown:
        raise unknown_argument(where, unknown[0], FIELDS)
    o = RunOptions(**options)
    check_solve_args(o.time_limit, o.workers, o.seed, o.dump_model, o.progress)
    check_started(o.started)
    if o.grid_only is not None and not isinstance(o.grid_only, bool):  # bool("no") would turn it on
        raise SpecError("grid_only", f"must be true or false, got {shown(o.grid_only)}")
    return o


def check_started(started: Any) -> None:
    """``started`` (where ``time_limit`` counts from): a finite ``time.perf_counter()`` value or None."""
    if started is not None and (not isinstance(started, (int, float)) or isinstance(started, bool) or not math.isfinite(started)):
        raise SpecError("started", f"must be a time.perf_counter() value or None, got {shown(started)}")


def with_run_options(fn: Callable) -> Callable:
    """``fn(..., **options)`` shown (``help``, ``inspect.signature``) with RunOptions' fields as
    its keyword arguments after its own."""
    sig = inspect.signature(fn)
    own = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    more = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.type)
            for f in fields(RunOptions)]
    fn.__signature__ = sig.replace(parameters=own + more)
    return fn
