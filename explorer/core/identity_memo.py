"""Computing once per tuple of the very objects: groups and leaves alike share their figures'
objects (``split_amounts``, ``with_group_alphas``, the leaves of a kind), so a value made from
them is made once and shared. A memo must not outlive the objects it keys (their ids)."""

from __future__ import annotations


def once(memo: dict, f, *xs):
    """f(*xs), computed once per tuple of the very objects ``xs`` (keyed by their ids in ``memo``)."""
    key = tuple(map(id, xs))
    out = memo.get(key)
    if out is None:
        out = memo[key] = f(*xs)
    return out
