"""Block moves for the alpha search and the level DP (no proof): layers that share their type at
every level and are joined by an edge form a block (between them an equal alpha re-lays nothing
out, so they gain together or not at all); a move sets a block's alphas, in every free class at
once to each start's row (the equal and the proportional split, on the declared space), or in one
free class to each of its declared values. A move is kept when it lowers the rank; so is the plan.

Why: the whole-network moves of ``uneven.search_level_alphas`` set one alpha for every layer of a
class, and where compute-bound layers gain from the proportional split while the exchanges of
the others lose more, no such move improves the equal split although the declared space holds a
faster plan (12 TPU-v2 + 4 v3, lenet-c: conv1 and conv2 at the proportional split on both free
classes, 2.1% faster than the equal split; finding 7 of trial 12).
"""

from __future__ import annotations

from bisect import bisect_left
from fractions import Fraction
from typing import Callable

from explorer.core.comm import edge_split
from explorer.core.network import Network
from explorer.core.plan import Plan
from explorer.core.uneven import HALF, AlphaSpace, proportional_alphas, split_units, whole_units

from .deadline import LATE


def layer_blocks(network: Network, plan: Plan, levels) -> list[tuple[int, ...]]:
    """The layers joined by edges that re-lay nothing out at ``levels`` when both ends take the
    same alpha there (``comm.edge_split`` zero at 1/4 : 3/4 under ``plan``'s types: the same layout
    both sides, row -> row or col -> col, or a duplicated source), as connected components (each
    ascending, ordered by their first layer)."""
    parent = list(range(len(network.layers)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    layers = network.layers
    for u, v in network.edges:
        if all(edge_split(layers[u], plan.types[h][u], QUARTER, layers[v], plan.types[h][v], QUARTER) == (0, 0)
               for h in levels):
            parent[root(v)] = root(u)
    blocks: dict[int, list[int]] = {}
    for i in range(len(parent)):
        blocks.setdefault(root(i), []).append(i)
    return [tuple(b) for b in sorted(blocks.values())]


QUARTER = Fraction(1, 4)


def start_rows(array, aspace: AlphaSpace) -> list[dict[tuple[int, int], Fraction]]:
    """Per start (the equal split, the proportional one), each free class's declared value nearest
    it (the smaller on a tie)."""
    prop = proportional_alphas(array)
    first = [{c: g for g, c in reversed(list(enumerate(row)))} for row in aspace.group_class]  # class -> its first group
    out = []
    for target in (lambda h, c: HALF, lambda h, c: prop[h][first[h][c]]):
        out.append({(h, c): nearest(aspace.choices(h, c), target(h, c)) for h, c in aspace.free_classes()})
    return out


def nearest(values, t: Fraction) -> Fraction:
    """The value of ascending ``values`` nearest t, the smaller on a tie (``min`` by (distance,
    value), from the two around t: an array of 1,024 kinds has 1,023 free classes)."""
    j = bisect_left(values, t)
    return min(values[max(j - 1, 0) : j + 1], key=lambda a: (abs(a - t), a))


def with_block(network: Network, plan: Plan, aspace: AlphaSpace, layers, values: dict) -> Plan:
    """``plan`` with alpha ``values[(h, c)]`` for every group of class c at level h on ``layers``;
    a grouped conv (an attention node with heads) that would then split a fraction of its groups
    (heads) keeps its alphas (``whole_units``)."""
    alphas = [[list(row) for row in level] for level in plan.alphas]
    for (h, c), a in values.items():
        for g, cls in enumerate(aspace.group_class[h]):
            if cls == c:
                for l in layers:  # noqa: E741
                    alphas[h][g][l] = a
    for l in layers:  # noqa: E741
        node = network.layers[l]
        if split_units(node) is not None and not whole_units(
                node, [plan.types[k][l] for k in range(plan.levels)], [[r[l] for r in alphas[k]] for k in range(plan.levels)]):
            for k in range(plan.levels):
                for g, row in enumerate(alphas[k]):
                    row[l] = plan.alphas[k][g][l]
    return Plan(plan.types, tuple(tuple(tuple(row) for row in level) for level in alphas))


SCAN_ALL = 64  # grids up to this many values are scanned whole; larger ones coarse to fine
COARSE = 32  # the coarse pass of a larger grid: about this many evenly spaced values


def grid_probes(n: int) -> int:
    """How many values of a grid of n the search evaluates per class and pass (at most)."""
    if n <= SCAN_ALL:
        return n
    k = -(-n // COARSE)
    probes = len(range(0, n, k)) + 3
    while k > 1:
        k = -(-k // 2)
        probes += 2
    return probes


def best_on_grid(grid, score, best, near=None):
    """The grid value of least ``score`` below ``best`` (None when none is): every value of a
    small grid; on a larger one, evenly spaced values and the one nearest ``near`` (the class's
    alpha now) first, then around the best seen so far at halving strides (a pattern search: a
    heuristic where the step time is not unimodal in alpha)."""
    n = len(grid)
    found = None
    seen: dict[int, object] = {}

    def probe(i):
        nonlocal best, found
        if 0 <= i < n and i not in seen:
            seen[i] = t = score(grid[i])
            if t < best:
                best, found = t, i

    if n <= SCAN_ALL:
        for i in range(n):
            probe(i)
        return found, best
    k = -(-n // COARSE)
    start = list(range(0, n, k)) + [n - 1]
    if near is not None:  # the two grid values around it
        j = bisect_left(grid, near)
        start += [j - 1, j]
    for i in start:
        probe(i)
    while k > 1:
        k = -(-k // 2)
        centre = min(seen, key=seen.get)
        probe(centre - k)
        probe(centre + k)
    return found, best


def block_probes(network: Network, aspace: AlphaSpace, plan: Plan, scan: bool = True) -> int:
    """The most evaluations one round of ``refine_blocks`` makes from ``plan``."""
    classes = aspace.free_classes()
    rows = 2 * len(layer_blocks(network, plan, sorted({h for h, _ in classes}))) if classes else 0
    return rows + (sum((grid_probes(len(aspace.choices(h, c))) + 1) * len(layer_blocks(network, plan, (h,)))
                       for h, c in classes) if scan else 0)


class _Descent:
    """One block descent's state: the plan, its rank, the evaluations, how many moves were kept
    (``changes``) and, per move set, ``changes`` when it was last tried (``fresh``)."""

    def __init__(self, network: Network, aspace: AlphaSpace, plan: Plan, rank: Callable, best, progress):
        self.network, self.aspace, self.rank, self.progress = network, aspace, rank, progress
        self.plan, self.best, self.tried, self.changes = plan, best, 0, 0
        self.last: dict[tuple, int] = {}

    def fresh(self, key) -> bool:
        """Whether the move set ``key`` was not tried since the last kept move (else its answer would be the same)."""
        if self.last.get(key) == self.changes:
            return False
        self.last[key] = self.changes
        return True

    def score(self, move: Plan, step: str):
        if move == self.plan:
            return self.best
        self.tried += 1
        if self.progress is not None:
            self.progress(step, self.tried)
        r = self.rank(move)
        if r == LATE:  # past the caller's deadline: the descent ends here (thousands of classes: minutes of moves)
            raise _Ended
        return r

    def offer(self, key, move: Plan, step: str) -> None:
        """Keep ``move`` if its rank is less."""
        if (r := self.score(move, step)) < self.best:
            self.keep(key, move, r)

    def keep(self, key, move: Plan, r) -> None:
        self.plan, self.best, self.changes = move, r, self.changes + 1
        self.last[key] = self.changes

    def block(self, layers, values: dict) -> Plan:
        return with_block(self.network, self.plan, self.aspace, layers, values)

    def scan_class(self, h: int, c: int, blocks, rnd: int) -> None:
        """Each block's every declared value of class (h, c) (``best_on_grid``), then each swap of two neighbours' alphas."""
        values, g = self.aspace.choices(h, c), self.aspace.group_class[h].index(c)
        for b, layers in enumerate(blocks):
            step = f"search: level {h}, class {c}, block {b + 1} of {len(blocks)}, round {rnd + 1}"
            if self.fresh(key := ("scan", h, c, b)):
                i, r = best_on_grid(values, lambda a: self.score(self.block(layers, {(h, c): a}), step), self.best,
                                    self.plan.alphas[h][g][layers[0]])
                if i is not None:
                    self.keep(key, self.block(layers, {(h, c): values[i]}), r)
        for b, (one, two) in enumerate(zip(blocks, blocks[1:])):
            if self.fresh(key := ("swap", h, c, b)):
                a1, a2 = self.plan.alphas[h][g][one[0]], self.plan.alphas[h][g][two[0]]
                move = with_block(self.network, self.block(one, {(h, c): a2}), self.aspace, two, {(h, c): a1})
                self.offer(key, move, f"search: level {h}, class {c}, swap {b + 1}, round {rnd + 1}")


def refine_blocks(network: Network, array, aspace: AlphaSpace, plan: Plan, rank: Callable, best,
                  rounds: int = 3, scan: bool = True, progress: Callable | None = None):
    """Block coordinate descent from ``plan`` (of rank ``best``; its types kept): for each block
    (``layer_blocks`` at the free levels), its row at each start (``start_rows``) in every free
    class at once, then (``scan``) for each free class, each of its level's blocks at each declared
    value (``best_on_grid``) and each swap of two neighbouring blocks' alphas; each move kept when
    its rank is less, until a round keeps none or ``rounds`` are done; a move set is not tried
    again while nothing has moved since; it ends at the first move ``rank`` gives ``deadline.LATE`` (past
    the caller's deadline). (plan, rank, evaluations); never worse than ``plan``; a
    heuristic (the rank's least need not be reached). ``progress(step, evaluations)`` after each
    evaluation."""
    classes = aspace.free_classes()
    if all(len(aspace.choices(h, c)) == 1 for h, c in classes):  # no move (the proportional space: 1,023 classes scanned for none)
        return plan, best, 0
    rows = start_rows(array, aspace)
    row_blocks = layer_blocks(network, plan, sorted({h for h, _ in classes}))
    level_blocks = {h: layer_blocks(network, plan, (h,)) for h in {h for h, _ in classes}}  # once per level
    run = _Descent(network, aspace, plan, rank, best, progress)
    try:
        for rnd in range(rounds):
            before = run.changes
            for b, layers in enumerate(row_blocks):
                for k, row in enumerate(rows):
                    if run.fresh(key := ("row", b, k)):
                        run.offer(key, run.block(layers, row), f"search: block {b + 1} of {len(row_blocks)}, round {rnd + 1}")
            for h, c in classes if scan else ():
                run.scan_class(h, c, level_blocks[h], rnd)
            if run.changes == before:
                break
    except _Ended:
        pass
    return run.plan, run.best, run.tried


class _Ended(Exception):
    """A move ranked ``LATE`` (``deadline.LATE``): the descent stops with its plan so far."""
