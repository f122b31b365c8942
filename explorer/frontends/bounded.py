"""Reading a file with bounds: the one rule for "a regular file of at most N bytes, else say why".

A spec file is read up to its cap (``--model /dev/zero`` must not eat the memory). A file the
tool owns (a sweep or reproduce cache entry, plans.jsonl, results.csv) must also be a regular
file: a FIFO in its place would block the reader forever, so it is opened without waiting
(``O_NONBLOCK``) and refused when it is anything else. Described in docs/sweeps.md, "Resumable".
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

MAX_ENTRY_BYTES = 64 * 2**20  # a cache entry larger than this is not one the tool wrote (entries hold one plan)
MAX_LINE_BYTES = 64 * 2**20  # a line of plans.jsonl (one point's plan) or results.csv larger than this: not ours


class Refused(OSError):
    """A file not read; ``str(err)`` is the problem, one clause ("a FIFO (named pipe), not a regular file");
    ``where``: the file, when a caller names it."""

    where: str | None = None


class NotRegular(Refused):
    """Not a regular file: not read (a FIFO would block the reader)."""


class TooLarge(Refused):
    """More bytes than the reader takes."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: str | Path) -> BinaryIO:
    """``path`` opened for reading in binary; ``NotRegular`` (without waiting) when it is not a
    regular file (FileNotFoundError and other OSErrors pass through)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = _kind(mode)
            raise NotRegular(f"{kind}, not a regular file" if kind != "not a regular file" else kind)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: str | Path, limit: int, regular: bool = True) -> bytes:
    """The bytes of ``path``; ``TooLarge`` when there are more than ``limit`` ("larger than 64 MiB"),
    or, with ``regular``, ``NotRegular`` when it is not a regular file. Reads at most ``limit + 1`` bytes."""
    with (open_regular(path) if regular else open(path, "rb")) as f:
        raw = f.read(limit + 1)
    if len(raw) > limit:
        raise TooLarge(f"larger than {_size(limit)}")
    return raw


def read_line(f: BinaryIO, limit: int | None = None) -> bytes:
    """The next line of ``f`` (b"" at its end); ``TooLarge`` when it is longer than ``limit``
    bytes (``MAX_LINE_BYTES``: a file of one 2 GB line is refused after reading that, not held whole)."""
    limit = MAX_LINE_BYTES if limit is None else limit
    line = f.readline(limit + 1)
    if len(line) > limit:
        raise TooLarge(f"a line longer than {_size(limit)}")
    return line


def _size(n: int) -> str:
    return f"{n // 2**20} MiB" if n >= 2**20 and n % 2**20 == 0 else f"{n:,} bytes"
