"""Labels on graphs: variable elimination whose table entries are Pareto sets of (objective,
resources), over the few type vectors per node that the Lagrangian bound leaves.

A factor is a set of rows (labels): an assignment of its scope (local vector indices), the
objective and each resource summed over the parts it holds, and the vectors of the nodes
already eliminated into it. Joining two factors pairs rows that agree on their shared nodes;
eliminating a node drops it from the scope, and among the rows that agree on what is left
keeps only those no other row matches or beats in objective and every resource (dominance).
Costs are non-negative, so a row whose objective reaches the target or whose resource exceeds
its limit cannot complete to a plan below the target, and goes. The last factor's least-objective
row is the least feasible plan below the target within those vectors; with none, there is none.
Exact integers throughout (the caller's dtype: int64 or Python ints)."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right

import numpy as np

from .deadline import check_deadline
from .elimination import TimeUp
from .vectors import VectorCosts

# joined rows built (and pruned) at once: ResNet-18 at H = 5 under a cap, traffic: 2.5 M rows, 27 columns,
# 3.1 s at load 6 in chunks of 1 M (1.2 s between two looks at the clock)
JOIN_CHUNK = 250_000
CHECK_EVERY = 20_000  # rows or comparisons of a dominance scan between two looks at the clock (a few ms)
# (ResNet-18 at H = 5 under a cap and the memory limit, the time objective: with a look only between
# joins, one scan of 0.27 M rows took 10.6 s and the run ended 4-28 s past a 60 s limit)


class LabelsOverflow(Exception):
    """A factor outgrew the row limit: the caller closes the gap another way."""


class _Rows:
    __slots__ = ("scope", "cols", "f", "g", "hidden", "hcols")

    def __init__(self, scope, cols, f, g, hidden, hcols):
        self.scope, self.cols, self.f, self.g = list(scope), cols, f, g
        self.hidden, self.hcols = list(hidden), hcols  # eliminated nodes and their local indices per row

    def take(self, idx) -> _Rows:
        return _Rows(self.scope, self.cols[idx], self.f[idx], [x[idx] for x in self.g], self.hidden, self.hcols[idx])


def least_plan(vc: VectorCosts, survivors: list[np.ndarray], resources: list[tuple], limits: list[int],
               target: int, max_rows: int, deadline: float | None = None, fits=None) -> list[int] | None:
    """The vectors of a least-objective plan with objective < ``target`` and every resource within
    its limit, each node taking only its ``survivors``; None when there is none. ``resources``
    holds per resource (level weights, per-node extras or None), as ``VectorCosts`` weighs them.
    ``LabelsOverflow`` when a factor keeps more than ``max_rows`` rows, or before a join (the
    disconnected parts' last ones too) when ``fits`` refuses the bytes the factors hold with the
    join's (``join_bytes``): ``_Chain.fits``; ``TimeUp`` once ``deadline`` (a
    ``time.perf_counter()`` value) passes: between two joins, before a join's dominance and
    inside it every ``CHECK_EVERY`` comparisons."""
    sizes = [len(s) for s in survivors]
    factors = []
    for n, S in enumerate(survivors):
        g = [vc.intra_vec(n, W, None if ex is None else ex[n])[S] for W, ex in resources]
        factors.append(_Rows([n], np.arange(len(S), dtype=np.int64)[:, None], vc.intra_vec(n)[S], g, [],
                             np.zeros((len(S), 0), dtype=np.int64)))
    for e, (u, x) in enumerate(vc.edges):
        pu, px = np.repeat(np.arange(sizes[u]), sizes[x]), np.tile(np.arange(sizes[x]), sizes[u])
        pv, pw = survivors[u][pu], survivors[x][px]
        g = [vc.edge_pairs(e, pv, pw, W) for W, _ in resources]
        factors.append(_Rows([u, x], np.stack([pu, px], axis=1), vc.edge_pairs(e, pv, pw), g, [],
                             np.zeros((len(pu), 0), dtype=np.int64)))
    factors = [_prune(r, target, limits) for r in factors]
    alive = set(range(vc.N))
    while alive:
        z = min(alive, key=lambda n: (_width(n, factors, sizes), n))
        bucket = [r for r in factors if z in r.scope]
        factors = [r for r in factors if z not in r.scope]
        bucket.sort(key=lambda r: len(r.f))
        joined = bucket[0]
        for r in bucket[1:]:
            check_deadline(deadline, TimeUp)
            held = sum(_bytes(x) for x in factors) + _bytes(joined) + _bytes(r)
            joined = _join(joined, r, sizes, held, fits, deadline, (target, limits))
            check_deadline(deadline, TimeUp)
            joined = _pareto(joined, sizes, deadline)
            if len(joined.f) > max_rows:
                raise LabelsOverflow
        factors.append(_pareto(_eliminate(joined, z), sizes, deadline))
        alive.discard(z)
    final = factors[0]
    for i, r in enumerate(factors[1:], 2):  # (disconnected parts)
        check_deadline(deadline, TimeUp)
        held = sum(_bytes(x) for x in factors[i:]) + _bytes(final) + _bytes(r)
        final = _pareto(_join(final, r, sizes, held, fits, deadline, (target, limits)), sizes, deadline)
    if len(final.f) == 0:
        return None
    i = int(np.argmin(final.f))
    local = dict(zip(final.hidden, final.hcols[i].tolist()))
    return [int(survivors[n][local[n]]) for n in range(vc.N)]


def _width(z: int, factors: list[_Rows], sizes: list[int]) -> int:
    """The assignments of the scope eliminating z leaves (the rows' worst case)."""
    scope = {n for r in factors if z in r.scope for n in r.scope} - {z}
    return math.prod(sizes[n] for n in scope)


def _key(cols: np.ndarray, positions: list[int], radix: list[int]) -> np.ndarray:
    key = np.zeros(len(cols), dtype=np.int64)
    for p, k in zip(positions, radix):
        key = key * k + cols[:, p]
    return key


def _bytes(r: _Rows) -> int:
    return r.cols.nbytes + r.hcols.nbytes + 8 * len(r.f) * (1 + len(r.g))


def join_bytes(rows: int, columns: int, resources: int) -> int:
    """Bytes ``_join`` and the pruning after it hold at once for ``rows`` joined rows of ``columns``
    scope and hidden columns: the pair indices (six row vectors at most), the columns with their
    gathered halves (twice), the objective and resources with theirs (three times), all int64
    (measured 0.86 of it on ResNet-18's largest join: 3.4 M rows of 27 columns, 1.5 GB)."""
    return 8 * rows * (6 + 2 * columns + 3 * (1 + resources))


def _join(a: _Rows, b: _Rows, sizes: list[int], held: int = 0, fits=None, deadline: float | None = None,
          within: tuple[int, list[int]] | None = None) -> _Rows:
    """Every pair of rows of a and b that agree on their shared nodes (``LabelsOverflow`` before
    building them when ``fits`` refuses their bytes with ``held``), built ``JOIN_CHUNK`` rows at a
    time into the result's arrays (``TimeUp`` between two chunks once ``deadline`` passes); with
    ``within`` (the target and the limits), only the pairs ``_prune`` keeps, pruned chunk by chunk
    (the same rows in the same order: a whole join's pruning was one unchecked step, 1.4 s of
    2.5 M rows at load 6, after its 3.1 s join, and the run ended 0.8-1.2 s past a 5 s limit)."""
    shared = [n for n in a.scope if n in b.scope]
    radix = [sizes[n] for n in shared]
    ka = _key(a.cols, [a.scope.index(n) for n in shared], radix)
    kb = _key(b.cols, [b.scope.index(n) for n in shared], radix)
    order = np.argsort(kb, kind="stable")
    kbs = kb[order]
    lo = np.searchsorted(kbs, ka, side="left")
    cnt = np.searchsorted(kbs, ka, side="right") - lo
    extra = [b.scope.index(n) for n in b.scope if n not in a.scope]
    width = len(a.scope) + len(extra) + len(a.hidden) + len(b.hidden)
    total = int(cnt.sum())
    if fits is not None and not fits(held + join_bytes(total, width, len(a.g))):
        raise LabelsOverflow
    out = _Rows(a.scope + [b.scope[i] for i in extra], np.empty((total, len(a.scope) + len(extra)), dtype=np.int64),
                np.empty(total, dtype=np.result_type(a.f, b.f)), [np.empty(total, dtype=np.result_type(x, y))
                                                                   for x, y in zip(a.g, b.g)],
                a.hidden + b.hidden, np.empty((total, len(a.hidden) + len(b.hidden)), dtype=np.int64))
    ends = np.cumsum(cnt)
    starts = ends - cnt
    i0, w = 0, 0  # the next row of a, the rows written
    while i0 < len(ka):
        check_deadline(deadline, TimeUp)
        i1 = max(i0 + 1, int(np.searchsorted(ends, starts[i0] + JOIN_CHUNK, side="right")))
        r0, r1, c = int(starts[i0]), int(ends[i1 - 1]), cnt[i0:i1]
        ia = np.repeat(np.arange(i0, i1), c)
        ib = order[np.repeat(lo[i0:i1], c) + np.arange(r1 - r0) - np.repeat(starts[i0:i1] - r0, c)]
        f, g = a.f[ia] + b.f[ib], [x[ia] + y[ib] for x, y in zip(a.g, b.g)]
        if within is not None:
            kept = _kept(f, g, *within)
            ia, ib, f, g = ia[kept], ib[kept], f[kept], [x[kept] for x in g]
        w1 = w + len(ia)
        _write(out, w, w1, a, b, ia, ib, extra, f, g)
        i0, w = i1, w1
    return out if w == total else out.take(slice(0, w))


def _write(out: _Rows, w0: int, w1: int, a: _Rows, b: _Rows, ia, ib, extra: list[int], f, g) -> None:
    """Rows ``w0:w1`` of ``out``: the pairs (``ia``, ``ib``) of a's and b's rows, their objective and resources."""
    na, ha = len(a.scope), len(a.hidden)
    out.cols[w0:w1, :na], out.cols[w0:w1, na:] = a.cols[ia], b.cols[ib[:, None], extra]
    out.f[w0:w1] = f
    for o, x in zip(out.g, g):
        o[w0:w1] = x
    out.hcols[w0:w1, :ha], out.hcols[w0:w1, ha:] = a.hcols[ia], b.hcols[ib]


def _eliminate(r: _Rows, z: int) -> _Rows:
    p = r.scope.index(z)
    keep = [i for i in range(len(r.scope)) if i != p]
    return _Rows([r.scope[i] for i in keep], r.cols[:, keep], r.f, r.g, r.hidden + [z],
                 np.concatenate([r.hcols, r.cols[:, [p]]], axis=1))


def _prune(r: _Rows, target: int, limits: list[int]) -> _Rows:
    return r.take(_kept(r.f, r.g, target, limits))


def _kept(f: np.ndarray, g: list[np.ndarray], target: int, limits: list[int]) -> np.ndarray:
    """The indices of the rows below ``target`` with every resource within its limit."""
    keep = f <= target - 1
    for x, lim in zip(g, limits):
        keep &= x <= lim
    return np.flatnonzero(keep)


def _pareto(r: _Rows, sizes: list[int], deadline: float | None = None) -> _Rows:
    """The rows no other row with the same scope assignment matches or beats everywhere (``TimeUp``
    past ``deadline`` inside the many-resource scan)."""
    if len(r.f) <= 1:
        return r
    key = _key(r.cols, list(range(len(r.scope))), [sizes[n] for n in r.scope])
    if len(r.g) == 1 and r.f.dtype != object:
        return r.take(np.sort(one_resource_front(key, r.f, r.g[0])))
    return r.take(dominance_scan(key, r.f, r.g, deadline))


def one_resource_front(key: np.ndarray, f: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``dominance_scan`` for one resource ``g``, vectorised (int64, at least two rows): the indices,
    in (key, f, g) order, of the rows whose resource is below every earlier row's of the same key."""
    order = np.lexsort((g, f, key))
    k, go = key[order], g[order]
    first = np.r_[True, k[1:] != k[:-1]]
    run = _segment_min_accumulate(go, np.cumsum(first) - 1)
    keep = first.copy()
    keep[1:] |= go[1:] < run[:-1]
    return order[keep]


def dominance_scan(key: np.ndarray, f: np.ndarray, g: list[np.ndarray], deadline: float | None = None) -> np.ndarray:
    """The sorted indices of the rows no other row of the same ``key`` matches or beats in ``f`` and
    every ``g`` (of rows equal everywhere, the first): per key, rows in (f, g) order, each kept
    unless a kept one has every resource at most its own (two resources: ``_staircase``).
    ``TimeUp`` once ``deadline`` passes, looked at every ``CHECK_EVERY`` rows or comparisons and
    per block of whole keys' rows (``SCAN_BLOCK``), whose resources become Python values a block at
    a time (all rows at once took 0.5-0.9 s unchecked at load 7: a cap's run ended that far past its limit)."""
    if f.dtype == object or any(x.dtype == object for x in g):
        keys, fs, gl = key.tolist(), f.tolist(), [x.tolist() for x in g]
        order = np.array(sorted(range(len(fs)), key=lambda i: (keys[i], fs[i], *(c[i] for c in gl))), dtype=np.int64)
    else:  # (the same order: both sorts are stable)
        order = np.lexsort((*g[::-1], f, key))
    check_deadline(deadline, TimeUp)
    ks = key[order]
    bounds = np.r_[0, np.flatnonzero(ks[1:] != ks[:-1]) + 1, len(order)].tolist()  # each key's rows
    scan = _staircase if len(g) == 2 else _front
    kept: list[np.ndarray] = []
    b0, work = 0, [0]
    while b0 < len(bounds) - 1:
        check_deadline(deadline, TimeUp)
        lo = bounds[b0]
        b1 = max(b0 + 1, bisect_right(bounds, lo + SCAN_BLOCK) - 1)  # whole keys, at least one
        idx = order[lo : bounds[b1]]
        gs = list(zip(*(x[idx].tolist() for x in g))) if g else [()] * len(idx)  # (Python values)
        local: list[int] = []
        for s0, s1 in zip(bounds[b0:b1], bounds[b0 + 1 : b1 + 1]):
            local += scan(range(s0 - lo, s1 - lo), gs, deadline, work)
        kept.append(idx[np.array(local, dtype=np.int64)])
        b0 = b1
    return np.sort(np.concatenate(kept)) if kept else np.zeros(0, dtype=np.int64)


SCAN_BLOCK = 50_000  # rows of a dominance scan made Python values at once (whole keys: a larger key is one block)


def _front(rows: list[int], gs: list[tuple], deadline: float | None, work: list[int]) -> list[int]:
    """The rows (one key's, in scan order) no kept row matches or beats in every resource."""
    front: list[tuple[int, tuple]] = []
    for j in rows:
        gj = gs[j]
        if not any(all(a <= b for a, b in zip(gq, gj)) for _, gq in front):
            front.append((j, gj))
        work[0] += len(front)
        if work[0] >= CHECK_EVERY:
            work[0] = 0
            check_deadline(deadline, TimeUp)
    return [j for j, _ in front]


def _staircase(rows: list[int], gs: list[tuple], deadline: float | None, work: list[int]) -> list[int]:
    """``_front`` for two resources in O(n log n): the kept rows' least points (first resource
    ascending, second strictly descending); a row is matched or beaten by a kept one exactly when
    the last of them with a first resource at most its own has a second at most its own."""
    xs: list = []
    ys: list = []
    kept = []
    for j in rows:
        work[0] += 1
        if work[0] >= CHECK_EVERY:
            work[0] = 0
            check_deadline(deadline, TimeUp)
        a, b = gs[j]
        i = bisect_right(xs, a)
        if i and ys[i - 1] <= b:
            continue
        kept.append(j)
        lo = bisect_left(xs, a)
        hi = lo
        while hi < len(xs) and ys[hi] >= b:  # the points the new one matches or beats
            hi += 1
        xs[lo:hi], ys[lo:hi] = [a], [b]
        work[0] += hi - lo
    return kept


def _segment_min_accumulate(a: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Running minimum of ``a`` restarting at each group (groups contiguous, numbered 0, 1, ...)."""
    if len(a) == 0:
        return a
    # offset each group so that earlier groups can never win: later groups get lower bands
    lo, hi = int(a.min()), int(a.max())
    span = hi - lo + 1
    ngroups = int(group[-1]) + 1
    if span * ngroups < 2**62:
        shifted = (a - lo) + (ngroups - 1 - group) * span
        return np.minimum.accumulate(shifted) - (ngroups - 1 - group) * span + lo
    out = np.empty_like(a)
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    ends = np.r_[starts[1:], len(a)]
    for s, e in zip(starts, ends):
        out[s:e] = np.minimum.accumulate(a[s:e])
    return out
