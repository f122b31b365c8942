"""``evaluate``'s integer pass across layers with numpy, for networks of ``thresholds.NUMPY_FROM_LAYERS``
layers or more (the DP has imported numpy for them already; smaller ones never import it).

The same coefficients as the per-layer loop (``evaluate._Coefficients``): the distinct columns of
types (with their kinds) first, then one call per distinct (type, counts above, kind) of those
columns at a level and per distinct such pair an edge joins, gathered and multiplied by the tensor
sizes in int64. Every product is bounded first: when one could reach 2^62, ``layer_amounts`` returns
None and the caller runs the loop in Python integers. Sums over layers are taken in Python
integers (no overflow), so the figures are exactly the loop's.
"""

from __future__ import annotations

from itertools import chain

import numpy as np

from .partition import NUM_TYPES

_LIMIT = 2**62
_KEY_BITS = 2  # a type's position in ALL_TYPES (< 4) in a key
_KEY_KINDS_BITS = 14  # a node kind's position in a key, above the type's
_KEY_LEVELS = 24  # levels whose column key fits int64 beside the kind: 2 * 24 + 14 < 63 (and a counts
# key, (24 + 1) ** NUM_TYPES, stays below _COUNTS_SPAN)


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
    as ``evaluate``'s loop gives them; None when int64 might not hold a product (or a key).

    ``sizes`` (layers, 3): A(F_l), A(W_l), A(F_{l+1}); ``node_ids`` per layer: its position in
    ``node_types`` (the kinds' behaviours); ``edges`` (edges, 2) and ``edge_f``: the edges and
    their tensors; ``codes``: ``plan_codes``. Every coefficient depends on a few small integers (the
    type at a level, the counts of each type above it, the kinds): each distinct combination is
    asked of ``coeff`` once and the arrays gather them."""
    levels = codes.shape[1]
    found = _column_keys(codes, node_ids)
    if found is None:
        return None
    first, inv = found  # the distinct (column of types, kind) and each layer's among them
    ucodes, uids = codes[first], node_ids[first]
    onehot = (ucodes[:, :, None] == np.arange(NUM_TYPES)).astype(np.int64)  # (columns, levels, types)
    above = np.cumsum(onehot, axis=1) - onehot  # each type's count at the levels above, per level
    radix = (levels + 1) ** np.arange(NUM_TYPES, dtype=np.int64)
    state = (uids[:, None] << _KEY_BITS | ucodes) * _COUNTS_SPAN + above @ radix  # (columns, levels)
    bound = _LIMIT // (3 * max(int(sizes.max()) if sizes.size else 0, 1))
    k_intra = _gathered(state, lambda key: coeff.intra_of(*_decode(key, node_types, levels)), bound)
    finals = [_counts(x, levels) for x in ((above[:, -1] + onehot[:, -1]) @ radix).tolist()]
    foot = _int64([coeff.footprint_of(c, node_types[n], weight_copies) for c, n in zip(finals, uids.tolist())], bound)
    if k_intra is None or foot is None:
        return None
    intra = np.einsum("lk,lhk->hl", sizes, k_intra[inv])
    footprint = np.einsum("lk,lk->l", sizes, foot[inv])
    inter = _edge_amounts(edges, edge_f, inv, state, coeff, node_types)
    if inter is None:
        return None
    return (tuple(map(tuple, intra.tolist())), tuple(map(tuple, inter.tolist())), tuple(footprint.tolist()),
            [finals[k] for k in inv.tolist()])


def _column_keys(codes: np.ndarray, node_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(first layer of each distinct (column of types, node kind), each layer's position among
    them); None when a column does not fit one int64 key (more than ``_KEY_LEVELS`` levels, say)."""
    levels = codes.shape[1]
    if not 0 < levels <= _KEY_LEVELS or int(codes.max()) >= 1 << _KEY_BITS or int(node_ids.max()) >= 1 << _KEY_KINDS_BITS:
        return None
    keys = node_ids << (_KEY_BITS * levels)
    for h in range(levels):
        keys |= codes[:, h] << (_KEY_BITS * h)
    _, first, inv = np.unique(keys, return_index=True, return_inverse=True)
    return first, inv.reshape(-1)


_COUNTS_SPAN = 1 << 20  # above a counts key: (_KEY_LEVELS + 1) ** NUM_TYPES <= 2^20 for up to 4 types
_STATE_BITS = _KEY_KINDS_BITS + _KEY_BITS + 20  # a state key: (kind, type) above the counts key


def _counts(key: int, levels: int) -> tuple[int, ...]:
    """A counts key back to its counts (one per type, in type order)."""
    out = []
    for _ in range(NUM_TYPES):
        key, c = divmod(key, levels + 1)
        out.append(c)
    return tuple(out)


def _decode(key: int, node_types: list, levels: int):
    """(type position, counts, node kind) of a state key (``layer_amounts``)."""
    rest, counts = divmod(key, _COUNTS_SPAN)
    return rest & ((1 << _KEY_BITS) - 1), _counts(counts, levels), node_types[rest >> _KEY_BITS]


def _gathered(keys: np.ndarray, value, bound: int) -> np.ndarray | None:
    """``value(key)`` of each entry of ``keys``, asked once per distinct key, as int64 (None when a
    magnitude reaches ``bound``); the result has the keys' shape and then the values'."""
    uniq, inv = np.unique(keys, return_inverse=True)
    table = _int64([value(k) for k in uniq.tolist()], bound)
    if table is None:
        return None
    return table[inv.reshape(-1)].reshape(keys.shape + table.shape[1:])


def _edge_amounts(edges: np.ndarray, edge_f: np.ndarray, inv: np.ndarray, state: np.ndarray, coeff,
                  node_types: list) -> np.ndarray | None:
    """[level][edge] units: each edge's tensor times its coefficient at each level, which depends on
    the producer's type and kind and the consumer's type, counts above and kind (``state``, per
    distinct column; ``inv``: each layer's column): asked once per distinct pair of columns' levels."""
    columns, levels = state.shape
    if not len(edges):
        return np.zeros((levels, 0), dtype=np.int64)
    pairs, pinv = np.unique(inv[edges[:, 0]] * columns + inv[edges[:, 1]], return_inverse=True)
    # the producer's kind and type (16 bits) above the consumer's state (36 bits): below 2^63
    keys = (state[pairs // columns] // _COUNTS_SPAN) << _STATE_BITS | state[pairs % columns]

    def value(key: int) -> int:
        prev, nxt = divmod(key, 1 << _STATE_BITS)
        b, counts, nv = _decode(nxt, node_types, levels)
        return coeff.inter_of(prev & ((1 << _KEY_BITS) - 1), b, counts, node_types[prev >> _KEY_BITS], nv)

    k_pair = _gathered(keys, value, _LIMIT // max(int(edge_f.max()), 1))
    if k_pair is None:
        return None
    return (edge_f[:, None] * k_pair[pinv.reshape(-1)]).T
