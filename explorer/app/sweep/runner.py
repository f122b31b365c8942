"""Run a sweep: pick its points (or one shard), solve them on an engine through the cache, and
write the outputs. The library side of ``explore sweep``; ``explorer.api.sweep`` calls it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator

from ...core.errors import SpecError, shown
from .cache import Cache
from .engine import Progress, make_engine, run_points
from .guard import check_not_inputs
from .lock import folder_lock
from .spec import MAX_POINTS, Sweep, load_sweep, parse_sweep
from .table import Manifest, check_destination, check_outputs, check_pareto_by, check_pareto_columns, columns, finish_rows, make_row, write_outputs


def as_sweep(spec: Sweep | str | Path | dict, max_points: int = MAX_POINTS) -> Sweep:
    """A Sweep from a sweep file path, a parsed mapping (paths relative to the working folder) or a Sweep."""
    if isinstance(spec, Sweep):
        return spec
    if isinstance(spec, dict):
        return parse_sweep(spec, "sweep", Path.cwd(), max_points)
    return load_sweep(spec, max_points)


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """'I/N' (0 <= I < N) -> (I, N)."""
    if text is None:
        return None
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise SpecError("--shard", f"must be I/N (e.g. 0/4), got {shown(text)}") from None
    if n < 1 or not 0 <= i < n:
        raise SpecError("--shard", f"needs 0 <= I < N, got {shown(text)}")
    return i, n


def check_out(out: str | Path | None) -> None:
    """An empty --out is refused (as ``explore --output ''``), not taken for the working folder."""
    if isinstance(out, str) and not out.strip():
        raise SpecError("--out", "must not be empty (a folder for the sweep's outputs)")


def check_request(spec, out, shard, pareto, max_points: int = MAX_POINTS, force: bool = False,
                  pareto_by: tuple[str, ...] = ()) -> tuple[Sweep, tuple[int, int] | None, tuple[str, ...]]:
    """Validate a sweep request before any work: (the sweep, the shard, the Pareto columns).
    ``force``: replace the outputs of another sweep found in ``out``; ``pareto_by``: keys whose
    every combination gets its own front."""
    check_out(out)
    sw = as_sweep(spec, max_points)
    pareto = tuple(pareto)
    if pareto:
        check_pareto_columns(pareto, columns(sw.columns, rows=[p.as_dict() for p in sw.points]))
    check_pareto_by(tuple(pareto_by), pareto, sw.columns)
    cut = parse_shard(shard) if isinstance(shard, str) or shard is None else shard
    if out is not None:
        check_folder(Path(out), sw, force)
    return sw, cut, pareto


def check_folder(out: Path, sw: Sweep, force: bool) -> None:
    """SpecError when the sweep cannot write its outputs into ``out`` (checked before any work, and
    again once the folder's lock is held: another run may have written there meanwhile)."""
    if out.exists() and not out.is_dir():
        raise SpecError("--out", f"{out} exists and is not a folder")
    Cache(out).check()
    check_outputs(out)
    check_not_inputs(out, sw)  # with or without force: never over the sweep's own inputs
    check_destination(out, sw.name, force)


def run_sweep(spec: Sweep | str | Path | dict, out: str | Path | None = None, *, workers: int | None = None,
              engine: str = "local", scheduler: str | None = None, shard: str | tuple[int, int] | None = None,
              pareto: tuple[str, ...] = (), progress: Callable[[Progress], None] | None = None,
              force: bool = False, pareto_by: tuple[str, ...] = ()) -> Iterator[dict[str, Any]]:
    """Yield one row per point in point order; with ``out``, cache there and write the outputs at
    the end, holding the folder's lock throughout (``lock.folder_lock``: another run writing there
    is refused, SpecError, before this one writes anything; a killed run's lock file is taken
    over, its pid in every ``Progress.took_over``)."""
    sw, cut, pareto = check_request(spec, out, shard, pareto, force=force, pareto_by=pareto_by)
    if out is None:
        yield from _run(sw, None, cut, pareto, tuple(pareto_by), make_engine(engine, workers, scheduler), progress)
        return
    out_dir = Path(out)
    eng = make_engine(engine, workers, scheduler)  # an unreachable scheduler fails before DIR exists
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        eng.close()
        raise SpecError("--out", f"cannot create {out_dir}: {err.strerror or err}") from None
    try:
        with folder_lock(out_dir) as dead:
            check_folder(out_dir, sw, force)  # as it is now that no other run can write there
            yield from _run(sw, out_dir, cut, pareto, tuple(pareto_by), eng, _telling(progress, dead))
    finally:
        eng.close()


def _telling(progress: Callable[[Progress], None] | None, dead: int | None) -> Callable[[Progress], None] | None:
    """``progress``, each report naming ``dead``, the pid of the killed run whose lock file was taken over."""
    if progress is None or dead is None:
        return progress
    return lambda p: progress(replace(p, took_over=dead))


def _run(sw: Sweep, out_dir: Path | None, cut, pareto, pareto_by, eng, progress) -> Iterator[dict[str, Any]]:
    """``run_sweep``'s work, its checks done (and the folder locked)."""
    points = sw.shard(*cut) if cut else sw.points
    cache = Cache(out_dir) if out_dir is not None else None
    entries, rows = [], []
    try:
        by_index = {p.index: p.as_dict() for p in points}
        for outcome in run_points(points, sw.base_dir, eng, cache, progress):
            point = by_index[outcome.index]
            row = make_row(sw.columns, point, outcome)
            entries.append((point, outcome))
            rows.append(row)
            yield row
    finally:
        eng.close()
    finish_rows(rows, list(sw.columns), pareto, pareto_by)  # the yielded dicts gain dp_gap and pareto
    if out_dir is not None:
        manifest = Manifest(sw.name, sw.source, sw.digest, sw.columns, len(sw.points),
                            f"{cut[0]}/{cut[1]}" if cut else "", pareto, pareto_by)
        write_outputs(out_dir, manifest, entries, rows)
