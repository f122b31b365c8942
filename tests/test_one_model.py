"""One model: the even split's formulas are the alpha = 1/2 case of the uneven split's (issue 20).

The re-layout, inter-layer, footprint and compute formulas exist once (``core.partition``,
``core.comm``); the even path's coefficients are computed by the same functions at 1/2. These
tests would fail if a second copy drifted: every node behaviour, every pair of types."""

from __future__ import annotations

from fractions import Fraction as F
from itertools import product

from explorer.core.comm import EVEN, edge_split, footprint_elements, held_elements, scaled_sizes, share_flops, training_flops
from explorer.core.network import Layer, LayerKind
from explorer.core.partition import (
    ALL_TYPES,
    EMBEDDING_TYPES,
    GROUPED_TYPES,
    HALF,
    JOIN_NODE_TYPES,
    LAYER_TYPES,
    Layout,
    inter_coeff,
    inter_split,
    node_inter_coeff,
    node_inter_split,
    relayout_cost,
    relayout_split,
)
from explorer.core.randnet import random_chain

BEHAVIOURS = (LAYER_TYPES, JOIN_NODE_TYPES, GROUPED_TYPES, EMBEDDING_TYPES)


def test_relayout_cost_is_the_even_case_of_relayout_split():
    # hand values of model.md section 4: row <-> col 1/4, split -> dup 1/2, else 0
    want = {(Layout.ROW, Layout.COL): F(1, 4), (Layout.COL, Layout.ROW): F(1, 4), (Layout.ROW, Layout.DUP): F(1, 2),
            (Layout.COL, Layout.DUP): F(1, 2)}
    for src, dst in product(Layout, Layout):
        assert relayout_cost(src, dst) == want.get((src, dst), 0)
        assert relayout_split(src, HALF, dst, HALF) == (relayout_cost(src, dst),) * 2


def test_every_behaviours_inter_coefficient_is_the_even_case_of_the_uneven_one():
    seen = 0
    for producer, consumer in product(BEHAVIOURS, BEHAVIOURS):
        for a, b in product(producer.offered, consumer.offered):
            c = node_inter_coeff(a, b, producer, consumer)
            assert node_inter_split(a, HALF, b, HALF, producer, consumer) == (c.total, c.total)
            # uneven: both sides together move at least nothing and at most the whole tensor twice (F and E)
            s0, s1 = node_inter_split(a, F(3, 16), b, F(11, 16), producer, consumer)
            assert 0 <= s0 <= 2 and 0 <= s1 <= 2
            seen += 1
    assert seen >= 40
    for a, b in product(ALL_TYPES, ALL_TYPES):
        assert inter_split(a, HALF, b, HALF) == (inter_coeff(a, b).total,) * 2


def test_edge_split_takes_each_nodes_layouts():
    fc = Layer("fc", LayerKind.FC, 8, 8)
    for a, b in product(ALL_TYPES, ALL_TYPES):
        assert edge_split(fc, a, HALF, fc, b, HALF) == (inter_coeff(a, b).total,) * 2


def test_footprint_and_flops_are_the_even_case_of_the_shares():
    net = random_chain(3, 5)
    B = net.batch
    for layer in net.layers:
        for counts in ((0, 0, 0), (1, 0, 0), (0, 2, 1), (2, 1, 1)):
            s = scaled_sizes(layer, B, counts)
            assert footprint_elements(layer, B, counts, 2) == held_elements(layer, s.f_in, s.weights, 2)
        assert share_flops(layer, B, EVEN) == training_flops(layer, B)
        assert share_flops(layer, B, (HALF, HALF, F(1), F(1))) * 4 == training_flops(layer, B)
