"""The sweep's outputs: one tidy row per point (results.csv), one JSON line per point
(plans.jsonl), a manifest (sweep.json), and the columns computed across points (dp_gap, pareto).

A row holds every swept and fixed key as written in the sweep file, then the answer's figures
copied from the single-run JSON object, unchanged.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterable, Iterator

from ...core.errors import SpecError
from ...core.names import flag_set
from ...frontends.bounded import MAX_ENTRY_BYTES, Refused, open_regular, read_bounded, read_line
from ..output import OutputError, write_text
from .point import ALPHAS_KEY, ANSWERED_BY, FIGURES, NOTE, SPLIT_KEYS, Outcome

SPLIT_FIGURES = ("accelerators", "traffic_elements", "traffic_bytes", "comm_time_s", "compute_s", "step_time_s", "memory_bytes_per_accelerator",
                 "speedup_over_all_I", "energy_J", "energy_efficiency_over_all_I", "objective_value", "bound",
                 "gap")  # what explore --split reports of FIGURES (the energy ones empty where the array models none;
# accelerators: a sweep over array sizes plots against it, as plain rows do: new-user trial 7)
TAIL = ("violations", "approximations", "warnings", "dp_gap", "wall_s", "cached", "error")
ALPHA_PREFIX = "alpha_level"  # a split point's alpha per level: alpha_level0 (top), alpha_level1, ...
NOTE_JOIN = " | "  # between a row's approximation notes or warnings (a note may hold '; ')
NOTE_COLUMNS = ("approximations", "warnings")  # the single run's lists of sentences a row joins with NOTE_JOIN
PROVEN = {"optimal": "yes", "level-optimal": "level-optimal"}  # statuses that may be called Pareto-optimal


def columns(params: Iterable[str], pareto: tuple[str, ...] = (), rows: Iterable[dict[str, Any]] = ()) -> list[str]:
    """The CSV's columns; a sweep with split points adds theirs (alpha per level: as many levels as ``rows`` have)."""
    params, rows = list(params), list(rows)
    split = [*SPLIT_KEYS, *alpha_columns(rows), ANSWERED_BY, NOTE] if "split" in params else []
    only_split = bool(split) and bool(rows) and all(r.get("split") is not None for r in rows)
    figures = SPLIT_FIGURES if only_split else FIGURES  # a sweep of split points alone: no empty plain-run columns
    return [*params, "status", *figures, *split, *TAIL, *(["pareto"] if pareto else [])]


def alpha_columns(rows: Iterable[dict[str, Any]]) -> list[str]:
    levels = max((int(k[len(ALPHA_PREFIX):]) + 1 for r in rows for k in r if k.startswith(ALPHA_PREFIX)), default=0)
    return [f"{ALPHA_PREFIX}{h}" for h in range(levels)]


def make_row(params: Iterable[str], point: dict[str, Any], out: Outcome) -> dict[str, Any]:
    """One point's row: its options as written, its status and its figures (None where absent)."""
    res = out.summary or {}
    params = list(params)
    row: dict[str, Any] = {k: point.get(k) for k in params}
    row["status"] = out.status
    for key in FIGURES:
        row[key] = res.get(key)
    if "split" in params:  # (None on a plain point of a sweep with split points)
        for key in SPLIT_KEYS:
            row[key] = res.get(key)
        for h, alphas in enumerate(res.get(ALPHAS_KEY) or []):
            row[f"{ALPHA_PREFIX}{h}"] = alphas
        row[ANSWERED_BY] = res.get(ANSWERED_BY)
        row[NOTE] = res.get(NOTE)
    row["violations"] = "; ".join(v["constraint"] for v in res.get("violations") or []) or None
    for key in NOTE_COLUMNS:  # warnings: what explore prints as 'warning:' lines (a level beyond the array's, ...)
        row[key] = NOTE_JOIN.join(res.get(key) or []) or None
    row["dp_gap"] = None
    row["wall_s"] = round(res.get("wall_s", out.wall_s), 6)
    row["cached"] = out.cached
    row["error"] = out.error or None
    return row


def note_counts(rows: Iterable[dict[str, Any]], column: str) -> dict[str, int]:
    """Each note of the rows' ``column`` (one of NOTE_COLUMNS: approximations, what a model's
    importer could not follow; warnings, explore's 'warning:' lines) and how many points carry
    it, in order of first appearance."""
    counts: dict[str, int] = {}
    for r in rows:
        for note in dict.fromkeys((r.get(column) or "").split(NOTE_JOIN)):
            if note:
                counts[note] = counts.get(note, 0) + 1
    return counts


def number(v: Any) -> Fraction | None:
    """A cell as an exact number (ints, floats and 'p/q' strings), None when empty or not numeric;
    a string as explore writes numbers: not '1_000' nor ' 5' (Python's forms, never in a results.csv)."""
    if v is None or v == "" or isinstance(v, bool) or (isinstance(v, str) and ("_" in v or v != v.strip())):
        return None
    try:
        return Fraction(v) if isinstance(v, (int, float)) else Fraction(str(v))
    except (ValueError, ZeroDivisionError, OverflowError):  # OverflowError: a float inf
        return None


def add_dp_gap(rows: list[dict[str, Any]], params: Iterable[str]) -> None:
    """dp_gap on each dp row with a valid plan: its objective over the proven optimum of the same
    point (same options, another solver, status optimal) minus 1; None when the sweep has no such optimum."""
    others = [k for k in params if k != "solver"]
    best: dict[str, Fraction] = {}
    for r in rows:
        if r["status"] == "optimal" and r.get("solver") != "dp" and number(r["objective_value"]) is not None:
            best[json.dumps([r.get(k) for k in others], default=str)] = number(r["objective_value"])
    for r in rows:
        if r.get("solver", "dp") != "dp" or r["violations"] or number(r["objective_value"]) is None:
            continue
        opt = best.get(json.dumps([r.get(k) for k in others], default=str))
        if opt:
            r["dp_gap"] = float(number(r["objective_value"]) / opt - 1)


def pareto_labels(rows: list[dict[str, Any]], cols: tuple[str, ...]) -> list[str]:
    """Label each row against the front of ``cols`` (all minimised) among rows with a valid plan:
    'yes' (optimal and not dominated), 'level-optimal' (a DP plan, not dominated: optimal level
    by level only), 'unproven' (not dominated, optimality not proven), 'no' (dominated), ''
    (no valid plan or a missing value)."""
    pts = []
    for i, r in enumerate(rows):
        vals = [number(r.get(c)) for c in cols]
        has_plan = r["status"] in ("optimal", "level-optimal", "feasible")
        if has_plan and not r.get("violations") and all(v is not None for v in vals):
            pts.append((tuple(vals), i))
    labels = [""] * len(rows)
    pts.sort()
    front: list[tuple] = []
    for vals, i in pts:
        dominated = any(all(a <= b for a, b in zip(f, vals)) and f != vals for f in front)
        if not dominated:
            front.append(vals)
        labels[i] = "no" if dominated else PROVEN.get(rows[i]["status"], "unproven")
    return labels


# columns that never hold a number: a Pareto front over them means nothing
NOT_NUMERIC = frozenset({"model", "array", "space", "solver", "objective", "caps", "pins", "forbids", "constraints", "mix", "split",
                         "status", "violations", *NOTE_COLUMNS, "cached", "error", "pareto", ANSWERED_BY, NOTE})


def numeric_columns(available: Iterable[str]) -> list[str]:
    return [c for c in available if c not in NOT_NUMERIC]


def check_pareto_columns(cols: tuple[str, ...], available: list[str]) -> None:
    if len(set(cols)) < 2:
        raise SpecError("--pareto", f"needs two or more different columns, got {','.join(cols) or '(none)'}")
    unknown = [c for c in cols if c not in available]
    if unknown:
        raise SpecError("--pareto", f"unknown column {', '.join(unknown)} (columns: {', '.join(available)})")
    words = [c for c in cols if c in NOT_NUMERIC]
    if words:
        raise SpecError("--pareto", f"column {', '.join(words)} is not numeric (numeric columns: "
                                    f"{', '.join(numeric_columns(available))})")


def check_pareto_by(by: tuple[str, ...], pareto: tuple[str, ...], params: Iterable[str]) -> None:
    """``by``: keys of the sweep (swept or fixed) whose every combination gets its own front."""
    from ...core.names import given_as

    source = given_as("--pareto-by")
    if not by:
        return
    if not pareto:
        raise SpecError(source, f"groups the Pareto front: give {given_as('--pareto')} COL,COL too")
    params = list(params)
    unknown = [c for c in by if c not in params]
    keys = f"(the sweep's keys: {', '.join(params)})"
    results = [c for c in unknown if c in pareto or c in columns(params)]
    if results:  # a result (a --pareto column, step_time_s...), not a key whose values group the points
        kind = f"a {given_as('--pareto')} column (a result)" if set(results) <= set(pareto) else "a result column"
        raise SpecError(source, f"{', '.join(results)} is {kind}, not a sweep key to group by {keys}")
    if unknown:
        raise SpecError(source, f"unknown key {', '.join(unknown)} {keys}")
    both = [c for c in by if c in pareto]
    if both:
        raise SpecError(source, f"{', '.join(both)} is also a {given_as('--pareto')} column")


def pareto_groups(rows: list[dict[str, Any]], by: tuple[str, ...]) -> list[list[int]]:
    """Row indices grouped by their values of ``by`` (one group, every row, without ``by``)."""
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault(json.dumps([r.get(k) for k in by], default=str), []).append(i)
    return list(groups.values())


def finish_rows(rows: list[dict[str, Any]], params: list[str], pareto: tuple[str, ...] = (),
                pareto_by: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Add the columns computed across points: dp_gap, and pareto when asked (a front within
    each combination of the ``pareto_by`` keys' values, else one over every row)."""
    add_dp_gap(rows, params)
    if pareto:
        for group in pareto_groups(rows, pareto_by):
            for i, label in zip(group, pareto_labels([rows[i] for i in group], pareto)):
                rows[i]["pareto"] = label
    return rows


def cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (list, tuple)):
        return ";".join(cell(x) for x in v)
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, float) else str(v)


def csv_text(rows: list[dict[str, Any]], cols: list[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow([cell(r.get(c)) for c in cols])
    return buf.getvalue()


OUTPUT_FILES = ("plans.jsonl", "results.csv", "sweep.json")  # what write_outputs writes into the folder


def check_outputs(out_dir: Path) -> None:
    """SpecError, before any point is solved, when an output file of the folder cannot be written
    (a folder in its place, no permission, a folder that cannot be made): nothing is written then."""
    from ..output import check_folder_writable, check_writable

    try:
        if not out_dir.is_dir():
            check_folder_writable(str(out_dir), "--out")
            return
        for name in OUTPUT_FILES:
            check_writable(str(out_dir / name), "--out")
    except OutputError as err:
        raise SpecError("--out", err.problem) from None


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` atomically; a new file gets 0666 less the umask (as the shell would),
    an existing one keeps its mode (``explorer.app.output.write_text``)."""
    try:
        write_text(str(path), text, "--out")
    except OutputError as err:
        raise SpecError("--out", err.problem) from None


@dataclass(frozen=True)
class Manifest:
    """sweep.json: which sweep a folder holds (shards of one sweep share the digest)."""

    name: str
    source: str
    digest: str
    params: tuple[str, ...]
    total: int  # points in the whole sweep
    shard: str  # "I/N" or ""
    pareto: tuple[str, ...]
    pareto_by: tuple[str, ...] = ()  # keys whose every combination gets its own front

    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # (its tuples are JSON lists)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Manifest":
        return cls(d["name"], d["source"], d["digest"], tuple(d["params"]), d["total"], d["shard"], tuple(d["pareto"]),
                   tuple(d.get("pareto_by") or ()))


def check_destination(out_dir: Path, name: str, force: bool = False) -> None:
    """SpecError when ``out_dir`` holds the outputs of another sweep (its sweep.json names another
    one, or results.csv/plans.jsonl lie there without a sweep.json): writing would replace them.
    The same sweep (same name: an edited file, a rerun, a shard) is fine; ``force`` replaces."""
    if force or not out_dir.is_dir():
        return
    try:
        held = read_json_file(out_dir / "sweep.json").get("name")
    except FileNotFoundError:
        found = [n for n in ("results.csv", "plans.jsonl") if (out_dir / n).exists()]
        if found:
            raise SpecError("--out", f"{out_dir} holds {' and '.join(found)} of no sweep (no sweep.json): choose "
                                     f"another folder, or pass {flag_set('--force')} to replace them") from None
        return
    except (OSError, ValueError, AttributeError):
        held = None
    if held != name:
        what = f"sweep {held!r}" if isinstance(held, str) else "a sweep.json that cannot be read"
        raise SpecError("--out", f"{out_dir} holds the results of {what}, not of sweep {name!r}: choose another "
                                 f"folder, or pass {flag_set('--force')} to replace them")


def plan_line(point: dict[str, Any], out: Outcome) -> str:
    """One line of plans.jsonl; the result's JSON text goes in as it is (no decode, no re-encode)."""
    head = json.dumps({"index": out.index, "point": point, "status": out.status, "error": out.error or None,
                       "cached": out.cached})
    return head[:-1] + ', "result": ' + (out.result_text or "null") + "}"


def write_outputs(out_dir: Path, manifest: Manifest, entries: list[tuple[dict[str, Any], Outcome]],
                  rows: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Write results.csv, plans.jsonl and sweep.json (each atomically) for entries in point order;
    ``rows``: their finished rows, if already made. Returns the rows."""
    if rows is None:
        rows = finish_rows([make_row(manifest.params, p, o) for p, o in entries], list(manifest.params), manifest.pareto,
                           manifest.pareto_by)
    out_dir.mkdir(parents=True, exist_ok=True)
    held = _held(out_dir)
    plots = [n for n in held.get(PLOTS_KEY, []) if _plot_name(n)] if held.get("digest") == manifest.digest else []
    for stale in stale_plots(out_dir, manifest.digest):  # drawn from another grid's results: no longer true
        stale.unlink(missing_ok=True)
    write_atomic(out_dir / "plans.jsonl", "".join(plan_line(p, o) + "\n" for p, o in entries))
    write_atomic(out_dir / "results.csv", csv_text(rows, columns(manifest.params, manifest.pareto, rows)))
    write_atomic(out_dir / "sweep.json", json.dumps({**manifest.to_json(), PLOTS_KEY: plots}, indent=2) + "\n")
    return rows


PLOTS_KEY = "plots"  # sweep.json: the images explore plot drew into the folder, by name


def _held(out_dir: Path) -> dict[str, Any]:
    """The folder's sweep.json as a mapping ({} when there is none or it cannot be read)."""
    try:
        held = read_json_file(out_dir / "sweep.json")
    except (OSError, ValueError):
        return {}
    return held if isinstance(held, dict) else {}


def _plot_name(name: Any) -> bool:
    """A name explore plot records: an image file directly in the folder (no path: nothing outside it)."""
    return isinstance(name, str) and Path(name).name == name and Path(name).suffix.lower() in (".png", ".svg")


def stale_plots(out_dir: Path, digest: str) -> list[Path]:
    """The images explore plot drew into ``out_dir`` (sweep.json lists them) from the results of
    another grid than ``digest``'s, still there: a sweep that replaces those results removes them
    (only these: files it did not draw are never touched)."""
    held = _held(out_dir)
    if not held or held.get("digest") == digest:
        return []
    return [out_dir / n for n in held.get(PLOTS_KEY, []) if _plot_name(n) and (out_dir / n).is_file()]


def held_sweep_name(out_dir: Path) -> str | None:
    """The name of the sweep whose results ``out_dir`` holds (its sweep.json), None without one."""
    name = _held(out_dir).get("name")
    return name if isinstance(name, str) else None


def record_plot(folder: Path, image: Path) -> None:
    """List ``image`` in ``folder``'s sweep.json when explore plot drew it into the folder itself."""
    held = _held(folder)
    if not held or image.parent.resolve() != folder.resolve() or not _plot_name(image.name):
        return
    names = [n for n in held.get(PLOTS_KEY, []) if _plot_name(n)]
    if image.name not in names:
        write_atomic(folder / "sweep.json", json.dumps({**held, PLOTS_KEY: [*names, image.name]}, indent=2) + "\n")


def read_json_file(path: Path) -> Any:
    """A JSON file a sweep wrote (sweep.json): a regular file of at most ``MAX_ENTRY_BYTES``
    (``bounded``: a FIFO is refused, not waited on); OSError (``Refused`` among them) or ValueError."""
    return json.loads(read_bounded(path, MAX_ENTRY_BYTES))


def file_lines(path: Path) -> Iterator[bytes]:
    """The lines of a file a sweep wrote (plans.jsonl, results.csv), one at a time from a regular
    file (``bounded``: each at most ``MAX_LINE_BYTES``); ``Refused`` names the file (``where``)."""
    try:
        with open_regular(path) as f:
            while line := read_line(f):
                yield line
    except Refused as err:
        err.where = str(path)
        raise


def read_entries(folder: Path) -> tuple[Manifest, list[tuple[dict[str, Any], Outcome]]]:
    """A finished sweep folder's manifest and its (point, outcome) pairs from plans.jsonl, read a line at a time."""
    plans = folder / "plans.jsonl"
    try:
        manifest = Manifest.from_json(read_json_file(folder / "sweep.json"))
        entries = [_entry(plans, n, line) for n, line in enumerate(file_lines(plans), 1)]
    except FileNotFoundError as err:
        if not folder.exists():
            raise SpecError(str(folder), "no such folder") from None
        raise SpecError(str(folder), f"not a sweep output folder (no {Path(err.filename).name})") from None
    except Refused as err:
        raise SpecError(err.where or str(folder), str(err)) from None
    except SpecError:
        raise
    except (OSError, ValueError, KeyError) as err:
        raise SpecError(str(folder), f"cannot read the sweep output: {err}") from None
    return manifest, entries


def _entry(plans: Path, n: int, line: bytes) -> tuple[dict[str, Any], Outcome]:
    """Line ``n`` of plans.jsonl as (point, outcome); SpecError naming the file and line."""
    try:
        d = json.loads(line)
        return d["point"], Outcome.make(d["index"], d["result"], d["status"], d["error"] or "",
                                        (d["result"] or {}).get("wall_s", 0.0), d["cached"])
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise SpecError(f"{plans}", f"line {n}: not a sweep result ({err})") from None


def read_rows(folder: Path) -> tuple[list[str], list[dict[str, str]]]:
    """results.csv as (columns, rows of strings), read a line at a time; a file cut short (no final
    newline, a row with fewer or more cells than the header, fewer rows than plans.jsonl has points)
    is an error, and so is one that is not a regular file (a FIFO) or has a line over ``MAX_LINE_BYTES``."""
    path = folder / "results.csv" if folder.is_dir() else folder
    rerun = "rerun explore sweep (cached points are reused) or explore sweep merge"
    try:
        if not _ends_a_line(path):
            raise SpecError(str(path), f"truncated (the last line is cut short): {rerun}")
        reader = csv.DictReader(line.decode("utf-8") for line in file_lines(path))
        rows = []
        for n, r in enumerate(reader, 2):
            if None in r or None in r.values():
                raise SpecError(str(path), f"line {n} does not have the header's {len(reader.fieldnames or [])} cells: "
                                           f"truncated or edited; {rerun}")
            rows.append(r)
    except FileNotFoundError:
        raise SpecError(str(folder), "no results.csv here (run explore sweep first)") from None
    except csv.Error as err:
        raise SpecError(str(path), f"not a results table ({err}): {rerun}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise SpecError(str(path), f"cannot read: {err}") from None
    points = _count_lines(path.parent / "plans.jsonl")
    if points is not None and points != len(rows):
        raise SpecError(str(path), f"{len(rows)} rows, but plans.jsonl beside it holds {points} points: truncated or "
                                   f"written by another run; {rerun}")
    return list(reader.fieldnames or []), rows


def _ends_a_line(path: Path) -> bool:
    """Whether a regular file is empty or ends in a newline (``bounded.NotRegular`` when it is not one)."""
    with open_regular(path) as f:
        if f.seek(0, io.SEEK_END) == 0:
            return True
        f.seek(-1, io.SEEK_END)
        return f.read(1) == b"\n"


def _count_lines(path: Path) -> int | None:
    """Lines of a file (None when it is not there), read in blocks."""
    try:
        with open_regular(path) as f:  # a FIFO: none (``bounded``), not waited on
            return sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))
    except OSError:
        return None
