"""One sweep (or merge) at a time per output folder: ``DIR/.sweep.lock`` holds the pid of the run
that writes into ``DIR``, under an exclusive ``fcntl.flock`` (trial finding: two sweeps sharing
``--out`` raced; one lost its rows and reported success). The kernel releases the lock when its
process ends, however it ends, so a lock file left by a run that was killed (its pid no longer
running) is simply taken over: ``folder_lock`` yields that run's pid, for the CLI to say so
(``took_over_line``; the sweep's, ``Progress.took_over``). The file is removed when the run ends. Described in docs/sweeps.md, "One sweep per folder"."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ...core.errors import SpecError

LOCK_NAME = ".sweep.lock"
# the lock files' descriptors this process holds: a forked pool worker closes its copies
# (``close_inherited``), else a worker outliving a killed run keeps the lock (trial finding)
_HELD: set[int] = set()


def close_inherited() -> None:
    """In a forked child: close the held locks' descriptors it inherited, so that the lock ends
    with the run that took it, not with the last of its workers."""
    for fd in list(_HELD):
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD.clear()


def _pid(fd: int) -> int | None:
    """The pid written in an open lock file, None when it holds none (being written, or empty)."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _try_lock(fd: int, path: Path) -> bool:
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError as err:  # a file system that takes no locks (ENOLCK)
        os.close(fd)
        raise SpecError("--out", f"cannot lock {path.parent} ({path.name}): {err.strerror or err}") from None
    return True


def _open(path: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as err:
        raise SpecError("--out", f"cannot lock {path.parent} ({path.name}): {err.strerror or err}") from None


def _busy(folder: Path, pid: int | None) -> SpecError:
    who = f"another explore run (pid {pid})" if pid is not None else "another explore run"
    return SpecError("--out", f"{folder} is in use: {who} is writing its results there; wait for it to end, "
                              "or choose another folder")


@contextmanager
def folder_lock(folder: Path) -> Iterator[int | None]:
    """Hold ``folder``'s lock meanwhile (the folder must exist); SpecError naming the folder and
    the other run's pid when another run holds it. Nothing is written unless the lock is taken.
    Yields the pid of the run whose lock file it took over (that run was killed: a run that ends
    removes its file before its lock goes), else None."""
    path = folder / LOCK_NAME
    while True:
        fd = _open(path)
        if not _try_lock(fd, path):
            pid = _pid(fd)
            os.close(fd)
            raise _busy(folder, pid)
        try:  # the file locked may have been removed (its run ended) between open and flock: retry
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    _HELD.add(fd)
    left = _pid(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield left if left != os.getpid() else None
    finally:
        try:
            os.unlink(path)  # before the lock goes: a run that opens it meanwhile retries (above)
        except OSError:
            pass
        _HELD.discard(fd)
        os.close(fd)


def took_over_line(command: str, folder: Path, pid: int) -> str:
    """What ``explore COMMAND`` says on stderr when it took over the lock file of a killed run."""
    return (f"explore {command}: took over a stale lock from pid {pid} ({folder / LOCK_NAME}: that run is no longer "
            "running; it was stopped before it could remove the file)")
