"""``evaluate``'s integer pass across layers with numpy, for networks of ``thresholds.NUMPY_FROM_LAYERS``
layers or more (the DP has imported numpy for them already; smaller ones never import it).

The same coefficients as the per-layer loop (``evaluate._Coefficients``, one call per distinct
column of types and per distinct pair of columns an edge joins), multiplied by the tensor sizes
in int64. Every product is bounded first: when one could reach 2^62, ``layer_amounts`` returns
None and the caller runs the loop in Python integers. Sums over layers are taken in Python
integers (no overflow), so the figures are exactly the loop's.
"""

from __future__ import annotations

from itertools import chain

import numpy as np

_LIMIT = 2**62
_KEY_BITS = 2  # per level in a column's key: a type's position in ALL_TYPES (< 4)
_KEY_KINDS_BITS = 14  # a node kind's position in the key, above the levels'
_KEY_LEVELS = 24  # levels whose key fits int64 beside it: 2 * 24 + 14 < 63


def as_arrays(sizes: list, node_types: list, edges, edge_f: list[int]) -> tuple | None:
    """A network's facts for ``layer_amounts``: (sizes, node ids, distinct node types, edges, edge
    tensors); None when a size or tensor is beyond int64's reach."""
    size_arr, f_arr = _int64(sizes, _LIMIT), _int64(edge_f, _LIMIT)
    if size_arr is None or f_arr is None:
        return None
    distinct: dict = {}
    ids = np.array([distinct.setdefault(nt, len(distinct)) for nt in node_types], dtype=np.int64)
    edge_arr = np.array(edges, dtype=np.int64).reshape(-1, 2)
    return size_arr.reshape(-1, 3), ids, list(distinct), edge_arr, f_arr


def plan_codes(types, code: dict[int, int]) -> np.ndarray:
    """(layers, levels) int64: each type's position in ``ALL_TYPES`` (``code``: id(type) -> it)."""
    levels, layers = len(types), len(types[0])
    ids = np.fromiter(map(id, chain.from_iterable(types)), dtype=np.int64, count=levels * layers)
    known = np.array(sorted(code), dtype=np.int64)
    at = np.searchsorted(known, ids).clip(0, len(known) - 1)
    if not np.array_equal(known[at], ids):
        raise ValueError("a plan entry is not a partition type")
    return np.array([code[k] for k in known.tolist()], dtype=np.int64)[at].reshape(levels, layers).T


def _column_keys(codes: np.ndarray, node_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(first layer of each distinct (column of types, node kind), each layer's position among
    them); None when a column does not fit one int64 key (more than ``_KEY_LEVELS`` levels, say)."""
    levels = codes.shape[1]
    if levels > _KEY_LEVELS or int(codes.max()) >= 1 << _KEY_BITS or int(node_ids.max()) >= 1 << _KEY_KINDS_BITS:
        return None
    keys = node_ids << (_KEY_BITS * levels)
    for h in range(levels):
        keys |= codes[:, h] << (_KEY_BITS * h)
    _, first, inv = np.unique(keys, return_index=True, return_inverse=True)
    return first, inv.reshape(-1)


def _int64(rows, bound: int) -> np.ndarray | None:
    """``rows`` as int64, or None if a magnitude reaches ``bound``."""
    try:
        a = np.array(rows, dtype=np.int64)
    except OverflowError:
        return None
    return a if a.size == 0 or int(np.abs(a).max()) < bound else None


def layer_amounts(sizes: np.ndarray, node_ids: np.ndarray, node_types: list, edges: np.ndarray,
                  edge_f: np.ndarray, codes: np.ndarray, coeff, weight_copies: int):
    """(intra [level][layer], inter [level][edge], footprint [layer], final counts [layer]) in units,
    as ``evaluate``'s loop gives them; None when int64 might not hold a product.

    ``sizes`` (layers, 3): A(F_l), A(W_l), A(F_{l+1}); ``node_ids`` per layer: its position in
    ``node_types`` (the kinds' behaviours); ``edges`` (edges, 2) and ``edge_f``: the edges and
    their tensors; ``codes``: ``plan_codes``."""
    found = _column_keys(codes, node_ids)
    if found is None:
        return None
    first, inv = found
    keys_list = [(tuple(row), node_types[n]) for row, n in zip(codes[first].tolist(), node_ids[first].tolist())]
    cols = [coeff.column(col, nt) for col, nt in keys_list]
    size_max = int(sizes.max()) if sizes.size else 0
    bound = _LIMIT // (3 * max(size_max, 1))
    k_intra, k_foot = _int64([c.intra for c in cols], bound), _int64([coeff.footprint(c, weight_copies) for c in cols], bound)
    if k_intra is None or k_foot is None:
        return None
    intra = np.einsum("lk,lhk->hl", sizes, k_intra[inv])
    footprint = np.einsum("lk,lk->l", sizes, k_foot[inv])
    inter = _edge_amounts(edges, edge_f, inv, keys_list, coeff, codes.shape[1])
    if inter is None:
        return None
    finals = [c.final_counts for c in cols]
    return (tuple(map(tuple, intra.tolist())), tuple(map(tuple, inter.tolist())), tuple(footprint.tolist()),
            [finals[k] for k in inv.tolist()])


def _edge_amounts(edges: np.ndarray, edge_f: np.ndarray, inv: np.ndarray, keys_list: list, coeff,
                  levels: int) -> np.ndarray | None:
    """[level][edge] units: each edge's tensor times its pair of columns' coefficients."""
    if not len(edges):
        return np.zeros((levels, 0), dtype=np.int64)
    k = len(keys_list)
    pairs, pinv = np.unique(inv[edges[:, 0]] * k + inv[edges[:, 1]], return_inverse=True)
    coefs = []
    for p in pairs.tolist():
        (cu, nu), (cv, nv) = keys_list[p // k], keys_list[p % k]
        coefs.append(coeff.edge(cu, cv, nu, nv))
    f_max = int(edge_f.max())
    k_edge = _int64(coefs, _LIMIT // max(f_max, 1))
    if k_edge is None:
        return None
    return (edge_f[:, None] * k_edge[pinv.reshape(-1)]).T
