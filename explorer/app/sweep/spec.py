"""The sweep file: a grid of single-run options, fixed options and explicit points.

Described in the manual: docs/sweeps.md (the sweep file, its keys and their meaning).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterator

from ...core.array import MAX_LEVELS, MIN_LEVELS
from ...core.errors import SpecError, first_problems, is_int, shown
from ...core.names import Frontend, given_as, is_option, named_for, running
from ...core.objective import Objective
from ...core.partition import Space
from ...core.solution import time_limit_problem
from ...core.uneven import MAX_ALPHA_GRID, MIN_ALPHA_GRID, FreeAlphas
from ...core.units import format_count, parse_amount, plural
from ...frontends import NETWORK_FORMATS, zoo
from ...frontends.fields import MAX_INT, NAME_RULE, is_version, pos_number_problem
from ...frontends.yamlio import load_yaml_file
from ...solvers import MAX_SEED, REGISTRY
from .mix import check_count, check_mix, is_count_key, point_array

TOP_KEYS = ("version", "name", "description", "grid", "fixed", "points", "reference")
PATH_KEYS = ("model", "array", "constraints")  # values that may name a file
# What a point gets for a key nobody sets: the defaults of a single ``explore`` run.
# The most points a sweep may have unless the caller raises it (``--max-points``): the points
# are built and validated up front, and a grid of millions would take minutes and gigabytes.
MAX_POINTS = 100_000
MAX_SHOWN_ERRORS = 10  # a sweep file's problems listed in one message; the rest are counted

DEFAULTS: dict[str, Any] = {"model": zoo.DEFAULT_MODEL, "array": zoo.DEFAULT_ARRAY, "space": "hypar", "solver": "dp",
                            "objective": "traffic"}
# a split point's (explore --split's): the step time; no solver (the split's own: the joint solver for
# optimal, the even DP's types for the others), ``solver: dp`` the level DP (``app.split.check_split_solver``)
SPLIT_DEFAULTS: dict[str, Any] = {**DEFAULTS, "objective": "time", "solver": None}


def defaults_for(point: dict[str, Any]) -> dict[str, Any]:
    """The defaults of a point's left-out keys: a split point's objective is the step time."""
    return SPLIT_DEFAULTS if point.get("split") is not None else DEFAULTS


def _check_str(v: Any) -> str | None:
    if not isinstance(v, str) or not v.strip():
        return f"must be a non-empty string, got {shown(v)}"
    return None


def _check_choice(choices: tuple[str, ...]) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        if v not in choices:
            return f"must be one of {', '.join(choices)}, got {shown(v)}"
        return None

    return check


def _check_int_from(low: int, word: str) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        if not is_int(v) or v < low:
            return f"must be a {word} integer, got {shown(v)}"
        if v > MAX_INT:  # as every spec's integers: said up front, not an invalid row per point
            return f"must be at most 2^40 = {MAX_INT:,}, got {format_count(v)}"
        return None

    return check


_check_pos_int, _check_nonneg_int = _check_int_from(1, "positive"), _check_int_from(0, "non-negative")


def _check_levels(v: Any) -> str | None:
    if not is_int(v) or not MIN_LEVELS <= v <= MAX_LEVELS:
        return f"must be an integer from {MIN_LEVELS} to {MAX_LEVELS}, got {shown(v)}"
    return None


def _check_seed(v: Any) -> str | None:
    if not is_int(v) or not 0 <= v <= MAX_SEED:
        return f"must be an integer from 0 to {MAX_SEED:,}, got {shown(v) if not is_int(v) else format_count(v)}"
    return None


def _check_str_list(v: Any) -> str | None:
    if not isinstance(v, list) or not all(isinstance(x, str) and x.strip() for x in v):
        return f"must be a list of strings, got {shown(v)}"
    return None


def _check_caps(v: Any) -> str | None:
    bad = _check_str_list(v)
    if bad:
        return bad.replace("list of strings", "list of LEVEL=AMOUNT strings")
    for x in v:
        level, sep, amount = x.partition("=")
        if not sep:
            return f"{shown(x)} is not LEVEL=AMOUNT (e.g. 0=2GB or 1=5ms)"
        try:
            int(level.strip())
            parse_amount(amount.strip())
        except ValueError as err:
            return f"{shown(x)}: " + (f"level {shown(level.strip())} is not an integer" if "invalid literal" in str(err) else str(err))
    return None


def _check_bandwidth(v: Any) -> str | None:
    if isinstance(v, list):
        if not v:
            return f"must be a positive number or a non-empty list of positive numbers (one per level), got {shown(v)}"
        bad = [(i, p) for i, p in enumerate(map(pos_number_problem, v)) if p]
        return (f"must be a positive number or a non-empty list of them (one per level); level {bad[0][0]}'s "
                f"bandwidth {bad[0][1]}") if bad else None
    return pos_number_problem(v)


def _check_alpha_grid(v: Any) -> str | None:
    if not is_int(v) or not MIN_ALPHA_GRID <= v <= MAX_ALPHA_GRID:
        return f"must be an integer from {MIN_ALPHA_GRID} to {MAX_ALPHA_GRID} (alphas are multiples of 1/N), got {shown(v)}"
    return None


# key -> validator of one value (None when fine, else the problem)
KEYS: dict[str, Callable[[Any], str | None]] = {
    "model": _check_str,
    "array": _check_str,
    "levels": _check_levels,
    "batch": _check_pos_int,
    "space": _check_choice(tuple(s.value for s in Space)),
    "solver": _check_choice(tuple(REGISTRY)),
    "objective": _check_choice(tuple(o.value for o in Objective)),
    "time_limit": time_limit_problem,  # explore --time-limit's check and message, split or not
    "seed": _check_seed,
    "memory_GiB": pos_number_problem,
    "weight_copies": _check_nonneg_int,
    "caps": _check_caps,
    "pins": _check_str_list,
    "forbids": _check_str_list,
    "constraints": _check_str,
    "link_bandwidth_GBps": _check_bandwidth,
    "peak_TFLOPS": pos_number_problem,
    "mix": check_mix,
    "split": lambda v: _check_choice(split_methods())(v),
    "alpha_grid": _check_alpha_grid,
    "free": _check_choice(tuple(f.value for f in FreeAlphas)),
    "seq": _check_pos_int,
    "grid_only": lambda v: None if isinstance(v, bool) else f"must be true or false, got {shown(v)}",
}
COUNT_KEY = "accelerators_KIND"  # accelerators_<kind>: how many of that kind (sweep.mix)
# a split point (``explore --split``) takes no seed (CP-SAT's seed of the even split's model); a solver
# that does not fit its split (``app.split.check_split_solver``: brute, exact, cpsat or dp with split
# optimal or proportional; every solver with equal; dp with levels) makes the point an invalid row, and
# is refused up front only when no split point of the sweep fits (_check_split)
ONLY_WITH_SPLIT = ("alpha_grid", "grid_only", "free")


def split_methods() -> tuple[str, ...]:
    """``explore split --split``'s methods (imported on use: explore split pulls in numpy)."""
    from ..split import Split

    return tuple(s.value for s in Split)


def validator(key: Any) -> Callable[[Any], str | None] | None:
    """The check of one value of ``key`` (None: not a point key)."""
    if isinstance(key, str) and key in KEYS:
        return KEYS[key]
    return check_count if is_count_key(key) else None


def allowed_keys() -> str:
    return ", ".join([*KEYS, COUNT_KEY])


@dataclass(frozen=True)
class Point:
    """One point of a sweep: its index in grid order and its options as written in the file."""

    index: int
    params: tuple[tuple[str, Any], ...]  # (key, value) in column order; lists become tuples

    def get(self, key: str, default: Any = None) -> Any:
        return dict(self.params).get(key, default)

    def as_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.params}


@dataclass(frozen=True)
class Sweep:
    name: str
    description: str
    source: str  # the sweep file ("" when built from a mapping)
    base_dir: str  # relative paths resolve against this folder
    columns: tuple[str, ...]  # the swept and fixed keys, in the order the file gives them
    points: tuple[Point, ...]
    digest: str  # hash of the parsed sweep: shards of one sweep share it

    def shard(self, i: int, n: int) -> tuple[Point, ...]:
        """Every n-th point starting at point i (0 <= i < n): one job of an n-job array."""
        return tuple(p for p in self.points if p.index % n == i)


def _freeze(v: Any) -> Any:
    return tuple(_freeze(x) for x in v) if isinstance(v, list) else v


def _check_mapping(data: Any, where: str, errors: list[str], allow_lists: bool) -> dict[str, Any]:
    """Validate a mapping of point keys; in a grid every value is a non-empty list of values."""
    if not isinstance(data, dict):
        errors.append(f"{where}: must be a mapping of {allowed_keys()}")
        return {}
    out = {}
    for key, value in data.items():
        path = f"{where}.{key}"
        check = validator(key)
        if check is None:
            errors.append(f"{path}: unknown key (allowed: {allowed_keys()})")
            continue
        values = value if allow_lists else [value]
        if allow_lists and (not isinstance(value, list) or not value):
            errors.append(f"{path}: must be a non-empty list of values, got {shown(value)}")
            continue
        for i, v in enumerate(values):
            bad = check(v)
            if bad:
                errors.append(f"{path}[{i}]: {bad}" if allow_lists else f"{path}: {bad}")
        if allow_lists:
            _check_repeats(values, path, errors)
        out[key] = value
    return out


def _same(v: Any) -> str:
    """A value as compared for repeats: 1 and 1.0 are one number."""
    return _hashable(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v)


def _check_repeats(values: list, path: str, errors: list[str]) -> None:
    """A grid list holding a value twice would compute every point with it twice: refused."""
    first: dict[str, int] = {}
    for i, v in enumerate(values):
        j = first.setdefault(_same(v), i)
        if j != i:
            errors.append(f"{path}[{i}]: {shown(v)} repeats {path}[{j}] (each point would be computed twice)")


def _check_duplicates(merged: list[dict[str, Any]], n_grid: int, errors: list[str]) -> None:
    """A listed point equal to a grid point or to another listed one (after fixed and the
    defaults) would be computed twice and make the sweep's plots ambiguous: refused."""
    first: dict[str, int] = {}
    for i, m in enumerate(merged):
        j = first.setdefault(_hashable({k: _same(v) for k, v in m.items()}), i)
        if j != i:
            other = f"grid point {j}" if j < n_grid else f"points[{j - n_grid}]"
            written = ", ".join(f"{k}={v}" for k, v in m.items())
            errors.append(f"points[{i - n_grid}]: the same point as {other} ({written}): give it once")


def _resolve_ref(key: str, value: str, base_dir: Path) -> tuple[str | None, str | None]:
    """(resolved reference, problem): a zoo name stays a name, a path becomes absolute."""
    suffixes = tuple(NETWORK_FORMATS)
    looks_like_path = "/" in value or "\\" in value or value.endswith(suffixes)
    candidate = Path(value) if Path(value).is_absolute() else base_dir / value
    if looks_like_path or key == "constraints" or candidate.exists():
        if candidate.is_dir():
            return None, f"{str(candidate)!r} is a directory, not a file"
        if not candidate.is_file():
            return None, f"no such file {str(candidate)!r}"
        return str(candidate.resolve()), None
    found = zoo.resolve_model(value) if key == "model" else zoo.resolve_array(value)
    if found is None and key == "array" and zoo.resolve_cluster(value) is not None:
        return None, cluster_refused(value)
    if found is None:
        known = ", ".join(zoo.zoo_files() if key == "model" else zoo.array_files())
        return None, f"unknown {key} {shown(value)} (known: {known}; or a path to a file)"
    return value, None


def cluster_refused(value: str) -> str:
    """Why a sweep refuses a GPU cluster as its array (one line)."""
    plain = value if value.isprintable() and len(value) <= 80 and " " not in value else "CLUSTER"
    return (f"{shown(value)} is a GPU cluster: sweeps take accelerator arrays ({', '.join(zoo.array_files())}); "
            f"a GPU cluster is planned by {_single_run(plain)} (docs/llm-training.md)")


def _single_run(cluster: str | None = None) -> str:
    """The single run a split point is (``cluster`` None) or that plans a GPU cluster, as the front
    end running writes it: explore's command line, or the API's call."""
    if running() is not Frontend.API:
        return (f"explore {given_as('--split')}" if cluster is None
                else f"explore {given_as('--array')} {cluster} {given_as('--model')} ...")
    return "solve(split=...)" if cluster is None else f"plan_llm(model, {cluster!r})"


def resolve_paths(params: dict[str, Any], base_dir: str, memo: dict | None = None) -> dict[str, Any]:
    """The point's options with file references made absolute (names of shipped data stay);
    ``memo`` keeps answers across the points of one run."""
    out = dict(params)
    memo = {} if memo is None else memo
    for key in PATH_KEYS:
        if key in out:
            if (key, out[key]) not in memo:
                memo[key, out[key]] = _resolve_ref(key, out[key], Path(base_dir))
            ref, bad = memo[key, out[key]]
            if bad:
                raise SpecError(key, bad)
            out[key] = ref
    return out


def _places(grid: dict, fixed: dict, extra: list[dict]) -> Iterator[tuple[str, Any, str]]:
    """(key, value, where it is written) for every value of the file, in file order."""
    for key, values in grid.items():
        for i, v in enumerate(values):
            yield key, v, f"grid.{key}[{i}]"
    for key, v in fixed.items():
        yield key, v, f"fixed.{key}"
    for i, p in enumerate(extra):
        for key, v in p.items():
            yield key, v, f"points[{i}].{key}"


def _hashable(v: Any) -> Any:
    return json.dumps(v, sort_keys=True, default=str)


def _model_reads(grid: dict, fixed: dict, extra: list[dict]) -> dict[Any, dict[tuple[bool, Any], Any]]:
    """Per model value written in the file: how its points read it, (batch given, seq) -> a batch
    (the first one given: any fills a symbolic batch alike); seq and batch reach the importer as
    explore's --seq and --batch do."""
    keys = [k for k in ("model", "batch", "seq") if k in grid]
    combos = [{**fixed, **dict(zip(keys, vs))} for vs in itertools.product(*(grid[k] for k in keys))] if grid else []
    reads: dict[Any, dict[tuple[bool, Any], Any]] = {}
    for c in combos + [{**fixed, **p} for p in extra]:
        if "model" in c:
            key = (c.get("batch") is not None, _hashable(c.get("seq")))
            reads.setdefault(_hashable(c["model"]), {}).setdefault(key, (c.get("batch"), c.get("seq")))
    return reads


def _check_model(ref: str, value: str, where: str, reads: dict, seq_places: dict) -> None:
    """Read a model as each of its points does (batch, seq); a SpecError names the place."""
    from ...frontends import dense_only, load_model

    for batch, seq in reads.values():
        try:
            with named_for(Frontend.SWEEP):  # its messages name the sweep file's keys
                dense_only(load_model(ref, batch, seq), value)  # a mixture of experts: GPU clusters only
        except SpecError as err:
            text = _about(err, "model")
            place = f"{where} with {seq_places[_hashable(seq)]}" if seq is not None else where
            raise SpecError(place, text) from None


def _check_refs(grid: dict, fixed: dict, extra: list[dict], base_dir: Path, errors: list[str]) -> dict:
    """Resolve every distinct file reference once and read each distinct model and array once
    (a file with an error is bad input, not a failed point); the resolved references by value."""
    from ...frontends import is_cluster, load_array

    resolved: dict[tuple[str, str], str] = {}
    seen: set[tuple[str, str]] = set()
    places = list(_places(grid, fixed, extra))
    seq_places = {_hashable(v): w for k, v, w in reversed(places) if k == "seq"}
    reads = _model_reads(grid, fixed, extra)
    for key, value, where in places:
        if key not in PATH_KEYS or (key, value) in seen:
            continue
        seen.add((key, value))
        ref, bad = _resolve_ref(key, value, base_dir)
        if bad:
            errors.append(f"{where}: {bad}")
            continue
        resolved[key, value] = ref
        try:
            if key == "model":
                _check_model(ref, value, where, reads.get(_hashable(value), {}), seq_places)
            elif key == "array":
                if is_cluster(ref):
                    errors.append(f"{where}: {cluster_refused(value)}")
                    continue
                load_array(ref)
            elif not isinstance(load_yaml_file(ref), dict):  # constraints: read against each point's network
                errors.append(f"{where}: {ref}: must be a mapping (a constraints file)")
        except SpecError as err:
            errors.append(str(err) if err.source.startswith(where) else f"{where}: {_about(err, key)}")
        except Exception as err:  # noqa: BLE001 - an importer's own failure on a broken file
            errors.append(f"{where}: cannot read {ref}: {type(err).__name__}: {shown(str(err))}")
    return resolved


def _about(err: SpecError, key: str) -> str:
    """``err`` after the place in the sweep file that gave ``key``'s value: an error about the
    option that value stands for (``--model`` for model: ``core.names.is_option``) drops its name,
    as ``where`` names the key; any other keeps its source, an option of explore named as the
    file's key (``--batch``: batch), a file it names as it is."""
    if is_option(err.source, f"--{key}"):  # model, array, constraints: explore's --model, --array, --constraints
        return "; ".join(err.problems)
    with named_for(Frontend.SWEEP):
        return str(SpecError(given_as(err.source), err.problems))


ARRAY_KEYS = ("array", "levels", "link_bandwidth_GBps", "peak_TFLOPS", "mix")  # what point_array reads (and accelerators_<kind>)


def _check_arrays(merged: list[dict[str, Any]], where: dict[tuple[str, str], str], resolved: dict,
                  errors: list[str]) -> None:
    """Each distinct (array, levels, bandwidth, peak, mix) once: the overrides must fit the array."""
    seen: set[str] = set()
    for m in merged:
        combo = {k: m.get(k) for k in ARRAY_KEYS}
        combo.update({k: v for k, v in m.items() if is_count_key(k)})
        combo["array"] = combo["array"] or DEFAULTS["array"]
        tag = _hashable(combo)
        if tag in seen or all(v is None for k, v in combo.items() if k != "array"):
            continue  # an array alone was read by _check_refs
        seen.add(tag)
        if ("array", combo["array"]) not in resolved:  # the default array
            resolved["array", combo["array"]] = combo["array"]
        try:
            point_array({**combo, "array": resolved["array", combo["array"]]})
        except SpecError as err:
            problem = err.problems[0] if err.problems else str(err)
            context = ([] if "array " in problem else [f"array {combo['array']}"])  # named once, not twice
            context += [f"levels {combo['levels']}"] if combo["levels"] is not None else []
            errors.append(f"{_blame(err, combo, where)}: {problem}" + (f" ({', '.join(context)})" if context else ""))


def _blame(err: SpecError, combo: dict[str, Any], where: dict[tuple[str, str], str]) -> str:
    """Where in the file the value an array override error is about is written."""
    key = err.source.lstrip("-")
    if combo.get(key) is None:  # an error of the array itself (e.g. --levels of an array of kinds)
        key = next(k for k in ("link_bandwidth_GBps", "levels", "peak_TFLOPS", *combo, "array") if combo.get(k) is not None)
    return where.get((key, _hashable(combo[key])), key)


def _check_split(merged: list[dict[str, Any]], where: dict[tuple[str, str], str], errors: list[str]) -> None:
    """A split point takes the options of ``explore --split`` (its objective is the step time unless
    given), within that command's bounds."""
    seen: set[str] = set()
    fits: dict[str, str] = {}  # split points whose solver fits (or who have none)
    misfits: dict[str, str] = {}  # 'split S with solver X' check_split_solver refuses -> where the solver is written

    def say(key: str, problem: str) -> None:
        place = where.get((key, _hashable(m[key])), key)
        if place not in seen:
            seen.add(place)
            errors.append(f"{place}: {problem}")

    for m in merged:
        if m.get("split") is None:
            for key in ONLY_WITH_SPLIT:
                if m.get(key) is not None:
                    say(key, "only with split")
            continue
        if m.get("seed") is not None:
            say("seed", f"not with split (a split point is {_single_run()}: it takes every key of a point but seed)")
        pair = f"split {m['split']} with solver {m['solver']}" if m.get("solver") is not None else ""
        if not pair or _split_solver(m):
            fits.setdefault(pair, "")
        else:
            misfits.setdefault(pair, where.get(("solver", _hashable(m["solver"])), "solver"))
    if misfits and not fits:  # no split point of the sweep fits: said once, up front
        pairs = list(misfits)
        errors.append(f"{next(iter(misfits.values()))}: not with split ({', '.join(pairs[:4])}"
                      f"{f' and {len(pairs) - 4} more' if len(pairs) > 4 else ''}; no split point of the sweep has a "
                      f"solver that fits its split): {split_solver_rule()}")


def split_solver_rule() -> str:
    """``explore --split``'s rule for its solver, in a sweep's words (split and solver keys)."""
    from ..split import solver_splits

    with named_for(Frontend.SWEEP):
        return solver_splits()


def _split_solver(m: dict[str, Any]) -> bool:
    """Whether a split point's solver fits its split: ``explore --split ... --solver``'s one rule
    (``app.split.check_split_solver``)."""
    from ..split import Split, check_split_solver

    try:
        check_split_solver(Split(m.get("split")), m["solver"])
    except (SpecError, ValueError):
        return False
    return True


def count_points(grid: dict[str, list], extra: list) -> int:
    """How many points a grid and explicit points make, without building them."""
    return (math.prod(len(v) for v in grid.values()) if grid else 0) + len(extra)


def _fail(source: str, errors: list[str]) -> SpecError:
    return SpecError(source or "sweep", first_problems(errors, MAX_SHOWN_ERRORS))


def parse_sweep(data: dict, source: str, base_dir: str | Path, max_points: int = MAX_POINTS) -> Sweep:
    """Validate a parsed sweep mapping; every problem is collected into one SpecError. The points
    are counted before any is built: more than ``max_points`` is refused. Every distinct model
    and array is read once, and every distinct array override checked against its array."""
    errors: list[str] = []
    name, description = _check_top(data, source, errors)
    grid = _check_mapping(data.get("grid", {}), "grid", errors, allow_lists=True)
    fixed = _check_mapping(data.get("fixed", {}), "fixed", errors, allow_lists=False)
    for key in sorted(set(grid) & set(fixed)):
        errors.append(f"fixed.{key}: also swept in grid (give it in one of them)")
    raw_points = data.get("points", [])
    points_ok = isinstance(raw_points, list)
    if not points_ok:
        errors.append(f"points: must be a list of mappings (- {{key: value}} each), got a {type(raw_points).__name__}")
        raw_points = []
    extra = [_check_mapping(p, f"points[{i}]", errors, allow_lists=False) for i, p in enumerate(raw_points)]
    if not data.get("grid") and not raw_points and points_ok:  # (a grid whose keys all failed is said above)
        errors.append("grid: a sweep needs a grid or points")
    if errors:
        raise _fail(source, errors)
    total = count_points(grid, extra)  # before building any point
    if total > max_points:
        sizes = " x ".join(str(len(v)) for v in grid.values()) or "0"
        raise SpecError(source or "sweep", f"{total:,} points (grid {sizes}, plus {len(extra)} listed) exceed the "
                                           f"limit of {plural(max_points, 'point')} (raise it with {given_as('--max-points')})")
    resolved = _check_refs(grid, fixed, extra, Path(base_dir), errors)
    if errors:
        raise _fail(source, errors)
    columns, points = _build_points(grid, fixed, extra, resolved, errors)
    if errors:
        raise _fail(source, errors)
    # the points as written: shards of one sweep file share it wherever the file sits
    digest = hashlib.sha256(json.dumps([p.as_dict() for p in points], sort_keys=True).encode()).hexdigest()[:16]
    return Sweep(name.strip(), description, source, str(Path(base_dir).resolve()), tuple(columns), points, digest)


def _check_top(data: dict, source: str, errors: list[str]) -> tuple[Any, Any]:
    """The top-level keys, version, name, description and reference; (name, description)."""
    for key in data:
        if key not in TOP_KEYS:
            errors.append(f"{key}: unknown key (allowed: {', '.join(TOP_KEYS)})")
    if not is_version(data.get("version")):
        errors.append("version: missing (must be 1)" if "version" not in data else
                      f"version: must be 1, got {shown(data.get('version'))}")
    name = data.get("name", Path(source).stem if source else "sweep")
    if not isinstance(name, str) or not name.strip():
        errors.append(f"name: must be a non-empty string, got {shown(name)}")
    elif not name.isprintable():  # it heads the summary line: a newline would forge a second one
        errors.append(f"name: {NAME_RULE}, got {shown(name)}")
    description = data.get("description", "")
    if not isinstance(description, str):
        errors.append("description: must be a string")
    if not isinstance(data.get("reference", {}), dict):
        errors.append("reference: must be a mapping (values to compare with; the engine does not read them)")
    return name, description


def _build_points(grid: dict, fixed: dict, extra: list[dict], resolved: dict,
                  errors: list[str]) -> tuple[list[str], tuple[Point, ...]]:
    """The columns (grid keys, then fixed ones, then the listed points' new keys) and the points
    (the grid's product, then the listed ones; defaults filled in for a column a point leaves out),
    with their arrays and splits checked into ``errors``."""
    columns = list(grid) + [k for k in fixed if k not in grid]
    for p in extra:
        columns += [k for k in p if k not in columns]
    combos = (dict(zip(grid, values)) for values in itertools.product(*grid.values())) if grid else iter(())
    defaults = {k: DEFAULTS[k] for k in columns if k in DEFAULTS}  # a column a point leaves out
    explicit = [{**fixed, **c} for c in combos] + [{**fixed, **p} for p in extra]  # as written
    merged = [{**defaults, **{k: defaults_for(e)[k] for k in defaults}, **e} for e in explicit]
    where: dict[tuple[str, str], str] = {}
    for key, value, place in _places(grid, fixed, extra):
        where.setdefault((key, _hashable(value)), place)
    _check_duplicates(merged, len(explicit) - len(extra), errors)
    _check_arrays(merged, where, resolved, errors)
    _check_split(explicit, where, errors)
    points = tuple(
        Point(i, tuple((k, _freeze(m[k])) for k in columns if k in m)) for i, m in enumerate(merged)
    )
    return columns, points


def shipped_sweeps() -> dict[str, Path]:
    """The sweeps shipped in ``spaces/`` (installed as ``explorer.spaces``), by name."""
    return {p.stem: p for p in sorted(Path(str(resources.files("explorer.spaces"))).glob("*.yaml"))}


def load_sweep(path: str | Path, max_points: int = MAX_POINTS) -> Sweep:
    """Read and validate a sweep file (or a shipped sweep by name, e.g. ``scalability``); a bad
    file raises one SpecError naming file and field."""
    if not Path(path).exists() and str(path) in shipped_sweeps():
        path = shipped_sweeps()[str(path)]
    data = load_yaml_file(path)
    return parse_sweep(data, str(path), Path(path).resolve().parent, max_points)

