"""The closing label setting on graphs for the joint uneven-split solver (``solvers.uneven_joint``):
labels from cut node to cut node across series-parallel links, with completion bounds and
dominance as in the chain case.
"""

from __future__ import annotations

import time
from math import ceil

import numpy as np

from .uneven_sp import Link, Series
from .joint_blocks import _Graph, _Weighted, _back, _branch_rows
from .joint_labels import LabelsCut, _beam_keep, check_labels, _close, _extend, _fP, _filter_by_column
from .joint_columns import INF, JointOptions, _Columns, _Model, _Tables, _reduce, _reduce_back, _weights


def _cut_backward(graph: _Graph, W: _Weighted, tables) -> dict:
    """Hc[n][c]: the least weighted cost of everything after cut node n (its own cost excluded) given
    its column, from the forward pass's block tables at the same weights."""
    C = graph.C
    last = graph.blocks[-1].exit
    Hc = {last: np.zeros(C.n, dtype=np.int64)}
    for k in range(len(graph.blocks) - 1, -1, -1):
        blk = graph.blocks[k]
        nxt = np.minimum(W.node[blk.exit] + Hc[blk.exit], INF)
        if blk.direct:
            Hc[blk.entry] = _reduce_back(nxt[None, :], C, *W.edge[blk.edge])[0]
        else:
            ent, tbl = tables[k]
            h = np.full(C.n, INF, dtype=np.int64)
            h[ent] = np.minimum(np.min(tbl + nxt[None, :], axis=1, initial=INF), INF)  # (one temporary)
            Hc[blk.entry] = h
    return Hc


def _pareto_graph(m: _Model, t: _Tables, graph: _Graph, best, w_lm, Q: int, o: JointOptions, t_start: float, fw,
                  beam: int | None = None):
    """Label setting on a graph of blocks (series-parallel links between cut nodes): at each cut
    node, per column, the (S0, S1, V0, V1) prefix sums that can still beat the incumbent; a block
    is crossed per entry column (each branch's labels to every exit column, nested links crossed
    the same way, then their sums with the entry's labels). Completion bounds: the Lagrangian's
    weighted least suffix at the weights of the best bound (``fw``: that forward pass) and the
    component-wise prefix; dominance as in ``_pareto_filter``. Exhaustive up to dominance and
    bounds, hence a proof. (proven, best, labels kept)."""
    W, _, Hc, alive = fw  # (Hc: the pass's rests at the cut nodes; None on a chain: no block tables to read)
    w = np.r_[np.array(_weights(*w_lm, Q), dtype=np.int64), np.zeros(len(t.lim), dtype=np.int64)]  # limits: no weight
    Hc = dict(_cut_backward(graph, W, {}) if Hc is None else Hc)
    for n, ok in alive.items():  # the columns fixed out by every forward pass (reduced costs)
        Hc[n] = np.where(ok, Hc[n], INF)
    slack = len(m.net.layers) + len(m.net.edges) * m.H + 4
    UB, cols_best = best
    thr = ceil(UB * t.s)
    first = graph.blocks[0].entry
    cols = np.flatnonzero(t.node[first][0] < INF)
    P = t.lnode[first][:, cols].T.copy()
    ok = (_fP(P) < thr) & (P @ w + Hc[first][cols] < Q * thr) & (P[:, 4:] <= t.lim).all(axis=1)
    P, cols = P[ok], cols[ok]
    hist = [(first, cols, None, np.zeros((len(cols), 0), dtype=np.int64), ())]
    total = len(cols)
    rests = _limit_rests(t, graph, slack)
    try:
        for blk, rest in zip(graph.blocks, rests):
            if len(P) == 0:
                return True, (UB, cols_best), total
            if time.perf_counter() - t_start > o.time_limit_s or total > o.enum_budget:
                return False, (UB, cols_best), total
            ctx = (m, t, W, w, Q, thr, slack, o, t_start, beam)
            P, cols, par, internal = _cross_block(ctx, blk, P, cols, Hc[blk.exit], rest)
            if beam is not None and len(P):  # a heuristic: per column, the labels of least weighted bound only
                keep = np.union1d(_beam_keep(P @ w, cols, beam), _beam_keep(_fP(P), cols, beam))
                P, cols, par, internal = P[keep], cols[keep], par[keep], internal[keep]
            inodes = blk.inodes
            hist.append((blk.exit, cols, par, internal, inodes))
            total += len(cols)
    except LabelsCut:  # past the time limit (checked per block, per chunk of labels): no proof
        return False, (UB, cols_best), total
    return True, _close(m, t, P, lambda i: _trace_graph(hist, i, len(m.net.layers)), UB, cols_best), total


def _trace_graph(hist, i: int, L: int) -> list[int]:
    out = [0] * L
    for node, cols, par, internal, inodes in reversed(hist):
        out[node] = int(cols[i])
        for j, n in enumerate(inodes):
            out[n] = int(internal[i, j])
        if par is not None:
            i = int(par[i])
    return out


def _edge_sub(t: _Tables, e: int, us: np.ndarray, vv: np.ndarray) -> np.ndarray:
    """(4 + limits' terms, len(us), len(vv)): edge e's terms from producer columns ``us`` to
    consumer columns ``vv`` (``with_limits``' after the four components)."""
    rows = [_edge_terms4(t, e, us, vv)] + [_edge_terms4(x, e, us, vv)[sl] for x, sl in t.extra]
    mem = 4 + len(t.lim) - 4 - 2 * len(t.extra)  # an edge holds no footprint
    return np.concatenate(rows + [np.zeros((mem, len(us), len(vv)), dtype=np.int64)])


def _edge_terms4(t: _Tables, e: int, us: np.ndarray, vv: np.ndarray) -> np.ndarray:
    C = t.m.cols
    out = np.zeros((4, len(us), len(vv)), dtype=np.int64)
    tu, tv = (us // C.n_tau)[:, None], (vv // C.n_tau)[None, :]
    out[0], out[1] = t.top[e][0][tu, tv], t.top[e][1][tu, tv]
    for h in range(1, C.H):
        t_hu = ((us % C.n_tau) // C.K ** (C.H - 1 - h) % C.K)[:, None]
        p = (vv // C.K ** (C.H - 1 - h))[None, :]
        out[2] += t.lev[e][h - 1][0][t_hu, p]
        out[3] += t.lev[e][h - 1][1][t_hu, p]
    return out


def _limit_rests(t: _Tables, graph: _Graph, slack: int) -> list:
    """Per block, what the layers after its exit add to the labels' limit terms there: (free
    floors, least) for a memory limit, (None, zeros) without one. ``least``: the least they must
    add (each layer's least footprint over its columns; 0 for a cap's terms), a completion bound.
    Free floors: a memory term at most its limit minus the most they can add (each layer's largest
    footprint) minus ``slack`` keeps the limit exactly under every completion (the floors lose
    less than one unit a layer), so its amount no longer matters to dominance (``_limits_kept``);
    -1 (none) for a cap's terms."""
    mem = len(t.lim) - 2 * len(t.extra)  # the memory terms come last (``with_limits``)
    if mem == 0:
        return [(None, np.zeros(len(t.lim), dtype=np.int64))] * len(graph.blocks)
    lo = len(t.lim) - mem
    ok = [t.node[n][0] < INF for n in range(len(t.node))]
    most = np.array([np.max(np.where(ok[n], t.lnode[n][4 + lo:], 0), axis=1) for n in range(len(t.node))])
    least = np.array([np.min(np.where(ok[n], t.lnode[n][4 + lo:], INF), axis=1) if ok[n].any() else
                      np.zeros(mem, dtype=np.int64) for n in range(len(t.node))])  # (L, mem) each
    done = [graph.blocks[0].entry]
    out = []
    for blk in graph.blocks:
        done += [*blk.inodes, blk.exit]
        after = np.setdiff1d(np.arange(len(t.node)), done)
        free = np.full(len(t.lim), -1, dtype=np.int64)
        free[lo:] = t.lim[lo:] - most[after].sum(axis=0) - slack
        rest = np.zeros(len(t.lim), dtype=np.int64)
        rest[lo:] = least[after].sum(axis=0)
        out.append((free, rest))
    return out


def _cross_block(ctx, blk: Link, P, cols, Hc_exit, rest):
    """The labels at the block's exit: (sums, exit columns, parent label, internal columns);
    ``rest``: what the layers after it add to the limit terms (``_limit_rests``)."""
    m, t, W, w, Q, thr, slack, o, t_start, beam = ctx
    nb, k = t.lnode[blk.exit], 4 + len(t.lim)
    free, least = rest
    after = np.r_[np.zeros(4, dtype=np.int64), least]  # below what follows: the limits' least
    exit_rest = np.minimum(W.node[blk.exit] + Hc_exit, INF)
    empty = (np.zeros((0, k), dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
             np.zeros((0, len(blk.inodes)), dtype=np.int64))
    if not blk.direct:
        res = _cross_link(ctx, blk, P, cols, after, 0, nb, Hc_exit, None, free)
        return empty if res is None else res
    vv = np.flatnonzero((nb[0] < INF) & (exit_rest < INF))
    vv, Ev, pos = _live_edge(ctx, blk.edge, P, cols, vv, exit_rest)
    lab, vs, cand = _extend(P, pos, Ev, nb[:, vv], np.repeat(after[:, None], len(vv), axis=1), Hc_exit[vv], w, Q, thr,
                            t.lim, t_start + o.time_limit_s)
    if len(lab) == 0:
        return empty
    nP, ncols, par = _filter_by_column(lab, vs, cand, vv, slack, o, t_start, free, len(P), W.links.get(ROWS_KEY, 0))
    return nP, ncols, par, np.zeros((len(ncols), 0), dtype=np.int64)


def _cross_link(ctx, link: Link, X, xcols, pre_min, pre_minw: int, add, rest, bc_extra, free=None):
    """Labels X (partial sums from some start, columns ``xcols`` of the link's entry) extended
    across the link: per entry column, its branches' labels to every exit column, summed, added
    to X; ``add``: the exit node's own terms added too (None: not); bounds: ``pre_min`` and
    ``pre_minw`` below everything before X, ``rest`` the weighted least of everything after
    (the exit's own terms included when they are not added), ``bc_extra`` terms known to follow
    (the exit's own when not added); ``free``: the free floors where X holds every layer before
    the link (``_free_floors``), else None. Pareto per exit column: (sums, exit columns, parent label,
    inner columns in ``link.inodes`` order), None when nothing survives."""
    m, t, W, w, Q, thr, slack, o, t_start, beam = ctx
    after = np.minimum(rest + W.node[link.exit], INF) if add is not None else rest
    coll: tuple[list, list, list, list] = ([], [], [], [])
    live = len(X)
    for c in np.unique(xcols):
        if time.perf_counter() - t_start > o.time_limit_s:
            raise LabelsCut
        ids = np.flatnonzero(xcols == c)
        Xc = X[ids]
        R = _branches_labels(ctx, link, int(c), after, pre_min + Xc.min(axis=0), pre_minw + int((Xc @ w).min()))
        if R is None:
            continue
        Y, ycols, yint = R
        check_labels(live + len(ids) * len(Y), X.shape[1], 0, 0, 0, ctx[2].links.get(ROWS_KEY, 0))  # the pairs to sum
        if add is not None:
            Y = Y + add[:, ycols].T
        cand = (Xc[:, None, :] + Y[None, :, :]).reshape(-1, X.shape[1])
        yc = np.tile(ycols, len(ids))
        known = cand + pre_min if bc_extra is None else cand + pre_min + bc_extra[:, yc].T
        keep = (_fP(known) < thr) & (pre_minw + cand @ w + rest[yc] < Q * thr) & (known[:, 4:] <= t.lim).all(axis=1)
        coll[0].append(cand[keep])
        coll[1].append(yc[keep])
        coll[2].append(np.repeat(ids, len(ycols))[keep])
        coll[3].append(yint[np.tile(np.arange(len(ycols)), len(ids))[keep]])
        live += len(coll[1][-1])
    if not coll[0]:
        return None
    cand, yc, par, yint = (np.concatenate(x) for x in coll)
    if len(cand) == 0:
        return None
    nP, ncols, sel = _filter_by_column(np.arange(len(cand)), yc, cand, np.arange(m.cols.n), slack, o, t_start, free,
                                       len(X), W.links.get(ROWS_KEY, 0))
    return nP, ncols, par[sel], yint[sel]


# ``W.links``' entry counting the bytes of the weighted rows cached there per entry column (``_branches_labels``)
ROWS_KEY = "label rows' bytes"


def _branches_labels(ctx, link: Link, c: int, after, smin, sminw: int):
    """Every branch's labels from entry column c to every exit column, summed over the branches
    (every pair with the same exit column); None when nothing survives. ``after``: the weighted
    least of everything after the link (its exit's own terms included)."""
    m, t, W = ctx[0], ctx[1], ctx[2]
    pw = W.links.get(("pw", id(link), c))  # the label passes share W (its tables no longer grow)
    if pw is None:
        us = np.array([c])
        pw = W.links[("pw", id(link), c)] = [_branch_rows(W, m.cols, br, us)[0] for br in link.branches]
        W.links[ROWS_KEY] = W.links.get(ROWS_KEY, 0) + sum(r.nbytes for r in pw)
    sum_w = np.minimum(np.sum(pw, axis=0), INF)
    nb = t.lnode[link.exit]
    R = None
    for q, br in enumerate(link.branches):
        after_q = np.minimum(sum_w - pw[q] + after, INF)  # the other branches, then what follows
        if isinstance(br, Series):
            res = _series_labels(ctx, br, c, after_q, smin, sminw, nb)
        else:
            res = _edge_labels(ctx, br, c, after_q, smin, sminw, nb)
        if res is None:
            return None
        R = res if R is None else _combine(R, res)
        if len(R[0]) == 0:
            return None
    return R


def _edge_labels(ctx, e: int, c: int, after, smin, sminw: int, nb):
    """A branch of one edge: its terms from column c to every exit column that may still beat the
    incumbent (one label each)."""
    m, t, W, w, Q, thr = ctx[:6]
    vv = np.flatnonzero((nb[0] < INF) & (after < INF))
    E = _edge_sub(t, e, np.array([c]), vv)[:, 0, :].T
    known = E + smin + nb[:, vv].T
    keep = (_fP(known) < thr) & (sminw + E @ w + after[vv] < Q * thr) & (known[:, 4:] <= t.lim).all(axis=1)
    if not keep.any():
        return None
    return E[keep], vv[keep], np.zeros((int(keep.sum()), 0), dtype=np.int64)


def _series_labels(ctx, S: Series, a: int, after, smin, sminw: int, nb):
    """A series' partial sums from entry column ``a`` to every exit column (exit's own terms not
    added), Pareto per exit column: (sums, exit columns, inner columns in ``S.inodes`` order);
    None when nothing survives. ``after``: the weighted least of everything after the series (its
    exit's own terms included); ``smin``, ``sminw``: below everything before it."""
    m, t, W, w, Q, thr, slack, o, t_start, beam = ctx
    key = ("rests", id(S), after.tobytes())  # the same in each label pass (W shared, its tables grown)
    rests = W.links.get(key)
    if rests is None:
        rests = W.links[key] = _series_rests(W, m.cols, S, after)
    X, xcols, xint = np.zeros((1, 4 + len(t.lim)), dtype=np.int64), np.array([a]), np.zeros((1, 0), dtype=np.int64)
    for i, link in enumerate(S.links):
        inner = i < len(S.nodes)
        tgt, rest = (S.nodes[i], rests[i]) if inner else (S.exit, after)
        if link.direct:
            res = _edge_step(ctx, link.edge, X, xcols, tgt, inner, rest, smin, sminw)
        else:
            res = _cross_link(ctx, link, X, xcols, smin, sminw, t.lnode[tgt] if inner else None, rest,
                              None if inner else nb)
        if res is None:
            return None
        X, xcols, par, yint = res
        xint = np.column_stack([xint[par], yint] + ([xcols] if inner else []))
        if beam is not None:  # the heuristic passes: a few labels per column inside the branches too
            keep = np.union1d(_beam_keep(X @ w, xcols, beam), _beam_keep(_fP(X), xcols, beam))
            X, xcols, xint = X[keep], xcols[keep], xint[keep]
    return X, xcols, xint


def _edge_step(ctx, e: int, X, xcols, tgt: int, inner: bool, rest, smin, sminw: int):
    """Labels extended along one edge to node ``tgt`` (its terms added when ``inner``, else only
    bounding): (sums, columns, parent label, no inner columns), None when nothing survives."""
    m, t, W, w, Q, thr, slack, o, t_start, beam = ctx
    nd = t.lnode[tgt]
    vv = np.flatnonzero((nd[0] < INF) & (rest < INF))
    if len(vv) == 0:
        return None
    vv, Ev, pos = _live_edge(ctx, e, X, xcols, vv, (W.node[tgt] if inner else 0) + sminw + rest)
    if len(vv) == 0:
        return None
    if inner:
        nodev, bc = nd[:, vv], np.repeat(smin[:, None], len(vv), axis=1)
    else:
        nodev, bc = np.zeros((len(nd), len(vv)), dtype=np.int64), smin[:, None] + nd[:, vv]
    lab, vs, cand = _extend(X, pos, Ev, nodev, bc, sminw + rest[vv], w, Q, thr, t.lim, t_start + o.time_limit_s)
    if len(lab) == 0:
        return None
    X, cols, par = _filter_by_column(lab, vs, cand, vv, slack, o, t_start, None, len(X), W.links.get(ROWS_KEY, 0))
    return X, cols, par, np.zeros((len(cols), 0), dtype=np.int64)


def _live_edge(ctx, e: int, X, xcols, vv, after_w):
    """``_live_targets``, then the edge's components to them (``_edge_sub``, per distinct column
    of ``xcols``): (live columns of ``vv``, components, each label's producer row). With few
    producer columns the components to every column of ``vv`` cost less than the min-plus
    reduction: the same test on them."""
    m, t, w, Q, thr = ctx[0], ctx[1], ctx[3], ctx[4], ctx[5]
    us, pos = np.unique(xcols, return_inverse=True)
    if len(vv) == 0 or 4 * len(us) * len(vv) > m.cols.n * m.cols.n_top:
        vv = _live_targets(ctx, e, X, xcols, vv, after_w)
        check_labels(len(X), X.shape[1], X.shape[1] * len(us) * len(vv))
        return vv, _edge_sub(t, e, us, vv), pos
    check_labels(len(X), X.shape[1], X.shape[1] * len(us) * len(vv))
    Ev = _edge_sub(t, e, us, vv)
    F = np.full(len(us), INF, dtype=np.int64)
    np.minimum.at(F, pos, X @ w)
    Ew = np.tensordot(w, Ev, axes=([0], [0]))  # (producer columns, len(vv)): the weighted edge
    live = np.min(F[:, None] + Ew, axis=0) + after_w[vv] < Q * thr
    return vv[live], Ev[:, :, live], pos


def _live_targets(ctx, e: int, X, xcols, vv, after_w) -> np.ndarray:
    """The columns of ``vv`` that some label may reach along edge e below the incumbent: the least
    weighted label per producer column plus the weighted edge plus ``after_w`` (per consumer
    column: its own weighted terms and the bound on what follows) below Q * thr; the same sums as
    ``_extend``'s weighted test, so nothing it would keep is lost."""
    m, t, W, w, Q, thr = ctx[:6]
    if len(vv) == 0:
        return vv
    F = np.full(m.cols.n, INF, dtype=np.int64)
    np.minimum.at(F, xcols, X @ w)
    lb = _reduce(F[None, :], m.cols, *W.edge[e])[0][vv] + after_w[vv]
    return vv[lb < Q * thr]


def _series_rests(W, C: _Columns, S: Series, after) -> list:
    """rests[i]: the weighted least of everything after the series' i-th node given its column (its
    own terms excluded), backwards from ``after``."""
    rests: list = [None] * len(S.nodes)
    r = after
    for i in range(len(S.nodes) - 1, -1, -1):
        r = _back(W, C, S.links[i + 1], r)
        rests[i] = r
        r = np.minimum(W.node[S.nodes[i]] + r, INF)
    return rests


def _combine(A, B):
    """Sums of two paths' labels with the same exit column (every pair)."""
    XA, bA, iA = A
    XB, bB, iB = B
    order = np.argsort(bB, kind="stable")
    XB, bB, iB = XB[order], bB[order], iB[order]
    starts = np.searchsorted(bB, bA, side="left")
    counts = np.searchsorted(bB, bA, side="right") - starts
    ia = np.repeat(np.arange(len(bA)), counts)
    offs = np.arange(len(ia)) - np.repeat(np.cumsum(counts) - counts, counts)
    ib = np.repeat(starts, counts) + offs
    return XA[ia] + XB[ib], bA[ia], np.column_stack([iA[ia], iB[ib]])
