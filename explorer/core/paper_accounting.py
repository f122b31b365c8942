"""Accountings that HyPar's published figures imply, as NAMED options beside the model.

The accounting, what it explains and how it is tied to the model: docs/reproducing.md, "The
accounting HyPar's figures imply". Nothing here is used by a solver.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .network import LayerKind, Network
from .partition import PartitionType
from .kinds import Accounting  # noqa: F401 - defined there (explore reproduce's choices read it without this module)
from .plan import Plan

I, II = PartitionType.I, PartitionType.II


@dataclass(frozen=True, slots=True)
class _Rules:
    pooled_output: bool  # II's exchange on the pooled output (the next layer's input)
    inter: tuple[tuple[Fraction, Fraction], tuple[Fraction, Fraction]]  # [prev I/II][next I/II] x A(F_l)


_HALF = Fraction(1, 2)
RULES = {
    # model.md section 4, I/II block: I->I 0, I->II F/4+E/4, II->I E/2, II->II E/2 (A(E_l) = A(F_l))
    Accounting.MODEL: _Rules(False, ((Fraction(0), _HALF), (_HALF, _HALF))),
    Accounting.HYPAR_FIGURES: _Rules(True, ((Fraction(0), _HALF), (Fraction(0), Fraction(0)))),
}


class AccountingError(ValueError):
    """The network is outside what the accountings cover (a chain of conv/fc layers)."""


def check_network(network: Network) -> None:
    if not network.is_chain or any(layer.kind not in (LayerKind.CONV, LayerKind.FC) or layer.groups != 1
                                   for layer in network.layers):
        raise AccountingError(f"{network.name}: the paper accountings cover chains of dense conv/fc layers only")


def _index(t: PartitionType) -> int:
    if t not in (I, II):
        raise AccountingError(f"type {t} is outside HyPar's space {{I, II}}")
    return 0 if t is I else 1


def _sizes(network: Network, i: int, n_I: int, n_II: int, pooled: bool) -> tuple[Fraction, Fraction, Fraction]:
    """Layer i's (A(F_l), A(W_l), the size II exchanges) after n_I halvings of B and n_II of D_i."""
    layer, B = network.layers[i], network.batch
    f_in = Fraction(layer.input_elements(B), 2 ** (n_I + n_II))
    weights = Fraction(layer.weight_elements(), 2**n_II)
    last = i + 1 == len(network.layers)
    out = layer.output_elements(B) if last or not pooled else network.layers[i + 1].input_elements(B)
    return f_in, weights, Fraction(out, 2**n_I)


def level_costs(network: Network, plan: Plan, accounting: Accounting) -> tuple[Fraction, ...]:
    """c_h per level (elements, one way, per sibling group) of a plan under an accounting."""
    check_network(network)
    rules = RULES[accounting]
    n = len(network.layers)
    counts = [(0, 0)] * n
    out = []
    for row in plan.types:
        idx = [_index(t) for t in row]
        c = Fraction(0)
        for i in range(n):
            f_in, weights, exchanged = _sizes(network, i, *counts[i], rules.pooled_output)
            c += weights if idx[i] == 0 else exchanged
            if i:
                c += rules.inter[idx[i - 1]][idx[i]] * f_in
        out.append(c)
        counts = [(a + (k == 0), b + (k == 1)) for (a, b), k in zip(counts, idx)]
    return tuple(out)


def _level_dp(network: Network, counts: list[tuple[int, int]], rules: _Rules) -> list[int]:
    """One level of HyPar's DP (model.md section 6): chain DP minimising c_h; ties keep the
    first type in the order I, II (predecessors and the last layer alike)."""
    n = len(network.layers)
    sizes = [_sizes(network, i, *counts[i], rules.pooled_output) for i in range(n)]
    cost = [sizes[0][1], sizes[0][2]]
    back: list[list[int]] = []
    for i in range(1, n):
        f_in, weights, exchanged = sizes[i]
        row, picks = [], []
        for t, own in ((0, weights), (1, exchanged)):
            options = [cost[p] + rules.inter[p][t] * f_in for p in (0, 1)]
            p = 0 if options[0] <= options[1] else 1
            row.append(options[p] + own)
            picks.append(p)
        cost, back = row, back + [picks]
    t = 0 if cost[0] <= cost[1] else 1
    types = [t]
    for picks in reversed(back):
        t = picks[t]
        types.append(t)
    return types[::-1]


def hierarchical_dp(network: Network, levels: int, accounting: Accounting) -> Plan:
    """HyPar's hierarchical DP (top level first, each level optimal given those above) under an
    accounting: under ``MODEL`` the plan of the ``dp`` solver in the hypar space."""
    check_network(network)
    rules = RULES[accounting]
    counts = [(0, 0)] * len(network.layers)
    rows = []
    for _ in range(levels):
        idx = _level_dp(network, counts, rules)
        rows.append(tuple(I if k == 0 else II for k in idx))
        counts = [(a + (k == 0), b + (k == 1)) for (a, b), k in zip(counts, idx)]
    return Plan(tuple(rows))


def torus_uniform_level_bandwidths(levels: int, link_Bps: Fraction) -> tuple[Fraction, ...]:
    """Effective level bandwidths b_h (bytes/s) of a 2-D torus whose links all carry
    ``link_Bps``, when each level's group exchange (c_h, as on the H-tree's one link per
    level) crosses ONE path of torus links: multi-hop where the groups are not neighbours,
    pipelined, so the hop count does not divide the bandwidth. b_h = link_Bps at every level;
    the H-tree's level-h link is 2^(H-1-h) times its lowest (HyPar: "bandwidth between groups
    in a higher hierarchy is doubled ... Torus: the bandwidth for all links is the same")."""
    return tuple(Fraction(link_Bps) for _ in range(levels))
