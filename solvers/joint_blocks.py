"""Series-parallel blocks for the joint uneven-split solver (``solvers.uneven_joint``): per
weighting, each link's table (entry x exit columns, branches run from every entry column, nested
links through their own tables, crossed by min-plus products), the backward rests, and ``_Graph``
(the cut nodes and their blocks, or a chain).
"""

from __future__ import annotations

import time

import numpy as np

from .uneven_sp import Link, Series
from .joint_columns import INF, _Columns, _Tables, _edge_col, _reduce, _reduce_back


class _Weighted:
    """The weighted tables of one weight vector w = (w_S0, w_S1, w_V0, w_V1); ``mask``: columns
    allowed (all when None). ``links``: the nested links' tables at these weights (``_link_table``)."""

    def __init__(self, t: _Tables, w, mask=None):
        self.t, self.w, self.mask = t, tuple(int(x) for x in w), mask
        self.node = [t.weighted_node(l, self.w) for l in range(len(t.node))]  # noqa: E741
        if mask is not None:
            for n in self.node:
                n[~mask] = INF
        self.edge = [t.weighted_edge(e, self.w) for e in range(len(t.top))]
        self.links: dict = {}


class _PerTermMax:
    """AccPar's per-layer cost: every term's busier side (max(S_0, S_1) of each layer and edge at
    the top, max(V_0, V_1) of each layer's and each edge level's), summed. Its sum is at least
    max(S_0, S_1) + max(V_0, V_1) for every plan: a DP over it minimises an upper bound."""

    def __init__(self, t: _Tables):
        self.t, self.mask = t, None
        self.node = []
        for n in t.node:
            out = np.maximum(n[0], n[1]) + np.maximum(n[2], n[3])
            out[n[0] >= INF] = INF
            self.node.append(out)
        self.edge = [(np.maximum(t.top[e][0], t.top[e][1]), [np.maximum(a[0], a[1]) for a in t.lev[e]])
                     for e in range(len(t.top))]
        self.links: dict = {}


CHUNK = 24  # batch rows per reduction of a block's path tables (memory: CHUNK * n_top^2 * n_tau int64)


MINPLUS_CELLS = 4_000_000  # int64 cells per chunk of a min-plus product with a nested link's table


def _edge_rows_w(C: _Columns, top: np.ndarray, lev: list[np.ndarray], us: np.ndarray) -> np.ndarray:
    """(len(us), n): the weighted edge from each producer column in ``us`` to every consumer column."""
    out = np.repeat(top[us // C.n_tau], C.n_tau, axis=1)
    for h in range(1, C.H):
        t_hu = (us % C.n_tau) // C.K ** (C.H - 1 - h) % C.K
        out = out + np.repeat(lev[h - 1][t_hu], C.K ** (C.H - 1 - h), axis=1)
    return out


def _link_table(W, C: _Columns, link: Link, need=None):
    """A nested link's least weighted cost (its inner nodes included, its ends excluded) from the
    allowed columns of its entry (``rows``) to the allowed columns of its exit (``cols``): (rows,
    cols, table). Rows are computed when a forward pass first reaches them (``need``: entry
    columns); a row never reached is INF: no plan that can beat the incumbent passes there."""
    got = W.links.get(id(link))
    if got is None:
        rows = np.flatnonzero(W.node[link.entry] < INF)
        cols = np.flatnonzero(W.node[link.exit] < INF)
        got = W.links[id(link)] = (rows, cols, np.full((len(rows), len(cols)), INF, dtype=np.int64),
                                   np.zeros(len(rows), dtype=bool))
    rows, cols, tbl, done = got
    if need is not None:
        at = np.searchsorted(rows, need)
        at = at[(at < len(rows)) & (rows[np.minimum(at, len(rows) - 1)] == need)]
        todo = at[~done[at]]
        for i in range(0, len(todo), CHUNK):
            idx = todo[i : i + CHUNK]
            tbl[idx] = _link_rows(W, C, link, rows[idx], grow=True)[:, cols]
        done[todo] = True
    return rows, cols, tbl


def _table_rows(W, C: _Columns, link: Link, us: np.ndarray, grow: bool = False) -> np.ndarray:
    """(len(us), n): a link's least weighted cost from each entry column in ``us`` to every exit column."""
    if link.direct:
        return np.minimum(_edge_rows_w(C, *W.edge[link.edge], us), INF)
    rows, cols, tbl = _link_table(W, C, link, us if grow else None)
    at = np.searchsorted(rows, us)
    ok = (at < len(rows)) & (rows[np.minimum(at, len(rows) - 1)] == us)
    out = np.full((len(us), C.n), INF, dtype=np.int64)
    out[np.ix_(np.flatnonzero(ok), cols)] = tbl[at[ok]]
    return out


def _link_rows(W, C: _Columns, link: Link, us: np.ndarray, grow: bool = False, prune=None) -> np.ndarray:
    """(len(us), n): the sum over a link's branches of each branch's least weighted cost from each
    entry column in ``us`` to every exit column. ``grow``: a forward pass (nested tables gain the
    rows it reaches); ``prune``: (forward value of each row's entry, relaxed rests after inner
    nodes, cap): partial sums that cannot stay within the cap are dropped on the way."""
    acc = np.zeros((len(us), C.n), dtype=np.int64)
    for br in link.branches:
        acc = np.minimum(acc + _branch_rows(W, C, br, us, grow, prune), INF)
    return acc


def _branch_rows(W, C: _Columns, br, us: np.ndarray, grow: bool = False, prune=None) -> np.ndarray:
    """(len(us), n): one branch's least weighted cost from each entry column in ``us`` to every exit
    column (its first link read as rows, the rest run)."""
    if not isinstance(br, Series):
        return np.minimum(_edge_rows_w(C, *W.edge[br], us), INF)
    F = _table_rows(W, C, br.links[0], us, grow)
    F = _pruned(np.minimum(F + W.node[br.nodes[0]][None, :], INF), br.nodes[0], prune)
    return _run_series(W, C, F, br, 1, grow=grow, prune=prune)[0]


def _pruned(F: np.ndarray, node: int, prune) -> np.ndarray:
    """F with INF where the row's entry value plus F plus the relaxed rest after ``node`` exceeds the cap."""
    if prune is None or node not in prune[1]:
        return F
    g, inner, cap = prune
    return np.where(g[:, None] + F + inner[node][None, :] > cap, INF, F)


def _cross(W, C: _Columns, F: np.ndarray, link: Link, grow: bool = False) -> np.ndarray:
    """min over the link's entry column of F[..., col_u] + link(col_u, col_v): (batch, n) -> (batch, n)."""
    if link.direct:
        return _reduce(F, C, *W.edge[link.edge])
    reached = np.flatnonzero((F < INF).any(axis=0))
    rows, cols, tbl = _link_table(W, C, link, reached if grow else None)
    Fr = F[:, rows]
    live = np.flatnonzero((Fr < INF).any(axis=0))
    Fr, tbl = Fr[:, live], tbl[live]
    out = np.full(F.shape, INF, dtype=np.int64)
    step = max(1, MINPLUS_CELLS // max(1, tbl.size))
    for i in range(0, len(F), step):
        out[i : i + step, cols] = np.min(Fr[i : i + step, :, None] + tbl[None, :, :], axis=1, initial=INF)
    return np.minimum(out, INF)


def _run_series(W, C: _Columns, F: np.ndarray, series: Series, start: int = 0, keep: bool = False,
                grow: bool = False, prune=None):
    """F (batch, n) at the node before ``series.links[start]`` -> (batch, n) at the series' exit
    (exit node's own cost not added); ``keep``: F after each node too; ``grow``, ``prune``: as
    in ``_link_rows``."""
    trail = []
    for i in range(start, len(series.links)):
        F = _cross(W, C, F, series.links[i], grow)
        if i < len(series.nodes):
            F = _pruned(np.minimum(F + W.node[series.nodes[i]][None, :], INF), series.nodes[i], prune)
            if keep:
                trail.append(F)
    return F, trail


def _back(W, C: _Columns, link: Link, r: np.ndarray) -> np.ndarray:
    """min over the link's exit column of link(col_u, col_v) + r[col_v], for every col_u."""
    if link.direct:
        return _reduce_back(r[None, :], C, *W.edge[link.edge])[0]
    rows, cols, tbl = _link_table(W, C, link)
    out = np.full(C.n, INF, dtype=np.int64)
    out[rows] = np.min(tbl + r[cols][None, :], axis=1, initial=INF)
    return np.minimum(out, INF)


def _link_col(W, C: _Columns, link: Link, cv: int) -> np.ndarray:
    """link(col_u, cv) for every col_u."""
    if link.direct:
        return _edge_col(C, *W.edge[link.edge], cv)
    rows, cols, tbl = _link_table(W, C, link)
    out = np.full(C.n, INF, dtype=np.int64)
    j = np.searchsorted(cols, cv)
    if j < len(cols) and cols[j] == cv:
        out[rows] = tbl[:, j]
    return out


def _link_columns(W, C: _Columns, link: Link, cu: int, cv: int, cols: list[int]) -> None:
    """The columns of the link's inner nodes of least weighted cost given its two ends' columns."""
    for br in link.branches:
        if not isinstance(br, Series):
            continue
        F0 = np.full((1, C.n), INF, dtype=np.int64)
        F0[0, cu] = 0
        _, trail = _run_series(W, C, F0, br, keep=True)
        nxt = cv
        for i in range(len(br.nodes) - 1, -1, -1):
            c = int(np.argmin(trail[i][0] + _link_col(W, C, br.links[i + 1], nxt)))
            cols[br.nodes[i]] = c
            if not br.links[i + 1].direct:
                _link_columns(W, C, br.links[i + 1], c, nxt, cols)
            nxt = c
        if not br.links[0].direct:
            _link_columns(W, C, br.links[0], cu, nxt, cols)


def _relaxed_rests(W, C: _Columns, blocks: list[Link]):
    """(LB, inner): LB[n][c] a lower bound on the weighted least of everything after cut node n
    given its column (its own terms excluded): per link, its branch of most nodes runs backwards
    from what follows the exit, every other branch on its own (the exit column they share is
    relaxed), nested links alike; inner[n]: the same after an inner node of a block's main branch."""
    LB = {blocks[-1].exit: np.zeros(C.n, dtype=np.int64)}
    inner: dict = {}
    for blk in reversed(blocks):
        nxt = np.minimum(W.node[blk.exit] + LB[blk.exit], INF)
        LB[blk.entry] = _relaxed_back(W, C, blk, nxt, inner)
    return LB, inner


def _relaxed_back(W, C: _Columns, link: Link, r: np.ndarray, inner=None) -> np.ndarray:
    """A lower bound on min over the exit column of link(col_u, col_v) + r[col_v], for every col_u."""
    if link.direct:
        return _reduce_back(r[None, :], C, *W.edge[link.edge])[0]
    sizes = [len(br.inodes) if isinstance(br, Series) else 0 for br in link.branches]
    main = sizes.index(max(sizes))
    acc = np.zeros(C.n, dtype=np.int64)
    for i, br in enumerate(link.branches):
        acc = np.minimum(acc + _branch_back(W, C, br, r if i == main else np.zeros(C.n, dtype=np.int64),
                                            inner if i == main else None), INF)
    return acc


def _branch_back(W, C: _Columns, br, r: np.ndarray, inner=None) -> np.ndarray:
    """``_relaxed_back`` of one branch; ``inner``: records the rest after each of its nodes."""
    if not isinstance(br, Series):
        return _reduce_back(r[None, :], C, *W.edge[br])[0]
    for i in range(len(br.links) - 1, -1, -1):
        r = _relaxed_back(W, C, br.links[i], r)
        if i > 0:
            if inner is not None:
                inner[br.nodes[i - 1]] = r
            r = np.minimum(W.node[br.nodes[i - 1]] + r, INF)
    return r


def _check(deadline: float | None) -> None:
    """TimeoutError once ``time.perf_counter()`` is past ``deadline`` (None: no deadline)."""
    if deadline is not None and time.perf_counter() > deadline:
        raise TimeoutError("the time limit")


class _Graph:
    def __init__(self, t: _Tables, blocks: list[Link]):
        self.t, self.blocks, self.C = t, blocks, t.m.cols
        L = len(t.node)
        self.allowed = [np.flatnonzero(t.node[l, 0] < INF) for l in range(L)]  # noqa: E741

    def forward(self, w, mask=None, W=None, alive=None, cap=None, deadline=None):
        """Weighted forward values at the cut nodes (and the block tables kept for backtracking);
        ``W``: tables weighted otherwise (``_PerTermMax``); ``alive``: cut node -> columns still
        allowed there (reduced-cost fixing; the others cost INF); ``cap``: a weighted value no
        better plan reaches (the incumbent's): a block's table skips the entry columns whose
        forward value plus ``_relaxed_rests`` exceeds it (their rows stay out of the tables, so
        ``_cut_backward`` fixes them out; the least plan, at most the incumbent, keeps its rows).
        ``deadline``: a ``time.perf_counter()`` value; TimeoutError once past it (checked per block
        and per chunk of entry columns: a pass on a wide graph takes seconds)."""
        W = W or _Weighted(self.t, w, mask)
        for n, ok in (alive or {}).items():
            W.node[n] = np.where(ok, W.node[n], INF)
        LB, inner = _relaxed_rests(W, self.C, self.blocks) if cap is not None else (None, None)
        G = {self.blocks[0].entry: W.node[self.blocks[0].entry]}
        tables = {}
        for k, blk in enumerate(self.blocks):
            _check(deadline)
            g = G[blk.entry]
            if blk.direct:
                nxt = _reduce(g[None, :], self.C, *W.edge[blk.edge])[0]
            else:
                ent = np.flatnonzero(W.node[blk.entry] < INF)
                if LB is not None:
                    ent = ent[g[ent] + LB[blk.entry][ent] <= cap]
                tbl = np.zeros((len(ent), self.C.n), dtype=np.int64)
                for i in range(0, len(ent), CHUNK):
                    _check(deadline)
                    prune = None if LB is None else (g[ent[i : i + CHUNK]], inner, cap)
                    tbl[i : i + CHUNK] = _link_rows(W, self.C, blk, ent[i : i + CHUNK], True, prune)
                tables[k] = (ent, tbl)
                nxt = np.minimum(np.min(g[ent][:, None] + tbl, axis=0, initial=INF), INF)  # (one temporary)
            G[blk.exit] = np.minimum(nxt + W.node[blk.exit], INF)
        return W, G, tables

    def backtrack(self, W: _Weighted, G, tables) -> list[int]:
        L = len(self.t.node)
        cols = [0] * L
        last = self.blocks[-1].exit
        cols[last] = int(np.argmin(G[last]))
        for k in range(len(self.blocks) - 1, -1, -1):
            blk = self.blocks[k]
            cv = cols[blk.exit]
            if blk.direct:
                cols[blk.entry] = int(np.argmin(G[blk.entry] + _edge_col(self.C, *W.edge[blk.edge], cv)))
            else:
                ent, tbl = tables[k]
                cols[blk.entry] = int(ent[np.argmin(G[blk.entry][ent] + tbl[:, cv])])
                _link_columns(W, self.C, blk, cols[blk.entry], cv, cols)
        return cols
