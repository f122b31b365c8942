"""Grouped convolutions, embeddings and attention heads in the model: hand-computed goldens,
integer tables against the rational model, and solvers against brute force."""

import itertools
from fractions import Fraction

import pytest

from explorer.app.run import rescore
from explorer.core.comm import footprint_elements, inter_amount, intra_amount
from explorer.core.costs import compositions
from explorer.core.errors import SpecError
from explorer.core.evaluate import PlanError, evaluate
from explorer.core.network import LayerKind, two_adic
from explorer.core.partition import PartitionType as T
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.problem import Problem
from explorer.frontends.network_yaml import load_network_text
from explorer.solvers import brute, cpsat, dp, exact
from explorer.core.solution import SolveOptions, Status

from .conftest import make_array, numpy_from

ONE = SolveOptions(workers=1, seed=0)

GROUPED = """version: 1
name: grouped
batch: 2
layers:
  - {name: a, kind: conv, in_channels: 4, out_channels: 8, kernel: 1, in_size: 2, out_size: 2}
  - {name: dw, kind: conv, in_channels: 8, out_channels: 8, kernel: 3, in_size: 2, out_size: 2, groups: 8}
  - {name: c, kind: conv, in_channels: 8, out_channels: 4, kernel: 1, in_size: 2, out_size: 2}
"""
# batch 2.  a: A(F)=2*4*4=32, A(W)=4*8=32, A(Fout)=2*8*4=64.
#           dw (8 groups): A(F)=64, A(W)=8*8*9/8=72, A(Fout)=64.   c: A(F)=64, A(W)=32, A(Fout)=32.
# dw under II splits whole groups: no partial sums, F_in/F_out/E column-split both ways.
#  (I, II, I):   intra 32 + 0 + 32; a->dw: fwd row->col 64/4, bwd col->row 64/4 = 32;
#                dw->c: fwd col->row 16, bwd row->col 16 = 32                          -> 128
#  (II, II, II): intra 64 + 0 + 32; a->dw: fwd dup->col 0, bwd col->dup 64/2 = 32;
#                dw->c: col->col both ways 0                                           -> 128
#  (I, I, I):    32 + 72 + 32, edges 0                                                 -> 136
#  (I, II, II):  32 + 0 + 32; a->dw 32; dw->c 0                                        -> 96
# (An ungrouped dw under II would pay intra A(Fout)=64 and leave F_out duplicated.)
GROUPED_GOLDEN = {(T.I, T.II, T.I): 128, (T.II, T.II, T.II): 128, (T.I, T.I, T.I): 136, (T.I, T.II, T.II): 96}


@pytest.mark.parametrize("row", list(GROUPED_GOLDEN))
def test_grouped_conv_level0_golden(row):
    net = load_network_text(GROUPED, "g")
    assert net.layers[1].groups == 8 and net.layers[1].weight_elements() == 72
    assert evaluate(net, make_array(1), Space.HYPAR, Plan((row,))).level_cost == (GROUPED_GOLDEN[row],)


def test_grouped_conv_scaling_and_memory():
    # level 0 (I, II, II) = 96; level 1 (I, I, I) with counts a (1,0,0), dw (0,1,0), c (0,1,0):
    #   a I: A(W)=32 (I halves only B); dw I: the group split halved every tensor: 72/2 = 36;
    #   c I: its II halved D_i: 32/2 = 16; edges I->I 0                                    -> 84
    # footprint of dw (weight copies 0): 2 * A(W)/2 + A(F)/(2*2) = 72 + 16 = 88 elements.
    net = load_network_text(GROUPED, "g")
    plan = Plan(((T.I, T.II, T.II), (T.I, T.I, T.I)))
    ev = evaluate(net, make_array(2), Space.HYPAR, plan)
    assert ev.level_cost == (96, 84)
    assert footprint_elements(net.layers[1], 2, ev.final_counts[1]) == 88
    # the group split also halves F_out: after II at level 0, dw's A(Fout) is 32, so c's input
    # edge (c's A(F) halved by c's own II) and dw's tensors agree.
    assert intra_amount(net.layers[1], 2, T.II, (0, 1, 0)) == 0


def test_grouped_conv_offers_ii_only_on_group_boundaries():
    two = load_network_text(GROUPED.replace("groups: 8", "groups: 2"), "g2")
    assert two.layers[1].split_levels == 1 and two_adic(96) == 5 and two_adic(3) == 0
    p = Problem(two, make_array(3), Space.ACCPAR)
    assert p.node_types(1) == (T.I, T.II)  # III never: II's group split is never worse
    assert [p.allowed(h, 1) for h in range(3)] == [(T.I, T.II), (T.I,), (T.I,)]
    with pytest.raises(PlanError, match="type II is not offered to a conv node at this level"):
        evaluate(two, make_array(2), Space.HYPAR, Plan(((T.I, T.II, T.I), (T.I, T.II, T.I))))
    b = brute.solve(p)
    for sol in (dp.solve(p), cpsat.solve(p, ONE), exact.solve(p)):
        rescore(p, sol)
        assert all(sol.plan.types[h][1] in p.allowed(h, 1) for h in range(3))
    assert cpsat.solve(p, ONE).objective == exact.solve(p).objective == b.objective


EMBED = """version: 1
name: emb
batch: 2
sequence: 3
layers:
  - {name: tok, kind: embedding, vocab: 10, hidden: 4}
  - {name: fc, kind: fc, in_features: 4, out_features: 5, inputs: [tok]}
"""
# batch 2, 3 tokens.  tok: token ids A(F)=2*3=6, A(W)=10*4=40, A(Fout)=2*4*3=24.
#                     fc:  A(F)=24, A(W)=20, A(Fout)=2*5*3=30.
#  (I, I):     dW 40 + 20                                                             -> 60
#  (II, II):   tok splits the vocabulary: partial lookups summed, intra A(Fout)=24; fc 30;
#              edge: fwd dup->col 0, bwd col->dup 24/2 = 12                            -> 66
#  (III, I):   tok splits the hidden width: ids have no error, intra 0; fc 20;
#              edge: fwd col->row 6, bwd row->col 6                                    -> 32
#  (III, II):  0 + 30, edge col->col 0                                                 -> 30
#  (III, III): 0 + fc intra A(E)=24; edge fwd col->dup 12, bwd dup->col 0              -> 36
EMBED_GOLDEN = {(T.I, T.I): 60, (T.II, T.II): 66, (T.III, T.I): 32, (T.III, T.II): 30, (T.III, T.III): 36}


@pytest.mark.parametrize("row", list(EMBED_GOLDEN))
def test_embedding_golden(row):
    net = load_network_text(EMBED, "e")
    tok = net.layers[0]
    assert (tok.kind, tok.weight_elements(), tok.input_elements(2), tok.output_elements(2)) == (LayerKind.EMBEDDING, 40, 6, 24)
    assert net.sequence == 3 and net.layers[1].in_size == (3, 1)
    assert evaluate(net, make_array(1), Space.ACCPAR, Plan((row,))).level_cost == (EMBED_GOLDEN[row],)


def test_embedding_memory_and_seq_override():
    net = load_network_text(EMBED, "e")
    # I at both levels: weights and their gradients whole (2 * 40) + ids 6 / 4
    assert footprint_elements(net.layers[0], 2, (2, 0, 0)) == 80 + Fraction(3, 2)
    from explorer.frontends.network_yaml import parse_network
    import yaml

    longer = parse_network(yaml.safe_load(EMBED), "e", sequence=7)
    assert longer.sequence == 7 and longer.layers[1].in_size == (7, 1) and longer.layers[0].output_elements(2) == 56


MIXED = """version: 1
name: mixed
batch: 4
sequence: 4
layers:
  - {name: tok, kind: embedding, vocab: 12, hidden: 8}
  - {name: pos, kind: embedding, vocab: 4, hidden: 8}
  - {name: emb, kind: add, inputs: [tok, pos]}
  - {name: qkv, kind: fc, in_features: 8, out_features: 24, inputs: [emb]}
  - {name: att, kind: attention, inputs: [qkv], heads: 2}
  - {name: o, kind: fc, in_features: 8, out_features: 8, inputs: [att]}
  - {name: res, kind: add, inputs: [emb, o]}
  - {name: c1, kind: conv, in_channels: 8, out_channels: 8, kernel: 1, in_size: [4, 1], out_size: [4, 1], inputs: [res]}
  - {name: dw, kind: conv, in_channels: 8, out_channels: 8, kernel: 3, in_size: [4, 1], out_size: [4, 1], groups: 4}
  - {name: pool, kind: fc, in_features: 8, out_features: 2, tokens: 1}
"""


@pytest.mark.parametrize("space", list(Space))
def test_tables_equal_rational_model_on_every_kind(space):
    net = load_network_text(MIXED, "mixed")
    att = net.layers[4]
    assert (att.in_channels, att.out_channels, att.heads, att.split_levels) == (24, 8, 2, 1)
    H = 3
    p = Problem(net, make_array(H), space)
    tables, u = p.tables, p.tables.unit_per_element
    for h in range(H):
        states = compositions(h, space)
        for counts in states:
            for l, layer in enumerate(net.layers):  # noqa: E741
                for t in p.node_types(l):
                    assert tables.intra(l, t, counts) == intra_amount(layer, net.batch, t, counts) * u
            for e, (a, b) in enumerate(net.edges):
                for tp in p.node_types(a):
                    for tn in p.node_types(b):
                        want = inter_amount(net.layers[b], net.batch, tp, tn, counts, net.edge_shares[e], producer=net.layers[a]) * u
                        assert want.denominator == 1 and tables.inter(e, tp, tn, counts) == want
        # the vectorised level rows agree with the lookups
        for counts in itertools.islice(itertools.product(states, repeat=len(net.layers)), 0, 50, 7):
            intra, inter = tables.level_rows(list(counts))
            for l in range(len(net.layers)):  # noqa: E741
                assert intra[l] == [tables.intra(l, t, counts[l]) for t in tables.types]
            for e, (_, v) in enumerate(net.edges):
                assert inter[e] == [[tables.inter(e, a, b, counts[v]) for b in tables.types] for a in tables.types]


def test_solvers_agree_on_every_kind():
    net = load_network_text(MIXED, "mixed")
    p = Problem(net, make_array(2), Space.ACCPAR)
    sols = [dp.solve(p), cpsat.solve(p, ONE), exact.solve(p)]
    for s in sols:
        rescore(p, s)
        assert all(s.plan.types[h][4] in p.allowed(h, 4) for h in range(2))  # attention: II only at level 0
    assert sols[1].status is Status.OPTIMAL and sols[1].objective == sols[2].objective
    assert sols[0].objective >= sols[1].objective


@pytest.mark.parametrize("text,message", [
    (GROUPED.replace("groups: 8", "groups: 3"), "layers[1].groups: 3 groups must divide in_channels 8 and out_channels 8"),
    (EMBED.replace("hidden: 4}", "hidden: 4, inputs: [fc]}"), "layers[0].inputs: an embedding reads token ids"),
    (MIXED.replace("heads: 2", "heads: 3"), "layers[4].channels: give the context's channels"),
    (EMBED.replace("vocab: 10", "vocab: 0"), "layers[0].vocab: must be a positive integer, got 0"),
])
def test_extension_spec_errors(text, message):
    with pytest.raises(SpecError) as err:
        load_network_text(text, "x.yaml")
    assert message in str(err.value)


@pytest.mark.parametrize("name", ["gpt2-small", "llama-7b", "vit-b16", "mobilenet-v2", "efficientnet-b0"])
def test_new_zoo_models_solve_to_proven_optima(name):
    from explorer.frontends import load_model

    p = Problem(load_model(name), make_array(4), Space.HYPAR)
    sol = exact.solve(p)
    assert sol.status is Status.OPTIMAL
    rescore(p, sol)
    assert sol.objective <= dp.solve(p).objective


def test_integer_evaluator_equals_rational_on_every_kind():
    import random

    from explorer.core.evaluate import evaluate_rational

    net = load_network_text(MIXED, "mixed")
    for space in Space:
        p = Problem(net, make_array(3), space)
        rng = random.Random(1)
        for _ in range(20):
            plan = Plan(tuple(tuple(rng.choice(p.allowed(h, l)) for l in range(p.num_layers)) for h in range(3)))  # noqa: E741
            assert evaluate(net, p.array, space, plan, 1) == evaluate_rational(net, p.array, space, plan, 1)


def test_long_chain_dp_honours_group_limits(monkeypatch):
    # 130 layers: the DP's vectorised scan (here from 128 layers) must block II where groups run out
    numpy_from(monkeypatch)
    lines = ["version: 1", "name: long", "batch: 8", "layers:"]
    for i in range(130):
        g = ", groups: 2" if i % 2 else ""
        lines.append(f"  - {{name: c{i}, kind: conv, in_channels: 8, out_channels: 8, kernel: 3, in_size: 4, out_size: 4{g}}}")
    net = load_network_text("\n".join(lines) + "\n", "long")
    assert net.is_chain
    p = Problem(net, make_array(3), Space.HYPAR)
    sol = dp.solve(p)
    rescore(p, sol)
    assert all(sol.plan.types[h][l] in p.allowed(h, l) for h in range(3) for l in range(130))  # noqa: E741
