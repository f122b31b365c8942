"""Variable elimination over the type vectors a bound leaves (``solvers.tree_dual``), exact over
those domains: ``dense`` and ``level`` steps, planned greedily on the domain sizes (``plan``), run
by ``eliminate``. The method and measurements: docs/benchmarks.md (ResNet-50 at H = 10).
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .deadline import check_deadline, past
from .elimination import Factor, backtrack, node_factors, take_bucket
from .vectors import VectorCosts, reduce_peak

MAX_ENTRIES = 80_000_000  # entries of all messages and one step's tables held at once (int64: 640 MB)
ROW_BLOCK = 1 << 19  # entries of one block of a level step's rows spread over all of z's vectors (measured: 2-3 rows of 3^10 run 1.8x faster a row than 24, their tables stay in cache)
DENSE_BLOCK = 1 << 20  # entries of one slice of a dense step's table


@dataclass(frozen=True)
class Step:
    z: int
    how: str  # "dense" or "level"
    edge: int | None  # level: the edge to b
    b: int | None  # level: the neighbour reached across the edge
    rest: tuple[int, ...]  # the message's scope (level: R then b)


@dataclass(frozen=True)
class Shape:
    """What a step's cost depends on besides the sizes: its bucket's factor count and the edge
    tables it builds (node pairs). Fixed by the order alone, so a plan can be scored again at other sizes."""
    factors: int
    built: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Plan:
    steps: tuple[Step, ...]
    work: float  # estimated elementary operations
    peak: int  # most entries held at once: the messages and edge tables so far (kept for the backtrack) plus a step's tables
    shapes: tuple[Shape, ...] = ()  # per step (``rescore``)


def _options(vc: VectorCosts, sizes: list[int], z: int, bucket: list[Factor], cap: int, level_first: bool = False):
    """(work, step entries, message entries, edge-table entries, Step, Shape) of the cheapest way to
    eliminate z now whose step tables stay within ``cap`` entries (work infinite when none does);
    ``level_first``: a level step whenever one exists (tests). Step entries: what the step holds
    beyond the messages and edge tables (``_dense_entries``, ``_level_entries``); the message and
    the edge tables it builds stay (the backtrack reads them)."""
    ways = _ways(z, bucket)
    w, held, size, built = _cost(vc, sizes, *ways[0])
    best = (w if held <= cap else float("inf"), held, size, built) + ways[0]
    for step, shape in ways[1:]:
        w, held, size, built = _cost(vc, sizes, step, shape)
        if (w < best[0] or (level_first and best[4].how == "dense")) and held <= cap:
            best = (w, held, size, built, step, shape)
    return best


def _ways(z: int, bucket: list[Factor]) -> list[tuple[Step, Shape]]:
    """Every way to eliminate z from its bucket, the dense step first, with its shape."""
    others = sorted({n for f in bucket for n in f.scope} - {z})
    edges = [f for f in bucket if f.edge is not None]
    out = [(Step(z, "dense", None, None, tuple(others)), Shape(len(bucket), tuple(f.scope for f in edges)))]
    for b in others:
        touching = [f for f in bucket if b in f.scope]
        if len(touching) != 1 or touching[0].edge is None:
            continue
        rest = tuple(n for n in others if n != b)
        built = tuple(f.scope for f in edges if f is not touching[0])
        out.append((Step(z, "level", touching[0].edge, b, rest + (b,)), Shape(len(bucket), built)))
    return out


def _cost(vc: VectorCosts, sizes: list[int], step: Step, shape: Shape) -> tuple[float, int, int, int]:
    """(work, step entries, message entries, edge-table entries) of this step at these sizes."""
    z = step.z
    built = [sizes[u] * sizes[x] for u, x in shape.built]
    if step.how == "dense":
        table = math.prod(sizes[n] for n in step.rest) * sizes[z]
        held = _dense_entries(sizes, list(step.rest), z, built)
        return float(table) * (shape.factors + 1) + vc.H * sum(built), held, table // sizes[z], sum(built)
    A, b = math.prod(sizes[n] for n in step.rest[:-1]), step.b
    work = float(A) * (sizes[z] * shape.factors + vc.dom[z].V + _row_work(vc, z, b, step.edge)) + vc.H * sum(built)
    return work, _level_entries(vc, sizes, A, z, b, step.edge, built), A * sizes[b], sum(built)


def _dense_entries(sizes: list[int], rest: list[int], z: int, built: list[int]) -> int:
    """Entries ``_dense_min`` holds at once beyond the messages and edge tables: its output, a
    slice of the table (two while the next replaces the last) and the slice's minimum; or, while
    an edge table is built, its gather."""
    if not rest:
        return 2 * sizes[z] + max(built, default=0)
    inner = math.prod(sizes[n] for n in rest[1:]) * sizes[z]
    rows = min(sizes[rest[0]], max(1, DENSE_BLOCK // max(1, inner)))
    piece = rows * inner * (2 if rows < sizes[rest[0]] else 1)
    out = math.prod(sizes[n] for n in rest)
    return out + max(piece + piece // sizes[z], max(built, default=0))


def _level_entries(vc: VectorCosts, sizes: list[int], A: int, z: int, b: int, e: int, built: list[int]) -> int:
    """Entries ``_level`` holds at once beyond the messages and edge tables: the bucket's sum over
    (R, z) (two while it is summed; an edge table's gather while built), its output over (R, b),
    and the row blocks in flight (``_rows_in_flight`` rows in all): each spread over z's vectors,
    the one-level-at-a-time reduction's tables (``reduce_peak``) and the gather of b's survivors."""
    F, out = A * sizes[z], A * sizes[b]
    u, x = vc.edges[e]
    rows = min(A, _rows_in_flight(vc.dom[z]))
    blocks = rows * vc.dom[z].V + max(reduce_peak(vc.H, vc.dom[u].K, vc.dom[x].K, rows, u == z),
                                      rows * (vc.dom[b].V + sizes[b]))
    return max(F + max(F, max(built, default=0)), F + out + blocks)


def _rows_in_flight(dz) -> int:
    """Rows of a level step spread over all of z's vectors at once, over all threads (each thread's
    block is ``ROW_BLOCK`` entries shared out among the threads)."""
    return max(1, ROW_BLOCK // (dz.V * dz.K))


# The producer direction's cost per element over the consumer's (``reduce_producer`` /
# ``reduce_consumer``): measured 0.9-1.2 by ``bench/bench_pruned_budget.py --ratio`` (ResNet-50,
# LLaMA-7B, BERT-base at H = 9, 10; 1.6 was the weight since the level steps came in, a44d4c8).
PRODUCER_WEIGHT = 1.1


def _row_work(vc: VectorCosts, z: int, b: int, e: int) -> float:
    """Element operations of one row of a level step across edge e (``PRODUCER_WEIGHT`` when z
    is the edge's producer)."""
    Kz, Kb, H = vc.dom[z].K, vc.dom[b].K, vc.H
    elements = sum(Kz * Kb ** (j + 1) * Kz ** (H - j - 1) for j in range(H))
    return 2 * elements * (PRODUCER_WEIGHT if vc.edges[e][0] == z else 1.0)


def round_work(vc: VectorCosts) -> float:
    """Element operations of one round of the tree dual (``solvers.tree_dual``): every edge
    reduced once each way (a tree edge's messages up and down; a dropped edge's copy and its
    multiplier update), one row each."""
    return sum(_row_work(vc, u, x, e) + _row_work(vc, x, u, e) for e, (u, x) in enumerate(vc.edges))


def plan(vc: VectorCosts, sizes: list[int], cap: int = MAX_ENTRIES, level_first: bool = False) -> Plan:
    """The elimination order and steps for domains of these sizes, greedily the cheapest step
    whose tables stay within ``cap`` entries first (a node's option is re-scored only when its
    bucket changes); infinite work when some step has no such way. Greedy: domains smaller
    everywhere can get a costlier plan (``rescore`` scores a known plan at other sizes)."""
    at = node_factors(vc)
    alive = set(range(vc.N))
    scored = {z: _options(vc, sizes, z, at[z], cap, level_first) for z in alive}
    steps, shapes, work, kept, peak = [], [], 0.0, sum(sizes), sum(sizes)  # kept: node costs, messages, edge tables
    while alive:
        z = min(alive, key=lambda n: (scored[n][0], scored[n][2], n))
        w, held, size, built, step, shape = scored.pop(z)
        if w == float("inf"):
            return Plan(tuple(steps), w, max(peak, kept + held), tuple(shapes))
        steps.append(step)
        shapes.append(shape)
        work += w
        peak = max(peak, kept + built + held)
        kept += size + built
        alive.discard(z)
        for n in _apply(at, z, step):
            scored[n] = _options(vc, sizes, n, at[n], cap, level_first)
    return Plan(tuple(steps), work, max(peak, kept), tuple(shapes))


def _apply(at: list[list[Factor]], z: int, step: Step) -> set[int]:
    """z's bucket replaced by the step's message in its neighbours' buckets; the nodes touched."""
    touched = {n for f in take_bucket(at, z) for n in f.scope if n != z}
    if step.rest:
        new = Factor(step.rest)
        for n in step.rest:
            at[n].append(new)
        touched.update(step.rest)
    return touched


def rescore(vc: VectorCosts, sizes: list[int], p: Plan, cap: int = MAX_ENTRIES) -> Plan:
    """The same steps scored at other sizes (the order and each step's way depend on the graph
    only, so any plan runs at any sizes; exact over them as ``plan``'s own); infinite work when
    some step's tables pass ``cap``, or the plan stopped short of the last node (``plan`` with none)."""
    if len(p.steps) < vc.N:
        return Plan(p.steps, float("inf"), p.peak, p.shapes)
    work, kept, peak = 0.0, sum(sizes), sum(sizes)
    for step, shape in zip(p.steps, p.shapes):
        w, held, size, built = _cost(vc, sizes, step, shape)
        if held > cap:
            return Plan(p.steps, float("inf"), max(peak, kept + held), p.shapes)
        work += w
        peak = max(peak, kept + built + held)
        kept += size + built
    return Plan(p.steps, work, max(peak, kept), p.shapes)


class _Late(Exception):
    """The deadline passed inside a step (raised between its pieces, caught by ``eliminate``)."""


def _edge_table(vc: VectorCosts, e: int, su: np.ndarray, sx: np.ndarray, deadline: float | None = None) -> np.ndarray:
    """Edge e's weighted cost over (u's vectors su, x's vectors sx): per level, the cost of each
    of u's types against each x, then one gather by u's type at that level (the deadline checked
    between levels)."""
    u, x = vc.edges[e]
    du, dx = vc.dom[u], vc.dom[x]
    out = np.zeros((len(su), len(sx)), dtype=np.int64)
    for h in range(vc.H):
        check_deadline(deadline, _Late)
        if vc.weights[h]:
            by_type = vc.weights[h] * vc.raw_inter(e, h)[dx.pstate[h][sx][:, None], du.tix[None, :], dx.type_index[h][sx][:, None]]
            out += by_type.T[du.digit[h][su]]  # (K_u, |sx|) rows picked by u's digit
    return out


def _array(vc: VectorCosts, f: Factor, domains: list[np.ndarray], deadline: float | None = None) -> np.ndarray:
    if f.array is None:  # an edge (a node's costs were set when the run began)
        u, x = f.scope
        f.array = _edge_table(vc, f.edge, domains[u], domains[x], deadline)
    return f.array


def _combine(vc: VectorCosts, scope: list[int], bucket: list[Factor], domains: list[np.ndarray],
             deadline: float | None = None, reduce_last: bool = False) -> np.ndarray:
    """The bucket's sum as a table over ``scope`` (``reduce_last``: its min over the last scope
    node), built in slices of the first node's domain (``DENSE_BLOCK`` entries each), never a
    whole dense step's table at once; the deadline checked between slices (``_Late``)."""
    sizes = [len(domains[n]) for n in scope]
    step = max(1, DENSE_BLOCK // max(1, math.prod(sizes[1:])))
    arrays = [(f, _array(vc, f, domains, deadline)) for f in bucket]
    out = np.empty(sizes[:-1] if reduce_last else sizes, dtype=np.int64)
    for lo in range(0, sizes[0], step):
        check_deadline(deadline, _Late)
        hi = min(sizes[0], lo + step)
        table = np.zeros([hi - lo] + sizes[1:], dtype=np.int64)
        for k, (f, arr) in enumerate(arrays):
            if scope[0] in f.scope:
                arr = arr[tuple(slice(lo, hi) if n == scope[0] else slice(None) for n in f.scope)]
            perm = sorted(range(len(f.scope)), key=lambda i: scope.index(f.scope[i]))
            shape = [table.shape[i] if n in f.scope else 1 for i, n in enumerate(scope)]
            table += arr.transpose(perm).reshape(shape)
            if k % 2 == 1:  # every factor is at most big (2^61): three sums cannot overflow
                vc.clamp(table)
        vc.clamp(table)
        out[lo:hi] = table.min(axis=len(scope) - 1) if reduce_last else table
    return out


def _dense_min(vc: VectorCosts, rest: list[int], z: int, bucket: list[Factor], domains: list[np.ndarray],
               deadline: float | None) -> np.ndarray:
    """min over z of the bucket's sum, as a table over ``rest``."""
    if not rest:
        return _combine(vc, [z], bucket, domains, deadline).min(axis=0)
    return _combine(vc, rest + [z], bucket, domains, deadline, reduce_last=True)


def _level(vc: VectorCosts, step: Step, bucket: list[Factor], domains: list[np.ndarray], deadline: float | None,
           workers: int = 1) -> np.ndarray | None:
    """The level step's message over (R..., b); None at the deadline (checked between row
    blocks). Row blocks go to ``workers`` threads (numpy leaves the interpreter lock in its loops)."""
    z, b, e = step.z, step.b, step.edge
    R = list(step.rest[:-1])
    F = _combine(vc, R + [z], [f for f in bucket if f.edge != e], domains, deadline)
    A, dz, db = F.size // len(domains[z]), domains[z], domains[b]
    F = F.reshape(A, len(dz))
    Vz = vc.dom[z].V
    threads = max(1, min(workers, A, _rows_in_flight(vc.dom[z])))
    block = _rows_in_flight(vc.dom[z]) // threads  # the rows in flight shared out among the threads
    out = np.empty((A, len(db)), dtype=np.int64)
    reduce = vc.reduce_producer if vc.edges[e][0] == z else vc.reduce_consumer
    vc.raw_inter(e, 0)  # the edge's cost arrays cached before the threads read them
    for h in range(vc.H):
        vc.raw_inter(e, h)

    def rows(lo: int) -> bool:
        if past(deadline):
            return False
        spread = np.full((min(block, A - lo), Vz), vc.big, dtype=np.int64)
        spread[:, dz] = F[lo:lo + block]
        out[lo:lo + block] = reduce(spread, e)[:, db]
        return True

    starts = range(0, A, block)
    if threads > 1 and len(starts) > 1:
        with ThreadPoolExecutor(threads) as pool:
            done = all(list(pool.map(rows, starts)))
    else:
        done = all(rows(lo) for lo in starts)
    return out.reshape([len(domains[n]) for n in R] + [len(db)]) if done else None


def eliminate(vc: VectorCosts, domains: list[np.ndarray], max_entries: int = MAX_ENTRIES,
              deadline: float | None = None, steps: Plan | None = None, workers: int = 1) -> tuple[int, list[int]] | None:
    """(optimum, vectors) over the given domains (every domain non-empty), or None when the plan
    would hold more than ``max_entries`` entries, or at the deadline."""
    sizes = [len(d) for d in domains]
    steps = steps or plan(vc, sizes, max_entries)
    if steps.peak > max_entries or steps.work == float("inf"):
        return None
    at = node_factors(vc)
    for n in range(vc.N):
        at[n][0].array = vc.intra_vec(n)[domains[n]].astype(np.int64)
    records, constant = [], 0
    for step in steps.steps:
        if past(deadline):
            return None
        z, bucket = step.z, take_bucket(at, step.z)
        records.append((z, bucket))
        try:
            if step.how == "level":
                message = _level(vc, step, bucket, domains, deadline, workers)
            else:
                message = _dense_min(vc, list(step.rest), z, bucket, domains, deadline)
        except _Late:
            return None
        if message is None:
            return None
        if step.rest:
            new = Factor(step.rest, array=message)
            for n in step.rest:
                at[n].append(new)
        else:
            constant = min(constant + int(message), vc.big)
    return constant, backtrack(vc, records, domains=domains)
