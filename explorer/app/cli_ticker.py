"""A time bar on stderr while ``explore`` solves: the solve's time so far of its limit, drawn by a
thread of the command line (the library does not print), only on a terminal, from ``DELAY_S``
after the solve started, and removed when it ends (the report follows on a clean line)."""

from __future__ import annotations

import os
import sys
import threading
import time

import click

# a bar's size where the terminal reports none (0 columns and rows: ``script`` run without a terminal,
# some editors' shells): tqdm's ``dynamic_ncols`` then drew nothing at all, not even an empty bar
FALLBACK_COLUMNS, FALLBACK_ROWS = 80, 20


def bar_width(stream) -> dict:
    """tqdm's size options for a bar on ``stream``: the terminal's, followed as it changes (as tqdm
    does with a stream of no readable size), or ``FALLBACK_COLUMNS`` x ``FALLBACK_ROWS`` in place
    of a 0 the terminal reports."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):  # (io.UnsupportedOperation is both)
        return {"dynamic_ncols": True}
    if size.columns > 0 and size.lines > 0:
        return {"dynamic_ncols": True}
    return {"ncols": size.columns or FALLBACK_COLUMNS, "nrows": size.lines or FALLBACK_ROWS}


def shows_ticker(stream) -> bool:
    """Whether a bar is drawn on ``stream``: on a terminal only (never into a file, a pipe or a test's buffer)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):  # a closed stream
        return False


class Ticker:
    """``with Ticker(limit, origin, label) as tick``: from ``DELAY_S`` on, a tqdm bar of the
    seconds since ``origin`` (a ``time.perf_counter()`` value; None: the ``with``'s start) of
    ``limit`` (None: the seconds alone), redrawn every ``EVERY_S``; ``tick.echo(text)`` writes a
    line on stderr (``stream``) above it, ``tick.relabel(text)`` names the step under way in it (a
    split run's steps, ``app.cli.StepProgress``). Nothing is drawn unless stderr is a terminal
    (``shows_ticker``)."""

    DELAY_S = 2.0
    EVERY_S = 0.5

    def __init__(self, limit: float | None, origin: float | None = None, label: str = "solving", stream=None):
        self.limit, self.label = limit, label
        self.origin = time.perf_counter() if origin is None else origin
        self.stream = sys.stderr if stream is None else stream
        self.bar = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Ticker:
        if shows_ticker(self.stream):
            self._thread = threading.Thread(target=self._run, name="explore-ticker", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        if self._stop.wait(self.DELAY_S):
            return
        from tqdm import tqdm  # (imported only when a bar is drawn)

        shape = "{desc} {n:.0f} s of {total:.0f} s |{bar}|" if self.limit else "{desc} {n:.0f} s"
        with self._lock:
            if self._stop.is_set():
                return
            self.bar = tqdm(total=self.limit, desc=f"[explore] {self.label}", file=self.stream, leave=False,
                            bar_format=shape, mininterval=0, initial=self._spent(), **bar_width(self.stream))
            self._draw()
        while not self._stop.wait(self.EVERY_S):
            with self._lock:
                self._draw()

    def relabel(self, label: str) -> None:
        """The bar's label from its next redraw on (a step reports every evaluation: drawing each took
        thousands of writes a second)."""
        with self._lock:
            self.label = label

    def _draw(self) -> None:
        if self.bar is None:
            return
        self.bar.set_description_str(f"[explore] {self.label}", refresh=False)
        self.bar.n = self._spent()
        self.bar.refresh()

    def _spent(self) -> float:
        """The seconds the bar shows: since ``origin``, at most ``limit``."""
        spent = time.perf_counter() - self.origin
        return min(spent, self.limit) if self.limit else spent

    def echo(self, text: str) -> None:
        """``text`` as a line on stderr, above the bar when one is drawn."""
        with self._lock:
            if self.bar is not None:
                self.bar.clear()
            click.echo(text, file=self.stream)
            if self.bar is not None:
                self.bar.refresh()

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            bar, self.bar = self.bar, None
            if bar is not None:
                try:
                    bar.close()  # (leave=False: the line is cleared)
                except Exception:  # noqa: BLE001 - a Ctrl-C while tqdm draws: the report line matters, not the bar
                    pass
