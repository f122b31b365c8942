"""The integer pass of the split evaluator (``evaluate.evaluate_split``): one plan's per-group
amounts, per-leaf compute and per-leaf memory, summed in integers and returned as the exact
Fractions ``evaluate.split_evaluation`` takes. The solvers' table (``SplitCosts``) is not read.

Why every share is an integer over a power of its group's D (the lcm of 2 and the plan's alphas'
denominators, or where that is too long, e.g. thousands of digits on an array of 1,024 kinds, the
lcm of 2 and those on the group's own path: ``ONE_D_BITS``), and the reference it is tested against:
docs/model-implemented.md, "Uneven splits in integers".
"""

from __future__ import annotations

from fractions import Fraction
from math import lcm

from .array import ArraySpec
from .comm import training_flops
from .network import Network
from .partition import Size
from .plan import Plan
from .split_costs import alpha_denominator, edge_tensors, edge_units, times
from .uneven import SHARE_POSITION, SIZE_DIMS, alpha_units, spec_of

_F_IN, _W = Size.F_IN.index, Size.WEIGHTS.index


def _size_share(size: int):
    """The product of a share tuple's numerators over the dimensions a size spans."""
    i, j, k = SIZE_DIMS[size]
    return lambda n: n[i] * n[j] * n[k]


_PROD = tuple(_size_share(k) for k in range(len(Size)))

# A plan whose alphas' lcm D fits in this many bits is summed over that one D (every group alike:
# rows shared, nothing rescaled; resnet50 on tpu-mix-16 3x faster than with each path's D); past it
# (1,023 proportional ratios on 1,024 kinds: thousands of digits, D^(H+1) in every term), over
# each group's own path's D (``_numerators``).
ONE_D_BITS = 64


def split_amounts(network: Network, array: ArraySpec, plan: Plan, weight_copies: int = 0):
    """(amounts [level][group] -> (side 0, side 1) elements, compute seconds per leaf, memory bytes
    per leaf) of a checked plan with alphas, exact (module docstring)."""
    H = array.levels
    tensors, S = edge_tensors(network)
    rows, exps, parts = _numerators(network, plan)
    amounts = []
    for h in range(H):
        kinds, terms = _level_terms(network, plan, h, exps[h], S, tensors), {}  # D -> the terms times D's powers
        memo: dict = {}  # (numerators row, alphas) -> amounts: groups alike are scored once
        coeff: dict = {}  # (edge kind, k_u, k_v, D) -> the edge's coefficients * D^2
        row = []
        for g, nums in enumerate(rows[h]):
            ks, D = parts[h][g], nums[1]
            key = (id(nums), ks)
            if key not in memo:
                if D not in terms:
                    terms[D] = _scaled(kinds, D, H)
                memo[key] = _pair(ks, nums[0], *terms[D], coeff, D, S * D ** (H + 1))
            row.append(memo[key])
        amounts.append(tuple(row))
    peaks = array.leaf_peaks_TFLOPS()
    per_d: dict = {}  # D -> the leaf terms in its powers
    per_row: dict = {}  # id(leaf numerators) -> (FLOPs, memory bytes)
    for nums, D in rows[H]:
        if D not in per_d:
            per_d[D] = _leaf_terms(network, exps[H], D, H, weight_copies)
        if id(nums) not in per_row:
            flops, held = _leaf(nums, per_d[D], D ** H)
            per_row[id(nums)] = (flops, held * array.dtype_bytes)
    seconds: dict = {}  # (id(leaf numerators), id(its peak)) -> compute seconds: leaves alike computed once
    for (r, _), peak in zip(rows[H], peaks):
        if (id(r), id(peak)) not in seconds:
            seconds[id(r), id(peak)] = per_row[id(r)][0] / (peak * 10**12)
    compute = tuple(seconds[id(r), id(peak)] for (r, _), peak in zip(rows[H], peaks))
    memory = tuple(per_row[id(r)][1] for r, _ in rows[H])
    return tuple(amounts), compute, memory


def _numerators(network: Network, plan: Plan):
    """[level 0..H][group] -> (per layer its (B, D_i, D_o, G) share numerators, D: the group's own
    denominator), and [level][layer] -> the powers of D under them, and [level][group] -> its
    alphas' numerators over its D. A group's D is the plan's (the lcm of 2 and every alpha's
    denominator) where that fits in ``ONE_D_BITS``, else the lcm of 2 and the alphas' denominators
    on its path, its own alphas included (a leaf's: its parent's). Groups whose paths carry the
    same alphas share one row object."""
    L, H = len(network.layers), plan.levels
    whole = alpha_denominator(a for level in plan.alphas for row in level for a in row)
    one = whole.bit_length() <= ONE_D_BITS  # the plan's one D for every group: rows shared, no rescaling
    top = whole if one else alpha_denominator(plan.alphas[0][0]) if H else 2
    rows, exps, parts = [[(((1, 1, 1, 1),) * L, top)]], [[(0, 0, 0, 0)] * L], []
    for h in range(H):
        dims = [SHARE_POSITION[spec_of(node, t).halves] for node, t in zip(network.layers, plan.types[h])]
        exps.append([tuple(e + (i == d) for i, e in enumerate(es)) for es, d in zip(exps[h], dims)])
        below = plan.alphas[h + 1] if h + 1 < H else None
        memo: dict = {}
        units: dict = {}  # (id(alphas row), D) -> its numerators: a row object shared by groups, once
        nxt, level_parts = [], []
        for g, parent in enumerate(rows[h]):
            D = parent[1]
            alphas = plan.alphas[h][g]
            ks = units.get((id(alphas), D))
            if ks is None:
                ks = units[id(alphas), D] = tuple(alpha_units(a, D) for a in alphas)
            level_parts.append(ks)
            for s, side in enumerate((ks, tuple(D - k for k in ks))):
                child_D = D if one or below is None else lcm(D, alpha_denominator(below[2 * g + s]))
                key = (id(parent), side, child_D)
                row = memo.get(key)
                if row is None:
                    row = memo[key] = (_child(parent[0], exps[h], dims, side, child_D // D), child_D)
                nxt.append(row)
        rows.append(nxt)
        parts.append(level_parts)
    return rows, exps, parts


def _child(parent, exps, dims, side, r: int):
    """A child's numerators over its D = r times its parent's: the parent's raised to it (each
    times r to the power of D under it), the split dimension times the side's part (over D * r)."""
    if r == 1:
        return tuple(times(s, d, p) for s, d, p in zip(parent, dims, side))
    return tuple(times(tuple(x * r**e for x, e in zip(s, es)), d, p * r) for s, es, d, p in zip(parent, exps, dims, side))


def _level_terms(network: Network, plan: Plan, h: int, exps, S: int, tensors):
    """A level's intra terms (layer, units per product of its share numerators before D's powers,
    the power of D under that product, that product) and edge terms (producer, consumer, units per
    product of the consumer's F_in numerators, the power of D under it, the edge's kind: its
    nodes' behaviours and types at the level); ``_scaled`` puts each group's D in."""
    B, layers, types = network.batch, network.layers, plan.types[h]
    intra = []
    for l, (node, t) in enumerate(zip(layers, types)):  # noqa: E741
        tensor = spec_of(node, t).exchanges
        if node.is_join or tensor is None:  # a join, a grouped conv's group split: no partial sums
            continue
        k = tensor.size.index
        whole = (node.input_elements(B), node.weight_elements(), node.output_elements(B))[k]
        intra.append((l, whole * S, sum(exps[l][i] for i in SIZE_DIMS[k]), _PROD[k]))
    edges = []
    for e, (u, v) in enumerate(network.edges):
        kind = (layers[u].node_types, types[u], layers[v].node_types, types[v])
        edges.append((u, v, int(tensors[e] * S), sum(exps[v][i] for i in SIZE_DIMS[_F_IN]), kind))
    return intra, edges


def _scaled(terms, D: int, H: int):
    """A level's terms (``_level_terms``) for groups of denominator D: in units of 1/(S D^(H+1)),
    an intra term's product is over D^e, an edge's F_in product over D^e and its coefficient over D^2."""
    intra, edges = terms
    return ([(l, w * D ** (H + 1 - e), prod) for l, w, e, prod in intra],  # noqa: E741
            [(u, v, t * D ** (H - 1 - e), kind) for u, v, t, e, kind in edges])


def _pair(ks, nums, intra, edges, coeff: dict, D: int, U: int) -> tuple[Fraction, Fraction]:
    """(side 0, side 1) elements of one group (``ks``: its alphas' numerators over D): its layers'
    intra exchanges and its edges' re-layouts."""
    x = sum(f * prod(nums[l]) for l, f, prod in intra)  # noqa: E741
    s0 = s1 = x
    fin = _PROD[_F_IN]
    for u, v, f, kind in edges:
        key = (id(kind), ks[u], ks[v], D)
        c = coeff.get(key)
        if c is None:
            c = coeff[key] = edge_units(kind, ks[u], ks[v], D)
        if c[0] or c[1]:
            y = f * fin(nums[v])
            s0 += c[0] * y
            s1 += c[1] * y
    return Fraction(s0, U), Fraction(s1, U)


def _leaf_terms(network: Network, exps, D: int, H: int, weight_copies: int):
    """Per layer: its training FLOPs, and (non-join) its footprint terms: (2 + weight_copies) *
    A(W) and A(F) each times D^(H - the power under its share), in units of 1/D^H element."""
    B, c = network.batch, 2 + weight_copies
    out = []
    for node, es in zip(network.layers, exps):
        if node.is_join:
            out.append((training_flops(node, B), 0, 0))
            continue
        w = c * node.weight_elements() * D ** (H - sum(es[i] for i in SIZE_DIMS[_W]))
        f = node.input_elements(B) * D ** (H - sum(es[i] for i in SIZE_DIMS[_F_IN]))
        out.append((training_flops(node, B), w, f))
    return out


def _leaf(nums, terms, den: int) -> tuple[Fraction, Fraction]:
    """(FLOPs, footprint elements) of one leaf, from its numerators over ``den`` = D^H."""
    pw, pf = _PROD[_W], _PROD[_F_IN]
    flops = sum(fl * n[0] * n[1] * n[2] * n[3] for (fl, _, _), n in zip(terms, nums))
    held = sum(w * pw(n) + f * pf(n) for (_, w, f), n in zip(terms, nums) if w or f)
    return Fraction(flops, den), Fraction(held, den)
