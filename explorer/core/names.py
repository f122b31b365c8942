"""What an input is called where it was given: explore's options, or the Python API's arguments
(and the sweep file's keys, the same names). Errors and constraint origins name the one the user
wrote: the CLI's by default, the API's inside ``arguments_named`` (``app.api_args.named_arguments``)."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

# explore's options -> the API arguments (and sweep keys) that set them
OPTION_ARGUMENTS = {"--split": "split", "--solver": "solver", "--alpha-grid": "alpha_grid", "--free": "free",
                    "--grid-only": "grid_only", "--time-limit": "time_limit", "--objective": "objective",
                    "--cap": "caps", "--pin": "pins", "--forbid": "forbids", "--constraints": "constraints",
                    "--memory": "memory_GiB", "--weight-copies": "weight_copies", "--seq": "seq", "--batch": "batch",
                    "--model": "model", "--array": "array", "--levels": "levels", "--space": "space"}

_BY_ARGUMENT: ContextVar[bool] = ContextVar("by_argument", default=False)


def given_as(option: str) -> str:
    """``option`` (e.g. "--cap") as the user gave it: the option, or inside ``arguments_named`` the argument."""
    return OPTION_ARGUMENTS.get(option, option) if _BY_ARGUMENT.get() else option


def is_option(origin: str, option: str) -> bool:
    """Whether ``origin`` is ``option`` under either of its names (or unnamed)."""
    return origin in ("", option, OPTION_ARGUMENTS.get(option, option))


@contextmanager
def arguments_named() -> Iterator[None]:
    token = _BY_ARGUMENT.set(True)
    try:
        yield
    finally:
        _BY_ARGUMENT.reset(token)
