"""Hand-computed goldens for the communication model (model.md sections 2-5)."""

from fractions import Fraction

import pytest

from explorer.core.evaluate import evaluate
from explorer.core.partition import PartitionType as T, Space, inter_coeff
from explorer.core.plan import Plan
from explorer.core.costs import plan_level_units
from explorer.solvers.dp import hierarchical_dp

from .conftest import make_array, problem_of

I, II, III = T.I, T.II, T.III


def test_inter_table_derived_from_layouts_matches_model_md():
    # model.md section 4, rows prev, columns next, as (coefficient of F, coefficient of E)
    q = Fraction(1, 4)
    h = Fraction(1, 2)
    expected = {
        (I, I): (0, 0), (I, II): (q, q), (I, III): (h, 0),
        (II, I): (0, h), (II, II): (0, h), (II, III): (0, 0),
        (III, I): (q, q), (III, II): (0, 0), (III, III): (h, 0),
    }
    for key, (f, e) in expected.items():
        assert (inter_coeff(*key).f, inter_coeff(*key).e) == (f, e), key


# Two-layer net at one level (fixture two_layer): every one of the 9 table entries.
# intra A: I -> A(W_A)=32, II -> A(Fout_A)=16, III -> A(F_A)=8
# intra B: I -> 16,        II -> 4,            III -> 16
# inter on B's input F = E = 16: I->I 0, I->II 4+4=8, I->III 8, II->I 8, II->II 8,
#                                 II->III 0, III->I 4+4=8, III->II 0, III->III 8
TWO_LAYER_ONE_LEVEL = {
    (I, I): 32 + 16 + 0,
    (I, II): 32 + 4 + 8,
    (I, III): 32 + 16 + 8,
    (II, I): 16 + 16 + 8,
    (II, II): 16 + 4 + 8,
    (II, III): 16 + 16 + 0,
    (III, I): 8 + 16 + 8,
    (III, II): 8 + 4 + 0,
    (III, III): 8 + 16 + 8,
}


@pytest.mark.parametrize("pair", list(TWO_LAYER_ONE_LEVEL))
def test_two_layer_one_level(two_layer, pair):
    arr = make_array(1, dtype=4)
    ev = evaluate(two_layer, arr, Space.ACCPAR, Plan(((pair[0], pair[1]),)))
    c = TWO_LAYER_ONE_LEVEL[pair]
    assert ev.level_cost == (c,)
    assert ev.traffic_elements == c
    assert ev.traffic_bytes == 2 * 4 * c
    # level bandwidth 10 GB/s: time = c * 4 B / 1e10 B/s
    assert ev.comm_time_s == Fraction(c * 4, 10**10)
    tables = problem_of(two_layer, 1, Space.ACCPAR).tables
    assert plan_level_units(tables, ((pair[0], pair[1]),)) == [c * tables.unit_per_element]


def test_two_layer_dp_one_level(two_layer):
    # hypar: min of (I,I)48 (I,II)44 (II,I)40 (II,II)28 -> (II,II); accpar: (III,II)=12
    plan, units = hierarchical_dp(problem_of(two_layer, 1, Space.HYPAR))
    assert plan.types == ((II, II),) and units == [28 * 8]
    plan, units = hierarchical_dp(problem_of(two_layer, 1, Space.ACCPAR))
    assert plan.types == ((III, II),) and units == [12 * 8]


def test_two_layer_two_levels(two_layer):
    # level 0 (I, II): 32 + 4 + 8 = 44
    # level 1 (II, III): counts A (1,0,0), B (0,1,0)
    #   A II: A(Fout_A)/2^(nI+nIII) = 16/2 = 8
    #   B III: A(F_B)/2^(nI+nII) = 16/2 = 8
    #   inter II->III = 0
    #   c_1 = 16
    # traffic = 44 + 2*16 = 76
    ev = evaluate(two_layer, make_array(2), Space.ACCPAR, Plan(((I, II), (II, III))))
    assert ev.level_cost == (44, 16)
    assert ev.traffic_elements == 76
    assert ev.intra == ((32, 4), (8, 8))
    assert ev.inter == ((8,), (0,))


def test_three_layer_two_levels_plan1(three_layer):
    # level 0 (I, II, III), counts 0:
    #   intra L0 I = A(W)=72, L1 II = A(Fout)=128, L2 III = A(F)=128
    #   inter e0 I->II on L1 F=64: 16+16=32; e1 II->III: 0;  c_0 = 360
    # level 1 (III, I, II), counts L0 (1,0,0) L1 (0,1,0) L2 (0,0,1):
    #   L0 III = A(F)/2^(1+0) = 64; L1 I = A(W)/2^(1+0) = 16; L2 II = A(Fout)/2^(0+1) = 20
    #   e0 III->I on L1 F = 64/2^(0+1) = 32: 8+8 = 16
    #   e1 I->II on L2 F = 128/2^(0+0) = 128: 32+32 = 64
    #   c_1 = 64+16+20+16+64 = 180
    # traffic = 360 + 2*180 = 720 elements; bytes = 2*4*720 = 5760
    ev = evaluate(three_layer, make_array(2), Space.ACCPAR, Plan(((I, II, III), (III, I, II))))
    assert ev.level_cost == (360, 180)
    assert ev.traffic_elements == 720
    assert ev.traffic_bytes == 5760
    tables = problem_of(three_layer, 2, Space.ACCPAR).tables
    assert plan_level_units(tables, ((I, II, III), (III, I, II))) == [360 * 16, 180 * 16]


def test_three_layer_two_levels_plan2(three_layer):
    # level 0 (II, I, I): L0 II = 256; L1 I = 32; L2 I = 320; e0 II->I on F=64: E/2 = 32; e1 I->I 0
    #   c_0 = 640
    # level 1 (III, III, II), counts L0 (0,1,0) L1 (1,0,0) L2 (1,0,0):
    #   L0 III = 128/2^(0+1) = 64; L1 III = 64/2^(1+0) = 32; L2 II = 40/2^(1+0) = 20
    #   e0 III->III on L1 F = 64/2 = 32: F/2 = 16; e1 III->II = 0
    #   c_1 = 64+32+20+16 = 132
    # traffic = 640 + 2*132 = 904
    ev = evaluate(three_layer, make_array(2), Space.ACCPAR, Plan(((II, I, I), (III, III, II))))
    assert ev.level_cost == (640, 132)
    assert ev.traffic_elements == 904


def test_three_layer_fractional_amounts_are_exact(three_layer):
    # Batch 1 makes level-1 amounts fractional: level 0 (I, I, I), level 1 (II, II, II).
    # batch 1: L0 A(F)=32 A(W)=72 A(Fout)=64; L1 A(F)=16 A(W)=32 A(Fout)=32; L2 A(F)=32 A(W)=320 A(Fout)=10
    # level 0: 72 + 32 + 320 = 424 (I->I inter 0)
    # level 1, counts (1,0,0): L0 II = 64/2 = 32; L1 II = 32/2 = 16; L2 II = 10/2 = 5
    #   e0 II->II on L1 F = 16/2 = 8: E/2 = 4; e1 II->II on L2 F = 32/2 = 16: 8;  c_1 = 65
    net = three_layer.with_batch(1)
    ev = evaluate(net, make_array(2), Space.HYPAR, Plan(((I, I, I), (II, II, II))))
    assert ev.level_cost == (424, 65)
    # an odd batch gives quarter elements: batch 3 at level 1 -> L2 II = 30/2 = 15, e0 = 12*... exact Fraction
    ev3 = evaluate(three_layer.with_batch(3), make_array(2), Space.HYPAR, Plan(((I, I, I), (II, II, II))))
    # level 1: L0 II = 192/2 = 96; L1 II = 96/2 = 48; L2 II = 30/2 = 15;
    #   e0 on L1 F = 48/2 = 24 -> 12; e1 on L2 F = 96/2 = 48 -> 24; c_1 = 195
    assert ev3.level_cost[1] == 195
    ev_q = evaluate(three_layer.with_batch(1), make_array(2), Space.ACCPAR, Plan(((III, III, III), (I, I, I))))
    # level 1, counts (0,0,1): L2 I = A(W)/2^(0+1) = 160; e1 III->... level 0 inter III->III on L2 F = 32: 16
    # level 1 L0 I: 72/2 = 36; L1 I: 32/2 = 16; inter I->I = 0 -> c_1 = 36+16+160 = 212
    assert ev_q.level_cost[1] == 212
    # level 0: L0 III = 32, L1 III = 16, L2 III = 32, e0 III->III on 16: 8, e1 on 32: 16 -> 104
    assert ev_q.level_cost[0] == 104


def test_tie_breaking_keeps_first_strict_minimum():
    from explorer.core.network import Network
    from .conftest import fc

    # batch 2. L0 fc 2->4: A(F)=4, A(W)=8, A(Fout)=8 -> I and II tie at 8.
    # L1 fc 4->8: A(F)=8, A(W)=32, A(Fout)=16.
    #   t=I: intra 32 + min(I: 8+0, II: 8+E/2=12) = 40
    #   t=II: intra 16 + min(I: 8+(2+2)=12, II: 8+4=12) -> tie, keep I -> 28
    # last layer: II (28). Backtrack: L0 = I (the first of the tied predecessors).
    net = Network.chain("tie", 2, [fc("L0", 2, 4), fc("L1", 4, 8)])
    plan, units = hierarchical_dp(problem_of(net, 1, Space.HYPAR))
    assert plan.types == ((I, II),)
    assert units == [28 * 8]
    # last-layer tie: fc 4->4 with batch 4: A(W) = 16 = A(Fout) -> I (first strict minimum)
    net1 = Network.chain("tie1", 4, [fc("L0", 4, 4)])
    plan, _ = hierarchical_dp(problem_of(net1, 1, Space.ACCPAR))
    # accpar: III = A(F) = 16 too: a three-way tie still picks I
    assert plan.types == ((I,),)
