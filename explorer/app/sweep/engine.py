"""Engines that solve sweep points in parallel (``LocalEngine``: a process pool; ``DaskEngine``:
Dask distributed), and the runner that puts them in grid order. An engine takes (index, options)
tasks and yields Outcomes in whatever order they finish. Described in the manual: docs/sweeps.md,
"Engines".
"""

from __future__ import annotations

import os
import signal
import time
from contextlib import contextmanager
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Protocol

from ...core.errors import SpecError
from ...core.names import given_as
from .alive import TICK_S, Flight, Heartbeat, point_labels
from .batches import Batches, Task, solve_points
from .cache import Cache, point_key
from .main_guard import unguarded_call
from .point import ERROR, INVALID, Outcome, solve_point
from .spec import Point, defaults_for, resolve_paths


class Engine(Protocol):
    name: str

    def run(self, tasks: list[Task], tick: Callable[[Heartbeat], None] | None = None) -> Iterator[Outcome]:
        """Solve every task; yield the Outcomes as they finish (any order); call ``tick`` with a
        Heartbeat (``alive``) each ``TICK_S`` that passes with none finished."""

    def close(self) -> None: ...


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _worker_init(parent: int | None = None) -> None:
    """Pool workers ignore Ctrl-C: the parent stops the sweep and ends them. SIGTERM ends them at
    once (its default: a forked worker inherits the parent's SIGTERM handler, which would turn the
    parent-death signal into an exception). They close the folder lock's descriptor they inherited,
    and end with their parent (``parent``: its pid; Linux's parent-death signal), so that a killed
    sweep's lock ends with it, not minutes later."""
    from .lock import close_inherited

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    close_inherited()
    if parent is not None:
        _die_with(parent)


def _die_with(parent: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the workers end when their queue breaks
        return
    if os.getppid() != parent:  # the parent ended before the signal was set
        os._exit(1)


# A sweep predicted to take less than this (CPU s) in all is solved in the parent, with no pool: a pool
# costs ~20-30 ms to fork and each worker's first points ~30-60 ms of CPU to warm up (imports,
# parsed networks, copy-on-write pages), more than a second worker saves on ~0.1 s of points
SERIAL_SECONDS = 0.1
# Solvers whose points the parent may solve itself (the DP: polynomial, a second at most on the
# zoo at 1,024 accelerators; the exponential ones and CP-SAT always go to the pool)
SERIAL_SOLVERS = ("dp",)


def in_parent(params: dict[str, Any]) -> bool:
    """Whether the parent may solve this point itself (a DP point, not a split point)."""
    return (params.get("solver") or "dp") in SERIAL_SOLVERS and params.get("split") is None


def solve_serially(queue: list[Task], seen: list, budget: float | None = None,
                   clock: Callable[[], float] = time.process_time) -> Iterator[Outcome]:
    """Solve points from the end of ``queue`` in this process while the whole sweep is predicted
    to fit ``budget`` seconds of CPU (default ``SERIAL_SECONDS``): the first point always (it measures the points' cost), then
    each while the time so far plus the points left at the mean cost (of the points after the
    first, which warms up) stays within it; so the parent spends at most ``budget`` plus one point
    here. Stops at the first point the parent may not solve; ``seen`` gains the points' count and
    wall time (the pool's batches are sized from them)."""
    budget = SERIAL_SECONDS if budget is None else budget
    start = clock()
    costs: list[float] = []
    while queue and in_parent(queue[-1][1]):
        if costs:
            mean = sum(costs[1:]) / (len(costs) - 1) if len(costs) > 1 else costs[0]
            if clock() - start + mean * len(queue) > budget:
                return
        t = clock()
        index, params = queue.pop()
        out = solve_point(index, params)
        costs.append(clock() - t)
        seen[0] += 1
        seen[1] += out.wall_s
        yield out


# Solvers whose modules the parent imports before the pool forks (not CP-SAT: OR-Tools is not
# imported before a fork)
WARM_SOLVERS = ("dp", "exact", "brute", "pruned")


def _warm(tasks: list[Task]) -> None:
    """Import, once in the parent, the modules the tasks' solvers need, so that forked workers
    inherit them (each worker imported them itself: on trial 10's 18 cheap points two workers
    used 0.05-0.2 s more CPU than one, about the same with this; item 10). Only where the pool forks."""
    from importlib import import_module

    if start_method() != "fork":  # spawn, forkserver (the default on Linux from Python 3.14): nothing inherited
        return
    from ...solvers import REGISTRY

    names = {(params.get("solver") or "dp") for _, params in tasks}
    for module in ["explorer.app.request", "explorer.app.run",  # the single-run pipeline every point calls
                   *(REGISTRY[n] for n in sorted(names & set(WARM_SOLVERS)))]:
        import_module(module)


class LocalEngine:
    """A process pool on this machine. At most ``2 * workers`` tasks are queued at a time, so an
    interrupted sweep leaves little work half-submitted. The parent solves the first DP points
    itself while the whole sweep is predicted to take less than ``SERIAL_SECONDS`` (then no pool
    starts); the pool's workers inherit what those points warmed. Points start one per task
    until some have finished; then cheap points go in batches of about ``BATCH_SECONDS`` of work
    (never more than a fair share of what is left per worker), so two workers are not slower
    than one on points of a millisecond."""

    name = "local"

    def __init__(self, workers: int | None = None):
        self.workers = workers or default_workers()
        self._pool: ProcessPoolExecutor | None = None
        self._size = self.workers  # the pool's processes, once it has started
        self._pending: dict[Any, list[int]] = {}

    def run(self, tasks: list[Task], tick: Callable[[Heartbeat], None] | None = None) -> Iterator[Outcome]:
        queue = list(reversed(tasks))  # popped from the end: grid order
        seen = [0, 0.0]  # points finished, their solve time
        if self._pool is None:
            _warm(queue)  # before the parent's own points: the imports are not their cost
            yield from solve_serially(queue, seen)
            if not queue:
                return
            self._size = min(self.workers, len(queue))
            self._pool = ProcessPoolExecutor(max_workers=self._size, initializer=_worker_init, initargs=(os.getpid(),))
        pending = self._pending
        batches = Batches(queue, self.workers, seen)
        flight = Flight(self._size)  # (the pool's size: no more points run at once)

        def top_up() -> list[Outcome]:
            while queue and len(pending) < 2 * self.workers:
                batch = batches.take()
                try:
                    fut = self._pool.submit(solve_points, batch)
                except BrokenProcessPool as err:  # a worker died: the rest cannot run here
                    rest = [*(t[0] for t in batch), *(t[0] for t in reversed(queue))]
                    queue.clear()
                    return _failed(rest, err)
                pending[fut] = [i for i, _ in batch]
                flight.submitted(fut, pending[fut])
            return []

        lost = top_up()
        while pending:
            done, _ = wait(pending, timeout=TICK_S, return_when=FIRST_COMPLETED)
            if not done and tick is not None:
                tick(flight.snapshot())
            for fut in done:
                indices = pending.pop(fut)
                flight.finished(fut)
                for out in _outcomes(fut, indices):
                    batches.finished(out)
                    yield out
            lost += top_up()
        yield from lost

    def close(self) -> None:
        """Shut the pool down; if points are still running (Ctrl-C, the caller stopped early),
        end the workers instead of waiting for them."""
        if self._pool is None:
            return
        if self._pending:
            for proc in list((getattr(self._pool, "_processes", None) or {}).values()):
                proc.terminate()
            self._pool.shutdown(wait=False, cancel_futures=True)
        else:
            self._pool.shutdown(wait=True)
        self._pool = None
        self._pending = {}


# A module each LocalCluster worker imports as it starts (a Dask preload): its ``dask_setup``
# makes the worker ignore Ctrl-C, as the local pool's workers do (trial 14, finding 4: a Ctrl-C
# printed one KeyboardInterrupt traceback per worker before the one-line message)
QUIET_WORKER = "explorer.app.sweep.quiet_worker"


@contextmanager
def held_ctrl_c() -> Iterator[None]:
    """Ctrl-C held meanwhile (POSIX, main thread; else nothing): SIGINT blocked in this thread, so
    that the processes and threads started meanwhile inherit the block (a Ctrl-C never reaches
    them), and a Ctrl-C received meanwhile (by any thread) only noted; once the block is lifted and
    the handler restored, a noted Ctrl-C is raised again, to whatever handler was there."""
    import threading
    from multiprocessing import resource_tracker

    previous = signal.getsignal(signal.SIGINT)
    if not (hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
            and previous is not None):
        yield
        return
    noted = []
    resource_tracker.ensure_running()  # started now: starting it later unblocks SIGINT in its caller
    signal.signal(signal.SIGINT, lambda signum, frame: noted.append(signum))
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a pending Ctrl-C is noted here
        signal.signal(signal.SIGINT, previous)
        if noted:
            signal.raise_signal(signal.SIGINT)


class DaskEngine:
    """Points as tasks on a Dask distributed cluster: ``scheduler`` is ``tcp://HOST:PORT`` of a
    running scheduler; without one, a LocalCluster of ``workers`` single-threaded processes
    (spawned: a calling script needs ``if __name__ == "__main__":``, see ``check_engine``)."""

    name = "dask"

    def __init__(self, scheduler: str | None = None, workers: int | None = None):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise SpecError("--engine", "dask needs the dask extra: pip install -e '.[dask]'") from None
        self._cluster = None
        self.client = None
        self._pending: dict = {}
        if scheduler:
            try:
                self.client = Client(scheduler, timeout="10s")
            except Exception as err:  # noqa: BLE001 - OSError, TimeoutError, ValueError for a malformed address
                raise SpecError("--scheduler", f"cannot reach {scheduler}: {err}") from None
        else:
            try:
                self._start(LocalCluster, Client, workers)
            except BaseException:  # Ctrl-C (held while it started, raised as it is released): close what started
                self.close()
                raise

    def _start(self, LocalCluster, Client, workers: int | None) -> None:
        """A LocalCluster with Ctrl-C held (``held_ctrl_c``) while it starts: its processes are
        spawned with SIGINT blocked (each would print a KeyboardInterrupt traceback, and a cluster
        stopped half-started a third one at exit); a Ctrl-C meanwhile is raised once it has started."""
        import logging

        with held_ctrl_c():
            # no dashboard; the scheduler's HTTP server (health, metrics) on a free port, not 8787 (a
            # UserWarning when in use); the workers ignore Ctrl-C (QUIET_WORKER): the parent stops the sweep;
            # logs only CRITICAL (a worker whose scheduler closed first logs an ERROR heartbeat traceback)
            self._cluster = LocalCluster(n_workers=workers or default_workers(), threads_per_worker=1, processes=True,
                                         dashboard_address=None, scheduler_kwargs={"dashboard_address": ":0"},
                                         silence_logs=logging.CRITICAL, preload=[QUIET_WORKER])
            self.client = Client(self._cluster)

    def run(self, tasks: list[Task], tick: Callable[[Heartbeat], None] | None = None) -> Iterator[Outcome]:
        """Batches as the local pool's (``Batches``), at most two a worker in flight."""
        from distributed import as_completed

        queue = list(reversed(tasks))
        workers = max(1, sum(self.client.nthreads().values()))
        batches = Batches(queue, workers)
        pending: dict[Any, list[int]] = {}
        self._pending = pending
        running = as_completed()
        flight = Flight(workers)

        def top_up() -> None:
            while queue and len(pending) < 2 * workers:
                batch = batches.take()
                fut = self.client.submit(solve_points, batch, pure=False)
                pending[fut] = [i for i, _ in batch]
                flight.submitted(fut, pending[fut])
                running.add(fut)

        top_up()
        while not running.is_empty():
            if not _ready_within(running, TICK_S):
                if tick is not None:
                    tick(flight.snapshot())
                continue
            fut = next(running)
            flight.finished(fut)
            for out in _outcomes(fut, pending.pop(fut)):
                batches.finished(out)
                yield out
            top_up()

    def close(self) -> None:
        if self._pending:  # stopped early: the cluster drops what is left
            self.client.cancel(list(self._pending))
            self._pending = {}
        if self.client is not None:
            self.client.close()
            self.client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


def _ready_within(running, seconds: float) -> bool:
    """Whether a future of Dask's ``as_completed`` is done, waiting up to ``seconds`` for one (on its
    condition, notified as a future finishes, as its own iterator waits; else in short sleeps)."""
    end = time.monotonic() + seconds
    condition = getattr(running, "thread_condition", None)
    while not running.has_ready():
        left = end - time.monotonic()
        if left <= 0:
            return False
        if condition is None:
            time.sleep(min(left, 0.01))
            continue
        with condition:
            condition.wait(timeout=min(left, 0.1))
    return True


def _outcomes(fut, indices: list[int]) -> list[Outcome]:
    """A finished batch's Outcomes; a worker that died is an error row for each of its points."""
    try:
        return fut.result()
    except Exception as err:  # noqa: BLE001 - e.g. BrokenProcessPool, a killed Dask worker
        return _failed(indices, err)


def _failed(indices: list[int], err: BaseException) -> list[Outcome]:
    return [Outcome.make(i, None, ERROR, f"worker failed: {type(err).__name__}: {err}", 0.0) for i in indices]


def start_method() -> str:
    """How the local pool starts its workers: the start method set in ``multiprocessing``, else the
    platform's default (fork on Linux up to Python 3.13, forkserver from 3.14, spawn on macOS and
    Windows), read without fixing it (a script may still set it later)."""
    import multiprocessing

    return multiprocessing.get_start_method(allow_none=True) or multiprocessing.get_all_start_methods()[0]


def _respawns(engine: str, scheduler: str | None) -> str | None:
    """What starts worker processes that first re-run the calling script (as ``__mp_main__``), or
    None: Dask's local cluster (spawned), the local pool unless it forks; never a scheduler's cluster."""
    if engine == "dask":
        return None if scheduler else "dask without a scheduler starts worker processes"
    method = start_method()
    return None if method == "fork" else f"the local pool starts worker processes by {method}"


def check_engine(engine: str, scheduler: str | None) -> None:
    """SpecError for an unknown engine, a scheduler without dask, or an engine whose workers re-run
    the calling script (``_respawns``) called from its top level outside ``if __name__ ==
    "__main__":`` (every worker would start the sweep again, and fail)."""
    if engine not in ("local", "dask"):
        raise SpecError("--engine", f"unknown engine {engine!r} (choose from local, dask)")
    if engine == "local" and scheduler:
        raise SpecError("--scheduler", f"only with {given_as('--engine')} dask")
    what = _respawns(engine, scheduler)
    where = unguarded_call() if what else None
    if where is not None:
        raise SpecError("--engine", f"{what}, and each first re-runs the calling script ({where[0]}, line "
                                    f"{where[1]}): put that call under if __name__ == \"__main__\":")


def make_engine(engine: str = "local", workers: int | None = None, scheduler: str | None = None) -> Engine:
    check_engine(engine, scheduler)
    return LocalEngine(workers) if engine == "local" else DaskEngine(scheduler, workers)


@dataclass(frozen=True)
class Progress:
    """How far a sweep is: points done of total, how many came from the cache, how many failed
    (raised an unexpected error: a bug, exit status 1) and how many are invalid (options that do
    not fit together, e.g. a cap on a level the array lacks: a row that answers, like infeasible)."""

    done: int
    total: int
    reused: int
    failed: int  # status error: the point raised
    invalid: int = 0  # status invalid
    rejected: tuple[str, ...] = ()  # cache entries that failed their check (``Cache.get``): solved again
    running: tuple[tuple[str, float], ...] = ()  # on a Heartbeat (``alive``): the points in flight, (label, s), longest first
    took_over: int | None = None  # the pid of a killed run whose lock file this run took over (``lock.folder_lock``)


def _named(beat: Heartbeat, labels: dict[int, str]) -> tuple[tuple[str, float], ...]:
    """A Heartbeat's tasks as (the first point's label, '+k' for the others of its batch; seconds)."""
    return tuple((labels[ix[0]] + (f" +{len(ix) - 1}" if len(ix) > 1 else ""), s) for ix, s in beat.running)


def run_points(points: Iterable[Point], base_dir: str, engine: Engine, cache: Cache | None = None,
               progress: Callable[[Progress], None] | None = None) -> Iterator[Outcome]:
    """Solve every point (reusing cached ones); yield the Outcomes in point order."""
    points = list(points)
    ready: dict[int, Outcome] = {}
    tasks: list[Task] = []
    keys: dict[int, str] = {}
    paths: dict = {}
    digests: dict = {}
    for p in points:
        try:
            # the defaults too: a shipped array a point does not name is still part of its inputs
            params = resolve_paths({**defaults_for(p.as_dict()), **p.as_dict()}, base_dir, paths)
            keys[p.index] = point_key(params, digests)
        except (SpecError, OSError) as err:
            ready[p.index] = Outcome.make(p.index, None, INVALID, str(err), 0.0)
            continue
        hit = cache.get(keys[p.index], p.index) if cache else None
        if hit is not None:
            ready[p.index] = hit
        else:
            tasks.append((p.index, params))
    reused = sum(o.cached for o in ready.values())
    failed = sum(o.status == ERROR for o in ready.values())
    invalid = sum(o.status == INVALID for o in ready.values())
    done = len(ready)
    rejected = tuple(map(str, cache.rejected)) if cache else ()
    order = [p.index for p in points]
    nxt = 0

    def flush() -> Iterator[Outcome]:
        nonlocal nxt
        while nxt < len(order) and order[nxt] in ready:
            yield ready.pop(order[nxt])
            nxt += 1

    if progress:
        progress(Progress(done, len(points), reused, failed, invalid, rejected))
    yield from flush()
    labels = point_labels(points) if progress else {}

    def beat(h: Heartbeat) -> None:
        progress(Progress(done, len(points), reused, failed, invalid, rejected, _named(h, labels)))

    for out in (engine.run(tasks, beat) if progress else engine.run(tasks)):
        if cache is not None:
            cache.put(keys[out.index], out)
        done += 1
        failed += out.status == ERROR
        invalid += out.status == INVALID
        ready[out.index] = out
        if progress:
            progress(Progress(done, len(points), reused, failed, invalid, rejected))
        yield from flush()
    yield from flush()
