"""Variable elimination over the type vectors a bound leaves (``solvers.tree_dual``): each node's
domain is an explicit list of vector ids, every factor a dense table over its scope's lists, nodes
eliminated greedily by the size of the table they make. Exact over those domains; None when a
table would pass ``max_entries``.
"""

from __future__ import annotations

import time

import numpy as np

from .vectors import VectorCosts

MAX_ENTRIES = 30_000_000  # entries of one combined table, and of all tables held at once (int64: 240 MB)


def _edge_table(vc: VectorCosts, e: int, su: np.ndarray, sx: np.ndarray) -> np.ndarray:
    vs, ws = np.repeat(su, len(sx)), np.tile(sx, len(su))
    return vc.edge_pairs(e, vs, ws).reshape(len(su), len(sx))


def _combine(scope: list[int], bucket: list[tuple[tuple[int, ...], np.ndarray]], sizes: list[int]) -> np.ndarray:
    table = np.zeros([sizes[n] for n in scope], dtype=np.int64)
    for fscope, arr in bucket:
        perm = sorted(range(len(fscope)), key=lambda k: scope.index(fscope[k]))
        shape = [sizes[n] if n in fscope else 1 for n in scope]
        table = table + arr.transpose(perm).reshape(shape)
    return table


def _pick(alive: set[int], at: list[list], sizes: list[int]) -> tuple[int, int]:
    """(the live node with the fewest neighbours, ties by the smallest message; its table's entries)."""
    best = None
    for z in sorted(alive):
        scope = {n for f in at[z] for n in f[0]} - {z}
        message = 1
        for n in scope:
            message *= sizes[n]
        key = (len(scope), message, message * sizes[z])
        if best is None or key < best[0]:
            best = (key, z)
    return best[1], best[0][2]


def eliminate(vc: VectorCosts, domains: list[np.ndarray], max_entries: int = MAX_ENTRIES,
              deadline: float | None = None) -> tuple[int, list[int]] | None:
    """(optimum, vectors) over the given domains (every domain non-empty), or None past the size
    limit (one table, or all edge tables and messages held at once) or the deadline."""
    sizes = [len(d) for d in domains]
    if sum(sizes[u] * sizes[x] for u, x in vc.edges if min(sizes[u], sizes[x]) > 1) > max_entries:
        return None
    at: list[list] = [[] for _ in range(vc.N)]
    factors = [((n,), vc.intra_vec(n)[domains[n]].astype(np.int64)) for n in range(vc.N)]
    for e, (u, x) in enumerate(vc.edges):
        table = _edge_table(vc, e, domains[u], domains[x])
        if sizes[u] == 1:  # a node with one vector left: its edges become its neighbours' node costs
            factors.append(((x,), table[0]))
        elif sizes[x] == 1:
            factors.append(((u,), table[:, 0]))
        else:
            factors.append(((u, x), table))
    for f in factors:
        for n in f[0]:
            at[n].append(f)
    alive, records, constant = set(range(vc.N)), [], 0
    held = sum(f[1].size for f in factors)
    while alive:
        z, entries = _pick(alive, at, sizes)
        if entries > max_entries or held > 2 * max_entries or (deadline is not None and time.perf_counter() > deadline):
            return None
        bucket = at[z]
        scope = sorted({n for f in bucket for n in f[0]})
        table = _combine(scope, bucket, sizes)
        for f in bucket:
            for n in f[0]:
                if n != z:
                    at[n] = [g for g in at[n] if g is not f]
        alive.discard(z)
        axis = scope.index(z)
        rest = tuple(n for n in scope if n != z)
        records.append((z, rest, np.argmin(table, axis=axis)))
        message = np.min(table, axis=axis)
        held += 2 * message.size - sum(f[1].size for f in bucket)  # the message and its argmin
        if rest:
            new = (rest, message)  # one object: it leaves every list by identity
            for n in rest:
                at[n].append(new)
        else:
            constant += int(message)
    chosen: dict[int, int] = {}
    for z, rest, arg in reversed(records):
        chosen[z] = int(arg[tuple(chosen[n] for n in rest)]) if rest else int(arg)
    return constant, [int(domains[n][chosen[n]]) for n in range(vc.N)]
