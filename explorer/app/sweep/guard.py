"""A sweep never writes over its own inputs: every file it would write, replace or remove in
``--out`` (results.csv, plans.jsonl, sweep.json, the plots of an older grid) is compared, by
identity (``os.path.samefile``: a hard link or a symlink counts), with the sweep file and every
model, array and constraints file its points read. Such a destination is refused, with or without
``--force``, before anything is solved or written (trial 12, finding 5: ``--force`` replaced the
sweep file named results.csv with the results)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from ...core.errors import SpecError
from ...frontends import zoo
from .spec import DEFAULTS, PATH_KEYS, SPLIT_DEFAULTS, Sweep, resolve_paths
from .table import OUTPUT_FILES, stale_plots


def _written_refs(sw: Sweep) -> Iterator[tuple[str, str]]:
    """(key, value) of every file reference the sweep's points hold or default to, once each."""
    seen: set[tuple[str, str]] = set()
    defaults = [(k, d[k]) for d in (DEFAULTS, SPLIT_DEFAULTS) for k in PATH_KEYS if d.get(k)]
    for pairs in [defaults, *(p.params for p in sw.points)]:
        for key, value in pairs:
            if key in PATH_KEYS and isinstance(value, str) and (key, value) not in seen:
                seen.add((key, value))
                yield key, value


def input_files(sw: Sweep) -> list[tuple[str, str]]:
    """(what, path) of every file the sweep reads: the sweep file, then each model, array and
    constraints file its points name (a shipped name: the shipped file). A reference that does not
    resolve is left out (its points are invalid rows; nothing reads it)."""
    out = [("the sweep file", sw.source)] if sw.source else []
    memo: dict = {}
    for key, value in _written_refs(sw):
        try:
            ref = resolve_paths({key: value}, sw.base_dir, memo)[key]
        except (SpecError, OSError):
            continue
        if not Path(ref).is_absolute():  # a shipped name
            found = zoo.resolve_model(ref) if key == "model" else zoo.resolve_array(ref)
            if found is None:
                continue
            ref = str(found)
        out.append((f"the {key} file this sweep reads ({key}: {value})", ref))
    return out


def _same(a: Path | str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def check_not_inputs(out_dir: Path, sw: Sweep) -> None:
    """SpecError naming ``--out`` and the file when an output the sweep writes, replaces or
    removes in ``out_dir`` is one of its inputs (the same file, through any name)."""
    if not out_dir.is_dir():
        return
    targets = [out_dir / name for name in OUTPUT_FILES] + stale_plots(out_dir, sw.digest)
    targets = [t for t in targets if os.path.lexists(t)]
    if not targets:
        return
    for what, ref in input_files(sw):
        for target in targets:
            if _same(target, ref):
                alias = "" if os.path.abspath(target) == os.path.abspath(ref) else f" {ref}"
                act = (f"writing the sweep's {target.name} there would replace it" if target.name in OUTPUT_FILES
                       else "the sweep would remove it (a plot of an older grid)")
                raise SpecError("--out", f"{target} is {what}{alias}; {act} (choose another folder)")
