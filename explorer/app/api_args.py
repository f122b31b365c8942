"""The Python API's argument checks: what the CLI's option types refuse, refused by the API too.

A program calling ``explorer.api`` gets the same one-line ``SpecError`` naming the argument that
``explore`` gives for its option (never a ``TypeError`` from deep inside, and never a silently
accepted value the CLI refuses, such as ``time_limit=-1``).
"""

from __future__ import annotations

import functools
import inspect
from os import PathLike
from typing import Any, Callable, Iterable

from ..core.errors import SpecError, is_int, shown
from ..core.names import Frontend, given_as, named_for
from ..core.solution import time_limit_problem
from ..solvers import MAX_SEED, MAX_WORKERS



def named_as(where: Frontend) -> Callable[[Callable], Callable]:
    """``fn`` run under ``where``'s naming (``core.names``): its messages, constraint origins and
    errors' sources name the inputs as ``where`` does; ``.with_option_names`` is ``fn`` itself (the
    CLI's call: its errors name its options). A call that does not fit ``fn``'s signature (an
    unknown keyword, a missing argument) is a SpecError too (``check_call``), never a TypeError."""
    def wrap(fn: Callable) -> Callable:
        sig = inspect.signature(fn)  # with_run_options' signature for solve and check
        _ARGUMENTS[fn.__name__] = tuple(n for n, p in sig.parameters.items() if p.kind in _NAMED)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with named_for(where):
                try:
                    check_call(fn.__name__, sig, args, kwargs)
                    return fn(*args, **kwargs)
                except SpecError as err:  # the error's field as this front end calls it
                    raise SpecError(given_as(err.source), err.problems) from None
        wrapper.with_option_names = fn
        return wrapper
    return wrap


_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_ARGUMENTS: dict[str, tuple[str, ...]] = {}  # each API function's named arguments (named_as fills it)


def check_call(where: str, sig: inspect.Signature, args: tuple, kwargs: dict) -> None:
    """SpecError unless ``where(*args, **kwargs)`` fits ``sig``: an unknown keyword named with the
    accepted ones (``unknown_argument``); a missing or doubled argument as Python says it."""
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        named = [n for n, p in sig.parameters.items() if p.kind in _NAMED]
        unknown = next((k for k in kwargs if k not in named), None)
        if unknown is not None:
            raise unknown_argument(where, unknown, named)
    try:
        sig.bind(*args, **kwargs)
    except TypeError as err:
        raise SpecError(f"{where}()", str(err)) from None


def unknown_argument(where: str, name: str, accepted: Iterable[str]) -> SpecError:
    """The error for keyword ``name``, which ``where()`` does not take: it names the arguments it
    takes, and the API functions that take ``name`` (``gpus`` is ``plan_llm``'s)."""
    others = [f"{fn}()" for fn, names in _ARGUMENTS.items() if fn != where and name in names]
    listed = ", ".join(others[:-1]) + " and " + others[-1] if len(others) > 1 else "".join(others)
    theirs = f"; it is an argument of {listed}" if others else ""
    source = name if isinstance(name, str) and name.isidentifier() and len(name) <= 40 else shown(name, 40)
    return SpecError(source, f"{where}() has no such argument{theirs} ({where}() takes {', '.join(accepted)})")


named_arguments = named_as(Frontend.API)  # the Python API's naming



def check_numbers(**args: tuple[Any, type]) -> None:
    """The API's number arguments, as the CLI's option types check them (None is fine): ``(value,
    int)`` an integer, ``(value, float)`` an integer or a float (a number of GiB when the argument's
    name ends in ``_GiB``); a bool or text ("512") is refused with a SpecError naming the argument."""
    for name, (value, kind) in args.items():
        if value is None or is_int(value) or (kind is float and isinstance(value, float)):
            continue
        what = "an integer" if kind is int else "a number of GiB" if name.endswith("_GiB") else "a number"
        raise SpecError(name, f"must be {what}, got {shown(value)}")


def check_int(value: Any, name: str, least: int, most: int | None = None) -> None:
    """None, or an integer in [least, most]."""
    if value is None:
        return
    if not is_int(value) or value < least or (most is not None and value > most):
        span = f"from {least:,} to {most:,}" if most is not None else f">= {least:,}"
        raise SpecError(name, f"must be an integer {span}, got {shown(value)}")


def check_solve_args(time_limit: Any, workers: Any, seed: Any, dump_model: Any, progress: Any) -> None:
    """The solver options of ``solve`` and ``check``, as ``explore``'s options check them."""
    problem = None if time_limit is None else time_limit_problem(time_limit)
    if problem:
        raise SpecError("time_limit", problem)
    check_int(workers, "workers", 1, MAX_WORKERS)
    check_int(seed, "seed", 0, MAX_SEED)
    if seed is None:
        raise SpecError("seed", f"must be an integer from 0 to {MAX_SEED:,}, got None")
    check_path(dump_model, "dump_model", "a path")
    check_callable(progress, "progress")


def check_path(value: Any, name: str, what: str) -> None:
    """SpecError naming ``name`` unless ``value`` is None or a path (a str or os.PathLike)."""
    if value is not None and not isinstance(value, (str, PathLike)):
        raise SpecError(name, f"must be {what}, got {shown(value)}")


def check_callable(value: Any, name: str) -> None:
    if value is not None and not callable(value):
        raise SpecError(name, f"must be a function or None, got {shown(value)}")


def solver_names(value: Any, known: Iterable[str], split: bool = False) -> tuple[str, ...]:
    """``check``'s ``solvers``: one name or a list of names, each known, at least one (``split``:
    ``check(split=...)``'s, whose messages say so)."""
    known = tuple(known)
    names = (value,) if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        what = "a solver name or a list of them" if split else "a list of solver names"
        raise SpecError("solvers", f"must be {what} ({', '.join(known)}), got {shown(value)}")
    if not names:
        raise SpecError("solvers", f"no solvers given (choose from {', '.join(known)})")
    unknown = [n for n in names if n not in known]
    if unknown:
        which = f"{shown(unknown[0])} with split" if split else ", ".join(unknown)
        raise SpecError("solvers", f"unknown solver {which} (choose from {', '.join(known)})")
    return tuple(dict.fromkeys(names))


def check_sweep_args(spec: Any, out: Any, workers: Any, engine: Any, scheduler: Any, shard: Any, pareto: Any,
                     progress: Any, max_points: Any, force: Any) -> None:
    """``sweep``'s arguments, as ``explore sweep``'s options check them."""
    from .sweep.spec import Sweep

    if not isinstance(spec, (str, PathLike, dict, Sweep)):
        raise SpecError("spec", f"must be a sweep file path, a mapping or a Sweep, got {shown(spec)}")
    check_path(out, "out", "a folder path or None")
    check_int(workers, "workers", 1, MAX_WORKERS)
    if not isinstance(engine, str):
        raise SpecError("engine", f"must be 'local' or 'dask', got {shown(engine)}")
    if scheduler is not None and not isinstance(scheduler, str):
        raise SpecError("scheduler", f"must be an address tcp://HOST:PORT or None, got {shown(scheduler)}")
    if shard is not None and not isinstance(shard, str) and not (
            isinstance(shard, tuple) and len(shard) == 2 and all(is_int(x) for x in shard)):
        raise SpecError("shard", f"must be 'I/N' (e.g. '0/4') or None, got {shown(shard)}")
    if isinstance(shard, tuple) and not (shard[1] >= 1 and 0 <= shard[0] < shard[1]):
        raise SpecError("shard", f"needs 0 <= I < N, got {shown(shard)}")
    if not isinstance(pareto, (list, tuple)) or not all(isinstance(c, str) for c in pareto):
        raise SpecError("pareto", f"must be a list of column names, got {shown(pareto)}")
    check_callable(progress, "progress")
    if max_points is None:
        raise SpecError("max_points", "must be an integer >= 1, got None")
    check_int(max_points, "max_points", 1)
    if not isinstance(force, bool):
        raise SpecError("force", f"must be True or False, got {shown(force)}")
