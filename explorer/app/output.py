"""Where a report goes: ``--output PATH`` written safely, and ``--dump-model`` checked early.

The rules (symlinks, devices, descriptors, atomic replacement keeping mode and owner):
docs/commands.md, "Where the report goes". Every failure is an ``OutputError`` whose text is one
line naming the option and the path.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
from pathlib import Path


class OutputError(ValueError):
    """A destination that cannot be written: one line '<option>: <problem>', bad input (exit 2)."""

    def __init__(self, option: str, problem: str):
        super().__init__(f"{option}: {problem}")
        self.option, self.problem = option, problem

    def __reduce__(self):
        return OutputError, (self.option, self.problem)


_STD_PATHS = {"/dev/stdout": 1, "/dev/stderr": 2}
_FD_PATH = re.compile(r"/(?:dev/fd|proc/self/fd)/([0-9]+)")


def inherited_fd(path: str) -> int | None:
    """The descriptor a path such as /dev/stdout or /dev/fd/3 names, else None."""
    p = os.path.abspath(path)
    if p in _STD_PATHS:
        return _STD_PATHS[p]
    m = _FD_PATH.fullmatch(p)
    return int(m.group(1)) if m else None


def _write_fd(fd: int, text: str) -> None:
    if fd == 1:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    if fd == 2:
        sys.stderr.write(text)
        sys.stderr.flush()
        return
    data = text.encode("utf-8")
    while data:
        data = data[os.write(fd, data):]


def _why(err: OSError) -> str:
    return err.strerror or str(err)


def resolve_target(path: str) -> Path:
    """The file a write to ``path`` lands in: symlinks followed (a dangling link: its target)."""
    return Path(os.path.realpath(path))


def _existing(path: str, option: str) -> os.stat_result | None:
    """What is at ``path`` now (symlinks followed), None when nothing; a folder is refused."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise OutputError(option, f"cannot write {path}: {_why(err)}") from None
    if stat.S_ISDIR(st.st_mode):
        raise OutputError(option, f"cannot write {path}: is a directory")
    return st


def _input_files(inputs: dict[str, str | None]) -> list[tuple[str, str]]:
    """(option, path) of every file the inputs may name: the path as given and, for a model or
    array, the shipped file a zoo name stands for; an ONNX model's external data files too."""
    from ..frontends import zoo

    out = []
    for option, ref in inputs.items():
        if not ref:
            continue
        out.append((option, ref))
        shipped = {"--model": zoo.resolve_model, "--array": zoo.resolve_array}.get(option)
        found = shipped(ref) if shipped else None
        if found is None and option == "--array":
            found = zoo.resolve_cluster(ref)  # a GPU cluster given as --array
        if found is not None:
            out.append((option, str(found)))
        if option == "--model" and Path(ref).suffix.lower() == ".onnx":
            from ..frontends.onnx_read import external_data_files

            out.extend((f"{option} file's external data", str(f)) for f in external_data_files(ref))
    return out


def check_not_an_input(path: str | None, inputs: dict[str, str | None], option: str = "--output") -> None:
    """Refuse a destination that is one of the command's input files (``--output`` naming the
    ``--model`` file would replace the network with the report)."""
    if path is None or path == "-" or inherited_fd(path) is not None:
        return
    for name, ref in _input_files(inputs):
        try:
            same = os.path.samefile(path, ref)
        except (OSError, ValueError):
            continue
        if same:
            raise OutputError(option, f"{path} is the {name} file; writing there would replace it "
                              "(choose another file)")


def check_writable(path: str, option: str = "--output") -> None:
    """Refuse, before any work, a destination that cannot be written (missing folder, a folder,
    no permission), so a long solve never ends in a lost report. The folder is probed by creating
    and removing a temp file there (as ``write_text`` will), since permission bits do not tell
    (root passes ``os.access`` on /proc); the destination itself is neither created nor touched."""
    if path == "-":
        return
    fd = inherited_fd(path)
    if fd is not None:
        try:
            os.fstat(fd)
        except OSError as err:
            raise OutputError(option, f"cannot write {path}: {_why(err)}") from None
        return
    st = _existing(path, option)
    if path.endswith("/"):
        raise OutputError(option, f"cannot write {path}: names a folder (ends in /)")
    if st is not None and not stat.S_ISREG(st.st_mode):
        if not os.access(path, os.W_OK):
            raise OutputError(option, f"cannot write {path}: permission denied")
        return
    target = resolve_target(path)
    folder = target.parent
    if not folder.is_dir():
        raise OutputError(option, f"cannot write {path}: folder {folder} does not exist")
    if st is not None and not os.access(target, os.W_OK):
        raise OutputError(option, f"cannot write {path}: permission denied")
    _probe_folder(path, folder, option)


def check_folder_writable(path: str, option: str) -> None:
    """Refuse, before any work, a folder that cannot be made or written: ``path`` itself when it
    is a folder, else the nearest folder above it that exists (where it will be made); probed by
    creating and removing a temp file there."""
    here = Path(os.path.abspath(path))
    while not here.exists():
        here = here.parent
    if not here.is_dir():
        raise OutputError(option, f"cannot write {path}: {here} is not a folder")
    _probe_folder(path, here, option)


def _probe_folder(path: str, folder: Path, option: str) -> None:
    """Create and remove a temp file in ``folder``; OutputError when it cannot take one."""
    import tempfile  # only with --output: not part of every run's start-up

    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".explore-probe.", suffix=".tmp")
    except OSError as err:
        if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT):
            raise OutputError(option, f"cannot write {path}: folder {folder} is not writable") from None
        raise OutputError(option, f"cannot write {path}: {_why(err)}") from None
    os.close(fd)
    os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    """The mode a new file gets: 0666 less the umask, as the shell would."""
    return 0o666 & ~_umask()


def _keep_owner(tmp: str, st: os.stat_result) -> bool:
    """Give ``tmp`` the owner and group of the file it replaces (as root, replacing a file of
    another user must not make it root's); False when that is not allowed."""
    now = os.stat(tmp)
    if (now.st_uid, now.st_gid) == (st.st_uid, st.st_gid):
        return True
    try:
        os.chown(tmp, st.st_uid, st.st_gid)
    except OSError:
        return False
    return True


def write_text(path: str, text: str, option: str = "--output") -> None:
    """Write ``text`` to ``path`` as described in the module doc; OutputError on failure."""
    if path == "-":
        _write_fd(1, text)
        return
    fd = inherited_fd(path)
    try:
        if fd is not None:
            _write_fd(fd, text)
            return
    except OSError as err:
        raise OutputError(option, f"cannot write {path}: {_why(err)}") from None
    st = _existing(path, option)
    try:
        if st is not None and not stat.S_ISREG(st.st_mode):
            # a device, FIFO or socket: write into it; replacing it would destroy it
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            return
        import tempfile  # only with --output

        target = resolve_target(path)
        mode = stat.S_IMODE(st.st_mode) if st is not None else new_file_mode()
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, mode)
            if st is not None and not _keep_owner(tmp, st):
                os.unlink(tmp)  # the new file could not keep the old one's owner: write in place
                with open(target, "w", encoding="utf-8") as f:
                    f.write(text)
                return
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as err:
        raise OutputError(option, f"cannot write {path}: {_why(err)}") from None
