"""``explore sweep merge``: join shard outputs of one sweep, checking each plans.jsonl record
before it goes in: an index in range and met once (an identical copy is dropped, a different one
refused), a point of the sweep's keys, a status its result agrees with (optimal: objective ==
bound), its approximations and warnings lists of sentences, and, the merge complete, the points
in index order hashing to sweep.json's digest (the hash the sweep file's points have), so an
edited point or total is refused, naming the file and line where the sweep file can be read to
compare."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ...core.errors import SpecError
from .table import NOTE_COLUMNS, Manifest, read_entries


@dataclass(frozen=True)
class Merged:
    manifest: Manifest
    entries: list  # (point, Outcome) in point order
    missing: list[int]  # point indices no folder holds
    dropped: int = 0  # identical copies of a record (the same shard given twice, a line repeated)


def points_digest(points: list[dict[str, Any]]) -> str:
    """The hash a sweep's points (in index order, as plans.jsonl writes them) give: ``Sweep.digest``'s."""
    return hashlib.sha256(json.dumps(points, sort_keys=True).encode()).hexdigest()[:16]


def merge_entries(folders: list[Path]) -> Merged:
    """Join shard outputs of one sweep (module docstring); SpecError naming the file and line of a bad record."""
    manifest, by_index, where, dropped = None, {}, {}, 0
    for folder in folders:
        m, entries = read_entries(folder)
        if manifest is not None and m.digest != manifest.digest:
            raise SpecError(str(folder), f"holds sweep {m.name!r} ({m.digest}), not {manifest.name!r} ({manifest.digest})")
        manifest = manifest or m
        for n, (point, out) in enumerate(entries, 1):
            at = f"{folder / 'plans.jsonl'}, line {n}"
            _check_record(at, manifest, point, out)
            if out.index in by_index:
                if _same(by_index[out.index], (point, out)):
                    dropped += 1
                    continue
                raise SpecError(at, f"point {out.index} again, unlike its record at {where[out.index]}: "
                                    "two answers for one point; rerun that point's shard")
            by_index[out.index], where[out.index] = (point, out), at
    if manifest is None:
        raise SpecError("merge", "no folders given")
    entries = [by_index[i] for i in sorted(by_index)]
    _check_total(manifest, entries, where, folders)
    missing = [i for i in range(manifest.total) if i not in by_index]
    if not missing:
        _check_points(manifest, entries, where, folders)
    return Merged(replace(manifest, shard=""), entries, missing, dropped)


def _check_record(at: str, manifest: Manifest, point: Any, out) -> None:
    """One record by itself: an integer index, a point of the sweep's keys, a status its result agrees with."""
    if type(out.index) is not int or out.index < 0:
        raise SpecError(at, f"index: {out.index!r} is not a point index (0, 1, ...)")
    if not isinstance(point, dict) or not set(point) <= set(manifest.params):
        extra = sorted(set(point) - set(manifest.params)) if isinstance(point, dict) else None
        raise SpecError(at, "point: " + (f"keys {', '.join(map(str, extra))} are not the sweep's" if extra
                                         else "not a mapping of the sweep's keys"))
    result = out.result
    if result is None:
        return
    for key in NOTE_COLUMNS:  # lists of sentences the row joins (a number there raised a TypeError)
        notes = result.get(key)
        if notes is not None and not (isinstance(notes, list) and all(isinstance(n, str) for n in notes)):
            raise SpecError(at, f"result.{key}: {json.dumps(notes)} is not a list of sentences: an edited record")
    if result.get("status") != out.status:
        raise SpecError(at, f"status: {out.status!r}, but its result says {result.get('status')!r}: an edited record")
    value, bound = result.get("objective_value"), result.get("bound")
    if out.status == "optimal" and value is not None and bound is not None and value != bound:
        raise SpecError(at, f"status: optimal, but its objective_value {value} is not its bound {bound} "
                            "(optimal means they meet): an edited record")


def _same(held, new) -> bool:
    (p, o), (q, r) = held, new
    return p == q and o.status == r.status and o.error == r.error and o.result == r.result


def _check_total(manifest: Manifest, entries, where: dict, folders) -> None:
    """sweep.json's total against the records: every index below it; a total edited while the
    points (0 .. n-1, all there) still hash to the digest is the total's fault."""
    indices = [o.index for _, o in entries]
    if indices == list(range(len(entries))) and len(entries) != manifest.total and \
            points_digest([p for p, _ in entries]) == manifest.digest:
        raise SpecError(f"{folders[0] / 'sweep.json'}", f"total: {manifest.total}, but the sweep's "
                        f"{len(entries)} points (their hash is its digest {manifest.digest}) are all here: an edited total")
    for i in indices:
        if i >= manifest.total:
            raise SpecError(where[i], f"index: {i} is beyond the sweep's {manifest.total} points (sweep.json's total)")


def _check_points(manifest: Manifest, entries, where: dict, folders) -> None:
    """Every point present: they must hash to the digest. Where not, the record that differs from
    the sweep file's point is named when the file (sweep.json's source) reads with that digest."""
    if points_digest([p for p, _ in entries]) == manifest.digest:
        return
    for i, want in enumerate(_spec_points(manifest)):
        if entries[i][0] != want:
            raise SpecError(where[i], f"point: {json.dumps(entries[i][0])} is not the sweep's point {i}, "
                                      f"{json.dumps(want)} ({manifest.source}): an edited record")
    names = ", ".join(str(f / "plans.jsonl") for f in folders)
    raise SpecError(names, f"the records' points are not those of sweep {manifest.name!r} (their hash is not its digest "
                           f"{manifest.digest}): an edited point or a record of another sweep; rerun its shard")


def _spec_points(manifest: Manifest) -> list[dict[str, Any]]:
    """The sweep file's points when its source reads from here with the manifest's digest, else []."""
    from .spec import load_sweep

    try:
        sw = load_sweep(manifest.source)
    except (SpecError, OSError, ValueError):
        return []
    return [p.as_dict() for p in sw.points] if sw.digest == manifest.digest else []
