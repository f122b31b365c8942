"""Per-node types of one transformer block at the tensor level: an exact minimiser of what the step
model charges for them.

The full derivation is in the manual: docs/derivations.md, "LLM training: the search's types and bounds".
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..core.fanout import scatter_targets
from ..core.llm_block import edge_tensors, edge_term, megatron_types, node_term, subnetwork
from ..core.llm_memory import Recompute
from ..core.llm_stage import post_amounts, template_block
from ..core.network import LayerKind
from ..core.partition import PartitionType, Size
from ..core.siblings import earlier_siblings, edge_charged, intra_charged, single_inputs

TYPES = tuple(PartitionType)
_OUT, _IN = Size.F_OUT.index, Size.F_IN.index


def allowed_types(layer, t: int, micro_batch: int) -> tuple[PartitionType, ...]:
    out = []
    for ty in TYPES:
        if layer.node_types.specs[ty.index] is None:
            continue
        if ty is PartitionType.I and layer.weight_elements() > 0:
            continue  # would hold the whole matrix on each of the t GPUs; the memory model splits it t ways
        if ty is PartitionType.I and layer.kind is LayerKind.ATTENTION and micro_batch % t:
            continue  # fewer samples than GPUs: a split inside a sample's sequence, whose K/V exchange is not modelled
        units = layer.split_units
        if ty is PartitionType.II and units is not None and units % t:
            continue
        out.append(ty)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Pick:
    """One assignment of the block's types and its amount A (elements a GPU sends at the tensor
    level for one layer and one micro-batch of 1 sample; the recompute re-send included)."""

    types: tuple[PartitionType, ...]
    amount: Fraction


class BlockModel:
    """The template block as the step model charges it (``llm_stage.block_amounts``) at fan-out t,
    micro-batch 1, split into terms with their scopes. Positions: 0 the lead, 1..n the block's nodes."""

    def __init__(self, problem, t: int, attention_batch_split: bool, sequence_parallel: bool,
                 recompute: Recompute, memo: dict | None = None):
        net = problem.network
        blk, lead, self.lead_fixed = template_block(problem)
        if lead is None:
            raise ValueError("the block minimiser needs a block with a producer in front (an embedding)")
        inside = set(blk)
        if any(v not in inside for u, v in net.edges if u in inside and u != blk[-1]):
            raise ValueError("a block node other than the last feeds a node outside the block: "
                             "its terms would read the next block's types")
        self.sub = sub = subnetwork(net, blk, (), lead, 1)
        self.n = len(blk)
        self.t, self.sp, self.full = t, sequence_parallel, recompute is Recompute.FULL
        b = t if attention_batch_split else 1  # only the attention node's type I reads it
        self.allowed = tuple(allowed_types(x, t, b) for x in sub.layers)
        self.megatron = tuple(megatron_types(net, problem.dims.layers))
        if any(sub.layers[0].node_types.exchanged[ty.index] is not None for ty in self.lead_types()):
            raise ValueError(f"the lead {sub.layers[0].name} exchanges partial sums")
        cons: list[set[int]] = [set() for _ in sub.layers]
        prods: list[set[int]] = [set() for _ in sub.layers]
        for u, v in sub.edges:
            cons[u].add(v)
            prods[v].add(u)
        self._scat_scope = []
        for i, x in enumerate(sub.layers):
            ex = {x.node_types.exchanged[ty.index] for ty in self.allowed[i]} if self.sp else set()
            self._scat_scope.append(tuple(sorted({i} | (cons[i] if _OUT in ex else set())
                                                 | (prods[i] if _IN in ex else set()))))
        # a shared exchange is charged to the first sibling (``siblings.sibling_charges``): a term also
        # reads the types (and reduce-scatters) of the consumers of the same tensor on earlier edges
        self._earlier, self._into = earlier_siblings(sub, edge_tensors(sub)), single_inputs(sub)
        sib = [set().union(*(self._scat_scope[sub.edges[f][1]] for f in self._earlier[e])) for e in range(len(sub.edges))]
        into = {v: e for v, e in enumerate(self._into) if e is not None}
        self.terms: list[tuple[tuple[int, ...], tuple]] = []  # (scope, ("node", i) | ("edge", e))
        for i in range(1, self.n + 1):
            self.terms.append((tuple(sorted(set(self._scat_scope[i]) | (sib[into[i]] if i in into else set()))),
                               ("node", i)))
        for e, (u, v) in enumerate(sub.edges):
            self.terms.append((tuple(sorted(set(self._scat_scope[u]) | set(self._scat_scope[v]) | sib[e])), ("edge", e)))
        self._memo: dict = {} if memo is None else memo  # raw terms: may be shared by models of the same t and sp
        self._local: dict = {}  # this model's terms (the forward added under full recomputation)

    def lead_types(self) -> tuple[PartitionType, ...]:
        return (self.lead_fixed,) if self.lead_fixed is not None else self.allowed[0]

    def _row(self, types: dict[int, PartitionType]):
        """A whole row (the positions outside a term's scope at their first allowed type: the term
        does not read them) and its reduce-scatter targets."""
        row = [types.get(j) or self.allowed[j][0] for j in range(len(self.sub.layers))]
        return row, scatter_targets(self.sub, row) if self.sp else (None,) * len(row)

    def term(self, k: int, types: dict[int, PartitionType]) -> Fraction:
        """Term ``k`` under ``types`` (a type for every position of its scope): activations (with the
        forward's again under full recomputation); weights must be 0 (no type I matmul)."""
        scope, (kind, i) = self.terms[k]
        key = (k, scope, *map(types.__getitem__, scope))
        hit = self._local.get(key)
        if hit is not None:
            return hit
        raw = self._memo.get(key)
        if raw is None:
            row, scat = self._row(types)
            sub, earlier = self.sub, self._earlier
            if kind == "node":
                a = node_term(sub, i, row[i], self.t, 1, scat[i], intra_charged(sub, row, scat, earlier, self._into, i))
            else:
                u, v = sub.edges[i]
                a = edge_term(sub, i, row[u], row[v], self.t, 1, scat[u], scat[v],
                              edge_charged(sub, row, scat, earlier, i))
            if a.weights:
                raise ValueError("a block's types send weights: the minimiser assumes none (no type I matmul)")
            raw = self._memo[key] = (a.activations, a.forward)
        x = self._local[key] = raw[0] + (raw[1] if self.full else 0)
        return x

    def amount(self, types: tuple[PartitionType, ...], lead: PartitionType | None = None) -> Fraction:
        """The block's amount under ``types`` (positions 1..n), the lead of type ``lead`` (default:
        the fixed one, else the last node's)."""
        lead = lead or self.lead_fixed or types[-1]
        full = {0: lead, **{j + 1: ty for j, ty in enumerate(types)}}
        return sum((self.term(k, full) for k in range(len(self.terms))), Fraction(0))


def kbest(model: BlockModel, last: PartitionType, lead: PartitionType | None = None, k: int = 2) -> list[Pick]:
    """The ``k`` least distinct amounts over every assignment whose last node takes ``last`` (the lead
    ``lead``; default the fixed one, else ``last``: the same types in every block), one assignment
    each (on a tie Megatron's pattern, else the first in type order), cheapest first."""
    n = model.n
    fixed = {0: lead or model.lead_fixed or last, n: last}
    free = [i for i in range(1, n + 1) if i not in fixed]
    charge: dict[int | None, list[int]] = {}
    for kk, (scope, _) in enumerate(model.terms):
        f = [j for j in scope if j not in fixed]
        charge.setdefault(max(f) if f else None, []).append(kk)
    last_need = {}
    for scope, _ in model.terms:
        f = [j for j in scope if j not in fixed]
        for j in f:
            last_need[j] = max(last_need.get(j, j), max(f))
    term, zero = model.term, Fraction(0)
    base = sum((term(kk, fixed) for kk in charge.get(None, ())), zero)
    states: dict[tuple, list[tuple[Fraction, tuple]]] = {(): [(base, ())]}
    live: list[int] = []
    for idx, j in enumerate(free):
        nxt_live = [i for i in live + [j] if last_need.get(i, i) > j]
        nxt: dict[tuple, list[tuple[Fraction, tuple]]] = {}
        charged = charge.get(j, ())
        for key, lst in states.items():
            known = dict(fixed)
            known.update(zip(live, key))
            for ty in model.allowed[j]:
                known[j] = ty
                add = sum((term(kk, known) for kk in charged), zero)
                bucket = nxt.setdefault(tuple(map(known.__getitem__, nxt_live)), [])
                bucket.extend((c + add, assign + (ty,)) for c, assign in lst)
        states = {key: _keep(lst, k) for key, lst in nxt.items()}
        live = nxt_live
    picks = _keep([x for lst in states.values() for x in lst], k)
    out = []
    for c, assign in picks:
        full = dict(zip(free, assign))
        full.update(fixed)
        out.append(Pick(tuple(full[i] for i in range(1, n + 1)), c))
    mega = model.megatron
    if out and mega[-1] is last and all(ty in model.allowed[i + 1] for i, ty in enumerate(mega)) \
            and model.amount(mega, fixed[0]) == out[0].amount:
        out[0] = Pick(mega, out[0].amount)
    return out


def _keep(lst: list[tuple[Fraction, tuple]], k: int) -> list[tuple[Fraction, tuple]]:
    """The ``k`` least distinct costs of ``lst``, each with its first assignment in type order."""
    lst.sort(key=lambda x: (x[0], tuple([t.index for t in x[1]])))
    out: list[tuple[Fraction, tuple]] = []
    for c, a in lst:
        if out and out[-1][0] == c:
            continue
        out.append((c, a))
        if len(out) == k:
            break
    return out


@dataclass(frozen=True, slots=True)
class LastTypeOption:
    """The block's cheapest types with last node of type ``last``; ``second``: the next distinct
    amount (None: no other); ``post``: the head part's amount (micro-batch 1) after ``last``."""

    last: PartitionType
    best: Pick
    second: Pick | None
    post: Fraction


class BlockTypes:
    """Everything the search needs about one (t, attention batch split, sequence parallel, recompute):
    ``options``, one per last type the block's last node takes; ``megatron``, Megatron's pattern
    (what ``tensor_types=None`` means); ``relaxed``, the block's least amount with its lead's type
    free (any last type), computed when first asked for."""

    def __init__(self, options: tuple[LastTypeOption, ...], megatron: tuple[PartitionType, ...],
                 model: BlockModel | None = None, relaxed: Fraction | None = None):
        self.options, self.megatron, self._model, self._relaxed = options, megatron, model, relaxed
        self._pareto: tuple[LastTypeOption, ...] | None = None

    @property
    def relaxed(self) -> Fraction:
        if self._relaxed is None:
            m = self._model
            self._relaxed = min(kbest(m, last, lead, k=1)[0].amount for last in m.allowed[m.n] for lead in m.lead_types())
        return self._relaxed

    def pareto(self) -> tuple[LastTypeOption, ...]:
        """The options no other beats on both the block's amount and the head's (at a fixed cut and
        schedule the step is non-decreasing in both, so one of these is fastest). Computed once."""
        if self._pareto is None:
            self._pareto = self._find_pareto()
        return self._pareto

    def _find_pareto(self) -> tuple[LastTypeOption, ...]:
        out: list[LastTypeOption] = []
        for o in self.options:
            if not any(p.best.amount <= o.best.amount and p.post <= o.post
                       and (p.best.amount < o.best.amount or p.post < o.post) for p in self.options) \
                    and not any(p.best.amount == o.best.amount and p.post == o.post for p in out):
                out.append(o)
        return tuple(out)

    def blocks_certified(self, last: PartitionType) -> bool:
        """Every block and the head at their own minimum (lead free) with the periodic option ``last``."""
        o = next(x for x in self.options if x.last is last)
        return o.best.amount == self.relaxed and o.post == min(x.post for x in self.options)


def block_types(problem, t: int, attention_batch_split: bool, sequence_parallel: bool,
                recompute: Recompute, memo: dict | None = None) -> BlockTypes:
    """The exact per-last-type minima of the block's amount, the relaxation's minimum (when asked
    for), the head's amounts; ``memo``: term values shared with models of the same t, sequence
    parallelism (any recompute mode)."""
    model = BlockModel(problem, t, attention_batch_split, sequence_parallel, recompute, memo)
    options = []
    for last in model.allowed[model.n]:
        picks = kbest(model, last)
        if not picks:
            continue
        post = post_amounts(problem, last, t, 1, sequence_parallel).activations
        options.append(LastTypeOption(last, picks[0], picks[1] if len(picks) > 1 else None, post))
    return BlockTypes(tuple(options), model.megatron, model)
