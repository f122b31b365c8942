"""A request's options -> the ``Problem`` and the single run (``explorer.api.build_problem`` and
``explorer.api.solve``; here, below the API, so that the sweep's points can call them too).
"""

from __future__ import annotations

import math
from os import PathLike
from typing import Any, Callable, Iterable, Mapping

from ..core.array import ArraySpec, check_levels
from ..core.errors import SpecError, shown
from ..core.network import Network
from ..core.network_check import check_network
from ..core.objective import Objective
from ..core.partition import Space
from ..core.problem import Problem
from ..core.uneven import DEFAULT_ALPHA_GRID, MAX_ALPHA_GRID, MIN_ALPHA_GRID, SPLIT_TIME_LIMIT, FreeAlphas
from ..core.units import GiB
from ..core.solution import SolveOptions
from ..frontends import dense_only, load_array, load_model
from ..frontends.constraints_yaml import ConstraintOptions, build_constraints
from ..frontends.network_yaml import check_batch
from ..frontends.zoo import DEFAULT_ARRAY
from ..solvers import REGISTRY
from .api_args import check_solve_args
from .results import RunResult
from .run import run

ModelRef = str | PathLike | Network
ArrayRef = str | PathLike | ArraySpec
Progress = Callable[[str], None]


def _choice(enum_type, value, name: str):
    """``value`` as a member of ``enum_type`` (a member, or its value), else a SpecError naming ``name``."""
    return value if isinstance(value, enum_type) else enum_type(_choice_value(tuple(m.value for m in enum_type), value, name))


def _check_types(**args: tuple[Any, type]) -> None:
    """SpecError naming the argument when a number argument is not a number (None is fine)."""
    for name, (value, kind) in args.items():
        ok = value is None or (isinstance(value, (int, float) if kind is float else int) and not isinstance(value, bool))
        if not ok:
            raise SpecError(name, f"must be {'a number' if kind is float else 'an integer'}, got {shown(value)}")


def _strings(value: Any, name: str, form: str) -> tuple[str, ...]:
    """An argument taking a list of strings (each like ``form``), as a constraints file's ``pins``,
    ``forbids`` (a bare string is refused there too: it would read as a list of characters)."""
    if value is None:
        return ()
    if isinstance(value, str):
        raise SpecError(name, f"must be a list of {form} strings, got the string {shown(value)} (write [{shown(value)}])")
    if isinstance(value, (list, tuple)) and all(isinstance(x, str) for x in value):
        return tuple(value)
    raise SpecError(name, f"must be a list of {form} strings, got {shown(value)}")


def _check_ref(value: Any, name: str, kind: type, what: str) -> None:
    """``model`` or ``array``: a name or path (str, PathLike) or an object of ``kind``."""
    if isinstance(value, (str, PathLike, kind)):
        return
    raise SpecError(name, f"must be {what}, got {shown(value)}")


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
    _check_ref(model, "model", Network, "a model name, a path or a Network")
    _check_ref(array, "array", ArraySpec, "an array name, a path or an ArraySpec")
    arr = array if isinstance(array, ArraySpec) else load_array(str(array))
    if batch is None:
        batch = arr.batch  # the array's evaluation batch, when it declares one
    net = model if isinstance(model, Network) else dense_only(load_model(str(model), batch, seq), str(model))
    if batch is not None:
        net = net.with_batch(batch)
    if isinstance(model, Network):  # a built network gets the checks a loaded one got from its front end
        check_network(net)
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
    objective: str | Objective | None = None,
    solver: str | None = None,
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
    split: str | None = None,
    alpha_grid: int | None = None,
    free: str | None = None,
    grid_only: bool = False,
    started: float | None = None,
) -> RunResult:
    """Solve one problem with one solver, re-score the plan and compare it with the baselines.

    Arguments mirror ``explore``'s options: ``space`` hypar ({I, II}) or accpar ({I, II, III});
    ``objective`` traffic (sum_h 2^h c_h, elements) or time (sum_h c_h*dtype/bw_h, seconds);
    ``solver`` dp (the default), cpsat, exact, brute or pruned; ``batch`` and ``levels`` override the network's and
    the array's; ``seq`` fills an ONNX model's symbolic sequence (or overrides a YAML spec's);
    ``caps`` are "LEVEL=AMOUNT" strings (["3=55MB", "2=5ms"]) or a mapping ({3: "55MB"}); ``pins``
    "LAYER@LEVEL=TYPE"; ``forbids`` "LAYER=TYPE"; ``constraints`` a constraints YAML file;
    ``time_limit`` (s), ``workers``, ``seed`` and ``dump_model`` control CP-SAT. ``progress``
    receives one-line messages while solving. ``started``: the ``time.perf_counter()`` value
    ``time_limit`` counts from (``explore`` passes its process's start, so that start-up and
    imports count; default: the solve's start; with ``split`` too).

    Returns a :class:`RunResult`: ``status``, ``plan`` (None when there is none),
    ``objective_value`` and ``bound`` (exact), ``figures`` and ``baselines``; ``result.ok`` is
    what ``explore``'s exit status 0 means; ``result.to_json()`` is ``--format json``.

    ``split`` (``explore --split``): equal, proportional, search, optimal or levels; the split
    fractions between subgroups (``alpha_grid``, ``free``, ``grid_only`` as ``explore split``'s
    options). It then returns the split's report (``explorer.app.split.SplitReport``: ``status``,
    ``plan`` with its alphas, ``step_time_s``, ``objective_value``, ``objective_bound``, ``ok``,
    ``to_json()``); ``objective`` is "time" unless given ("traffic": sum_h 2^h c_h of the levels'
    busiest sides); caps bind on the busiest side of a level, memory is per kind (``memory_GiB``:
    one limit for every kind), pins, forbids and constraints as without ``split``; ``solver`` brute,
    exact or cpsat with ``split="optimal"`` proves the optimum under all of them with that solver's
    uneven form (default: the joint solver: step time, no caps; pins and forbids); ``solver="dp"``
    runs the level DP (``split`` optimal or levels: types and alphas; proportional: the types at
    the proportional alphas; equal: the even DP), keeping pins and forbids, reporting what else
    its plan breaks (no proof).
    """
    check_solve_args(time_limit, workers, seed, dump_model, progress)
    check_started(started)
    spec = dict(space=space, batch=batch, levels=levels, seq=seq, caps=caps, memory_GiB=memory_GiB,  # build_problem's
                weight_copies=weight_copies, pins=pins, forbids=forbids, constraints=constraints)
    if split == "equal":
        split_only(alpha_grid, free, grid_only, "not with split equal (every split is 1/2)")
    if split is not None:
        others = {"dump_model": dump_model is not None, "workers": workers is not None, "seed": seed != 0}
        return solve_split(model, array, split, spec, time_limit=time_limit, alpha_grid=alpha_grid, free=free,
                           grid_only=grid_only, progress=progress, refused=[k for k, v in others.items() if v],
                           solver=solver, objective=objective, started=started)
    split_only(alpha_grid, free, grid_only, "only with split (uneven splits); without it every split is 1/2")
    solver = "dp" if solver is None else solver
    if solver not in REGISTRY:
        raise SpecError("solver", f"unknown solver {shown(solver)} (choose from {', '.join(REGISTRY)})")
    problem = build_problem(model, array, objective="traffic" if objective is None else objective, **spec)
    if progress is not None:
        progress(f"solving {problem.network.name} on {problem.array.name} with {solver}")
    options = SolveOptions(time_limit_s=time_limit, workers=workers, seed=seed, dump_model=dump_model, progress=progress,
                           started=started)
    return run(problem, solver, options)


def split_only(alpha_grid: Any, free: Any, grid_only: Any, why: str) -> None:
    """SpecError naming the first split-only argument given (``alpha_grid``, ``free``, a true
    ``grid_only``), as the CLI refuses --alpha-grid, --free and --grid-only without --split."""
    given = {"alpha_grid": alpha_grid is not None, "free": free is not None, "grid_only": grid_only not in (None, False)}
    first = next((name for name, g in given.items() if g), None)
    if first is not None:
        raise SpecError(first, why)


def solve_split(model: ModelRef, array: ArrayRef, split: str, spec: dict[str, Any], *, time_limit: float | None = None,
                alpha_grid: int | None = None, free: str | None = None, grid_only: bool = False,
                progress: Progress | None = None, refused: Iterable[str] = (), solver: str | None = None,
                objective: str | Objective | None = None, started: float | None = None):
    """``solve(..., split=...)``: one split run (``explore --split``) and its report (``alpha_grid``
    and ``free`` None: their defaults, 16 and unlike)."""
    from .split import Split, check_split_solver

    alpha_grid = DEFAULT_ALPHA_GRID if alpha_grid is None else alpha_grid
    free = "unlike" if free is None else free
    refused = list(refused)
    if refused:
        raise SpecError(refused[0], "not with split (it takes no CP-SAT model of the even split)")
    memory_GiB, weight_copies = spec["memory_GiB"], spec["weight_copies"]
    _check_types(weight_copies=(weight_copies, int), memory_GiB=(memory_GiB, float))
    sp = _choice_value(("equal", "proportional", "search", "optimal", "levels"), split, "split")
    fr = _alpha_args(alpha_grid, free)
    try:
        check_split_solver(Split(sp), solver)
    except SpecError as err:
        raise SpecError("solver", str(err).split(": ", 1)[1]) from None
    problem = build_problem(model, array, objective="time" if objective is None else objective, **spec)
    say = (lambda step, *a, **k: progress(step)) if progress is not None else None
    return split_problem(problem, sp, alpha_grid=alpha_grid, free=fr, grid_only=bool(grid_only),
                         time_limit=SPLIT_TIME_LIMIT if time_limit is None else float(time_limit), solver=solver, progress=say,
                         started=started)


def split_problem(problem: Problem, split: str, *, alpha_grid: int = DEFAULT_ALPHA_GRID, free: str = "unlike", grid_only: bool = False,
                  time_limit: float = SPLIT_TIME_LIMIT, solver: str | None = None, progress=None,
                  started: float | None = None):
    """The split run of a built problem: its objective, and its constraints read on split plans
    (memory: each kind's own unless ``--memory`` or a constraints file gave one for every kind);
    ``time_limit`` counts from ``started`` (``time.perf_counter()``; None: the call)."""
    from ..core.uneven import FreeAlphas
    from .split import Split, split_run

    c = problem.constraints
    memory = c.memory_bytes / GiB if c.memory_set else None
    return split_run(problem.network, problem.array, problem.space, Split(split), alpha_grid, FreeAlphas(free),
                     time_limit, memory, c.weight_copies, progress=progress, grid_only=grid_only, solver=solver,
                     objective=problem.objective, constraints=c, started=started)


def _alpha_args(alpha_grid: Any, free: Any) -> str:
    """SpecError unless the alpha grid and ``free`` are valid; ``free``'s value."""
    _check_types(alpha_grid=(alpha_grid, int))
    fr = _choice_value(tuple(f.value for f in FreeAlphas), free, "free")
    if not MIN_ALPHA_GRID <= alpha_grid <= MAX_ALPHA_GRID:
        raise SpecError("alpha_grid", f"must be between {MIN_ALPHA_GRID} and {MAX_ALPHA_GRID}, got {alpha_grid}")
    return fr


def check_started(started: Any) -> None:
    """``started`` (where ``time_limit`` counts from): a finite ``time.perf_counter()`` value or None."""
    if started is not None and (not isinstance(started, (int, float)) or isinstance(started, bool) or not math.isfinite(started)):
        raise SpecError("started", f"must be a time.perf_counter() value or None, got {shown(started)}")


def check_split(model: ModelRef, array: ArrayRef, split: Any, spec: dict[str, Any], *, solvers: Iterable[str] | None = None,
                time_limit: float | None = None, alpha_grid: int | None = None, free: str | None = None,
                grid_only: bool = False, refused: Iterable[str] = (), objective: str | Objective | None = None,
                started: float | None = None):
    """``check(..., split="optimal")`` (``explore check --split optimal``): the uneven-split
    solvers compared on the step time (``explorer.app.check_uneven.SplitCheck``), under the
    pins, forbids and caps given, and a memory limit where one is given (``memory_GiB`` or a
    constraints file: every kind's; without one no solver is held to the kinds' memory)."""
    from ..core.uneven import FreeAlphas, check_array, check_network
    from ..core.split_rules import SplitRules, leaf_memory_limits
    from .check_uneven import UNEVEN_CHECK_NAMES, UNEVEN_CHECK_SOLVERS, check_uneven

    refused = list(refused)
    if refused:
        raise SpecError(refused[0], "not with split (check compares the uneven-split solvers' plans, not CP-SAT's "
                                    "model of the even split)")
    _choice_value(("optimal", "equal"), split, "split")  # equal: the even check (``api.check``)
    alpha_grid = DEFAULT_ALPHA_GRID if alpha_grid is None else alpha_grid
    free = "unlike" if free is None else free
    if objective is not None and _choice(Objective, objective, "objective") is not Objective.TIME:
        raise SpecError("objective", "check with split compares step times: objective time only")
    fr = _alpha_args(alpha_grid, free)
    names = UNEVEN_CHECK_SOLVERS if solvers is None else _split_solver_names(solvers, UNEVEN_CHECK_NAMES)
    problem = build_problem(model, array, objective="time", **spec)
    check_array(problem.array)
    check_network(problem.network)
    c = problem.constraints
    rules = SplitRules(Objective.TIME, c, leaf_memory_limits(problem.array, c.memory_bytes) if c.memory_set else None)
    return check_uneven(problem.network, problem.array, problem.space, alpha_grid, FreeAlphas(fr), names,
                        SPLIT_TIME_LIMIT if time_limit is None else float(time_limit), bool(grid_only), rules,
                        started=started)


def _split_solver_names(solvers: Any, known: tuple[str, ...]) -> tuple[str, ...]:
    """``check(split=...)``'s ``solvers``: one name or a list of names (as without ``split``), each
    one of ``known``, at least one."""
    names = (solvers,) if isinstance(solvers, str) else solvers
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise SpecError("solvers", f"must be a solver name or a list of them ({', '.join(known)}), got {shown(solvers)}")
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise SpecError("solvers", f"unknown solver {shown(unknown[0]) if unknown else '(none)'} with split "
                                   f"(choose from {', '.join(known)})")
    return tuple(dict.fromkeys(names))


def _choice_value(known: tuple[str, ...], value: Any, name: str) -> str:
    if not isinstance(value, str) or value not in known:
        raise SpecError(name, f"unknown {name} {shown(value)} (choose from {', '.join(known)})")
    return value
