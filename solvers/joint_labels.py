"""The labels' shared parts for the joint uneven-split solver (``solvers.uneven_joint``): floored
components of columns and edges, the alpha descent (better incumbents), the Pareto filters,
extending, closing and beam-trimming labels. The label setting itself, on chains and graphs
alike, is ``joint_close_graph``.
"""

from __future__ import annotations

import time
from math import ceil

import numpy as np

from .deadline import check_deadline
from . import joint_columns
from .joint_columns import INF, JointOptions, _Columns, _Model, _Tables, better


class LabelsCut(Exception):
    """The label setting passed its deadline (checked per chunk of labels or rows): its callers
    keep the best plan and bound so far, no proof."""


class LabelsMemory(Exception):
    """A label pass would hold more than the memory limit (``joint_columns.MAX_BYTES``) in labels
    (``check_labels``); the message names the limit. Not caught by the passes: the solver keeps
    its best plan and bound so far, no proof, and says why."""


# bytes one live label row holds: its sums (``terms`` int64), its parent index and column (int64), and
# ``_filter_by_column``'s reordered copies of the three: 16 * (terms + 2); an edge's components to the
# labels' next columns (``joint_close_graph._live_edge``: ``cells`` int64, built, concatenated and
# narrowed to the live columns): 24 bytes a cell; a dominance batch's pairs of rows (``_pareto_batch``'s
# ``dom``: four int64 differences and maxima a pair alive at once; ``_pareto_chunks``' the same, a chunk
# against the rows kept): ``PAIR_BYTES`` a pair; ``_extend``'s chunk of (label, next column) cells: the
# labels' gathered edge terms and their sums, 16 * terms bytes a cell; and ``FIXED_BYTES``;
# bench/bench_memory_guard.py
def label_bytes(rows: int, terms: int, cells: int = 0, pairs: int = 0, chunk: int = 0, cached: int = 0) -> int:
    return FIXED_BYTES + rows * 16 * (terms + 2) + 24 * cells + PAIR_BYTES * pairs + 16 * terms * chunk + cached


# AlexNet on tpu-mix-16 at 1/16: a filter of 9,962 candidates peaked 23.4 MiB above its start, its largest
# batch 737,280 pairs (22.5 MiB at 32 bytes a pair); bench/bench_memory_guard.py
PAIR_BYTES = 32
# what the passes hold besides (measured, a fixed allowance): the rests at the cut nodes, the trace's
# history, the weighted rows cached per entry column; ResNet-18 on tpu-mix-16 at 1/16 held 4.7 MiB beyond
# its labels, batches and chunks
FIXED_BYTES = 4 * 2**20


def check_labels(rows: int, terms: int, cells: int = 0, pairs: int = 0, chunk: int = 0, cached: int = 0) -> None:
    """LabelsMemory where ``rows`` live labels of ``terms`` sums, ``cells`` edge components, a
    dominance batch of ``pairs`` pairs, an extension chunk of ``chunk`` cells and ``cached`` bytes
    (``label_bytes``) would pass ``joint_columns.MAX_BYTES`` (read at each call); checked where the
    passes look at the clock, before an edge's components are built and before each dominance batch."""
    limit = joint_columns.MAX_BYTES
    if (need := label_bytes(rows, terms, cells, pairs, chunk, cached)) > limit:
        raise LabelsMemory(f"its label pass would hold {need / 2**20:,.0f} MiB ({rows:,} labels), beyond "
                           f"the joint solver's memory limit of {limit / 2**20:,.0f} MiB "
                           "(joint_columns.MAX_BYTES): the best plan and bound so far")


def _edge_terms(t: _Tables, e: int, cu, cv) -> np.ndarray:
    """(4, k): the edge's floored components for producer columns ``cu`` and consumer columns ``cv``
    (arrays of one length, or one of them a scalar)."""
    C = t.m.cols
    cu, cv = np.broadcast_arrays(np.asarray(cu), np.asarray(cv))
    out = np.zeros((4, cu.size), dtype=np.int64)
    out[:2] = t.top[e][:, cu.ravel() // C.n_tau, cv.ravel() // C.n_tau]
    for h in range(1, C.H):
        t_hu = (cu.ravel() % C.n_tau) // C.K ** (C.H - 1 - h) % C.K
        out[2:] += t.lev[e][h - 1][:, t_hu, cv.ravel() // C.K ** (C.H - 1 - h)]
    return out


def _comps_floor(t: _Tables, cols) -> np.ndarray:
    cols = np.asarray(cols)
    tot = t.node[np.arange(len(cols)), :, cols].sum(axis=0)
    for e, (u, v) in enumerate(t.m.net.edges):
        tot += _edge_terms(t, e, cols[u], cols[v])[:, 0]
    return tot


def _f(c) -> int:
    return max(c[0], c[1]) + max(c[2], c[3])


def _with_alpha(C: _Columns, cols: list[int], a: int) -> list[int]:
    return [((c // C.n_tau // C.A) * C.A + a) * C.n_tau + c % C.n_tau for c in cols]


def _descend(m: _Model, t: _Tables, best, type_sets=(), deadline: float | None = None):
    """For the incumbent's types and each of ``type_sets`` (plans' columns): the best uniform top
    alpha, then coordinate descent over single layers' top alphas, on the floored components;
    a result replaces the incumbent only if its exact step time is lower. ``deadline`` (None:
    none): no further base once past it, and the descent stops between rounds (0.2-0.4 s a base
    on ResNet-50 under load; a stopped descent's columns are a whole plan, scored exactly)."""
    C = m.cols
    for base in [b for b in (best[1], *type_sets) if b is not None]:
        if deadline is not None and time.perf_counter() > deadline:
            break
        ok = lambda cs: all(t.node[l][0, c] < INF for l, c in enumerate(cs))  # noqa: E731, E741
        starts = [cs for cs in (_with_alpha(C, base, a) for a in range(C.A)) if ok(cs)]
        if not starts:
            continue
        cols = min(starts, key=lambda cs: _f(_comps_floor(t, cs)))
        best = better(m, best, _alpha_descent(t, list(cols), deadline=deadline))
    return best


def _alpha_descent(t: _Tables, cols: list[int], rounds: int = 3, deadline: float | None = None) -> list[int]:
    """Coordinate descent over single layers' top alphas on the floored components: each layer in
    turn takes its best alpha (the first of the least step) when that lowers the step; no round
    begins once past ``deadline`` (None: none)."""
    C = t.m.cols
    edges = t.m.net.edges
    touching = [[e for e, (u, v) in enumerate(edges) if l in (u, v)] for l in range(len(cols))]  # noqa: E741
    tot = _comps_floor(t, cols)
    for r in range(rounds):
        if r and deadline is not None and time.perf_counter() > deadline:
            break
        changed = False
        for l in range(len(cols)):  # noqa: E741
            alt = np.array(_with_alpha(C, [cols[l]] * C.A, 0)) + np.arange(C.A) * C.n_tau
            new = t.node[l][:, alt] - t.node[l][:, [cols[l]]]
            if np.all(t.node[l][0, alt] >= INF):
                continue
            for e in touching[l]:
                u, v = edges[e]
                cu, cv = (alt, cols[v]) if u == l else (cols[u], alt)
                new += _edge_terms(t, e, cu, cv) - _edge_terms(t, e, cols[u], cols[v])
            cand = tot[:, None] + new
            f = np.maximum(cand[0], cand[1]) + np.maximum(cand[2], cand[3])
            f[t.node[l][0, alt] >= INF] = INF
            i = int(np.argmin(f))
            if f[i] < _f(tot):
                cols[l], tot, changed = int(alt[i]), cand[:, i], True
        if not changed:
            break
    return cols


def _limits_kept(A: np.ndarray, B: np.ndarray, slack: int, free) -> np.ndarray:
    """Whether labels whose limit terms are A keep the limits under every completion that keeps
    them for labels of terms B (per term: A's exact amount at most B's, as A + slack <= B on the
    floors; or A at most ``free``, where no completion can take A over: ``_raised_floors``)."""
    if free is None:
        return (A + slack <= B).all(axis=-1)
    return ((A + slack <= B) | (A <= free)).all(axis=-1)


def _pareto_filter(P: np.ndarray, slack: int, free=None, deadline: float | None = None) -> np.ndarray:
    """Indices of rows of P (k, 4) not dominated by another kept row. A dominates B when
    max(A0 - B0, A1 - B1) + max(A2 - B2, A3 - B3) <= -2 * slack: then for every completion R,
    step(A + R) <= step(B + R) (max(x + d, y + e) <= max(x, y) + max(d, e)), the exact sums
    being within ``slack`` of the floored ones, and its limit terms keep the limits where B's do
    (``_limits_kept``; ``free``: its per-term free floors, None for none). A dominator's component sum is smaller, so rows
    are scanned by increasing sum: a row is kept when no kept row before it dominates it; from
    ``PARETO_CHUNK`` rows on, a chunk of rows at a time (``_pareto_chunks``; LabelsCut once past
    ``deadline``, None: none)."""
    order = np.argsort(P[:, :4].sum(axis=1), kind="stable")
    if len(P) >= PARETO_CHUNK:
        return _pareto_chunks(P[order], slack, order, free, deadline)
    kept = np.zeros(P.shape, dtype=np.int64)
    idx: list[int] = []
    for i in order:
        p = P[i]
        if idx:
            K = kept[: len(idx)]
            g = np.maximum(K[:, 0] - p[0], K[:, 1] - p[1]) + np.maximum(K[:, 2] - p[2], K[:, 3] - p[3])
            if ((g <= -2 * slack) & _limits_kept(K[:, 4:], p[4:], slack, free)).any():
                continue
        kept[len(idx)] = p
        idx.append(int(i))
    return np.array(idx, dtype=np.int64)


PARETO_CHUNK = 64  # rows per step of the chunked scan


def _pareto_chunks(Q: np.ndarray, slack: int, order: np.ndarray, free=None, deadline: float | None = None) -> np.ndarray:
    """``_pareto_filter``'s scan on rows Q (already in scan order; ``order`` their indices), a chunk
    at a time: a chunk's rows dominated by a row kept before the chunk are dropped, the others
    decided among themselves in rounds as in ``_pareto_batch`` (row by row if rounds do not end).
    LabelsCut once past ``deadline`` (checked per chunk: a group of 40,000 rows takes seconds)."""
    kept = np.zeros(Q.shape, dtype=np.int64)
    nk = 0
    out: list[np.ndarray] = []
    dom_of = lambda A, B: ((np.maximum(A[:, None, 0] - B[None, :, 0], A[:, None, 1] - B[None, :, 1])  # noqa: E731
                            + np.maximum(A[:, None, 2] - B[None, :, 2], A[:, None, 3] - B[None, :, 3]))
                           <= -2 * slack) & _limits_kept(A[:, None, 4:], B[None, :, 4:], slack, free)  # [a, b]: a dominates b
    for c0 in range(0, len(Q), PARETO_CHUNK):
        check_deadline(deadline, LabelsCut)
        X = Q[c0 : c0 + PARETO_CHUNK]
        m = len(X)
        dropped = dom_of(kept[:nk], X).any(axis=0) if nk else np.zeros(m, dtype=bool)
        dom = dom_of(X, X) & np.tri(m, k=-1, dtype=bool).T
        ok = np.zeros(m, dtype=bool)
        for _ in range(12):
            und = ~(ok | dropped)
            if not und.any():
                break
            dropped |= und & (dom & ok[:, None]).any(axis=0)
            ok |= und & ~(dom & ~dropped[:, None]).any(axis=0)
        for i in np.flatnonzero(~(ok | dropped)):  # rounds left undecided: the scan itself
            ok[i] = not (dom[:i, i] & ok[:i]).any()
        kept[nk : nk + int(ok.sum())] = X[ok]
        nk += int(ok.sum())
        out.append(order[c0 + np.flatnonzero(ok)])
    return np.concatenate(out)


PARETO_BATCH = (4, 8, 16, 32, 64, 128)  # group sizes that ``_filter_by_column`` filters together


PARETO_BATCH_CELLS = 2_000_000  # pairs of rows per batch


def _pareto_batch(cand, lo: np.ndarray, size: np.ndarray, m: int, slack: int, keep, rank, free=None) -> None:
    """``_pareto_filter`` on each group of rows ``cand[lo:lo + size]`` (sizes at most m), padded to
    m rows and decided together: a row all of whose dominators (before it) are dropped is kept,
    one with a kept dominator dropped, each round deciding at least each group's first undecided
    row; ``keep`` and ``rank`` (position among the kept, in scan order) set for their rows. Groups
    left undecided after 12 rounds go to ``_pareto_filter``."""
    G, pos = len(lo), np.arange(m)
    valid = pos[None, :] < size[:, None]
    X = cand[np.where(valid, lo[:, None] + pos[None, :], lo[:, None])]  # (G, m, 4)
    key = np.where(valid, X[:, :, :4].sum(axis=2), np.iinfo(np.int64).max)
    order = np.argsort(key, axis=1, kind="stable")
    X = np.take_along_axis(X, order[:, :, None], axis=1)
    vs = np.take_along_axis(valid, order, axis=1)
    dom = ((np.maximum(X[:, :, None, 0] - X[:, None, :, 0], X[:, :, None, 1] - X[:, None, :, 1])
            + np.maximum(X[:, :, None, 2] - X[:, None, :, 2], X[:, :, None, 3] - X[:, None, :, 3])) <= -2 * slack)
    dom &= _limits_kept(X[:, :, None, 4:], X[:, None, :, 4:], slack, free)  # the limits' terms (none without limits)
    dom &= np.tri(m, k=-1, dtype=bool).T[None] & vs[:, :, None] & vs[:, None, :]  # [g, j, i]: j before i dominates i
    kept, dropped = np.zeros((G, m), dtype=bool), ~vs
    for _ in range(12):
        und = ~(kept | dropped)
        if not und.any():
            break
        dropped |= und & (dom & kept[:, :, None]).any(axis=1)
        kept |= und & ~(dom & ~dropped[:, :, None]).any(axis=1)
    done = ~(~(kept | dropped)).any(axis=1)
    r = np.cumsum(kept, axis=1) - 1
    g, p = np.nonzero(kept & done[:, None])
    rows = lo[g] + order[g, p]
    span = np.zeros(len(keep) + 1, dtype=np.int64)  # the decided groups' rows: dropped unless kept
    np.add.at(span, lo[done], 1)
    np.add.at(span, lo[done] + size[done], -1)
    keep[np.cumsum(span[:-1]) > 0] = False
    keep[rows] = True
    rank[rows] = r[g, p]
    for a, n in zip(lo[~done], size[~done]):
        sub = _pareto_filter(cand[a : a + n], slack, free)
        keep[a : a + n] = False
        keep[a + sub] = True
        rank[a + sub] = np.arange(len(sub))


def _fP(P: np.ndarray) -> np.ndarray:
    return np.maximum(P[:, 0], P[:, 1]) + np.maximum(P[:, 2], P[:, 3])


def _close(m: _Model, t: _Tables, P: np.ndarray, trace, UB, cols_best):
    """The final labels' plans (``trace(i)``), by their floor, scored exactly while the floor
    stays below the incumbent (and, under limits, checked exactly: ``better``): (UB, its columns)."""
    f = _fP(P)
    for i in np.argsort(f, kind="stable"):
        if f[i] >= ceil(UB * t.s):
            break
        UB, cols_best = better(m, (UB, cols_best), trace(int(i)))
    return UB, cols_best


def _beam_keep(key: np.ndarray, cols: np.ndarray, beam: int) -> np.ndarray:
    """Per column, the indices of the ``beam`` entries of least key."""
    order = np.lexsort((key, cols))
    cs = cols[order]
    first = np.r_[0, np.flatnonzero(np.diff(cs)) + 1]
    rank = np.arange(len(order)) - np.repeat(first, np.diff(np.r_[first, len(order)]))
    return order[rank < beam]


def _extend(P, cols, Ev, nodev, bc, bw, w, Q: int, thr: int, lim, deadline: float | None = None):
    """Every label extended by every next column, kept where both completion bounds stay below
    the incumbent and its limits' terms (with ``bc``'s, when it has them) within ``lim``: (label
    index, next column position, sums). LabelsCut once past ``deadline`` (None: none), checked per
    chunk (one call on 39,366 labels took 4-6 s under load)."""
    lab, vs, cands = [], [], []
    step = max(1, EXTEND_CELLS // max(1, Ev.shape[2]))
    live = len(P)
    for i0 in range(0, len(P), step):
        check_deadline(deadline, LabelsCut)
        ids = np.arange(i0, min(len(P), i0 + step))
        check_labels(live, P.shape[1], Ev.size, 0, len(ids) * Ev.shape[2])
        cand = P[ids][:, :, None] + Ev[:, cols[ids], :].transpose(1, 0, 2) + nodev[None]  # (chunk, 4, nv)
        comp = (np.maximum(cand[:, 0] + bc[0], cand[:, 1] + bc[1])
                + np.maximum(cand[:, 2] + bc[2], cand[:, 3] + bc[3]))
        weighted = _weighted(cand, w) + bw
        fits = (cand[:, 4:] + bc[4:][None] <= lim[None, :, None]).all(axis=1) if len(bc) > 4 else \
            (cand[:, 4:] <= lim[None, :, None]).all(axis=1)
        li, vi = np.nonzero((comp < thr) & (weighted < Q * thr) & fits)
        lab.append(ids[li])
        vs.append(vi)
        cands.append(cand[li, :, vi])
        live += len(li)
    check_labels(live, P.shape[1], Ev.size)
    return np.concatenate(lab), np.concatenate(vs), np.concatenate(cands)


# (label, next column) pairs ``_extend`` takes at a time: a chunk's sums are (pairs, 4 + limits' terms)
# int64, 6.4 MB at 100,000 pairs and 8 terms, reused by the allocator; at 4 M pairs (256 MB a chunk,
# and tensordot's transposed copy) each chunk was freshly mapped and faulted in. AlexNet on tpu-mix-16
# --split optimal --cap 0=18.5MB to its proof, CPU (user + system) medians of 3 at load 7.8-8.3:
# 4 M 6.5-7.5 s with tensordot, 4.26 s without; 1 M 2.76 s, 500 k 2.67 s, 100 k 2.14 s, 20 k 1.87 s
EXTEND_CELLS = 100_000


def _weighted(cand: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``tensordot(cand, w, axes=([1], [0]))`` (exact in int64) over the terms of nonzero weight only
    (the limits' carry none), without tensordot's transposed copy of ``cand``."""
    nz = np.flatnonzero(w)
    out = np.zeros((cand.shape[0], cand.shape[2]), dtype=np.result_type(cand, w))
    for k in nz:
        out += cand[:, k] * w[k]
    return out


def _filter_by_column(lab, vs, cand, vv, slack: int, o: JointOptions, t_start: float, free=None, held: int = 0,
                      cached: int = 0):
    """Per column (``vv[vs]``), the labels ``_pareto_filter`` keeps (``free``: its free floors), by
    column, then in the filter's order: (sums, columns, ``lab`` of each); LabelsCut past the time
    limit (checked per group, per chunk of a large one, per batch of small ones). Columns of one
    label are kept without a filter. ``check_labels`` before each large group and each batch: the
    candidates and ``held`` labels beside them, the batch's pairs and ``cached`` bytes."""
    deadline = t_start + o.time_limit_s
    order = np.argsort(vs, kind="stable")
    lab, vs, cand = lab[order], vs[order], cand[order]
    starts = np.r_[0, np.flatnonzero(np.diff(vs)) + 1]
    ends = np.r_[starts[1:], len(vs)]
    rank = np.zeros(len(vs), dtype=np.int64)
    keep = np.ones(len(vs), dtype=bool)
    sizes = ends - starts
    big = sizes > PARETO_BATCH[-1]
    rows = held + len(vs)
    for lo, hi in zip(starts[big], ends[big]):
        check_labels(rows, cand.shape[1], 0, PARETO_CHUNK * (hi - lo), 0, cached)  # a chunk against the rows kept
        sub = _pareto_filter(cand[lo:hi], slack, free, deadline)
        keep[lo:hi] = False
        keep[lo + sub] = True
        rank[lo + sub] = np.arange(len(sub))
    lower = 1
    for m in PARETO_BATCH:  # the small groups, batched by size
        sel = np.flatnonzero((sizes > lower) & (sizes <= m))
        step = max(1, PARETO_BATCH_CELLS // (m * m))
        for i in range(0, len(sel), step):
            check_deadline(deadline, LabelsCut)
            check_labels(rows, cand.shape[1], 0, len(sel[i : i + step]) * m * m, 0, cached)
            _pareto_batch(cand, starts[sel[i : i + step]], sizes[sel[i : i + step]], m, slack, keep, rank, free)
        lower = m
    idx = np.flatnonzero(keep)
    idx = idx[np.lexsort((rank[idx], vs[idx]))]
    return cand[idx], vv[vs[idx]], lab[idx]


