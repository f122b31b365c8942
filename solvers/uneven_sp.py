"""The series-parallel decomposition of a network's graph, for the joint uneven-split solver.

The derivation: docs/derivations.md, "Uneven splits: series-parallel graphs".
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from explorer.core.errors import Refused
from explorer.core.network import Network



PREFIX = "joint (uneven splits): "


@dataclass(frozen=True)
class Series:
    """Nodes in series between ``entry`` and ``exit`` (both outside): ``links[i]`` ends at
    ``nodes[i]`` (the last one at ``exit``)."""

    entry: int
    exit: int
    nodes: tuple[int, ...]
    links: tuple[Link, ...]

    @property
    def inodes(self) -> tuple[int, ...]:
        """Every node inside, in the order the label pass records their columns: each link's
        nodes, then the node it ends at."""
        out: list[int] = []
        for i, link in enumerate(self.links):
            out.extend(link.inodes)
            if i < len(self.nodes):
                out.append(self.nodes[i])
        return tuple(out)


@dataclass(frozen=True)
class Link:
    """Parallel branches between ``entry`` and ``exit``: each an edge index or a ``Series``."""

    entry: int
    exit: int
    branches: tuple[int | Series, ...]

    @property
    def direct(self) -> bool:
        """A single edge."""
        return len(self.branches) == 1 and isinstance(self.branches[0], int)

    @property
    def edge(self) -> int:
        return self.branches[0]  # type: ignore[return-value]

    @property
    def inodes(self) -> tuple[int, ...]:
        return tuple(n for b in self.branches if isinstance(b, Series) for n in b.inodes)


def blocks(network: Network) -> list[Link]:
    """The top-level links between consecutive global cut nodes (module docstring); Refused
    for a graph that is not series-parallel with one source and one sink."""
    L = len(network.layers)
    edges = network.edges
    if any(u >= v for u, v in edges):
        raise Refused(PREFIX + "layers must be in topological order")
    has_in, has_out = {v for _, v in edges}, {u for u, _ in edges}
    if any(n not in has_in for n in range(1, L)) or any(n not in has_out for n in range(L - 1)):
        raise Refused(PREFIX + "one source and one sink needed")
    over = [0] * (L + 1)
    for u, v in edges:
        over[u + 1] += 1
        over[v] -= 1
    cuts, run = [], 0
    for n in range(L):
        run += over[n]
        if run == 0:
            cuts.append(n)
    by_seg: dict[int, list[int]] = {}
    for e, (u, _) in enumerate(edges):
        by_seg.setdefault(bisect_right(cuts, u) - 1, []).append(e)
    return [_link(network, a, b, list(range(a + 1, b)), by_seg.get(k, []))
            for k, (a, b) in enumerate(zip(cuts, cuts[1:]))]


def _link(network: Network, u: int, v: int, nodes: list[int], eids: list[int]) -> Link:
    """The link between u and v over ``nodes`` (strictly between, sorted) and ``eids`` (every edge
    touching them, and those from u to v)."""
    edges = network.edges
    direct = [e for e in eids if edges[e] == (u, v)]
    comps = _components(nodes, [edges[e] for e in eids])
    comp_of = {n: k for k, c in enumerate(comps) for n in c}
    comp_edges: list[list[int]] = [[] for _ in comps]
    for e in eids:
        a, b = edges[e]
        if (a, b) != (u, v):
            comp_edges[comp_of[a] if a in comp_of else comp_of[b]].append(e)
    branches = [*direct, *(_series(network, u, v, c, ce) for c, ce in zip(comps, comp_edges))]
    if not branches:
        raise Refused(PREFIX + f"no path from {network.layers[u].name!r} to {network.layers[v].name!r}")
    return Link(u, v, tuple(branches))


def _components(nodes: list[int], pairs: list[tuple[int, int]]) -> list[list[int]]:
    """The connected components of ``nodes`` by the pairs joining two of them (each sorted)."""
    parent = {n: n for n in nodes}

    def root(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for a, b in pairs:
        if a in parent and b in parent:
            parent[root(a)] = root(b)
    out: dict[int, list[int]] = {}
    for n in nodes:
        out.setdefault(root(n), []).append(n)
    return list(out.values())


def _series(network: Network, u: int, v: int, nodes: list[int], eids: list[int]) -> Series:
    """One connected component between u and v as a series over its own cut nodes."""
    edges = network.edges
    pos = {n: i for i, n in enumerate(nodes)}
    pos[u], pos[v] = -1, len(nodes)
    over = [0] * (len(nodes) + 1)
    for e in eids:
        a, b = edges[e]
        over[pos[a] + 1] += 1
        over[pos[b]] -= 1
    cut_pos, run = [], 0
    for i in range(len(nodes)):
        run += over[i]
        if run == 0:
            cut_pos.append(i)
    if not cut_pos:
        raise Refused(PREFIX + f"node {network.layers[nodes[0]].name!r} is in a block that is not "
                            "series-parallel (graph shape not supported)")
    bounds = [-1, *cut_pos, len(nodes)]
    seg_nodes: list[list[int]] = [[] for _ in range(len(bounds) - 1)]
    seg_edges: list[list[int]] = [[] for _ in range(len(bounds) - 1)]
    for i, n in enumerate(nodes):
        k = bisect_right(bounds, i) - 1
        if i != bounds[k]:
            seg_nodes[k].append(n)
    for e in eids:
        seg_edges[bisect_right(bounds, pos[edges[e][0]]) - 1].append(e)
    ends = [u, *(nodes[i] for i in cut_pos), v]
    links = tuple(_link(network, ends[k], ends[k + 1], seg_nodes[k], seg_edges[k]) for k in range(len(ends) - 1))
    return Series(u, v, tuple(nodes[i] for i in cut_pos), links)
