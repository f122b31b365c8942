"""The sweep cache: one JSON file per finished point, keyed by a hash of its full inputs (the
options, the contents of the files they name, and ``app.code_stamp``: the explorer's version and
its code's digest), written atomically, and sealed (``app.seal``: its first field is the sha256 of
the rest of its text, checked on every load), so that an entry edited by hand or damaged is solved
again (``Cache.rejected`` names it, for the CLI to say so), never returned as if solved; an entry
of other code is never even read (the key holds ``code_stamp``). Described in the manual:
docs/sweeps.md, "Resumable".
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from ...core.errors import SpecError
from ...core.names import given_as
from ...frontends import zoo
from ...frontends.bounded import MAX_ENTRY_BYTES, NotRegular, TooLarge, read_bounded
from ..code_stamp import code_stamp
from ..output import new_file_mode
from ..seal import seal, unseal
from .point import ERROR, Outcome

CACHE_FORMAT = 5  # 3: the time objective's objective_value, bound and gap are step times; 4: entries hold their key;
# 5: entries are sealed (app.seal)


@lru_cache(maxsize=256)
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@lru_cache(maxsize=256)
def _shipped(key: str, name: str) -> Path | None:
    found = zoo.resolve_model(name) if key == "model" else zoo.resolve_array(name)
    return Path(found) if found else None


def _content(key: str, ref: str) -> str:
    """The digest of the file a model/array/constraints reference names (a path, or a shipped name)."""
    path = Path(ref)
    if not path.is_absolute():
        path = _shipped(key, ref) or path
    st = path.stat()
    return _file_digest(str(path), st.st_mtime_ns, st.st_size)


def point_key(params: dict[str, Any], memo: dict | None = None) -> str:
    """Hash of a point's full inputs (options with file references replaced by their contents);
    ``memo`` keeps the file digests across the points of one run."""
    memo = {} if memo is None else memo
    inputs = {k: list(v) if isinstance(v, tuple) else v for k, v in params.items()}
    for key in ("model", "array", "constraints"):
        if key in inputs:
            if (key, inputs[key]) not in memo:
                memo[key, inputs[key]] = _content(key, inputs[key])
            inputs[key] = {"sha256": memo[key, inputs[key]]}
    blob = json.dumps({"format": CACHE_FORMAT, **code_stamp(), "inputs": inputs}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def well_formed(data: Any) -> bool:
    """Whether a cache entry has the shape ``Outcome.to_json`` writes (else it is recomputed:
    a hand-edited or foreign file must not stop a sweep)."""
    if not isinstance(data, dict):
        return False
    wall = data.get("wall_s")
    text = data.get("result_text")
    summary = data.get("summary")
    if not (isinstance(data.get("status"), str) and isinstance(data.get("error"), str)
            and isinstance(wall, (int, float)) and not isinstance(wall, bool)
            and (text is None or isinstance(text, str)) and (summary is None or isinstance(summary, dict))):
        return False
    if (text is None) != (summary is None):
        return False
    if text is not None:
        try:
            return isinstance(json.loads(text), dict)
        except ValueError:
            return False
    return True


class Cache:
    """Finished points under ``DIR/cache/``; a point that raised is never stored (a rerun retries it).

    Each entry holds the key it was stored under and is sealed (``app.seal``), and ``get`` checks
    both: an entry edited, damaged, or copied over another point's file (a valid entry, but of
    another point) is recomputed, never trusted, and listed in ``rejected``."""

    def __init__(self, root: str | Path):
        self.dir = Path(root) / "cache"
        self._folders: set[Path] = set()  # entry folders this Cache has made or found
        self.rejected: list[Path] = []  # entries found that failed their check (``get``), to be solved again

    def check(self) -> None:
        """SpecError, before any work, when the cache folder is something else (a file)."""
        if self.dir.exists() and not self.dir.is_dir():
            raise SpecError("--out", f"{self.dir} is not a folder (the sweep keeps its cache there): move it away "
                                     f"or choose another {given_as('--out')}")

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str, index: int) -> Outcome | None:
        """The point's entry, or None: none stored, or one that fails its check (then in ``rejected``)."""
        path = self._path(key)
        try:
            text = read_bounded(path, MAX_ENTRY_BYTES).decode("utf-8")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):  # none (a file or folder in the way: ``put`` says so)
            return None
        except NotRegular:  # a FIFO (not read: it would block): no entry, solved and replaced (as reproduce's cache)
            return None
        except TooLarge:  # larger than any entry written (MAX_ENTRY_BYTES): damaged, solved again
            self.rejected.append(path)
            return None
        except (OSError, ValueError):  # unreadable, or not UTF-8
            text = ""
        body = unseal(text)
        try:
            data = json.loads(body) if body is not None else None
        except ValueError:
            data = None
        if not (well_formed(data) and data.get("key") == key):
            self.rejected.append(path)
            return None
        return Outcome.from_json(index, data, cached=True)

    def count(self) -> int:
        """How many entries the folder holds (regular files named as ``_path`` names them; of
        other code too, which this code never reads): a count for a message, not a check."""
        try:
            return sum(1 for p in self.dir.glob("??/*.json") if p.is_file())
        except OSError:
            return 0

    def put(self, key: str, outcome: Outcome) -> None:
        if outcome.status == ERROR:
            return
        target = self._path(key)
        text = seal(json.dumps({"key": key, **outcome.to_json()}))  # one C-encoded string (json.dump to a file: pure Python)
        tmp = None
        try:
            if target.parent not in self._folders:  # made once per run (a file create costs ~0.5 ms here)
                target.parent.mkdir(parents=True, exist_ok=True)
                self._folders.add(target.parent)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp.")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(tmp, new_file_mode())  # mkstemp makes 0600; a cache entry follows the umask
            os.replace(tmp, target)
        except OSError as err:  # e.g. a file where the entry's folder goes, a full disk
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)
            raise SpecError("--out", f"cannot write the cache entry {target}: {err.strerror or err}") from None
