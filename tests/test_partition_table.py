"""The partition-type table and what is derived from it (counts, halvings, count states, spellings)."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest

from explorer.core.comm import intra_amount, scaled_sizes
from explorer.core.network import Layer, LayerKind
from explorer.core.partition import (
    ALL_TYPES,
    HALVED_BY,
    JOIN_TYPES,
    NUM_TYPES,
    TYPE_SPECS,
    ZERO_COUNTS,
    Dim,
    PartitionType as T,
    Size,
    Space,
    Tensor,
    add_type,
    advance,
    compositions,
    halvings,
    parse_type,
    zero_counts,
)


def test_type_table_says_what_model_md_says():
    # model.md section 3 and 4: I halves B and exchanges dW_l; II halves D_i and exchanges
    # F_{l+1}; III halves D_o and exchanges E_l (whose size is A(F_l)).
    assert [(TYPE_SPECS[t].halves, TYPE_SPECS[t].exchanges) for t in ALL_TYPES] == [
        (Dim.B, Tensor.DW), (Dim.D_I, Tensor.F_OUT), (Dim.D_O, Tensor.E_IN)]
    assert [Tensor.DW.size, Tensor.F_OUT.size, Tensor.E_IN.size] == [Size.WEIGHTS, Size.F_OUT, Size.F_IN]
    assert ALL_TYPES == (T.I, T.II, T.III) and [t.index for t in ALL_TYPES] == [0, 1, 2]
    assert all(t.spec is TYPE_SPECS[t] and t.exchanged == TYPE_SPECS[t].exchanges.size.index for t in ALL_TYPES)
    assert JOIN_TYPES == (T.I, T.II)  # no III on a join node
    assert Space.HYPAR.types == (T.I, T.II) and Space.ACCPAR.types == ALL_TYPES


def test_halvings_follow_the_halved_dimensions():
    # A(F_l) spans B and D_i: halved by I and II; A(W_l) spans D_i, D_o: II and III; A(F_{l+1}): I and III.
    assert HALVED_BY == {Size.F_IN: (0, 1), Size.WEIGHTS: (1, 2), Size.F_OUT: (0, 2)}
    assert halvings((1, 2, 4)) == (3, 6, 5)
    assert halvings(ZERO_COUNTS) == (0, 0, 0)


def test_counts_are_one_entry_per_type():
    assert ZERO_COUNTS == (0,) * NUM_TYPES == (0, 0, 0)
    assert zero_counts(2) == [(0, 0, 0), (0, 0, 0)]
    assert add_type((1, 0, 2), T.II) == (1, 1, 2)
    assert add_type(add_type(ZERO_COUNTS, T.III), T.III) == (0, 0, 2)
    assert advance([(0, 0, 0), (1, 1, 0)], (T.I, T.III)) == [(1, 0, 0), (1, 1, 1)]


def test_scaled_sizes_and_intra_from_the_table():
    # conv: B=2, D_i=3, D_o=5, k=3, S_in=16 (4x4), S_out=4 (2x2)
    layer = Layer("c", LayerKind.CONV, in_channels=3, out_channels=5, kernel=(3, 3), in_size=(4, 4), out_size=(2, 2))
    counts = (1, 2, 1)  # F_in /2^3, W /2^3, F_out /2^2
    s = scaled_sizes(layer, 2, counts)
    assert (s.f_in, s.weights, s.f_out) == (Fraction(2 * 3 * 16, 8), Fraction(3 * 5 * 9, 8), Fraction(2 * 5 * 4, 4))
    assert [intra_amount(layer, 2, t, counts) for t in ALL_TYPES] == [s.weights, s.f_out, s.f_in]


@pytest.mark.parametrize("space", list(Space))
@pytest.mark.parametrize("h", [0, 1, 2, 5])
def test_compositions_generated_from_the_space(space, h):
    states = compositions(h, space)
    k = len(space.types)
    assert len(states) == len(set(states)) == comb(h + k - 1, k - 1)
    assert states == sorted(states, reverse=True)  # the order solvers enumerate states in
    outside = [t.index for t in ALL_TYPES if t not in space.types]
    assert all(len(s) == NUM_TYPES and sum(s) == h and all(s[i] == 0 for i in outside) for s in states)
    # exactly the vectors reachable by h choices among the space's types
    reach = {ZERO_COUNTS}
    for _ in range(h):
        reach = {add_type(c, t) for c in reach for t in space.types}
    assert set(states) == reach


def test_spellings():
    assert [parse_type(x) for x in ("I", "ii", " III ", "1", "2", "3", "dp", "MP")] == [
        T.I, T.II, T.III, T.I, T.II, T.III, T.I, T.II]
    with pytest.raises(ValueError, match=r"unknown partition type 'IV' \(expected I, II or III\)"):
        parse_type("IV")
    with pytest.raises(ValueError):
        parse_type("4")
