"""Label setting on a capped chain (``solvers.constrained``): a constrained shortest path over the
type vectors the Lagrangian leaves, carrying each partial plan's exact objective and resources;
labels are pruned by the Lagrangian (at the best multipliers and at ``SCALES`` of them), by the
objective-only and per-resource completion bounds, and by dominance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .deadline import check_deadline
from .elimination import TimeUp, vectors_plan
from .labels import dominance_scan, one_resource_front
from .lagrangian import _Chain

MAX_LABELS = 1_000_000  # labels kept at one layer before the exact pass gives up
MAX_PAIRS = 60_000_000  # label x vector candidates at one layer before it gives up
CHUNK = 2_000_000  # candidates formed at once
MORE_AFTER = 20_000  # labels formed at one layer before the label pass prunes with SCALES too
SCALES = (0.5, 2.0)  # further multipliers (x the best) the exact label pass prunes with


@dataclass
class _LabelBounds:
    """What the label pass prunes with: the Lagrangian (multipliers ``lam``, backward values
    ``betas``, threshold ``T``), the objective-only completion (``obj_beta``, below the incumbent
    ``U``), each resource's completion against its limit, and the vectors that survive."""

    ch: _Chain
    lam: list[int]
    betas: list[np.ndarray]
    obj_beta: list[np.ndarray] | None
    completion: list[list[np.ndarray]]
    T: int | None
    U: int | None
    limits: list[int]
    res_intra: list[list[np.ndarray]]  # per resource, per layer: the resource's intra part of each vector
    survivors: list[np.ndarray]
    scales: tuple  # further multipliers (x lam) to prune with once the labels grow (``more``)
    _more: list | None = None

    def more(self, labels: int) -> list[tuple[list[int], list[np.ndarray], int]]:
        """(multipliers, backward values, threshold) besides lam: every multiplier gives a valid
        completion bound, and a label's best one depends on how much of each resource it has
        left; computed (one backward DP each) only once a layer's labels pass ``MORE_AFTER``."""
        if self._more is None and labels > MORE_AFTER and self.T is not None:
            ch, self._more = self.ch, []
            for s in self.scales:
                other = [int(x * s) for x in self.lam]
                if other != self.lam and any(other):
                    To = ch.D * (self.U - 1) + sum(x * r.limit for x, r in zip(other, ch.res))
                    self._more.append((other, ch.backward(other), To))
        return self._more or []


def _label_bounds(ch: _Chain, lam: list[int], alphas: list[np.ndarray], completion,
                  scales: tuple = (), target: int | None = None) -> _LabelBounds:
    vc, D = ch.vc, ch.D
    betas = ch.backward(lam)
    U = target if target is not None else ch.incumbent[0] if ch.incumbent is not None else None
    if U is not None:
        T = D * (U - 1) + sum(x * r.limit for x, r in zip(lam, ch.res))
        obj_beta = ch.objective_backward()
    else:
        T, obj_beta = None, None
    res_intra = [[vc.intra_vec(n, Wk, None if exk is None else exk[n]) for n in range(ch.L)]
                 for Wk, exk in map(ch.resource_weights, range(len(ch.res)))]
    survivors = []
    for n in range(ch.L):
        keep = alphas[n] + betas[n] <= T if T is not None else np.ones(vc.dom[n].V, dtype=bool)
        keep &= ~vc.blocked(n)
        survivors.append(np.flatnonzero(keep))
    return _LabelBounds(ch, lam, betas, obj_beta, completion, T, U, [r.limit for r in ch.res], res_intra, survivors,
                        scales)


def _label_setting(ch: _Chain, lam: list[int], alphas: list[np.ndarray], completion: list[list[np.ndarray]],
                   beam: int | None = None, target: int | None = None):
    """The exact pass over the vectors that can still lie on a feasible plan below ``target`` (by
    default the incumbent).

    Returns None when it gave up, "none" when no feasible plan lies below it (or exists), else
    "found" (the incumbent is then the least plan below it, hence the optimum). With ``beam`` it keeps only that many
    labels per layer (least Lagrangian bound first): a heuristic for incumbents, proving nothing.
    A layer's labels are (vectors, objectives, [resource amounts], parent labels). ``TimeUp`` once
    ``ch.deadline`` passes: looked at per layer, per chunk of candidates and inside the dominance scan."""
    b = _label_bounds(ch, lam, alphas, completion, () if beam is not None else SCALES, target)
    vec = b.survivors[0]
    g = [b.res_intra[k][0][vec] for k in range(len(ch.res))]
    labels = _prune(b, 0, vec, ch.vc.intra_vec(0)[vec], g, np.full(len(vec), -1))
    vecs, parents = [labels[0]], [labels[3]]
    for n in range(1, ch.L):
        vec = labels[0]
        if len(vec) == 0:
            return "none"
        S = b.survivors[n]
        if beam is None and (len(vec) > MAX_LABELS or len(vec) * len(S) > MAX_PAIRS):
            return None
        check_deadline(ch.deadline, TimeUp)
        uv, inv = np.unique(vec, return_inverse=True)
        if not ch.fits(label_bytes(sum(len(v) for v in vecs), len(vec), len(uv), len(S), len(ch.res))):
            return None  # (beam passes too: the bytes, unlike the counts, bound them)
        labels = _dominance(*_extend(b, n, *labels[:3], uv, inv), deadline=ch.deadline)
        if beam is not None and len(labels[0]) > beam:
            top = np.argsort(_lagrangian(b, n, *labels[:3]), kind="stable")[:beam]
            labels = labels[0][top], labels[1][top], [x[top] for x in labels[2]], labels[3][top]
        vecs.append(labels[0])
        parents.append(labels[3])
    if len(labels[0]) == 0:
        return "none"
    _offer_best(ch, labels[1], vecs, parents)
    return "found"


def label_bytes(stored: int, labels: int, producers: int, vectors: int, resources: int) -> int:
    """Bytes a chain label pass holds while it extends ``labels`` (at ``producers`` distinct vectors)
    by ``vectors`` survivors, with ``stored`` labels kept at earlier layers (a vector and a parent
    each): the labels (vector, objective, resources, parent), the edge's pair costs (producer and
    consumer indices, objective and resources, a temporary) and one chunk of candidates with its
    pruned copies, all int64."""
    per = 3 + resources
    pairs = producers * vectors * (per + 2)
    chunk = 2 * min(CHUNK, labels * vectors) * per
    return 8 * (2 * stored + labels * per + pairs + chunk)


def _extend(b: _LabelBounds, n: int, vec, f, g, uv, inv):
    """Layer n's labels from layer n-1's (``vec``, ``f``, ``g``): every label times every surviving
    vector, formed in chunks and pruned as they come; a new label's parent is its label's index."""
    ch, vc, nres = b.ch, b.ch.vc, len(b.ch.res)
    S = b.survivors[n]
    ef, eg = _pair_costs(ch, n - 1, uv, S)
    intra_f = vc.intra_vec(n)[S]
    intra_g = [b.res_intra[k][n][S] for k in range(nres)]
    parts = []
    step = max(1, CHUNK // max(1, len(S)))
    for i0 in range(0, len(vec), step):  # label x vector pairs in chunks, pruned as they come
        check_deadline(ch.deadline, TimeUp)
        sl = slice(i0, i0 + step)
        m = len(vec[sl])
        nf = (f[sl, None] + ef[inv[sl]] + intra_f[None, :]).reshape(-1)
        ng = [(g[k][sl, None] + eg[k][inv[sl]] + intra_g[k][None, :]).reshape(-1) for k in range(nres)]
        nvec = np.tile(S, m)
        npar = np.repeat(np.arange(i0, i0 + m), len(S))
        parts.append(_prune(b, n, nvec, nf, ng, npar))
    vec = np.concatenate([p[0] for p in parts])
    f = np.concatenate([p[1] for p in parts])
    g = [np.concatenate([p[2][k] for p in parts]) for k in range(nres)]
    return vec, f, g, np.concatenate([p[3] for p in parts])


def _pair_costs(ch: _Chain, e: int, uv: np.ndarray, S: np.ndarray):
    """Edge e's objective and per-resource costs for every (producer vector in uv, consumer in S)."""
    vc = ch.vc
    pv = np.repeat(uv, len(S))
    pw = np.tile(S, len(uv))
    ef = vc.edge_pairs(e, pv, pw).reshape(len(uv), len(S))
    eg = [vc.edge_pairs(e, pv, pw, ch.resource_weights(k)[0]).reshape(len(uv), len(S)) for k in range(len(ch.res))]
    return ef, eg


def _offer_best(ch: _Chain, f: np.ndarray, vecs: list[np.ndarray], parents: list[np.ndarray]) -> None:
    """Follow the least-objective last label back through its parents; offer its plan, which must
    re-score to the label and satisfy every limit."""
    i = int(np.argmin(f))
    chosen = [0] * ch.L
    for n in range(ch.L - 1, -1, -1):
        chosen[n] = int(vecs[n][i])
        i = int(parents[n][i])
    fv, gv = ch.offer(vectors_plan(ch.vc, chosen))
    if fv != int(f.min()) or any(x > r.limit for x, r in zip(gv, ch.res)):
        raise AssertionError("constrained exact: the label pass's plan does not re-score to its label")


def _lagrangian(b: _LabelBounds, n: int, vec, f, g, lam=None, betas=None):
    """Each label's least scaled Lagrangian cost of a whole plan through it (at ``lam``, by default
    the best multipliers)."""
    lam, betas = (b.lam, b.betas) if lam is None else (lam, betas)
    scaled = b.ch.D * f + betas[n][vec]
    for k, x in enumerate(lam):
        if x:
            scaled = scaled + x * g[k]
    return scaled


def _prune(b: _LabelBounds, n: int, vec, f, g, parent):
    """The labels that every completion bound leaves (each test runs on the survivors of the last)."""

    def keep(mask, vec, f, g, parent):
        return vec[mask], f[mask], [x[mask] for x in g], parent[mask]

    vec, f, g, parent = keep(f < b.ch.vc.big, vec, f, g, parent)
    for k in range(len(g)):
        vec, f, g, parent = keep(g[k] + b.completion[k][n][vec] <= b.limits[k], vec, f, g, parent)
    if b.T is not None:
        vec, f, g, parent = keep(f + b.obj_beta[n][vec] <= b.U - 1, vec, f, g, parent)
        vec, f, g, parent = keep(_lagrangian(b, n, vec, f, g) <= b.T, vec, f, g, parent)
        for lam, betas, T in b.more(len(vec)):
            vec, f, g, parent = keep(_lagrangian(b, n, vec, f, g, lam, betas) <= T, vec, f, g, parent)
    return vec, f, g, parent


def _dominance(vec, f, g, parent, deadline: float | None = None):
    """Drop labels another label at the same vector matches or beats in objective and every resource
    (``TimeUp`` past ``deadline`` inside the many-resource scan)."""
    if len(vec) <= 1:
        return vec, f, g, parent
    if len(g) == 1 and f.dtype != object:
        idx = one_resource_front(vec, f, g[0])
        return vec[idx], f[idx], [g[0][idx]], parent[idx]
    idx = dominance_scan(vec, f, g, deadline)
    return vec[idx], f[idx], [x[idx] for x in g], parent[idx]
