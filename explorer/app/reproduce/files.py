"""Where ``explore reproduce hypar`` writes: its paths checked before any point is solved (trial
finding: a file where ``DIR/.cache`` goes, or a folder where ``DIR/hypar-fig9.png`` goes, ended
in a traceback after the solving), and its figures written as one set: each drawn into a temp
file beside its PNG, and all renamed into place (``os.replace``, atomic each) once every figure
is drawn (a Ctrl-C during ``--all`` left figures of two accountings side by side)."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from ...core.errors import SpecError
from ..output import OutputError, check_folder_writable, resolve_target


def check_paths(cache: Path, pngs: list[Path]) -> None:
    """SpecError naming ``--out``, the path and the problem when the point cache's folder or a
    figure's PNG cannot be written (a file where the cache folder goes, a folder or a device where
    a PNG goes, no permission)."""
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
