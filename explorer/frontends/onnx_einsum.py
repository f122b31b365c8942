"""An ONNX Einsum of one activation and one stored weight read as an fc layer.

``einsum_fc(equation, weight_first, weight_dims)`` returns ``(din, dout)`` when the equation
is a plain contraction: two operands, no index repeated within an operand (no diagonal or
trace), the weight's indices split into contracted ones K (in the activation, not in the
output) and new ones N (in the output, not in the activation), both non-empty, and every
other activation index (``...`` included) kept in the output. ``"bsd,de->bse"`` is an fc over
the last axis (din d, dout e), ``"bshd,hde->bse"`` one over h*d -> e. Anything else returns
the reason it is not an fc layer (a string).
"""

from __future__ import annotations

from math import prod

ELLIPSIS = "."  # '...' stands as one index


def _indices(term: str) -> list[str] | None:
    term = term.replace("...", ELLIPSIS)
    if not all(c.isalpha() or c == ELLIPSIS for c in term):
        return None
    return list(term)


def _parse(equation: str) -> tuple[list[list[str]], list[str]] | str:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = [_indices(t) for t in lhs.split(",")]
    if any(t is None for t in terms):
        return "not an equation of letters and '...'"
    if arrow:
        out = _indices(rhs)
        if out is None:
            return "not an equation of letters and '...'"
    else:  # implicit output: the indices used once, in alphabetical order (ellipsis first)
        flat = [c for t in terms for c in t]
        out = sorted((c for c in set(flat) if flat.count(c) == 1), key=lambda c: (c != ELLIPSIS, c))
    return terms, out


def einsum_fc(equation: str, weight_first: bool, weight_dims: list[int]) -> tuple[int, int] | str:
    parsed = _parse(equation)
    if isinstance(parsed, str):
        return parsed
    terms, out = parsed
    if len(terms) != 2:
        return f"{len(terms)} operands (an fc layer has an activation and a weight)"
    w, a = terms if weight_first else terms[::-1]
    if any(len(set(t)) != len(t) for t in (w, a, out)):
        return "an index repeated within one operand (a diagonal or trace)"
    if ELLIPSIS in w or len(w) != len(weight_dims):
        return "the weight's indices do not match its stored rank"
    contracted = [c for c in w if c in a]
    new = [c for c in w if c not in a]
    if not contracted or any(c in out for c in contracted):
        return "the weight shares an index with the activation that stays in the output (not a contraction)"
    if not new or any(c not in out for c in new):
        return "the weight has an index summed on its own or none that reaches the output"
    if any(c not in out for c in a if c not in contracted):
        return "an activation index other than the contracted ones is summed"
    din = prod(weight_dims[w.index(c)] for c in contracted)
    dout = prod(weight_dims[w.index(c)] for c in new)
    return din, dout
