"""The LLM search's candidates in the order of their time bounds, the bounds computed as they are needed.

The search scores candidates by increasing time bound (``llm_bounds.time_bound_s`` with the
block's tensor-level floor; ties in the space's order) and stops at the first whose bound is
above the best plan, or at its time limit: most candidates' bounds are never read. Here each
candidate enters a heap under a cheap lower bound of its time bound and is refined, in stages,
only when it reaches the top:

0. the compute at the calibrated efficiency with the pipeline's bubble (``floor (m + (p-1)/v) / m``),
   one heap entry for every candidate of the same (m, p, v);
1. plus its data-level floor and a mixture's all-to-alls (``llm_bounds.data_floor_s``,
   ``alltoall_floor_s``), for every member of a group when the group's entry reaches the top: the
   sum in integers (numerator and denominator, not reduced; a Fraction only when the entry reaches
   the top again), the terms read from the bounds' one cache (``llm_bounds.terms``), the all-to-alls' factor
   ``(m + (p-1)/v) L / p`` once per group (2.2-2.4x less time to the first candidate on Mixtral
   8x22B, 1,024 H100);
2. plus its tensor-level floor (``tensor``: ``llm_bounds.tensor_floor_s`` with the block's floor,
   which needs the block's types): the time bound, ``llm_bounds.time_bound_s``'s four terms.

Every stage is a sum of the time bound's nonnegative terms, so no stage's key exceeds it: an
entry popped at stage 2 has the least time bound left, and the entries leave in exactly the
order of sorting every candidate by (time bound, index), as the search did before it computed
the bounds lazily (issue 23; tests/test_llm_order.py checks the two orders agree).
"""

from __future__ import annotations

import heapq
from fractions import Fraction
from typing import Callable, Iterator

from .deadline import past
from .llm_bounds import alltoall_key, alltoall_layer_s, data_floor_s, data_key, terms
from .llm_space import Candidate

FULL = 2  # the stage whose key is the time bound


class _Entry:
    """A heap entry: its key ``n / d`` (integers, ``d > 0``, not necessarily in lowest terms), then the
    candidate's index; compared in integers (the keys' cross products), as the tuple ``(key, i)`` would
    be. ``key``: the key as a Fraction (stage 2, and stage 0; None at stage 1 until it is needed)."""

    __slots__ = ("key", "n", "d", "i", "stage")

    def __init__(self, n: int, d: int, i: int, stage: int, key: Fraction | None = None):
        self.key, self.n, self.d, self.i, self.stage = key, n, d, i, stage

    @classmethod
    def of(cls, key: Fraction, i: int, stage: int) -> "_Entry":
        return cls(key.numerator, key.denominator, i, stage, key)

    def __lt__(self, other: "_Entry") -> bool:
        a, b = self.n * other.d, other.n * self.d
        return a < b or (a == b and self.i < other.i)


class BoundOrder:
    """Candidates ``(time bound, memory bound, index, candidate)`` in increasing (time bound, index),
    each time bound completed (``tensor(candidate)``: its tensor-level floor) only when every
    smaller key has left."""

    def __init__(self, problem, cands: list[Candidate], memory: list[Fraction], floor: Fraction,
                 tensor: Callable[[Candidate], Fraction]):
        self.problem, self.cands, self.memory, self.floor, self.tensor = problem, cands, memory, floor, tensor
        batch = problem.dims.batch
        groups: dict[tuple[int, int, int], list[int]] = {}  # stage 0 reads (m, p, v) alone: one entry a group
        for i, c in enumerate(cands):
            groups.setdefault((c.microbatches(batch), c.degrees.pipeline, c.virtual), []).append(i)
        self._groups = {members[0]: (mpv, members) for mpv, members in groups.items()}  # by its least index
        self._heap = [_Entry.of(floor * Fraction(m * v + p - 1, m * v), members[0], 0)  # floor (m + (p - 1)/v) / m
                      for (m, p, v), members in groups.items()]
        heapq.heapify(self._heap)
        self.done: list[tuple[Fraction, Fraction, int, Candidate]] = []  # left the heap, in order
        self.computed = 0  # time bounds computed (stage 2)
        self.deadline: float | None = None  # past it, no group is expanded, no bound completed (None: none)
        self.stopped = False  # the order stopped there (``least``: a bound of every candidate left)

    def __len__(self) -> int:
        return len(self.cands)

    def subset(self, keep: Callable[[Candidate], bool]) -> "BoundOrder":
        """The order of the candidates ``keep`` takes, on a heap of their own (this one is left as it
        is): the same keys and, among them, the same order (indices in the subset keep the space's
        order) and the same deadline (the stage-1 terms are the problem's: ``llm_bounds.terms``). Its
        entries carry their index in the subset."""
        idx = [i for i, c in enumerate(self.cands) if keep(c)]
        sub = BoundOrder(self.problem, [self.cands[i] for i in idx], [self.memory[i] for i in idx], self.floor,
                         self.tensor)
        sub.deadline = self.deadline
        return sub

    def _next(self) -> bool:
        """Move the entry with the least time bound left to ``done`` (False: none left). A group's
        entry (stage 0, under its least index: no member's key is below it) gives way to its
        members at stage 1."""
        heap = self._heap
        while heap:
            top = heap[0]
            i = top.i
            if top.stage == FULL:
                heapq.heappop(heap)
                self.done.append((top.key, self.memory[i], i, self.cands[i]))
                return True
            if past(self.deadline):  # before a group's expansion or a tensor-level floor (the costly steps)
                self.stopped = True
                return False
            if top.stage == 1:
                self.computed += 1
                heapq.heapreplace(heap, _Entry.of(Fraction(top.n, top.d) + self.tensor(self.cands[i]), i, FULL))
                continue
            heapq.heappop(heap)
            self._expand(top)
        return False

    def top(self) -> Candidate | None:
        """The candidate of the least key left (a group's member of least index; None: none left)."""
        return self.cands[self._heap[0].i] if self._heap else None

    def least(self) -> Fraction | None:
        """The least key left (at most the time bound of every candidate not in ``done``; None: none left)."""
        return Fraction(self._heap[0].n, self._heap[0].d) if self._heap else None

    def _expand(self, top: _Entry) -> None:
        """A group's members onto the heap at stage 1: the group's key plus each member's data-level
        floor and, e > 1, all-to-alls, ``(m + (p - 1)/v) (L / p)`` x one layer's (``llm_bounds``), summed
        in integers (cross products, not reduced; the same rational as the Fractions' sum). The terms
        come from the bounds' cache (``llm_bounds.terms``, on ``data_key`` and ``alltoall_key``)."""
        problem, heap, cands, memo = self.problem, self._heap, self.cands, terms(self.problem)
        (m, p, v), members = self._groups.pop(top.i)
        n0, d0 = top.n, top.d
        fn, fd = (m * v + p - 1) * problem.dims.layers, v * p  # (m + (p - 1)/v) (L / p)
        for j in members:
            c = cands[j]
            t = memo.get(data_key(c))
            if t is None:
                t = data_floor_s(problem, c)
            tn, td = t.numerator, t.denominator
            n, d = n0 * td + tn * d0, d0 * td
            if c.degrees.expert > 1:  # else no all-to-alls (alltoall_floor_s is 0)
                a = memo.get(alltoall_key(c))
                if a is None:
                    a = alltoall_layer_s(problem, c)
                an, ad = a.numerator, a.denominator
                n, d = n * ad * fd + fn * an * d, d * ad * fd
            heapq.heappush(heap, _Entry(n, d, j, 1))

    def __iter__(self) -> Iterator[tuple[Fraction, Fraction, int, Candidate]]:
        """Every candidate in order (those already out first); may run while ``through`` extends it."""
        k = 0
        while k < len(self.done) or self._next():
            yield self.done[k]
            k += 1

    def through(self, bound: Fraction) -> list[tuple[Fraction, Fraction, int, Candidate]]:
        """``done`` with every candidate whose time bound is at most ``bound`` in it."""
        n, d = bound.numerator, bound.denominator
        while self._heap and self._heap[0].n * d <= n * self._heap[0].d:
            if not self._next():
                break
        return self.done
