"""A quick proof that a cap admits no plan (the joint solver, ``solvers.uneven_joint``): a lower
bound on a capped level's busiest side over every plan, from the labels' own limit terms
(``joint_columns.with_limits``), computed in milliseconds before any label pass.

Derivation. Under a cap at level h a plan P has two terms, S0(P) and S1(P) (the two top sides'
amounts at level h, ``with_limits``): each a sum over the layers and the edges of the network of
that layer's (edge's) amount for its column (the pair of its ends' columns), each amount a floor
of the exact one (so S0, S1 are at most the exact amounts, ``_Tables``), and P keeps the cap only
if S0(P) <= most and S1(P) <= most (``most``: the cap in the terms' units, floored). Let a_t(x),
b_t(x) be term t's two amounts for its choice x, and m_t = min_x (a_t(x) + b_t(x)), m0_t = min_x
a_t(x), m1_t = min_x b_t(x), each over every choice the term has (a layer: the columns its pins
and forbids allow; an edge: every entry of its table, a superset of the pairs a plan can take).
Then for every plan

    max(S0, S1) >= (S0 + S1) / 2 = sum_t (a_t + b_t) / 2 >= sum_t m_t / 2,

and, S0 and S1 being integers, max(S0, S1) >= ceil(sum_t m_t / 2); also S0 >= sum_t m0_t and S1 >=
sum_t m1_t. So FLOOR = max(ceil(sum_t m_t / 2), sum_t m0_t, sum_t m1_t) <= max(S0, S1) for every
plan, and FLOOR > most proves that none keeps the cap. The busiest side is not the same side in
every term (an uneven alpha moves amounts from one side to the other), so the per-term least of
the busiest side, summed, is no bound in general: the (a + b) / 2 form needs no such side. The
bound is checked against brute force over every plan of seeded random term tables
(``tests/test_joint_floor.py``). It is not the least busiest side: where it is at most the cap
the label passes decide.
"""

from __future__ import annotations

import numpy as np

from .joint_columns import INF, _Tables


def cap_floors(t: _Tables, levels: list[int]) -> list[tuple[int, int]]:
    """Per cap (``t.extra``'s order: ``levels``, the capped levels in increasing order), (FLOOR of the module docstring, the cap) in the
    labels' units (the cap's amounts floored over 2^k, ``with_limits``): on a chain the sums'
    least by a min-plus pass over the columns' prefixes (``_chain_least``), else the terms' least
    summed one by one."""
    out = []
    chain = list(t.m.net.edges) == [(i, i + 1) for i in range(len(t.node) - 1)]
    for j, ((x, sl), h) in enumerate(zip(t.extra, levels)):
        least = _chain_least(t, x, sl, h) if chain else _terms_least(t, x, sl)
        both, s0, s1 = (int(v) for v in least)
        out.append((max(-(-both // 2), s0, s1), int(t.lim[2 * j])))
    return out


WEIGHTS = ((1, 1), (1, 0), (0, 1))  # the sums whose least bound the busiest side: S0 + S1, S0, S1


def _terms_least(t: _Tables, x: _Tables, sl: slice) -> list[int]:
    """(least S0 + S1, least S0, least S1), each as the sum over the terms of their least."""
    out = []
    for wa, wb in WEIGHTS:
        tot = 0
        for l in range(len(t.node)):  # noqa: E741
            ok = t.node[l][0] < INF
            tot += int((wa * x.node[l][sl.start] + wb * x.node[l][sl.start + 1])[ok].min()) if ok.any() else 0
        for e in range(len(x.top)):
            for tb in [x.top[e]] if sl.start == 0 else x.lev[e]:  # the level-0 sides, or each lower level's
                tot += int((wa * tb[0] + wb * tb[1]).min())
        out.append(tot)
    return out


def _chain_least(t: _Tables, x: _Tables, sl: slice, h: int) -> list[int]:
    """``_terms_least`` on a chain (edge i from layer i to i + 1), exactly over the columns'
    prefixes down to the cap's level h (the top cell for h = 0; the top cell and the types of
    levels 1..h below it): a level-h term depends on nothing finer (``_Tables._edge_level``).
    A layer's term per prefix is its least over the allowed columns with that prefix; the other
    levels' edge tables (zero in a cap's tables) are added as their least."""
    C = t.m.cols
    per = C.K ** (C.H - 1 - h)  # columns per prefix
    out = []
    for wa, wb in WEIGHTS:
        def node(l):  # noqa: E306, E741
            v = np.where(t.node[l][0] < INF, wa * x.node[l][sl.start] + wb * x.node[l][sl.start + 1], INF)
            return v.reshape(-1, per).min(axis=1)
        val, rest = node(0), 0
        for e in range(len(x.top)):
            if h == 0:  # [producer top cell, consumer top cell]
                best = np.min(np.minimum(val[:, None] + wa * x.top[e][0] + wb * x.top[e][1], INF), axis=0)
            else:  # [producer's level-h type, consumer prefix]: the producer's prefixes reduced per type first
                tb = x.lev[e][h - 1]
                per_type = val.reshape(-1, C.K).min(axis=0)  # a prefix's last digit is its level-h type
                best = np.min(np.minimum(per_type[:, None] + wa * tb[0] + wb * tb[1], INF), axis=0)
            rest += sum(int((wa * tb[0] + wb * tb[1]).min()) for i, tb in enumerate(x.lev[e]) if h == 0 or i != h - 1)
            val = np.minimum(best + node(e + 1), INF)
        out.append(int(val.min()) + rest)
    return out


def bound_bytes(t: _Tables, floor: int, dtype_bytes: int) -> int:
    """``floor`` (the labels' units of a cap's terms: 2^k table units each) in whole bytes, rounded
    down: at most the level's busiest side of every plan."""
    k = max(0, t.m.upper_units().bit_length() - 56)
    return int(t.m.costs.to_elements(floor << k) * dtype_bytes)
