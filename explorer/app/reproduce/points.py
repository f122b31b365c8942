"""The points behind HyPar's figures: one network, batch and level count on the paper array,
its HyPar plan and the three baselines' plans with their exact level costs, under an accounting.

A point is solved once per process (memoised) and, given a cache folder, once per machine:
``<out>/.cache/<sha>.json`` holds its plans and level costs as exact fractions, keyed by
everything that shapes them (the network's layers, batch, levels, accounting, this format's
version, and the code that solved them: the explorer's version and code digest, as in the
sweep cache's keys, ``app.code_stamp``; each entry holds that stamp too, so ``prune``
can remove the entries of other code, which are never read again). Each entry is sealed as the
sweep's are (``app.seal``) and holds its key: one edited, damaged or copied over another point's
file is solved again and rewritten, never trusted (``Ledger.rejected`` names it, for the CLI to
say so). Time and energy are computed from the level costs on each call (``figures``), so a
change of array or topology never needs a new solve.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

from ...core.array import ArraySpec
from ...core.comm import network_flops
from ...core.evaluate import evaluate
from ...core.network import Network
from ...core.paper_accounting import Accounting, hierarchical_dp, level_costs, torus_uniform_level_bandwidths
from ...core.plan import Plan
from ...core.solution import SolveOptions
from ...core.timing import compute_time_s, energy_J, level_times, step_time
from ...frontends import load_array
from ...frontends.bounded import MAX_ENTRY_BYTES, read_bounded
from ..baselines import BASELINES, baseline_plan
from ..code_stamp import code_stamp
from ..run import run
from ..seal import seal, unseal

ARRAY = "hypar-paper"
BIG_MEMORY_GiB = 10**6  # the paper does not model memory
CACHE_FORMAT = 2  # 2: entries are sealed (app.seal) and hold their key
PLANS = ("hypar", *BASELINES)  # hypar, all-I, all-II, trick


@dataclass(frozen=True, slots=True)
class Point:
    """One network at one batch and level count: each plan and its level costs c_h."""

    network: Network
    levels: int
    accounting: Accounting
    plans: tuple[tuple[str, Plan, tuple[Fraction, ...]], ...]  # (name, plan, c_h) in PLANS order

    def plan(self, name: str) -> Plan:
        return next(p for n, p, _ in self.plans if n == name)

    def costs(self, name: str) -> tuple[Fraction, ...]:
        return next(c for n, _, c in self.plans if n == name)

    @property
    def flops(self) -> int:
        return network_flops(self.network)


@dataclass(frozen=True, slots=True)
class Figures:
    """Traffic, time and energy of one plan of a point on the paper array."""

    traffic_bytes: Fraction
    compute_s: Fraction
    step_s: Fraction
    energy_J: Fraction


def paper_array(levels: int) -> ArraySpec:
    return load_array(ARRAY).with_levels(levels)


def figures(point: Point, plan: str, torus: bool = False) -> Figures:
    """The plan's figures on the paper array (``torus``: the same accelerators on a 2-D torus whose
    links all have the H-tree's lowest link bandwidth, ``torus_uniform_level_bandwidths``)."""
    array = paper_array(point.levels)
    c = point.costs(plan)
    traffic = 2 * array.dtype_bytes * sum(2**h * ch for h, ch in enumerate(c))
    if torus:
        bw = torus_uniform_level_bandwidths(array.levels, array.bandwidth_Bps(array.levels - 1))
        comm = sum((ch * array.dtype_bytes / b for ch, b in zip(c, bw)), Fraction(0))
    else:
        comm = sum(level_times(c, array), Fraction(0))
    compute = compute_time_s(point.flops, array)
    step = step_time(compute, comm, array.overlap)
    return Figures(traffic, compute, step, energy_J(point.flops, traffic, step, array))


def _solve(network: Network, levels: int, accounting: Accounting) -> Point:
    from ..request import build_problem  # the app's own entry point for a problem

    problem = build_problem(network, ARRAY, batch=network.batch, levels=levels, memory_GiB=BIG_MEMORY_GiB)
    if accounting is Accounting.MODEL:  # the dp solver, re-scored by the evaluator
        hypar = run(problem, "dp", SolveOptions()).plan
        cost = lambda plan: evaluate(problem.network, problem.array, problem.space, plan).level_cost  # noqa: E731
    else:
        hypar = hierarchical_dp(problem.network, levels, accounting)
        cost = lambda plan: level_costs(problem.network, plan, accounting)  # noqa: E731
    plans = [("hypar", hypar)] + [(name, baseline_plan(problem, name)) for name in BASELINES]
    return Point(problem.network, levels, accounting, tuple((n, p, tuple(cost(p))) for n, p in plans))


def _key(network: Network, levels: int, accounting: Accounting) -> str:
    layers = [(x.name, x.kind.value, x.in_channels, x.out_channels, x.kernel_area, x.s_in, x.s_out, x.groups)
              for x in network.layers]
    text = json.dumps([CACHE_FORMAT, code_stamp(), layers, list(network.edges), network.batch, levels,
                       accounting.value], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _to_json(point: Point) -> dict:
    return {"plans": [[n, p.to_lists(), [str(x) for x in c]] for n, p, c in point.plans]}


def _from_json(data: dict, network: Network, levels: int, accounting: Accounting) -> Point:
    plans = tuple((n, Plan.from_lists(p), tuple(Fraction(x) for x in c)) for n, p, c in data["plans"])
    if [n for n, _, _ in plans] != list(PLANS) or any(p.levels != levels for _, p, _ in plans):
        raise ValueError("cache entry of another shape")
    return Point(network, levels, accounting, plans)


class Ledger:
    """What one run took from the cache folder (``reused``) and what it solved (``solved``): the
    keys of its distinct points (a point this process memoised counts as it was first found); and
    the entries it found that failed their check (``rejected``: their paths), solved again."""

    def __init__(self):
        self.reused: set[str] = set()
        self.solved: set[str] = set()
        self.rejected: set[str] = set()


def _read(path: Path, key: str, network: Network, levels: int, accounting: Accounting) -> Point | None:
    """The point of the entry at ``path``, or None when it fails its check: its seal (an edit or
    damage), its key (another point's entry copied there) or its shape."""
    try:
        body = unseal(read_bounded(path, MAX_ENTRY_BYTES).decode("utf-8"))  # larger: damaged (TooLarge, an OSError)
        data = json.loads(body) if body is not None else None
        if isinstance(data, dict) and data.get("key") == key:
            return _from_json(data, network, levels, accounting)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


@lru_cache(maxsize=None)
def _memo(network: Network, levels: int, accounting: Accounting, cache: str | None) -> tuple[Point, str, str]:
    """(the point, its key, where it came from: ``reused`` from the cache folder, ``solved``, or
    ``rejected``: its entry failed its check (``_read``), so solved again and rewritten)."""
    key = _key(network, levels, accounting)
    path = Path(cache) / f"{key}.json" if cache else None
    source = "solved"
    if path is not None and path.is_file():
        found = _read(path, key, network, levels, accounting)
        if found is not None:
            return found, key, "reused"
        source = "rejected"
    point = _solve(network, levels, accounting)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)  # (checked before any point: files.check_paths)
        tmp = path.with_suffix(TMP_SUFFIX)
        body = json.dumps({"key": key, "format": CACHE_FORMAT, "stamp": code_stamp(), **_to_json(point)})
        try:
            tmp.write_text(seal(body))
            tmp.replace(path)
        except OSError:  # e.g. a folder where this entry goes: the point is solved, left uncached
            try:
                tmp.unlink()
            except OSError:
                pass
    return point, key, source


def point(network: Network, levels: int, accounting: Accounting, cache: Path | None = None,
          ledger: Ledger | None = None) -> Point:
    """The point, from this process's memo, the cache folder, or solved (and cached); ``ledger``
    counts where it came from."""
    found, key, source = _memo(network, levels, accounting, str(cache) if cache is not None else None)
    if ledger is not None:
        (ledger.reused if source == "reused" else ledger.solved).add(key)
        if source == "rejected":
            ledger.rejected.add(str(Path(cache) / f"{key}.json"))
    return found


ENTRY_NAME = re.compile(r"[0-9a-f]{24}\.json")  # the names this cache gives its entries (``_key``)
TMP_SUFFIX = ".tmp"  # an entry is written as <key>.tmp, then renamed (``_memo``)
TMP_NAME = re.compile(r"[0-9a-f]{24}" + re.escape(TMP_SUFFIX))  # such a file, left by a run that stopped in between


def _stale(path: Path) -> bool:
    """Whether ``path`` is an entry this cache wrote (its name, a regular file, the shape
    ``_to_json`` writes) for other code: another code stamp or format, or none (written before
    entries held theirs). Anything else (another file, a damaged entry) is not ours to remove."""
    if not ENTRY_NAME.fullmatch(path.name) or path.is_symlink() or not path.is_file():
        return False
    try:
        data = json.loads(read_bounded(path, MAX_ENTRY_BYTES))
    except (OSError, ValueError):
        return False
    if not (isinstance(data, dict) and isinstance(data.get("plans"), list)):
        return False
    return (data.get("stamp"), data.get("format")) != (code_stamp(), CACHE_FORMAT)


def prune(cache: Path) -> int:
    """Remove the cache folder's entries of other code (``_stale``; their keys hold the code
    stamp, so this code never reads them again); how many. Nothing else in the folder is touched."""
    try:
        paths = sorted(cache.iterdir())
    except OSError:  # no folder yet, or unreadable: nothing to prune
        return 0
    removed = 0
    for path in paths:
        if _stale(path):
            try:
                path.unlink()
                removed += 1
            except OSError:
                pass  # removed meanwhile, or a read-only folder: left as it is
    return removed


def prune_leftovers(cache: Path, started: float) -> int:
    """Remove the files ``_memo`` writes before renaming them into entries (``TMP_NAME``: a run
    stopped in between left them) that are older than this run (``files.prune_older``); how many."""
    from .files import prune_older

    return prune_older(cache, TMP_NAME, started)
