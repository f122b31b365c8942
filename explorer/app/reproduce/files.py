"""Where ``explore reproduce hypar`` writes: its paths checked before any point is solved (trial
finding: a file where ``DIR/.cache`` goes, or a folder where ``DIR/hypar-fig9.png`` goes, ended
in a traceback after the solving), and its figures written as one set: each drawn into a temp
file beside its PNG, and all renamed into place (``os.replace``, atomic each) once every figure
is drawn (a Ctrl-C during ``--all`` left figures of two accountings side by side). A PNG is
replaced only when reproduce wrote it (its ``tEXt`` chunk ``MARK``), else with ``--force``; the
temp files of a run killed before its renames are removed by the next run (``prune_temps``)."""

from __future__ import annotations

import os
import re
import stat
import struct
import tempfile
from pathlib import Path

from ...core.errors import SpecError
from ..output import OutputError, check_folder_writable, resolve_target

# the PNG text chunk (keyword, text) that marks a figure as written by explore reproduce
MARK = ("Written-by", "explore reproduce hypar")
# a figure's temp file (``temp_beside``: tempfile's 8 random characters), left by a run killed before its renames
TEMP_NAME = re.compile(r"\.hypar-fig(?:[5-9]|1[0-3])\.png\.[a-z0-9_]{8}\.tmp")
_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def written_here(png: Path) -> bool:
    """Whether ``png`` is a PNG holding the text chunk ``MARK`` (drawn by ``draw.draw``)."""
    want = MARK[0].encode("latin-1") + b"\0" + MARK[1].encode("latin-1")
    try:
        with open(png, "rb") as f:
            if f.read(8) != _SIGNATURE:
                return False
            while len(head := f.read(8)) == 8:
                length, kind = struct.unpack(">I4s", head)
                if kind == b"IEND":
                    return False
                if kind == b"tEXt" and length == len(want):
                    if f.read(length) == want:
                        return True
                    f.seek(4, os.SEEK_CUR)
                else:
                    f.seek(length + 4, os.SEEK_CUR)
    except OSError:
        return False
    return False


def check_paths(cache: Path, pngs: list[Path], force: bool = False) -> None:
    """SpecError naming ``--out``, the path and the problem when the point cache's folder or a
    figure's PNG cannot be written (a file where the cache folder goes, a folder or a device where
    a PNG goes, no permission) or, without ``force``, a file where a PNG goes that reproduce did not
    write (``written_here``)."""
    if os.path.lexists(cache) and not cache.is_dir():
        raise SpecError("--out", f"{cache} is not a folder (the point cache goes there): move it away or "
                                 "choose another --out")
    try:
        check_folder_writable(str(cache), "--out")
    except OutputError as err:
        raise SpecError("--out", err.problem) from None
    for png in pngs:
        try:
            st = os.stat(png)
        except FileNotFoundError:
            continue
        except OSError as err:
            raise SpecError("--out", f"cannot write {png}: {err.strerror or err}") from None
        if stat.S_ISDIR(st.st_mode):
            raise SpecError("--out", f"cannot write {png}: is a folder (the figure's PNG goes there): move it "
                                     "away or choose another --out")
        if not stat.S_ISREG(st.st_mode):
            raise SpecError("--out", f"cannot write {png}: not a regular file (the figure's PNG goes there)")
        if not os.access(png, os.W_OK):
            raise SpecError("--out", f"cannot write {png}: permission denied")
        if not force and not written_here(png):
            raise SpecError("--out", f"{png} was not written by explore reproduce: replace it with --force, or move it "
                                     "away or choose another --out")


def temp_beside(png: Path) -> Path:
    """A new empty temp file in the PNG's folder (the folder its symlink, if any, points into), for
    the figure to be drawn into before ``commit`` renames it over the PNG."""
    target = resolve_target(str(png))
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    return Path(tmp)


def commit(drawn: dict[Path, Path], written: list[Path]) -> None:
    """Rename each drawn temp file over its PNG (``drawn``: PNG -> temp, emptied as it goes),
    appending each PNG to ``written`` once it is in place; a new PNG gets 0666 less the umask."""
    from ..output import new_file_mode

    for png in list(drawn):
        tmp = drawn[png]
        target = resolve_target(str(png))
        mode = stat.S_IMODE(os.stat(target).st_mode) if target.exists() else new_file_mode()
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        del drawn[png]
        written.append(png)


def discard(drawn: dict[Path, Path]) -> None:
    """Remove the temp files of figures drawn but not renamed into place."""
    for tmp in drawn.values():
        try:
            os.unlink(tmp)
        except OSError:
            pass
    drawn.clear()


def prune_temps(folder: Path, started: float) -> int:
    """Remove the figures' temp files (``TEMP_NAME``) in ``folder`` that a run killed before its
    renames left (``prune_older``); how many."""
    return prune_older(folder, TEMP_NAME, started)


def prune_older(folder: Path, name: re.Pattern, started: float) -> int:
    """Remove the files of ``folder`` whose names match ``name`` that are regular files last written
    before ``started`` (this run's start, ``time.time()``: a run under way elsewhere writes newer
    ones); how many. Nothing else is touched: another name, a symlink, a folder, a newer file."""
    try:
        paths = sorted(folder.iterdir())
    except OSError:
        return 0
    removed = 0
    for path in paths:
        if not name.fullmatch(path.name):
            continue
        try:
            info = path.lstat()
            if stat.S_ISREG(info.st_mode) and info.st_mtime < started:
                path.unlink()
                removed += 1
        except OSError:
            pass  # removed meanwhile, or a read-only folder: left as it is
    return removed
