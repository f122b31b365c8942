"""What an input is called where it was given: explore's options, the Python API's arguments,
or a sweep file's keys (the same names as the API's). One mechanism for every front end: a
message names the option it refers to through ``given_as`` (and says how to give it through
``how_to_set``) when it is made, and the front end running the code decides the wording: the
CLI's by default, the API's inside ``named_for(Frontend.API)`` (``app.api_args.named_arguments``),
a sweep file's inside ``named_for(Frontend.SWEEP)``. An error also carries the option it is about
as its ``source``, which a front end renames with ``given_as``. The solvers' refusals and
reasons, the split's rules, the LLM planner's checks and the limits' suggestions (``setting``: an
option with its value) use them too: no message is renamed after it is made."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from enum import Enum
from typing import Iterator


class Frontend(Enum):
    CLI = "cli"  # explore's options: --batch
    API = "api"  # explorer.api's arguments: batch
    SWEEP = "sweep"  # a sweep file's keys: batch (in fixed, grid or points)


# explore's options -> the API arguments (and sweep keys) that set them
OPTION_ARGUMENTS = {"--split": "split", "--solver": "solver", "--alpha-grid": "alpha_grid", "--free": "free",
                    "--grid-only": "grid_only", "--time-limit": "time_limit", "--objective": "objective",
                    "--cap": "caps", "--pin": "pins", "--forbid": "forbids", "--constraints": "constraints",
                    "--memory": "memory_GiB", "--weight-copies": "weight_copies", "--seq": "seq", "--batch": "batch",
                    "--model": "model", "--array": "array", "--levels": "levels", "--space": "space",
                    "--pareto": "pareto", "--pareto-by": "pareto_by", "--shard": "shard", "--out": "out",
                    "--seed": "seed", "--workers": "workers", "--dump-model": "dump_model", "--solvers": "solvers",
                    # explore sweep's (explorer.api.sweep's arguments)
                    "--max-points": "max_points", "--force": "force", "--engine": "engine", "--scheduler": "scheduler",
                    # the LLM planner's (explorer.api.plan_llm's arguments)
                    "--gpus": "gpus", "--layout": "layout", "--degrees": "degrees", "--micro-batch": "micro_batch",
                    "--recompute": "recompute", "--zero": "zero"}

_FRONTEND: ContextVar[Frontend] = ContextVar("frontend", default=Frontend.CLI)


def given_as(option: str) -> str:
    """``option`` (e.g. "--cap") as the running front end calls it: the option, or the argument/key."""
    return option if _FRONTEND.get() is Frontend.CLI else OPTION_ARGUMENTS.get(option, option)


def running() -> Frontend:
    """The front end running the code (the CLI unless ``named_for`` says otherwise)."""
    return _FRONTEND.get()


def how_to_set(option: str) -> str:
    """How the user gives ``option`` in the running front end: 'pass --batch', 'pass batch', 'set batch in fixed or grid'."""
    where = _FRONTEND.get()
    if where is Frontend.SWEEP:
        return f"set {given_as(option)} in fixed or grid"
    return f"pass {given_as(option)}"


def setting(option: str, value: str, listed: bool = False) -> str:
    """``option`` given ``value`` as the running front end writes it: '--cap 0=2GB' (CLI),
    'caps=["0=2GB"]' (API), 'caps: [0=2GB]' (a sweep file's key); ``listed``: the argument or key
    takes a list (caps, pins, forbids)."""
    where = _FRONTEND.get()
    if where is Frontend.CLI:
        return f"{option} {value}"
    name = given_as(option)
    if where is Frontend.API:
        return f'{name}=["{value}"]' if listed else f"{name}={value}"
    return f"{name}: [{value}]" if listed else f"{name}: {value}"


def time_limit_named(limit_s: float, given: bool) -> str:
    """A wall-clock limit as a message names it: '--time-limit 5 s' when the user gave it, else
    'the default limit of 60 s (--time-limit sets another)', in the running front end's words: a
    message never says the option as if given when the default applied."""
    option = given_as("--time-limit")
    return f"{option} {limit_s:g} s" if given else f"the default limit of {limit_s:g} s ({option} sets another)"


def flag_set(option: str) -> str:
    """A flag ``option`` turned on as the running front end writes it: '--force' (CLI),
    'force=True' (API), 'force: true' (a sweep file's key)."""
    where = _FRONTEND.get()
    if where is Frontend.CLI:
        return option
    return f"{given_as(option)}=True" if where is Frontend.API else f"{given_as(option)}: true"


def is_option(origin: str, option: str) -> bool:
    """Whether ``origin`` is ``option`` under either of its names (or unnamed)."""
    return origin in ("", option, OPTION_ARGUMENTS.get(option, option))


@contextmanager
def named_for(where: Frontend) -> Iterator[None]:
    """Messages and constraint origins made inside name inputs as ``where`` does."""
    token = _FRONTEND.set(where)
    try:
        yield
    finally:
        _FRONTEND.reset(token)
