"""Batches of sweep points, one batch per task, shared by every engine (the local pool and Dask):
a task costs a round trip (a pickle, a wake-up of the parent; on Dask a scheduler hop too), more
than a cheap DP point itself, so once some points have finished each task gets about
``BATCH_SECONDS`` of them. Described in the manual: docs/sweeps.md, "Engines".
"""

from __future__ import annotations

from typing import Any

from .point import Outcome, solve_point

Task = tuple[int, dict[str, Any]]

# Cheap points go out in batches of about this much work each (a pool task costs a pickle round
# trip and a wake-up of the parent, ~1 ms; a Dask task a few ms: more than a cheap DP point itself)
BATCH_SECONDS = 0.05
MAX_BATCH = 64


def solve_points(batch: list[Task]) -> list[Outcome]:
    """Solve a batch of points in one task (in a pool or Dask worker)."""
    return [solve_point(index, params) for index, params in batch]


class Batches:
    """Takes batches of tasks from the end of ``queue`` (grid order when reversed): one point a
    task until points have finished (``seen``: their count and solve time, which the caller may
    have started, e.g. with the parent's own points), then about ``BATCH_SECONDS`` of points at
    the mean cost so far, at most ``MAX_BATCH`` and never more than a fair share of what is left
    per worker (``workers``: every worker kept busy to the end)."""

    def __init__(self, queue: list[Task], workers: int, seen: list | None = None):
        self.queue = queue
        self.workers = max(1, workers)
        self.seen = [0, 0.0] if seen is None else seen

    def size(self) -> int:
        if not self.seen[0]:
            return 1
        mean = max(self.seen[1] / self.seen[0], 1e-6)
        fair = -(-len(self.queue) // (2 * self.workers))
        return max(1, min(int(BATCH_SECONDS / mean), MAX_BATCH, fair))

    def take(self) -> list[Task]:
        """The next batch (empty when the queue is)."""
        return [self.queue.pop() for _ in range(min(self.size(), len(self.queue)))]

    def finished(self, out: Outcome) -> None:
        """Count a finished point (its solve time sizes the next batches)."""
        self.seen[0] += 1
        self.seen[1] += out.wall_s
