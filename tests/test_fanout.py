"""Levels of any fan-out (explorer/core/fanout.py): hand goldens at k = 3, 4, 8 and non-powers of
two, k = 2 bit-identical to the evaluator on random networks and plans, the re-layout fractions
against the binary ones, and a Megatron transformer block at a tensor level of 8."""

from __future__ import annotations

import itertools
import random
from fractions import Fraction as F

import pytest

from explorer.core.evaluate import evaluate
from explorer.core.fanout import (
    LevelAmounts,
    allreduce_fraction,
    check_rows,
    level_amounts,
    level_amounts_rational,
    level_terms,
    node_inter_fraction,
    reduce_scatter_fraction,
    relayout_fraction,
    scatter_targets,
)
from explorer.core.network import Layer, LayerKind, Network
from explorer.core.partition import (
    ALL_TYPES,
    EMBEDDING_TYPES,
    GROUPED_TYPES,
    HALF,
    JOIN_NODE_TYPES,
    LAYER_TYPES,
    Layout,
    PartitionType as T,
    Size,
    Space,
    node_inter_coeff,
    relayout_split,
)
from explorer.core.plan import Plan
from explorer.core.randnet import random_chain, random_dag_spec
from explorer.frontends.network_yaml import load_network_text, parse_network
from explorer.frontends.transformer import Family, TransformerShape, build_transformer

from .conftest import make_array, random_attention_spec
from .test_model_extensions import GROUPED

I, II, III = T.I, T.II, T.III


def two_layer() -> Network:
    # A: fc 4 -> 8, B: fc 8 -> 2, batch 2 (tests/conftest.py's two_layer).
    # A(F_A) = 8, A(W_A) = 32, A(F_out A) = 16;  A(F_B) = 16, A(W_B) = 16, A(F_out B) = 4
    return Network.chain("two", 2, [Layer("A", LayerKind.FC, 4, 8), Layer("B", LayerKind.FC, 8, 2)])


# ---- the collectives -----------------------------------------------------------------------------

def test_collective_fractions():
    assert [allreduce_fraction(k) for k in (1, 2, 3, 4, 8)] == [0, 1, F(4, 3), F(3, 2), F(7, 4)]
    R, C, D = Layout.ROW, Layout.COL, Layout.DUP
    for k in (1, 2, 3, 4, 8, 315):
        assert relayout_fraction(R, C, k) == relayout_fraction(C, R, k) == F(k - 1, k * k)  # all-to-all
        assert relayout_fraction(R, D, k) == relayout_fraction(C, D, k) == F(k - 1, k)  # all-gather
        for x in Layout:
            assert relayout_fraction(D, x, k) == relayout_fraction(x, x, k) == 0
    for bad in (0, -2, 2.0, True):
        with pytest.raises(ValueError, match="fan-out"):
            allreduce_fraction(bad)


def test_reduce_scatter_is_half_an_allreduce():
    for k in (1, 2, 3, 4, 8, 315):
        assert reduce_scatter_fraction(k) == F(k - 1, k) == allreduce_fraction(k) / 2


def test_fanout_may_be_any_whole_number_type():
    np = pytest.importorskip("numpy")
    assert allreduce_fraction(np.int64(4)) == F(3, 2) and relayout_fraction(Layout.ROW, Layout.COL, np.int32(3)) == F(2, 9)


def test_relayout_fraction_at_two_is_the_binary_model():
    for src, dst in itertools.product(Layout, Layout):
        x = relayout_fraction(src, dst, 2)
        assert relayout_split(src, HALF, dst, HALF) == (x, x)  # the uneven formula at 1/2
    # model.md section 4's table, typed in: row <-> col a quarter, split -> dup a half
    assert relayout_fraction(Layout.ROW, Layout.COL, 2) == F(1, 4) and relayout_fraction(Layout.COL, Layout.DUP, 2) == F(1, 2)


def test_node_inter_fraction_at_two_is_node_inter_coeff():
    kinds = (LAYER_TYPES, JOIN_NODE_TYPES, GROUPED_TYPES, EMBEDDING_TYPES)
    n = 0
    for p, c in itertools.product(kinds, kinds):
        for a, b in itertools.product(p.offered, c.offered):
            assert node_inter_fraction(a, b, p, c, 2) == node_inter_coeff(a, b, p, c).total
            n += 1
    assert n == 100  # 3 + 2 + 2 + 3 types offered: 10 x 10 pairs


# ---- hand goldens on the two-layer fc net ----------------------------------------------------------

def test_golden_k3():
    # k = 3 (all-reduce 4/3, all-gather 2/3, all-to-all 2/9). Level 0, (I, II):
    #   A I: dW_A 32 * 4/3 = 128/3 (weights).  B II: F_out B 4 * 4/3 = 16/3.
    #   edge A -> B: forward row -> col 2/9 * A(F_B) 16 = 32/9; backward col -> row 32/9.
    #   activations = 16/3 + 64/9 = 112/9.
    assert level_amounts(two_layer(), 2, (3,), [(I, II)]) == (LevelAmounts(F(112, 9), F(128, 3)),)


def test_golden_k4_then_k8():
    # Level 0, k = 4 (all-reduce 3/2), (II, III):
    #   A II: F_out A 16 * 3/2 = 24.  B III: E_B = A(F_B) 16 * 3/2 = 24.
    #   edge: forward dup (A's reduced output) -> dup (III's input) 0; backward dup (III's reduced
    #   error) -> dup (II needs E_out whole) 0.                                 activations 48
    # Level 1, k = 8 (all-reduce 7/4), (I, I); A's II split D_i by 4: A(W_A) 32/4 = 8; B's III
    #   split D_o by 4: A(W_B) 16/4 = 4.  A I: 8 * 7/4 = 14; B I: 4 * 7/4 = 7; edge row -> row 0.
    got = level_amounts(two_layer(), 2, (4, 8), [(II, III), (I, I)])
    assert got == (LevelAmounts(F(48), F(0)), LevelAmounts(F(0), F(21)))


def test_golden_k8():
    # k = 8 (all-reduce 7/4, all-to-all 7/64), (III, I):
    #   A III: E_A = A(F_A) 8 * 7/4 = 14.  B I: dW_B 16 * 7/4 = 28 (weights).
    #   edge: forward col (III's output) -> row 7/64 * 16 = 7/4; backward row -> col 7/4.
    assert level_amounts(two_layer(), 2, (8,), [(III, I)]) == (LevelAmounts(F(14) + F(7, 2), F(28)),)


def test_golden_k4_then_k3():
    # Level 0, k = 4, (I, III): A I: 32 * 3/2 = 48 (weights); B III: 16 * 3/2 = 24;
    #   edge: forward row -> dup (III needs F whole) 3/4 * 16 = 12; backward dup -> row 0.  -> 36
    # Level 1, k = 3, (II, II); A's I split B by 4: A(F_out A) 16/4 = 4; B's III split D_o by 4:
    #   A(F_out B) 4/4 = 1, A(F_B) stays 16.
    #   A II: 4 * 4/3 = 16/3; B II: 1 * 4/3 = 4/3; edge: forward dup -> col 0; backward col (B's
    #   error) -> dup (A's II needs E_out whole) 2/3 * 16 = 32/3.             -> 52/3
    got = level_amounts(two_layer(), 2, (4, 3), [(I, III), (II, II)])
    assert got == (LevelAmounts(F(36), F(48)), LevelAmounts(F(52, 3), F(0)))


def test_non_power_of_two_fanouts_are_exact():
    # (8, 315), rows (I, II) then (III, I).
    # Level 0, k = 8: A I: 32 * 7/4 = 56 (weights); B II: 4 * 7/4 = 7; edge row <-> col both ways
    #   2 * 7/64 * 16 = 7/2.                                                       -> 21/2
    # Level 1, k = 315 (all-reduce 628/315, all-to-all 314/315^2): A's I split B by 8: A(F_A) 1;
    #   B's II split D_i by 8: A(F_B) 2, A(W_B) 2.  A III: 1 * 628/315; B I: 2 * 628/315 (weights);
    #   edge col <-> row both ways 2 * 314/315^2 * 2.
    got = level_amounts(two_layer(), 2, (8, 315), [(I, II), (III, I)])
    assert got == (LevelAmounts(F(21, 2), F(56)),
                   LevelAmounts(F(628, 315) + 4 * F(314, 315**2), F(1256, 315)))
    assert got[1].activations == F(199076, 99225)
    # (8, 3): level 1 k = 3 (all-reduce 4/3, all-to-all 2/9): A III 4/3, B I 8/3, edge 2 * 2/9 * 2
    got = level_amounts(two_layer(), 2, (8, 3), [(I, II), (III, I)])
    assert got[1] == LevelAmounts(F(4, 3) + F(8, 9), F(8, 3))
    for amounts in got:
        assert isinstance(amounts.activations, F) and isinstance(amounts.weights, F)


def test_non_power_of_two_on_random_graphs_run_exactly():
    # 1,536 = 8 x 192 and 2,520 = 8 x 315 GPUs: any row of types runs and stays exact; a fan-out of
    # 1 (t = 1) sends nothing
    for seed in range(6):
        net = parse_network(random_dag_spec(seed, 8, batch=3), "dag")
        rng = random.Random(seed)
        for fanouts in ((8, 3), (8, 315), (8, 192), (1, 5)):
            rows = [tuple(rng.choice([t for t in x.node_types.offered if t is not II or x.split_units is None])
                          for x in net.layers) for _ in fanouts]
            got = level_amounts(net, net.batch, fanouts, rows)
            assert len(got) == 2 and all(isinstance(a.total, F) and a.total >= 0 for a in got)
            if fanouts[0] == 1:
                assert got[0].total == 0


# ---- k = 2 is the evaluator, bit for bit ------------------------------------------------------------

def grouped_chain(seed: int) -> Network:
    rng = random.Random(seed)
    net = load_network_text(GROUPED.replace("groups: 8", f"groups: {rng.choice([2, 4, 8])}"), "g")
    return net.with_batch(rng.choice([1, 2, 3]))


def random_networks():
    """>= 40 seeded networks: chains, graphs with add/concat joins, attention with heads and
    embeddings (edge shares below 1 into attention), grouped convolutions."""
    for seed in range(16):
        rng = random.Random(seed)
        yield random_chain(seed, rng.randint(1, 10), batch=rng.choice([1, 2, 3]), max_channels=6, max_size=3)
        yield parse_network(random_dag_spec(seed, rng.randint(2, 12), batch=rng.choice([1, 3])), "dag")
        yield parse_network(random_attention_spec(seed, fan_in=seed % 2 == 1), "att")
    for seed in range(4):
        yield grouped_chain(seed)


def random_plan(rng: random.Random, net: Network, levels: int) -> Plan:
    return Plan(tuple(tuple(rng.choice([t for t in ALL_TYPES if x.offers(t, h)]) for x in net.layers)
                      for h in range(levels)))


def test_fanout_two_equals_the_evaluator_on_random_plans():
    nets = list(random_networks())
    assert len(nets) >= 40
    kinds = {x.node_types.name for net in nets for x in net.layers}
    assert kinds == {"layer", "join", "grouped conv", "embedding"}
    assert any(s < 1 for net in nets for s in net.edge_shares)
    rng = random.Random(21)
    checked = fractional = 0
    for net in nets:
        for _ in range(3):
            levels = rng.randint(1, 5)
            plan = random_plan(rng, net, levels)
            ev = evaluate(net, make_array(levels), Space.ACCPAR, plan)
            got = level_amounts(net, net.batch, (2,) * levels, plan.types)
            assert tuple(a.activations + a.weights for a in got) == ev.level_cost
            assert level_amounts_rational(net, net.batch, (2,) * levels, plan.types) == got
            terms = level_terms(net, net.batch, (2,) * levels, plan.types)
            assert tuple(t.intra for t in terms) == ev.intra and tuple(t.inter for t in terms) == ev.inter
            # the weight-gradient exchanges are the weights part, exactly
            for h, row in enumerate(plan.types):
                w = sum((ev.intra[h][n] for n, (x, t) in enumerate(zip(net.layers, row))
                         if x.node_types.exchanged[t.index] == Size.WEIGHTS.index), F(0))
                assert got[h].weights == w
            checked += 1
            fractional += any(a.total.denominator > 1 for a in got)
    assert checked >= 120 and fractional >= 10


def random_rows(rng: random.Random, net: Network, fanouts) -> list[tuple[T, ...]]:
    """Random rows that ``check_rows`` accepts (II on a head/group node only while whole)."""
    split = [1] * len(net.layers)
    rows = []
    for k in fanouts:
        row = []
        for n, x in enumerate(net.layers):
            ok = [t for t in x.node_types.offered
                  if t is not II or x.split_units is None or x.split_units % (split[n] * k) == 0]
            row.append(rng.choice(ok))
            split[n] *= k if row[-1] is II else 1
        rows.append(tuple(row))
    return rows


def test_integer_sum_equals_the_rational_reference():
    """``level_amounts`` (integers per divisor) against ``level_amounts_rational`` (comm's
    functions term by term) at random fan-outs, powers of two or not, on every kind of node."""
    rng = random.Random(7)
    nets = list(random_networks())
    for net in nets:
        for _ in range(2):
            fanouts = tuple(rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 12, 315]) for _ in range(rng.randint(1, 4)))
            rows = random_rows(rng, net, fanouts)
            check_rows(net, fanouts, rows)
            batch = rng.choice([1, 3, 8])
            assert level_amounts(net, batch, fanouts, rows) == level_amounts_rational(net, batch, fanouts, rows)


def test_bad_rows_are_refused():
    net = two_layer()
    with pytest.raises(ValueError, match="2 rows of types for 1 levels"):
        level_amounts(net, 2, (3,), [(I, I), (I, I)])
    with pytest.raises(ValueError, match="level 0: 1 types for 2 nodes"):
        level_amounts(net, 2, (3,), [(I,)])
    with pytest.raises(ValueError, match="fan-out"):
        level_amounts(net, 2, (0,), [(I, I)])
    att = parse_network(random_attention_spec(5), "att")  # 4 heads
    heads = next(x for x in att.layers if x.kind is LayerKind.ATTENTION)
    assert heads.split_units == 4
    row = tuple(II if x is heads else I for x in att.layers)
    level_amounts(att, 1, (4,), [row])  # whole heads
    with pytest.raises(ValueError, match="node att: type II at fan-out 3 splits its 4 heads into 3 parts"):
        level_amounts(att, 1, (3,), [row])
    with pytest.raises(ValueError, match="node att: type II at fan-out 4 splits its 4 heads into 8 parts"):
        level_amounts(att, 1, (2, 4), [row, row])
    with pytest.raises(ValueError, match="node att: type III is not offered to attention nodes"):
        level_amounts(att, 1, (2,), [tuple(III if x is heads else I for x in att.layers)])


# ---- a Megatron transformer block at a tensor level of 8 ---------------------------------------------

GPT = dict(family=Family.GPT, hidden=2304, heads=24, ffn=9216, vocab=51200, positions=2048, tied_head=True)  # gpt3-1.7b
SEQ = 2048


def gpt(layers: int) -> Network:
    return build_transformer(TransformerShape(layers=layers, **GPT), "gpt", 8, SEQ, "gpt")


def megatron_rows(net: Network, residual: T):
    """Data level: I everywhere. Tensor level: Megatron's column- then row-parallel block (QKV III,
    attention II, its projection II, MLP fc1 III, fc2 II), the embeddings III (hidden split, no
    exchange), the residual adds ``residual``."""
    tensor = []
    for x in net.layers:
        name = x.name.split("_", 1)[-1]
        tensor.append({"c_attn": III, "attn": II, "attn_proj": II, "mlp_fc": III, "mlp_proj": II}.get(name, III)
                      if x.kind is not LayerKind.ADD else residual)
    return [tuple(I for _ in net.layers), tuple(tensor)]


@pytest.mark.parametrize("residual", [I, II], ids=str)
def test_megatron_block_at_tensor_eight(residual):
    """Per transformer layer, at a tensor level of k = 8 below a data level of d = 4 (batch 8, so
    b = 2 samples per data group), s = 2048, h = 2304:

    Megatron-LM (Shoeybi et al. 2019, section 3) all-reduces s*b*h elements 4 times per layer: the
    attention projection's and fc2's outputs forward (here: type II's intra exchange of F_out), the
    QKV's and fc1's input errors backward (type III's intra exchange of E_in): 4 * 2(k-1)/k * sbh.
    The attention node (a join, II = column layout over whole heads) costs nothing: QKV (III)
    leaves its output column-split and the projection (II) needs its input column-split, and the
    errors go the same way. QKV's 3h-wide output enters the attention node whole (share 1).

    Our block has 4 * (k-1)/k * sbh more, from the residual adds. Megatron keeps the residual
    stream replicated on the tensor ranks; a join node of the model is always split (I: by batch,
    row; II: by channel, column), never duplicated. So on each of the 4 edges between the
    residual stream and the tensor-parallel region one all-gather of (k-1)/k * sbh is charged: the
    stream's split -> duplicated forward into QKV and fc1 (III needs its input whole), and the
    add's split error -> duplicated backward into the projection and fc2 (II needs E_out whole);
    II's all-reduced output into the add and III's all-reduced error into the stream are free
    (from duplicated). With the adds I or II alike: 12 (k-1)/k * sbh per layer, 1.5 x Megatron's
    8 (k-1)/k * sbh. (This is the binary model's too: at k = 2 HyPar charges type II the whole
    partial output, 1 * T, and a later split -> duplicated 1/2 * T, where a reduce-scatter and an
    all-gather would be 1/2 + 1/2.)

    The data level (type I everywhere) sends 2(d-1)/d of every weight and no activations."""
    d, k, b, s, h = 4, 8, 2, SEQ, 2304
    sbh = s * b * h
    one, two = gpt(1), gpt(2)
    per = [level_amounts(n, 8, (d, k), megatron_rows(n, residual)) for n in (one, two)]
    layer = per[1][1].total - per[0][1].total
    megatron = 4 * allreduce_fraction(k) * sbh
    assert megatron == 8 * F(7, 8) * sbh
    assert layer == megatron + 4 * F(k - 1, k) * sbh == 12 * F(7, 8) * sbh == 99_090_432  # sbh = 9,437,184
    assert per[1][1].weights == 0
    # the whole network: L layers plus the embeddings' edges (wte, wpe III: column-split output
    # into the split add: all-to-all (k-1)/k^2 forward and backward, each) when the add is I;
    # with the add II (column) nothing
    emb = 2 * 2 * F(k - 1, k * k) * sbh if residual is I else 0
    assert per[1][1].activations == 2 * layer + emb
    for n, amounts in zip((one, two), per):
        top = amounts[0]
        assert top.activations == 0
        assert top.weights == F(2 * (d - 1), d) * sum(x.weight_elements() for x in n.layers)
    assert sum(x.weight_elements() for x in two.layers) == TransformerShape(layers=2, **GPT).weights()


# ---- reduce-scatter into a split layout (``reduce_scatter=True``) ------------------------------------

def test_golden_reduce_scatter_k4():
    # k = 4 (all-reduce 3/2, reduce-scatter 3/4, all-gather 3/4).
    # (II, II): A II's output feeds only B, which needs it column-split: A reduce-scatters F_out A
    #   16 * 3/4 = 12 (was 16 * 3/2 = 24) into col; edge forward col -> col 0 (was dup -> col 0);
    #   backward B's error col -> dup (A's II needs E_out whole) 3/4 * 16 = 12, unchanged.
    #   B II feeds nothing (the network's output): all-reduce 4 * 3/2 = 6.   -> 30 (was 42)
    net = two_layer()
    assert scatter_targets(net, (II, II)) == (Layout.COL, None)
    assert level_amounts(net, 2, (4,), [(II, II)]) == (LevelAmounts(F(42), F(0)),)
    assert level_amounts(net, 2, (4,), [(II, II)], reduce_scatter=True) == (LevelAmounts(F(30), F(0)),)
    # (I, III): B III's input error goes only to A (I), which needs E_out row-split: B reduce-
    #   scatters E_B = 16 * 3/4 = 12 (was 24) into row; edge forward row -> dup 3/4 * 16 = 12;
    #   backward row -> row 0 (was dup -> row 0).  A I: dW_A 32 * 3/2 = 48 (weights, never scattered)
    assert scatter_targets(net, (I, III)) == (None, Layout.ROW)
    assert level_amounts(net, 2, (4,), [(I, III)]) == (LevelAmounts(F(36), F(48)),)
    assert level_amounts(net, 2, (4,), [(I, III)], reduce_scatter=True) == (LevelAmounts(F(24), F(48)),)
    # (II, III): III needs A's output whole and A's II needs E_out whole: nothing scatters
    assert scatter_targets(net, (II, III)) == (None, None)
    assert level_amounts(net, 2, (4,), [(II, III)], reduce_scatter=True) == level_amounts(net, 2, (4,), [(II, III)])
    # A III feeds nothing backward (the network's input has no producer): all-reduce kept
    assert scatter_targets(net, (III, I)) == (None, None)


def test_scatter_needs_one_split_layout_among_all_consumers():
    # a II fc feeding an fc of type I (row) and one of type II (col): two layouts, all-reduce;
    # both I (row): reduce-scatter into row; one III (needs dup): all-reduce
    net = Network("fork", 2, (Layer("a", LayerKind.FC, 4, 6), Layer("b", LayerKind.FC, 6, 2),
                              Layer("c", LayerKind.FC, 6, 2)), ((0, 1), (0, 2)))
    assert scatter_targets(net, (II, I, II)) == (None, None, None)
    assert scatter_targets(net, (II, I, I)) == (Layout.ROW, None, None)
    assert scatter_targets(net, (II, II, II)) == (Layout.COL, None, None)
    assert scatter_targets(net, (II, III, I)) == (None, None, None)
    # (II, I, I) at k = 2: a's F_out 2 * 6 = 12 reduce-scattered: 1/2 * 12 = 6 (was 12); edges
    # a -> b, a -> c forward row -> row 0, backward row -> dup 1/2 * 12 = 6 each; b, c I: dW 12 * 1
    # each (weights)
    assert level_amounts(net, 2, (2,), [(II, I, I)], reduce_scatter=True) == (LevelAmounts(F(18), F(24)),)
    assert level_amounts(net, 2, (2,), [(II, I, I)]) == (LevelAmounts(F(24), F(24)),)


def test_reduce_scatter_never_costs_more_on_random_plans():
    """Seeded: with the option on, every level's amount is at most the amount without it, equal
    exactly when no II/III node's partial sums can be scattered (``scatter_targets`` all None, or
    the scattered tensors have no elements); the weights part never changes; the integer sum
    equals the rational reference; the defaults are the option off."""
    rng = random.Random(2121)
    changed = same = 0
    for net in random_networks():
        for _ in range(3):
            fanouts = tuple(rng.choice([2, 3, 4, 8, 12]) for _ in range(rng.randint(1, 3)))
            rows = random_rows(rng, net, fanouts)
            batch = rng.choice([1, 3, 8])
            off = level_amounts(net, batch, fanouts, rows)
            on = level_amounts(net, batch, fanouts, rows, reduce_scatter=True)
            assert level_amounts_rational(net, batch, fanouts, rows, reduce_scatter=True) == on
            assert level_amounts(net, batch, fanouts, rows, reduce_scatter=False) == off
            assert level_amounts_rational(net, batch, fanouts, rows) == off
            for row, a, b in zip(rows, off, on):
                assert b.weights == a.weights and b.activations <= a.activations
                if all(x is None for x in scatter_targets(net, row)):
                    assert b == a
                    same += 1
                else:
                    assert b.activations < a.activations
                    changed += 1
    assert changed >= 20 and same >= 20


@pytest.mark.parametrize("residual", [I, II], ids=str)
def test_megatron_block_with_reduce_scatter_is_megatrons(residual):
    """With ``reduce_scatter=True`` (Megatron's sequence parallelism), per transformer layer at
    k = 8 (d = 4, b = 2, s = 2048, h = 2304), in units of (k-1)/k * sbh:

    forward:  the stream (the residual add: I row, or II column) all-gathered into QKV (III needs
              its input whole)                                                          1
              the projection (II) reduce-scatters its output straight into the add's split
              layout (the add is its only consumer), then add <- projection is free     1
              the same for fc1 (all-gather) and fc2 (reduce-scatter)                    2
    backward: the add's split error all-gathered into the projection (II needs E_out whole) 1
              QKV (III) reduce-scatters its input error into the stream's split layout (the
              add feeding it needs E_out split that way), then stream <- QKV is free    1
              the same for fc2 (all-gather) and fc1 (reduce-scatter)                    2
    The attention node costs nothing, as without the option. Total 8 (k-1)/k * sbh: Megatron's
    4 all-gathers + 4 reduce-scatters of s*b*h (Korthikanti et al. 2022, section 4.2.2), the
    same volume as its 4 all-reduces without sequence parallelism; without the option our
    model charges 12 (test_megatron_block_at_tensor_eight)."""
    d, k, b, s, h = 4, 8, 2, SEQ, 2304
    sbh = s * b * h
    one, two = gpt(1), gpt(2)
    per = [level_amounts(n, 8, (d, k), megatron_rows(n, residual), reduce_scatter=True) for n in (one, two)]
    layer = per[1][1].total - per[0][1].total
    assert layer == (4 + 4) * F(k - 1, k) * sbh == 66_060_288
    # the embeddings are III here (no exchange) as in test_megatron_block_at_tensor_eight: their
    # edges into the stream cost as before; the data level does not change
    emb = 2 * 2 * F(k - 1, k * k) * sbh if residual is I else 0
    assert per[1][1].activations == 2 * layer + emb
    assert [a[0] for a in per] == [level_amounts(n, 8, (d, k), megatron_rows(n, residual))[0] for n in (one, two)]


LLAMA = dict(family=Family.LLAMA, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256)  # llama3-8b


def test_llama_block_with_and_without_reduce_scatter():
    """A LLaMA block under Megatron's types (q, k, v III; attention II; o II; add1 I; gate, up
    III; the SwiGLU product a II join; down II; add2 I) at k = 8, b = 2, s = 2048, h = 4096, per
    layer in units of (k-1)/k * sbh (every tensor on the stream is sbh; q, k and v each read the
    whole stream):

    without the option: forward: 3 all-gathers of the stream (add2 -> q, k, v: row -> dup) + o's
    all-reduce 2 + 2 all-gathers (add1 -> gate, up) + down's all-reduce 2 = 9; backward: the
    error all-gathered into o 1 + q's, k's, v's all-reduces 3 x 2 + into down 1 + gate's and
    up's all-reduces 2 x 2 = 12. Total 21.
    with it: o and down reduce-scatter (1 each instead of 2: forward 7), q, k, v, gate and up
    reduce-scatter their input errors into row (1 each instead of 2: backward 7). Total 14.

    Megatron's own count is 8: it all-gathers the stream once for the fused QKV (and once for
    the fused gate/up) and reduce-scatters the summed error once; our model has one edge, so one
    collective, per consuming matmul: 3 + 2 all-gathers and 3 + 2 reduce-scatters where Megatron
    has 1 + 1 and 1 + 1, the extra 6 (k-1)/k * sbh. The attention node and the product are free
    (column in, column out)."""
    from explorer.core.llm_block import block_parts, edge_types, megatron_types
    k, b, s, h = 8, 2, 2048, 4096
    unit = F(k - 1, k) * s * b * h

    def per_layer(reduce_scatter: bool) -> F:
        got = []
        for layers in (2, 3):
            net = build_transformer(TransformerShape(layers=layers, **LLAMA), "llama", b, s, "llama")
            pre, post = edge_types(net, block_parts(net, layers))
            row = pre + megatron_types(net, layers) * layers + post
            got.append(level_amounts(net, b, (k,), [row], reduce_scatter=reduce_scatter)[0].total)
        return got[1] - got[0]

    assert per_layer(False) == 21 * unit
    assert per_layer(True) == 14 * unit


TINY_LLAMA = dict(family=Family.LLAMA, hidden=64, heads=8, kv_heads=8, ffn=64, vocab=128)  # every matmul s b h


def _llama_layer(types, k: int, b: int, s: int, reduce_scatter: bool, fused: bool) -> F:
    """One LLaMA layer's amount at one level of fan-out k: the network of 3 layers less that of 2,
    every block under ``types`` (the embedding and head at Megatron's types)."""
    from explorer.core.llm_block import block_parts, edge_types
    got = []
    for layers in (2, 3):
        net = build_transformer(TransformerShape(layers=layers, **TINY_LLAMA), "tiny", b, s, "tiny")
        pre, post = edge_types(net, block_parts(net, layers))
        row = pre + tuple(types) * layers + post
        got.append(level_amounts(net, b, (k,), [row], reduce_scatter=reduce_scatter, fused=fused)[0].total)
    return got[1] - got[0]


def test_fused_siblings_give_megatrons_eight():
    """Sibling consumers of one tensor share its exchanges (``fused=True``, core/siblings.py). A
    LLaMA layer with every matmul s b h (hidden = ffn = 64, no GQA), k = 8, b = 2, s = 16, in
    units of (k-1)/k * sbh, Megatron's types (q, k, v III; att II; o II; add1 I; gate, up III;
    mul II; down II; add2 I):

    with sequence parallelism: the stream (add2, row) all-gathered once for q, k and v (they
    read it in the same layout) 1, o's reduce-scatter 1, once for gate and up 1, down's 1:
    forward 4; backward: the error all-gathered into o 1, q's, k's and v's input-error partial
    sums summed and reduce-scattered once 1, into down 1, gate's and up's once 1: 4. Total 8,
    Megatron's 4 all-gathers + 4 reduce-scatters (docs/llm-training.md). Unfused: 14.
    without it: forward 1 + o's all-reduce 2 + 1 + down's 2 = 6; backward 1 + q, k, v's one
    all-reduce 2 + 1 + gate, up's 2 = 6. Total 12, a GPT layer's (test_megatron_block_at_tensor_eight).
    Unfused: 21."""
    from explorer.core.llm_block import megatron_types
    k, b, s, h = 8, 2, 16, 64
    unit = F(k - 1, k) * s * b * h
    net = build_transformer(TransformerShape(layers=2, **TINY_LLAMA), "tiny", b, s, "tiny")
    mega = megatron_types(net, 2)
    assert [str(t) for t in mega] == ["III", "III", "III", "II", "II", "I", "III", "III", "II", "II", "I"]
    assert _llama_layer(mega, k, b, s, True, True) == 8 * unit
    assert _llama_layer(mega, k, b, s, True, False) == 14 * unit
    assert _llama_layer(mega, k, b, s, False, True) == 12 * unit
    assert _llama_layer(mega, k, b, s, False, False) == 21 * unit


def test_fused_siblings_on_a_mixed_pattern():
    """Megatron's types but v II (it reads the stream column-split and sends its output's partial
    sums), k = 8, b = 2, s = 16, sequence parallelism, units of (k-1)/k * sbh:

    q and k (III, both need the stream whole): one all-gather 1, one reduce-scatter of their
    summed input errors 1 (v's error is whole and column-split: not shared with theirs) = 2;
    v: row -> column all-to-all (k-1)/k^2 = 1/8, its output reduce-scattered into column (the
    attention node, its only consumer, needs column) 1, backward the attention's column error
    all-gathered (II needs E_out whole) 1, its own column error to the stream's row 1/8 = 2 + 1/4;
    o 2, gate/up 2, down 2. Total 10 + 1/4 (unfused: q, k, gate and up 2 each, 14 + 1/4)."""
    from explorer.core.llm_block import megatron_types
    k, b, s, h = 8, 2, 16, 64
    unit = F(k - 1, k) * s * b * h
    net = build_transformer(TransformerShape(layers=2, **TINY_LLAMA), "tiny", b, s, "tiny")
    mixed = list(megatron_types(net, 2))
    mixed[2] = II
    assert _llama_layer(mixed, k, b, s, True, True) == (10 + F(1, 4)) * unit
    assert _llama_layer(mixed, k, b, s, True, False) == (14 + F(1, 4)) * unit


def test_fused_never_costs_more_and_changes_nothing_without_siblings():
    """Seeded, on random networks and plans of 1 to 3 levels: ``fused`` never sends more, the
    weights part never changes, the terms' sum is the amount; on a chain (no node feeds two)
    nothing is shared, so the amounts are exactly HyPar's."""
    rng = random.Random(77)
    shared = 0
    for net in random_networks():
        for _ in range(3):
            fanouts = tuple(rng.choice([2, 3, 4, 8]) for _ in range(rng.randint(1, 3)))
            rows = random_rows(rng, net, fanouts)
            rs = rng.random() < 0.5
            off = level_amounts(net, 4, fanouts, rows, reduce_scatter=rs)
            on = level_amounts(net, 4, fanouts, rows, reduce_scatter=rs, fused=True)
            for a, c in zip(off, on):
                assert c.weights == a.weights and c.activations <= a.activations
                shared += c.activations < a.activations
            fan_out = any(sum(1 for u, _v in net.edges if u == x) > 1 for x in range(len(net.layers)))
            if not fan_out:
                assert on == off
    assert shared >= 10


def test_llm_block_terms_are_the_fused_level_terms():
    """``llm_block``'s tensor level is ``level_terms(..., fused=True)`` summed (``_amounts``); its
    terms one at a time (``node_term``, ``edge_term`` with the sibling charges: what the per-term
    minimiser ``solvers.llm_types`` adds up) are those terms, and their forward parts sum to the
    level's ``forward``: on seeded random types of LLaMA and GPT blocks, with and without sequence
    parallelism (the forward part by hand: a node's exchange where it sends output partial sums)."""
    from explorer.core.llm_block import _amounts, block_parts, edge_tensors, edge_term, node_term, subnetwork
    from explorer.core.partition import Size
    from explorer.core.siblings import sibling_charges

    rng = random.Random(5)
    gpt = dict(family=Family.GPT, hidden=64, heads=8, ffn=256, vocab=128, positions=32)
    forward_seen = 0
    for shape in (TINY_LLAMA, gpt):
        net = build_transformer(TransformerShape(layers=2, **shape), "tiny", 4, 16, "tiny")
        parts = block_parts(net, 2)
        sub = subnetwork(net, parts.blocks[1], (), parts.blocks[0][-1], 4)
        for _ in range(40):
            k = rng.choice([2, 4, 8])
            (row,) = random_rows(rng, sub, (k,))
            rs = rng.random() < 0.5
            (terms,) = level_terms(sub, 4, (k,), [row], reduce_scatter=rs, fused=True)
            scat = scatter_targets(sub, row) if rs else (None,) * len(row)
            ch = sibling_charges(sub, row, scat, edge_tensors(sub))
            nodes = [node_term(sub, n, ty, k, 4, scat[n], ch.intra[n]) for n, ty in enumerate(row)]
            edges = [edge_term(sub, e, row[u], row[v], k, 4, scat[u], scat[v], (ch.forward[e], ch.backward[e]))
                     for e, (u, v) in enumerate(sub.edges)]
            assert [x.activations + x.weights for x in nodes] == list(terms.intra)
            assert [x.activations for x in edges] == list(terms.inter)
            assert sum(x.forward for x in nodes + edges) == terms.forward
            f_out = sum(x for n, x in enumerate(terms.intra) if sub.layers[n].node_types.exchanged[row[n].index] == Size.F_OUT.index)
            assert f_out <= terms.forward
            got = _amounts(sub, row, k, 4, rs)
            (want,) = level_amounts(sub, 4, (k,), [row], reduce_scatter=rs, fused=True)
            assert (got.activations, got.weights, got.forward) == (want.activations, want.weights, terms.forward)
            assert 0 <= got.forward <= got.activations
            forward_seen += 0 < got.forward < got.activations
    assert forward_seen >= 20
