"""The Python API: what ``explore`` and ``explore check`` do, callable from a program.

The CLI is a thin layer over these functions (it parses options, prints and picks the exit
status); a program gets the same typed results::

    from explorer.api import solve
    r = solve("alexnet", space="accpar", solver="exact")
    r.status, r.objective_value, r.plan.to_lists(), r.to_json()

    from explorer.api import sweep
    for row in sweep("spaces/scalability.yaml", out="runs/scalability", workers=2):
        print(row["model"], row["levels"], row["solver"], row["status"], row["step_time_s"])

``model`` is a zoo name, a path (network YAML or ONNX) or a built ``Network``; ``array`` a
shipped array name, a path or an ``ArraySpec``. Bad input raises ``SpecError`` (one line
naming the option, the field and the problem); a solver that declines an instance raises
``Refused``. Nothing here prints.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from .app.api_args import check_solve_args, check_sweep_args, solver_names
from .app.check import JOINT_SOLVERS, CheckOptions
from .app.check import check as _check
from .app.results import CheckReport, RunResult
from .app.run import run
from .app.sweep.engine import Progress as SweepProgress
from .app.sweep.runner import check_request, run_sweep
from .app.sweep.spec import MAX_POINTS, Sweep
from .core.array import ArraySpec, check_levels
from .core.errors import SpecError, shown
from .core.network import Network
from .core.objective import Objective
from .core.partition import Space
from .core.problem import Problem
from .core.solution import SolveOptions
from .frontends import load_array, load_model
from .frontends.constraints_yaml import ConstraintOptions, build_constraints
from .frontends.network_yaml import check_batch
from .solvers import REGISTRY

__all__ = ["build_problem", "solve", "check", "sweep", "RunResult", "CheckReport"]

ModelRef = str | PathLike | Network
ArrayRef = str | PathLike | ArraySpec
Progress = Callable[[str], None]

DEFAULT_ARRAY = "hypar-16"


def _choice(enum_type, value, name: str):
    try:
        return enum_type(value)
    except ValueError:
        known = ", ".join(m.value for m in enum_type)
        raise SpecError(name, f"unknown {name} {shown(value)} (choose from {known})") from None


def _check_types(**args: tuple[Any, type]) -> None:
    """SpecError naming the argument when a number argument is not a number (None is fine)."""
    for name, (value, kind) in args.items():
        ok = value is None or (isinstance(value, (int, float) if kind is float else int) and not isinstance(value, bool))
        if not ok:
            raise SpecError(name, f"must be {'a number' if kind is float else 'an integer'}, got {shown(value)}")


def _strings(value: Any, name: str, form: str) -> tuple[str, ...]:
    """An argument taking one string or a list of strings (each like ``form``)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(x, str) for x in value):
        return tuple(value)
    raise SpecError(name, f"must be a list of {form} strings, got {shown(value)}")


def _caps(value: Any) -> tuple[str, ...]:
    """``caps`` as a mapping {level: amount} ({3: "5MB"}) or "LEVEL=AMOUNT" strings (["3=5MB"])."""
    if isinstance(value, Mapping):
        items = []
        for level, amount in value.items():
            if isinstance(level, bool) or not isinstance(level, (int, str)) or not isinstance(amount, str):
                raise SpecError("caps", f"a mapping must take a level (integer) to an amount with a unit "
                                        f"(e.g. {{3: '5MB'}}), got {shown({level: amount})}")
            items.append(f"{level}={amount}")
        return tuple(items)
    return _strings(value, "caps", "LEVEL=AMOUNT (or a mapping {level: amount})")


def build_problem(
    model: ModelRef,
    array: ArrayRef = DEFAULT_ARRAY,
    *,
    space: str | Space = "hypar",
    objective: str | Objective = "traffic",
    batch: int | None = None,
    levels: int | None = None,
    seq: int | None = None,
    caps: Iterable[str] | Mapping[int, str] = (),
    memory_GiB: float | None = None,
    weight_copies: int | None = None,
    pins: Iterable[str] = (),
    forbids: Iterable[str] = (),
    constraints: str | PathLike | None = None,
) -> Problem:
    """The problem ``explore`` would solve for these options (see :func:`solve`)."""
    _check_types(weight_copies=(weight_copies, int), memory_GiB=(memory_GiB, float))
    if batch is not None:
        check_batch(batch)
    if seq is not None:
        check_batch(seq, "--seq")
    arr = array if isinstance(array, ArraySpec) else load_array(str(array))
    if batch is None:
        batch = arr.batch  # the array's evaluation batch, when it declares one
    net = model if isinstance(model, Network) else load_model(str(model), batch, seq)
    if batch is not None:
        net = net.with_batch(batch)
    if levels is not None:
        arr = arr.with_levels(check_levels(levels, "--levels"))
    sp = _choice(Space, space, "space")
    copts = ConstraintOptions(_caps(caps), memory_GiB, weight_copies, _strings(pins, "pins", "LAYER@LEVEL=TYPE"),
                              _strings(forbids, "forbids", "LAYER=TYPE"),
                              None if constraints is None else str(constraints))
    return Problem(net, arr, sp, _choice(Objective, objective, "objective"), build_constraints(net, arr, sp, copts))


def solve(
    model: ModelRef,
    array: ArrayRef = DEFAULT_ARRAY,
    *,
    space: str | Space = "hypar",
    objective: str | Objective = "traffic",
    solver: str = "dp",
    batch: int | None = None,
    levels: int | None = None,
    seq: int | None = None,
    caps: Iterable[str] | Mapping[int, str] = (),
    memory_GiB: float | None = None,
    weight_copies: int | None = None,
    pins: Iterable[str] = (),
    forbids: Iterable[str] = (),
    constraints: str | PathLike | None = None,
    time_limit: float | None = None,
    workers: int | None = None,
    seed: int = 0,
    dump_model: str | None = None,
    progress: Progress | None = None,
) -> RunResult:
    """Solve one problem with one solver, re-score the plan and compare it with the baselines.

    Arguments mirror ``explore``'s options: ``space`` hypar ({I, II}) or accpar ({I, II, III});
    ``objective`` traffic (sum_h 2^h c_h, elements) or time (sum_h c_h*dtype/bw_h, seconds);
    ``solver`` dp, cpsat, exact or brute; ``batch`` and ``levels`` override the network's and
    the array's; ``seq`` fills an ONNX model's symbolic sequence (or overrides a YAML spec's);
    ``caps`` are "LEVEL=AMOUNT" strings (["3=55MB", "2=5ms"]) or a mapping ({3: "55MB"}); ``pins``
    "LAYER@LEVEL=TYPE"; ``forbids`` "LAYER=TYPE"; ``constraints`` a constraints YAML file;
    ``time_limit`` (s), ``workers``, ``seed`` and ``dump_model`` control CP-SAT. ``progress``
    receives one-line messages while solving.

    Returns a :class:`RunResult`: ``status``, ``plan`` (None when there is none),
    ``objective_value`` and ``bound`` (exact), ``figures`` and ``baselines``; ``result.ok`` is
    what ``explore``'s exit status 0 means; ``result.to_json()`` is ``--format json``.
    """
    check_solve_args(time_limit, workers, seed, dump_model, progress)
    if solver not in REGISTRY:
        raise SpecError("solver", f"unknown solver {shown(solver)} (choose from {', '.join(REGISTRY)})")
    problem = build_problem(model, array, space=space, objective=objective, batch=batch, levels=levels, seq=seq, caps=caps,
                            memory_GiB=memory_GiB, weight_copies=weight_copies, pins=pins, forbids=forbids,
                            constraints=constraints)
    if progress is not None:
        progress(f"solving {problem.network.name} on {problem.array.name} with {solver}")
    options = SolveOptions(time_limit_s=time_limit, workers=workers, seed=seed, dump_model=dump_model, progress=progress)
    return run(problem, solver, options)


def check(
    model: ModelRef,
    array: ArrayRef = DEFAULT_ARRAY,
    *,
    space: str | Space = "hypar",
    objective: str | Objective = "traffic",
    solvers: Iterable[str] = JOINT_SOLVERS,
    batch: int | None = None,
    levels: int | None = None,
    seq: int | None = None,
    caps: Iterable[str] | Mapping[int, str] = (),
    memory_GiB: float | None = None,
    weight_copies: int | None = None,
    pins: Iterable[str] = (),
    forbids: Iterable[str] = (),
    constraints: str | PathLike | None = None,
    time_limit: float | None = None,
    workers: int | None = None,
    seed: int = 0,
    dump_model: str | None = None,
    progress: Progress | None = None,
) -> CheckReport:
    """Cross-check one problem: is the DP level-optimal, what is the proven joint optimum, do
    the exact solvers agree, and how far is the DP from the optimum (``explore check``).

    ``solvers`` are the joint solvers to run and compare (cpsat, exact, brute); the other
    arguments are those of :func:`solve`. Returns a :class:`CheckReport`: ``levels`` (the DP
    level by level), ``solvers`` ((name, report) pairs; a refusal has status None and a
    reason), ``optimum`` (None when none was proven), ``agree`` and ``problems``.
    """
    names = solver_names(solvers, JOINT_SOLVERS)
    check_solve_args(time_limit, workers, seed, dump_model, progress)
    problem = build_problem(model, array, space=space, objective=objective, batch=batch, levels=levels, seq=seq, caps=caps,
                            memory_GiB=memory_GiB, weight_copies=weight_copies, pins=pins, forbids=forbids,
                            constraints=constraints)
    options = CheckOptions(
        solve=SolveOptions(time_limit_s=time_limit, workers=workers, seed=seed, dump_model=dump_model, progress=progress),
        solvers=names,
    )
    return _check(problem, options, progress=progress)


def sweep(spec: str | Path | dict | Sweep, out: str | Path | None = None, *, workers: int | None = None,
          engine: str = "local", scheduler: str | None = None, shard: str | None = None,
          pareto: tuple[str, ...] | list[str] = (), progress: Callable[[SweepProgress], None] | None = None,
          max_points: int = MAX_POINTS, force: bool = False) -> Iterator[dict[str, Any]]:
    """Run a design-space sweep and yield one row per point, in the sweep's point order.

    ``spec`` is a sweep file (YAML, version 1), its parsed mapping (relative paths then resolve
    against the working folder) or a loaded ``Sweep``. Each row holds the point's options as
    written, then ``status``, the figures of the single-run answer (``traffic_elements``,
    ``step_time_s``, ``memory_bytes_per_accelerator``, ``bound``, ``gap``, ...), ``wall_s``,
    ``cached`` and ``error``. A point that is infeasible, refused or raises is a row with its
    status and message; the sweep goes on.

    ``out``: a folder; finished points are cached there (a rerun solves only what is missing) and,
    when the generator is exhausted, ``results.csv``, ``plans.jsonl`` and ``sweep.json`` are
    written. ``engine``: ``"local"`` (a process pool of ``workers``, default one per core) or
    ``"dask"`` (``scheduler="tcp://HOST:PORT"``, or a LocalCluster of ``workers`` processes).
    ``shard="I/N"`` runs every N-th point from point I. ``pareto``: two or more numeric columns
    to minimise together. The columns computed across points (``dp_gap``, ``pareto``) are filled
    into the yielded row dicts once the last point is done. ``progress`` is called with a
    ``Progress(done, total, reused, failed, invalid)`` after every point (failed: raised).
    A sweep of more than ``max_points`` points is refused before any point is built. A folder
    ``out`` holding another sweep's outputs is refused unless ``force`` (then they are replaced).

    Raises ``SpecError`` for a bad sweep file or option.
    """
    check_sweep_args(spec, out, workers, engine, scheduler, shard, pareto, progress, max_points, force)
    sw, _, _ = check_request(spec, out, shard, pareto, max_points, force)  # bad input raises here, not at the first row
    return run_sweep(sw, out, workers=workers, engine=engine, scheduler=scheduler, shard=shard,
                     pareto=tuple(pareto), progress=progress, force=force)
