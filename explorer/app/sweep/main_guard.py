"""Whether the running script calls us outside ``if __name__ == "__main__":``. Dask's local
cluster starts its workers by spawning, and so does the local pool under the spawn or forkserver
start method (forkserver: Linux's default from Python 3.14); a spawned process first re-runs the
calling script (as ``__mp_main__``): a script that starts such a sweep at its top level,
unguarded, would start one again in every worker, which fails ("Nanny failed to start", a dozen
tracebacks; trial 14, finding 3). The sweep refuses such a call up front instead. Described in
the manual: docs/sweeps.md, "Python API"."""

from __future__ import annotations

import ast
import sys
from functools import lru_cache
from pathlib import Path


def _mentions_name(test: ast.expr) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "__name__" for n in ast.walk(test))


@lru_cache(maxsize=8)
def _guarded_spans(path: str, mtime_ns: int) -> tuple[tuple[int, int], ...] | None:
    """The line spans of every ``if`` on ``__name__`` at the top level of the file (its body and
    else), or None when the file cannot be read or parsed (then nothing is refused)."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"), path)
    except (OSError, ValueError, SyntaxError):
        return None
    return tuple((node.body[0].lineno, (node.orelse or node.body)[-1].end_lineno or node.lineno)
                 for node in ast.walk(tree) if isinstance(node, ast.If) and _mentions_name(node.test))


def unguarded_call() -> tuple[str, int] | None:
    """(file, line) of the running ``__main__`` script's top-level statement that led here, when
    that statement is not under an ``if`` on ``__name__``; None when it is, or when there is no such
    script (an interactive session, ``python -c``, a notebook, another thread)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or not path:
        return None
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "<module>" and frame.f_globals is vars(main)):
        frame = frame.f_back
    if frame is None:
        return None
    try:
        spans = _guarded_spans(str(Path(path).resolve()), Path(path).stat().st_mtime_ns)
    except OSError:
        return None
    line = frame.f_lineno
    if spans is None or any(lo <= line <= hi for lo, hi in spans):
        return None
    return path, line
