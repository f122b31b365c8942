"""The Python API: what ``explore``, ``explore check`` and ``explore sweep`` do, callable from a
program (docs/api.md). The CLI is a thin layer over these functions (it parses options, prints and
picks the exit status). Bad input raises ``SpecError`` (one line naming the argument, the field
and the problem); a solver that declines an instance raises ``Refused``. Nothing here prints.
"""

from __future__ import annotations

import re
from dataclasses import replace
from os import PathLike, fspath
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping

from .app.api_args import check_numbers, check_solve_args, check_sweep_args, named_arguments, solver_names
from .app.run_options import RunOptions, run_options, with_run_options
from .app import request
from .app.request import DEFAULT_ARRAY, ArrayRef, ModelRef, check_split
from .app.results import CheckReport, RunResult
from .core.errors import SpecError, is_int, shown
from .core.kinds import CHECK_SOLVERS, JOINT_SOLVERS
from .core.names import Frontend, given_as, named_for, running

if TYPE_CHECKING:
    from .app.check_uneven import SplitCheck
    from .app.sweep.engine import Progress as SweepProgress
    from .app.sweep.spec import Sweep

# the sweep machinery (its engine imports multiprocessing and concurrent.futures) is imported by
# ``sweep`` when it runs: ``explore`` imports this module for every single run
MAX_POINTS = 100_000  # ``app.sweep.spec.MAX_POINTS`` (tested equal)

__all__ = ["build_problem", "solve", "check", "sweep", "plan_llm", "RunOptions", "RunResult", "CheckReport"]

# the API's errors name its arguments (caps, memory_GiB, pins), the CLI's its options (``.with_option_names``)
build_problem = named_arguments(request.build_problem)
solve = named_arguments(request.solve)


@named_arguments
@with_run_options
def check(model: ModelRef, array: ArrayRef = DEFAULT_ARRAY, *, solvers: Iterable[str] = JOINT_SOLVERS,
          **options: Any) -> CheckReport | SplitCheck:
    """Cross-check one problem: is the DP level-optimal, what is the proven joint optimum, do
    the exact solvers agree, and how far is the DP from the optimum (``explore check``).

    ``solvers`` are the joint solvers to run and compare (exact, cpsat, brute by default, with pruned after exact where exact refuses a graph without link caps; pruned on request; a name given twice runs once);
    the other keyword arguments are :class:`RunOptions`' fields, as for :func:`solve`
    (``time_limit`` bounds the whole check: the DP, its level checks and the solvers in turn, each
    getting what the steps before it left; None: the default a solve keeps, 60 s when ``solvers``
    has cpsat or pruned, or exact under caps or memory: ``app.check.check_limit``). Returns a
    :class:`CheckReport`: ``levels`` (the DP
    level by level), ``solvers`` ((name, report) pairs; a refusal has status None and a reason),
    ``optimum`` (None when none was proven), ``agree`` and ``problems``.

    ``split="optimal"`` (``explore check --split optimal``): the uneven-split solvers (``solvers``
    from brute, exact, cpsat, joint, accpar, levels, search, proportional; default all) compared on
    the step time, or with ``objective="traffic"`` on the traffic (ties to the least step time;
    joint and accpar refuse it), returning a ``SplitCheck`` (``rows``, ``optimum``, ``optimum_s``,
    ``agree``, ``problems``, ``to_json()``); ``split="equal"`` (every alpha 1/2) is the even split: the check above, on the
    step time unless ``objective`` is given.
    """
    from .app.check import CheckOptions, check as _check  # (the checker: not part of every run's start-up)

    o = run_options("check", options)
    if o.split == "equal":  # the even split (alpha 1/2): the even solvers compared, on solve(split=...)'s objective
        o = replace(o, split=None, objective="time" if o.objective is None else o.objective)
    if o.split is not None:
        return check_split(model, array, o, solvers=None if solvers is JOINT_SOLVERS else solvers)
    o.split_only("only with split optimal (uneven splits); check without it splits every level equally")
    names = solver_names(solvers, CHECK_SOLVERS)
    problem = request.build_problem(model, array, **o.problem_args("traffic"))
    return _check(problem, CheckOptions(solve=o.solve_options(), solvers=names), progress=o.progress)


@named_arguments
def plan_llm(model: str | PathLike, array: str | PathLike = "dgx-a100", *, gpus: int | None = None, batch: int | None = None,
             seq: int | None = None, layout: str | None = None, degrees: str | Mapping[str, int] | None = None,
             micro_batch: int | None = None, recompute: str | None = None, zero: int | None = None,
             time_limit: float | None = None, memory_GiB: float | None = None, progress: Callable | None = None):
    """What ``explore --model M --array <GPU cluster>`` does (docs/llm-training.md): the LLM
    planner's search over tensor, pipeline and data parallelism (or, with ``layout``, one given
    layout scored), returned as the ``LlmReport`` the CLI prints (``explorer.app.llm_report``:
    ``render_llm`` draws its table, ``llm_json`` its ``--format json`` object). ``degrees`` is
    ``"tensor=8,pipeline=8"`` or ``{"tensor": 8, "pipeline": 8}``; ``zero`` 0, 1 or 3;
    ``recompute`` none, selective, full or search. Bad input: ``SpecError`` naming the argument."""
    from .app.llm_options import parse_request
    from .app.llm_run import run_llm
    from .frontends import is_cluster, load_array

    model, array = (fspath(v) if isinstance(v, PathLike) else v for v in (model, array))  # a Path, as solve takes
    _check_llm_args(model, array, layout, recompute, zero, time_limit, progress,
                    {"gpus": gpus, "batch": batch, "seq": seq, "micro_batch": micro_batch}, degrees, memory_GiB)
    if not is_cluster(array):
        load_array(array)  # an unknown name or an unreadable file: its own error
        raise SpecError("array", f"{shown(array)} is not a GPU cluster (dgx-a100, dgx-h100 or a YAML with kind: "
                                 "gpu-cluster): solve() plans accelerator arrays")
    if isinstance(degrees, Mapping):
        degrees = ",".join(f"{k}={v}" for k, v in degrees.items())
    req = parse_request(model, array, gpus, batch, seq, layout, degrees, micro_batch, recompute,
                        None if zero is None else str(zero), time_limit, memory_GiB)
    return run_llm(req, progress=progress)


def _check_llm_args(model, array, layout, recompute, zero, time_limit, progress, counts: dict, degrees,
                    memory_GiB) -> None:
    """``plan_llm``'s arguments, as the CLI's option types check them. One rule for numbers: an
    integer argument (``zero`` and a ``degrees`` mapping's values too) is an int, a number of GiB
    an int or a float; text ("512") is refused, as a float where an integer is due."""
    from .app.llm_options import check_degree

    for name, value in (("model", model), ("array", array)):
        if not isinstance(value, str):
            raise SpecError(name, f"must be a name or a path, got {shown(value)}")
        if not value.strip():
            raise SpecError(name, "must not be empty")  # as solve() and the CLI say it
    check_numbers(**{name: (value, int) for name, value in counts.items()}, memory_GiB=(memory_GiB, float))
    for name, value, allowed in (("layout", layout, ("megatron", "zero3")),
                                 ("recompute", recompute, ("none", "selective", "full", "search"))):
        if value is not None and value not in allowed:
            raise SpecError(name, f"must be one of {', '.join(allowed)}, got {shown(value)}")
    if zero is not None and not (is_int(zero) and zero in (0, 1, 3)):
        raise SpecError("zero", f"must be one of 0, 1, 3, got {shown(zero)}")
    if isinstance(degrees, Mapping):
        for key, value in degrees.items():
            if not isinstance(key, str) or not re.fullmatch(r"[a-z]+", key):
                raise SpecError("degrees", f"{shown(key)}: must be a degree's name (tensor, pipeline, data, expert, "
                                           "virtual), without '=' or ','")
            if not is_int(value):
                raise SpecError("degrees", f"{shown(key)}: must be an integer, got {shown(value)}")
            check_degree(key, value, mapping=True)  # before the mapping is written as text: 10**5000 has none
    elif degrees is not None and not isinstance(degrees, str):
        raise SpecError("degrees", f"must be 'tensor=8,pipeline=8' or a mapping, got {shown(degrees)}")
    check_solve_args(time_limit, None, 0, None, progress)


@named_arguments
def sweep(spec: str | Path | dict | Sweep, out: str | Path | None = None, *, workers: int | None = None,
          engine: str = "local", scheduler: str | None = None, shard: str | None = None,
          pareto: tuple[str, ...] | list[str] = (), progress: Callable[[SweepProgress], None] | None = None,
          max_points: int = MAX_POINTS, force: bool = False,
          pareto_by: tuple[str, ...] | list[str] = ()) -> Iterator[dict[str, Any]]:
    """Run a design-space sweep and yield one row per point (a dict: the point's options, then
    ``status``, the single run's figures, ``violations``, ``wall_s``, ``cached``, ``error``), in the
    sweep's point order; a point without a plan is a row too. ``spec``: a sweep file, its parsed
    mapping or a ``Sweep``; ``out``: a folder for the cache and, once the generator is exhausted,
    ``results.csv``, ``plans.jsonl`` and ``sweep.json``; the other arguments are ``explore sweep``'s
    options (docs/sweeps.md, "Python API"). Bad input raises ``SpecError`` before any point runs.
    """
    from .app.sweep.runner import run_sweep

    sw = _check_sweep(spec, out, workers, engine, scheduler, shard, pareto, progress, max_points, force, pareto_by)
    return _named_rows(run_sweep(sw, out, workers=workers, engine=engine, scheduler=scheduler, shard=shard,
                                 pareto=tuple(pareto), progress=progress, force=force, pareto_by=tuple(pareto_by)),
                       running())


def _named_rows(rows: Iterator[dict[str, Any]], frontend: Frontend) -> Iterator[dict[str, Any]]:
    """The sweep's rows; an error raised as they are made (``out`` in use by another run) names
    the argument as the caller's front end does (the API's ``out``, the CLI's ``--out``)."""
    try:
        yield from rows
    except SpecError as err:
        with named_for(frontend):
            source = given_as(err.source)
        raise SpecError(source, err.problems) from None


def _check_sweep(spec, out, workers, engine, scheduler, shard, pareto, progress, max_points, force, pareto_by) -> Sweep:
    """``sweep``'s bad input, refused before any point is built, in the API's words; the sweep."""
    from .app.sweep.engine import check_engine
    from .app.sweep.runner import check_request, parse_shard

    check_sweep_args(spec, out, workers, engine, scheduler, shard, pareto, progress, max_points, force)
    if not isinstance(pareto_by, (list, tuple)) or not all(isinstance(c, str) for c in pareto_by):
        raise SpecError("pareto_by", f"must be a list of sweep keys, got {shown(pareto_by)}")
    if isinstance(shard, str):
        parse_shard(shard)
    sw, _, _ = check_request(spec, out, shard, pareto, max_points, force, tuple(pareto_by))
    check_engine(engine, scheduler)
    return sw
