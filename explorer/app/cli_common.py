"""What every ``explore`` command shares: bad input is one line and exit 2, Ctrl-C one line
and exit 130 (naming the step it interrupted)."""

from __future__ import annotations

import os
import time
from functools import wraps

import click

from ..core.errors import Refused, SpecError
from .output import OutputError

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it

_IMPORTED = time.perf_counter()  # fallback start: this module's import, early in every command


def since_start() -> float:
    """Seconds since this process started (Linux: its start time in /proc, so the interpreter's
    start-up and the imports count; elsewhere: since this module was imported)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        elapsed = uptime - start_ticks / os.sysconf("SC_CLK_TCK")
        if 0 <= elapsed < 10 * 365 * 86400:
            return max(elapsed, time.perf_counter() - _IMPORTED)
    except (OSError, ValueError, IndexError, AttributeError):
        pass
    return time.perf_counter() - _IMPORTED


class InputError(click.ClickException):
    """Bad input: one line on stderr, exit status 2."""

    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"explore: error: {self.format_message()}", err=True)


BAD_INPUT = (SpecError, Refused, OutputError, InputError)  # what ends a command with one line and exit 2


class Interrupted(click.ClickException):
    """Ctrl-C: one line on stderr (what was running), exit status 130."""

    exit_code = EXIT_INTERRUPTED

    def show(self, file=None) -> None:
        click.echo(f"explore: interrupted (Ctrl-C){self.format_message()}; no report written", err=True)


_last_step: list[str] = []  # the last step announced, to say what a Ctrl-C interrupted


def options(*decorators):
    """One decorator applying click options (or other decorators) in the order listed, the first
    topmost (as ``--help`` lists them)."""

    def apply(fn):
        for d in reversed(decorators):
            fn = d(fn)
        return fn

    return apply


def fail_on_bad_input(fn):
    @wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (SpecError, Refused, OutputError) as err:
            raise InputError(str(err)) from None
        except KeyboardInterrupt:
            raise Interrupted(f" during {_last_step[-1]}" if _last_step else "") from None

    return wrapper
