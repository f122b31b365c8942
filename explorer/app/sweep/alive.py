"""A sweep's sign of life while its points run: an engine that has waited ``TICK_S`` with no point
finished calls its ``tick`` with a ``Heartbeat`` (the tasks running and for how long, ``Flight``),
which ``engine.run_points`` passes on as a ``Progress`` whose ``running`` names them (``point_labels``),
so that a terminal's progress bar shows the running point and its time instead of sitting still
for minutes (an uneven ``split: optimal`` point of a minute, an H=10 proof). Described in the
manual: docs/sweeps.md, "Progress"."""

from __future__ import annotations

import time
from dataclasses import dataclass
from itertools import islice
from typing import Any, Callable, Iterable

TICK_S = 1.0  # how often an engine with no point finished says what is in flight


@dataclass(frozen=True)
class Heartbeat:
    """No point finished for ``TICK_S``: each task in flight (its points' indices) and its seconds so far."""

    running: tuple[tuple[tuple[int, ...], float], ...]


class Flight:
    """The tasks an engine has in flight, as its parent process sees them, in submission order:
    the first ``slots`` of them run (a worker takes the next task as it frees up: the local pool's
    queue and Dask's priorities are in submission order), each since it became one of those."""

    def __init__(self, slots: int, clock: Callable[[], float] = time.monotonic):
        self.slots = max(1, slots)
        self.clock = clock
        self.tasks: dict[Any, tuple[int, ...]] = {}  # task -> its points' indices, in submission order
        self.started: dict[Any, float] = {}

    def submitted(self, task: Any, indices: Iterable[int]) -> None:
        self.tasks[task] = tuple(indices)
        self._fill()

    def finished(self, task: Any) -> None:
        self.tasks.pop(task, None)
        self.started.pop(task, None)
        self._fill()

    def _fill(self) -> None:
        now = self.clock()
        for task in islice(self.tasks, self.slots):
            self.started.setdefault(task, now)

    def snapshot(self) -> Heartbeat:
        """The tasks running now, longest first."""
        now = self.clock()
        running = sorted(((self.tasks[t], now - t0) for t, t0 in self.started.items()), key=lambda r: -r[1])
        return Heartbeat(tuple(running))


def point_labels(points: Iterable[Any]) -> dict[int, str]:
    """Each point's short name: its index and the values of the keys that vary across the points
    ('#3 model=resnet50 split=2'; '#0' when no key varies)."""
    points = list(points)
    seen: dict[str, set] = {}
    for p in points:
        for k, v in p.params:
            seen.setdefault(k, set()).add(repr(v))
    varying = {k for k, vs in seen.items() if len(vs) > 1}
    return {p.index: " ".join([f"#{p.index}", *(f"{k}={_short(v)}" for k, v in p.params if k in varying)])
            for p in points}


def _short(v: Any) -> str:
    text = ",".join(map(str, v)) if isinstance(v, tuple) else str(v)
    return text if len(text) <= 24 else text[:21] + "..."


def running_text(running: tuple[tuple[str, float], ...]) -> str:
    """What a progress bar shows of the points in flight (``Progress.running``, longest first):
    '#3 model=resnet50 42 s', '(+2 more)' after it when others run too."""
    if not running:
        return ""
    label, seconds = running[0]
    more = f" (+{len(running) - 1} more)" if len(running) > 1 else ""
    return f"{label} {seconds:.0f} s{more}"
