"""What a cache of results keys on of the code that wrote it (``code_stamp``): the explorer's
version and a digest of its code. Here, beside both caches (the sweep's and ``explore
reproduce``'s), so that neither depends on the other.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from .. import __version__


def tree_digest(roots) -> str:
    """sha256 over every .py file under ``roots`` (paths relative to their root, then contents),
    in a fixed order; a file reached from two roots counts once."""
    files: dict[Path, str] = {}
    for i, root in enumerate(roots):
        root = Path(root).resolve()
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" not in path.parts:
                files.setdefault(path.resolve(), f"{i}/{path.relative_to(root).as_posix()}")
    h = hashlib.sha256()
    for path, name in sorted(files.items(), key=lambda kv: kv[1]):
        data = path.read_bytes()
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


@lru_cache(maxsize=1)
def code_digest() -> str:
    """The digest of this explorer's code (``tree_digest`` of the explorer package and of
    explorer.solvers, which an editable install keeps in a folder of its own); computed once."""
    from .. import solvers

    package = Path(__file__).resolve().parents[1]  # explorer/app/code_stamp.py -> explorer/
    return tree_digest((package, Path(solvers.__file__).resolve().parent))


def code_stamp() -> dict[str, str]:
    """What a cache key holds of the code that wrote the entry: the explorer's version and
    ``code_digest`` (a change of either misses every entry). Shared by every cache of results:
    the sweep cache (``sweep.cache.point_key``) and ``explore reproduce``'s point cache."""
    return {"version": __version__, "code": code_digest()}
