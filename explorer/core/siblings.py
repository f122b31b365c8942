"""Siblings: the consumers of one tensor that share its exchanges at a level (Megatron's fused QKV
and gate/up matmuls, its ``f`` operator), when ``fanout.level_amounts(..., fused=True)`` asks.

Siblings are the consumers of one producer's output that hold the same piece of it at the level
(the same types at the levels above and the same tensor size). Among them:

- forward, those that need the tensor in the same layout receive one re-layout of it (the
  all-gather of the stream into q, k and v is done once, and all three read it);
- backward, those whose input error is left in the same layout after their own exchange have
  their errors summed locally and re-laid out once; and those of type III, whose input errors
  are partial sums over the same split of the same tensor, sum their partial sums locally and
  exchange the sum once (one all-reduce, or one reduce-scatter under sequence parallelism).

The first sibling of a group (in the network's edge order) is charged; the others are not. The
derivation: docs/derivations.md, "Sibling consumers share their exchanges".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from .network import Network
from .partition import Layout, PartitionType, Size, scattered_layouts

_F_IN = Size.F_IN.index


@dataclass(frozen=True, slots=True)
class Charges:
    """Which exchanges of one level are charged: per node its own exchange (``intra``), per edge
    its forward and its backward re-layout. Everything True when nothing is shared."""

    intra: tuple[bool, ...]
    forward: tuple[bool, ...]
    backward: tuple[bool, ...]


def sibling_charges(network: Network, row: Sequence[PartitionType], scat: Sequence[Layout | None],
                    edge_tensors: Sequence[Fraction], above: Sequence[tuple] | None = None) -> Charges:
    """The charges of one level under types ``row`` and reduce-scatter targets ``scat`` (per node,
    ``fanout.scatter_targets`` or None), each edge carrying ``edge_tensors[e]`` elements at the
    level, the nodes having taken the types ``above[n]`` at the levels above (None: one level):
    ``edge_charged`` and ``intra_charged`` over the siblings of ``earlier_siblings``."""
    earlier = earlier_siblings(network, edge_tensors, above)
    into = single_inputs(network)
    edges = range(len(network.edges))
    fb = [edge_charged(network, row, scat, earlier, e) for e in edges]
    intra = tuple(intra_charged(network, row, scat, earlier, into, n) for n in range(len(network.layers)))
    return Charges(intra, tuple(f for f, _b in fb), tuple(b for _f, b in fb))


def earlier_siblings(network: Network, edge_tensors: Sequence[Fraction],
                     above: Sequence[tuple] | None = None) -> tuple[tuple[int, ...], ...]:
    """Per edge, the earlier edges (in the network's order) from the same producer that carry the
    same piece of its output: the same tensor size, their consumers of the same types above.
    Whatever the level's types: the only edges whose consumers' types decide the edge's charges."""
    groups: dict[tuple, list[int]] = {}
    out = []
    for e, (u, v) in enumerate(network.edges):
        g = groups.setdefault((u, above[v] if above is not None else (), edge_tensors[e]), [])
        out.append(tuple(g))
        g.append(e)
    return tuple(out)


def single_inputs(network: Network) -> tuple[int | None, ...]:
    """Per node, its one input edge (None: no input, or several)."""
    into: list[int | None] = [None] * len(network.layers)
    seen = [0] * len(network.layers)
    for e, (_u, v) in enumerate(network.edges):
        seen[v] += 1
        into[v] = e if seen[v] == 1 else None
    return tuple(into)


def _needs(network: Network, row, scat, e: int) -> tuple[Layout, Layout]:
    """Edge e's consumer: the layout it needs F in, the layout it leaves its input error in."""
    v = network.edges[e][1]
    nt, ty = network.layers[v].node_types, row[v]
    return nt.layouts(ty).f_in_needed, scattered_layouts(nt, ty, scat[v]).e_in_produced


def edge_charged(network: Network, row, scat, earlier, e: int) -> tuple[bool, bool]:
    """(forward, backward) of edge e: its forward re-layout is charged unless an earlier sibling
    (``earlier[e]``) needs the same layout of the tensor, its backward unless an earlier sibling
    leaves its input error in the same layout (the errors are summed, then moved once)."""
    f, b = _needs(network, row, scat, e)
    sib = [_needs(network, row, scat, g) for g in earlier[e]]
    return all(x[0] is not f for x in sib), all(x[1] is not b for x in sib)


def intra_charged(network: Network, row, scat, earlier, into, v: int) -> bool:
    """Node v's own exchange (``into``: ``single_inputs``): charged unless v is type III (it
    exchanges its input error's partial sums) with one input edge e and an earlier sibling
    (``earlier[e]``) is type III with one input and the same scatter decision (the partial sums
    are summed, then exchanged once)."""
    e = into[v]
    if e is None or network.layers[v].node_types.exchanged[row[v].index] != _F_IN:
        return True
    for g in earlier[e]:
        w = network.edges[g][1]
        if into[w] == g and network.layers[w].node_types.exchanged[row[w].index] == _F_IN and scat[w] is scat[v]:
            return False
    return True
