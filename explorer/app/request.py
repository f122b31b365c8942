"""A request's options -> the ``Problem`` and the single run (``explorer.api.build_problem`` and
``explorer.api.solve``; here, below the API, so that the sweep's points can call them too).
"""

from __future__ import annotations

from os import PathLike
from typing import Any, Iterable, Mapping

from ..core.array import MAX_LEVELS, ArraySpec, check_levels
from ..core.errors import SpecError, shown
from ..core.network import Network
from ..core.network_check import check_network
from ..core.objective import Objective
from ..core.partition import Space
from ..core.problem import Problem
from ..core.uneven import DEFAULT_ALPHA_GRID, MAX_ALPHA_GRID, MIN_ALPHA_GRID, SPLIT_TIME_LIMIT, FreeAlphas
from ..core.units import GiB
from ..frontends import dense_only, load_array, load_model
from ..frontends.array_yaml import check_built_array
from ..frontends.constraints_yaml import ConstraintOptions, build_constraints
from ..frontends.network_yaml import check_batch
from ..frontends.zoo import DEFAULT_ARRAY
from ..solvers import REGISTRY
from .api_args import check_numbers, check_path, solver_names
from .results import RunResult
from .run import run
from .run_options import RunOptions, run_options, with_run_options

ModelRef = str | PathLike | Network
ArrayRef = str | PathLike | ArraySpec


def _choice(enum_type, value, name: str):
    """``value`` as a member of ``enum_type`` (a member, or its value), else a SpecError naming ``name``."""
    return value if isinstance(value, enum_type) else enum_type(_choice_value(tuple(m.value for m in enum_type), value, name))


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
    """``model`` or ``array``: a name or path (str, PathLike) or an object of ``kind``; an empty
    (or blank) name is refused as the CLI refuses ``--model ''`` (not read as the current folder)."""
    if isinstance(value, str) and not value.strip():
        raise SpecError(name, "must not be empty")
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
            if isinstance(level, int) and abs(level) > 10**6:  # 10**5000 has no decimal text
                raise SpecError("caps", f"{shown({level: amount})}: level {shown(level)} is beyond the {MAX_LEVELS} "
                                        "levels of any array")
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
    check_numbers(weight_copies=(weight_copies, int), memory_GiB=(memory_GiB, float))
    check_path(constraints, "constraints", "the path of a constraints YAML file (a str or os.PathLike)")
    if batch is not None:
        check_batch(batch)
    if seq is not None:
        check_batch(seq, "--seq")
    _check_ref(model, "model", Network, "a model name, a path or a Network")
    _check_ref(array, "array", ArraySpec, "an array name, a path or an ArraySpec")
    arr = check_built_array(array) if isinstance(array, ArraySpec) else load_array(str(array))  # as the loader checks
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


@with_run_options
def solve(model: ModelRef, array: ArrayRef = DEFAULT_ARRAY, *, solver: str | None = None, **options: Any) -> RunResult:
    """Solve one problem with one solver, re-score the plan and compare it with the baselines
    (``explore``). ``solver``: dp (the default), cpsat, exact, brute or pruned; the other keyword
    arguments are :class:`RunOptions`' fields.

    Returns a :class:`RunResult`: ``status``, ``plan`` (None when there is none),
    ``objective_value`` and ``bound`` (exact), ``figures`` and ``baselines``; ``result.ok`` is
    what ``explore``'s exit status 0 means; ``result.to_json()`` is ``--format json``. With
    ``split``, the split's report (``explorer.app.split.SplitReport``: ``status``, ``plan`` with
    its alphas, ``step_time_s``, ``objective_value``, ``objective_bound``, ``ok``, ``to_json()``;
    docs/uneven.md: which solvers prove what under which constraints).
    """
    o = run_options("solve", options)
    if solver is not None and not isinstance(solver, str):
        raise SpecError("solver", f"unknown solver {shown(solver)} (one name: choose from {', '.join(REGISTRY)})")
    if o.split == "equal":
        o.split_only("not with split equal (every split is 1/2)")
    if o.split is not None:
        return solve_split(model, array, o, solver)
    o.split_only("only with split (uneven splits); without it every split is 1/2")
    solver = "dp" if solver is None else solver
    if solver not in REGISTRY:
        raise SpecError("solver", f"unknown solver {shown(solver)} (choose from {', '.join(REGISTRY)})")
    problem = build_problem(model, array, **o.problem_args("traffic"))
    if o.progress is not None:
        o.progress(f"solving {problem.network.name} on {problem.array.name} with {solver}")
    return run(problem, solver, o.solve_options())


def solve_split(model: ModelRef, array: ArrayRef, o: RunOptions, solver: str | None):
    """``solve(..., split=...)``: one split run (``explore --split``) and its report (``alpha_grid``
    and ``free`` None: their defaults, 16 and unlike)."""
    from .split import Split, check_split_solver

    refused = o.cpsat_given()
    if refused:
        raise SpecError(refused[0], "not with split (it takes no CP-SAT model of the even split)")
    check_numbers(weight_copies=(o.weight_copies, int), memory_GiB=(o.memory_GiB, float))
    sp = _choice_value(("equal", "proportional", "search", "optimal", "levels"), o.split, "split")
    alpha_grid, fr = _alpha_args(o)
    try:
        check_split_solver(Split(sp), solver)
    except SpecError as err:
        raise SpecError("solver", str(err).split(": ", 1)[1]) from None
    problem = build_problem(model, array, **o.problem_args("time"))
    say = (lambda step, *a, **k: o.progress(step)) if o.progress is not None else None
    return split_problem(problem, sp, alpha_grid=alpha_grid, free=fr, grid_only=bool(o.grid_only),
                         time_limit=SPLIT_TIME_LIMIT if o.time_limit is None else float(o.time_limit), solver=solver,
                         progress=say, started=o.started)


def split_problem(problem: Problem, split: str, *, alpha_grid: int = DEFAULT_ALPHA_GRID, free: str = "unlike", grid_only: bool = False,
                  time_limit: float = SPLIT_TIME_LIMIT, solver: str | None = None, progress=None,
                  started: float | None = None):
    """The split run of a built problem: its objective, and its constraints read on split plans
    (memory: each kind's own unless ``--memory`` or a constraints file gave one for every kind);
    ``time_limit`` counts from ``started`` (``time.perf_counter()``; None: the call)."""
    from .split import Split, split_run

    c = problem.constraints
    memory = c.memory_bytes / GiB if c.memory_set else None
    return split_run(problem.network, problem.array, problem.space, Split(split), alpha_grid, FreeAlphas(free),
                     time_limit, memory, c.weight_copies, progress=progress, grid_only=grid_only, solver=solver,
                     objective=problem.objective, constraints=c, started=started)


def _alpha_args(o: RunOptions) -> tuple[int, str]:
    """SpecError unless the alpha grid and ``free`` are valid (None: their defaults, 16 and
    unlike); the grid and ``free``'s value."""
    alpha_grid = DEFAULT_ALPHA_GRID if o.alpha_grid is None else o.alpha_grid
    check_numbers(alpha_grid=(alpha_grid, int))
    fr = _choice_value(tuple(f.value for f in FreeAlphas), "unlike" if o.free is None else o.free, "free")
    if not MIN_ALPHA_GRID <= alpha_grid <= MAX_ALPHA_GRID:
        raise SpecError("alpha_grid", f"must be between {MIN_ALPHA_GRID} and {MAX_ALPHA_GRID}, got {shown(alpha_grid)}")
    return alpha_grid, fr


def check_split(model: ModelRef, array: ArrayRef, o: RunOptions, solvers: Iterable[str] | None = None):
    """``check(..., split="optimal")`` (``explore check --split optimal``): the uneven-split
    solvers compared on ``objective`` (time unless given; traffic: least traffic, ties to the
    least step time) (``explorer.app.check_uneven.SplitCheck``), under the
    pins, forbids and caps given, and a memory limit where one is given (``memory_GiB`` or a
    constraints file: every kind's; without one no solver is held to the kinds' memory)."""
    from ..core.uneven import check_array, check_network
    from ..core.split_rules import SplitRules, leaf_memory_limits
    from .check_uneven import UNEVEN_CHECK_NAMES, UNEVEN_CHECK_SOLVERS, check_uneven

    refused = o.cpsat_given()
    if refused:
        raise SpecError(refused[0], "not with split (check compares the uneven-split solvers' plans, not CP-SAT's "
                                    "model of the even split)")
    _choice_value(("optimal", "equal"), o.split, "split")  # equal: the even check (``api.check``)
    objective = Objective.TIME if o.objective is None else _choice(Objective, o.objective, "objective")
    alpha_grid, fr = _alpha_args(o)
    names = UNEVEN_CHECK_SOLVERS if solvers is None else solver_names(solvers, UNEVEN_CHECK_NAMES, split=True)
    problem = build_problem(model, array, **o.problem_args(objective.value))
    check_array(problem.array)
    check_network(problem.network)
    c = problem.constraints
    rules = SplitRules(objective, c, leaf_memory_limits(problem.array, c.memory_bytes) if c.memory_set else None)
    return check_uneven(problem.network, problem.array, problem.space, alpha_grid, FreeAlphas(fr), names,
                        SPLIT_TIME_LIMIT if o.time_limit is None else float(o.time_limit), bool(o.grid_only), rules,
                        started=o.started)


def _choice_value(known: tuple[str, ...], value: Any, name: str) -> str:
    if not isinstance(value, str) or value not in known:
        raise SpecError(name, f"unknown {name} {shown(value)} (choose from {', '.join(known)})")
    return value
