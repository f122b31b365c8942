"""Uneven splits on a torus, link by link: the busiest directed link of every group's exchange
for any plan, in Fractions (what the evaluator scores a torus by where a split below the top is
uneven, and the link windows the integer table holds; docs/uneven.md, "Uneven splits on a torus").

At level h every accelerator sends its part of what its side sends to its partner (the leaf
whose level-h bit differs), along the level's ring, shortest path, a tie (d = n/2) half each
way (``timing.torus_ring``). Its part of a tensor is the product, over the levels below h, of
its side's part (alpha or 1 - alpha of that group) where the level's type splits a dimension
the tensor spans, and of 1/2 where it leaves the tensor whole (two copies send half each). A
tensor is held in the layout of the node that made it: a layer's intra exchange in the layer's
own, a re-layout's forward F in the producer's (F_out), its backward E in the consumer's (F_in).
A group's exchange takes its busiest link's elements * dtype / the link bandwidth. With every
split below h at 1/2 each part is 2^-(H-h-1) and this is the pair formula max(X0, X1) * dtype
/ b_h with the torus's b_h (``tests/test_torus_links.py``).
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction
from typing import TYPE_CHECKING

from .comm import whole_sizes
from .partition import HALF, Size
from .plan import Plan
from .timing import even_link_load, torus_ring
from .uneven import group_tensors, level_shares, pair_amounts, side_share, spec_of

if TYPE_CHECKING:
    from .array import ArraySpec
    from .network import Network



def leaf_coords(levels: int, leaf: int) -> tuple[int, int]:
    """(x, y) of a leaf: levels alternate x, y, top bit first (``timing.torus_ring``)."""
    x = y = 0
    for h in range(levels):
        bit = (leaf >> (levels - 1 - h)) & 1
        if h % 2 == 0:
            x = 2 * x + bit
        else:
            y = 2 * y + bit
    return x, y


def leaf_part(network: "Network", plan: Plan, level: int, leaf: int, holder: int, size: Size) -> Fraction:
    """The leaf's part of a tensor (of ``size``, held by node ``holder``) its side sends at ``level``."""
    H, node, part = plan.levels, network.layers[holder], Fraction(1)
    for k in range(level + 1, H):
        group, bit = leaf >> (H - k), (leaf >> (H - 1 - k)) & 1
        if spec_of(node, plan.types[k][holder]).halves in size.dims:
            part *= side_share(plan.alphas[k][group][holder], bit)
        else:
            part *= HALF
    return part


def leaf_sends(network: "Network", plan: Plan, level: int, group: int, shares) -> dict[int, Fraction]:
    """Leaf -> the elements it sends to its partner at ``level``, for the leaves of ``group``
    (``uneven.group_tensors`` of one holder, size and side summed first: one part per leaf each)."""
    H = plan.levels
    span = 2 ** (H - level - 1)
    held: dict = defaultdict(Fraction)
    tensors = group_tensors(network, whole_sizes(network), plan.types[level], plan.alphas[level][group], shares)
    for side, x, holder, size in tensors:
        if x:
            held[(side, holder, size)] += x
    out = {leaf: Fraction(0) for leaf in range(group * 2 * span, (group + 1) * 2 * span)}
    for (side, holder, size), x in held.items():
        for leaf in range(group * 2 * span + side * span, group * 2 * span + (side + 1) * span):
            out[leaf] += x * leaf_part(network, plan, level, leaf, holder, size)
    return out


def routes(levels: int, level: int, leaf: int) -> tuple[tuple[tuple[int, int, int], ...], Fraction]:
    """The directed links a leaf's send crosses at ``level`` ((the other coordinate, ring position,
    direction +1/-1) each) and the part of the send each carries (1, or 1/2 each way on a tie)."""
    n, d = torus_ring(levels, level)
    x, y = leaf_coords(levels, leaf)
    pos, other = (x, y) if level % 2 == 0 else (y, x)
    steps = (1, -1) if 2 * d == n else ((-1 if pos & d else 1),)
    return tuple((other, (pos + step * i) % n, step) for step in steps for i in range(d)), link_share(levels, level)


def link_share(levels: int, level: int) -> Fraction:
    """The part of a send each link of its route carries: 1/2 on a tie (d = n/2), else 1."""
    n, d = torus_ring(levels, level)
    return HALF if 2 * d == n else Fraction(1)


def link_loads(levels: int, level: int, sends: dict[int, Fraction]) -> dict[tuple[int, int, int], Fraction]:
    """(the other coordinate, ring position, direction +1/-1) -> elements on that directed link of
    the level's rings, each leaf's send routed to its partner (a tie: half each way)."""
    loads: dict = defaultdict(Fraction)
    for leaf, amount in sends.items():
        links, part = routes(levels, level, leaf)
        for link in links:
            loads[link] += amount * part
    return loads


def link_windows(levels: int, level: int, group: int) -> tuple[tuple[int, ...], ...]:
    """The leaves whose sends share a directed link of the group's exchange, one set per link, the
    sets another contains left out (their load is at most its: sends are never negative): a
    group's busiest link is the largest of these windows' sums times ``link_share``. Without a tie
    a window is a side's leaves on one ring (an aligned block of d); on a tie, d consecutive
    leaves of the ring, both sides."""
    span = 2 ** (levels - level)
    sets: dict = defaultdict(set)
    for leaf in range(group * span, (group + 1) * span):
        for link in routes(levels, level, leaf)[0]:
            sets[link].add(leaf)
    uniq = {frozenset(s) for s in sets.values()}
    return tuple(sorted(tuple(sorted(s)) for s in uniq if not any(s < t for t in uniq)))


def busiest_links(network: "Network", array: "ArraySpec", plan: Plan, fast: bool = True,
                  shares=None) -> tuple[tuple[Fraction, ...], ...]:
    """[level][group] -> the elements on the busiest directed link of the group's exchange. ``fast``:
    a level whose splits below are all 1/2 takes ``timing.even_link_load`` * max(side 0, side 1),
    which its links equal there (``tests/test_torus_links.py`` checks both ways agree)."""
    H, shares = array.levels, shares or level_shares(network, plan)
    out = []
    for h in range(H):
        even_below = fast and all(a == HALF for lv in plan.alphas[h + 1:] for row in lv for a in row)
        row, memo = [], {}  # groups with the same shares and alphas, theirs and below, are scored once
        for g in range(2**h):
            below = () if even_below else tuple(lv[g << (k + 1):(g + 1) << (k + 1)] for k, lv in enumerate(plan.alphas[h + 1:]))
            key = (id(shares[h][g]), plan.alphas[h][g], below)
            if key not in memo:
                memo[key] = _busiest(network, plan, h, g, shares[h][g], even_below)
            row.append(memo[key])
        out.append(tuple(row))
    return tuple(out)


def _busiest(network: "Network", plan: Plan, h: int, g: int, shares, even_below: bool) -> Fraction:
    H = plan.levels
    if not even_below:
        return max(link_loads(H, h, leaf_sends(network, plan, h, g, shares)).values())
    sides = pair_amounts(network, whole_sizes(network), plan.types[h], plan.alphas[h][g], shares)
    return even_link_load(H, h) * max(sides)


def link_seconds(network: "Network", array: "ArraySpec", plan: Plan, shares=None, fast: bool = True) -> tuple[tuple, ...]:
    """[level][group] -> the group's exchange seconds on a torus, link by link: its busiest directed
    link's elements * dtype / the link bandwidth (``busiest_links``; ``shares``: the plan's
    ``level_shares`` where the caller has them)."""
    dtype = array.dtype_bytes
    return tuple(tuple(x * dtype / (array.bandwidth_GBps[h] * 10**9) for x in row)
                 for h, row in enumerate(busiest_links(network, array, plan, fast, shares)))
