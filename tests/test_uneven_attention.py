"""Attention and embedding nodes in the uneven-split model (explorer.core.uneven): hand-computed
goldens, the whole-heads rule, and every uneven-split solver cross-checked on random tiny
transformer-like instances (brute == exact == CP-SAT == joint == evaluator)."""

import random
from fractions import Fraction as F

import pytest

from explorer.core.array import synthetic_array
from explorer.core.evaluate import evaluate
from explorer.core.uneven import (
    FreeAlphas,
    alpha_grid,
    alpha_space,
    round_to_whole_units,
    split_units,
    whole_units,
)
from explorer.core.evaluate import evaluate_split
from explorer.core.errors import Refused
from explorer.core.network import LayerKind
from explorer.core.partition import ALL_TYPES, Dim, PartitionType, Space
from explorer.core.plan import Plan
from explorer.core.solution import Status
from explorer.frontends import load_model
from explorer.frontends.network_yaml import parse_network
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.uneven import _columns, exact_uneven, search_level_alphas
from explorer.solvers.uneven_cpsat import cpsat_uneven
from explorer.solvers.uneven_joint import accpar_uneven, check_scope, joint_uneven
from explorer.solvers.uneven_levels import levels_uneven

from .conftest import random_attention_spec
from .test_uneven_model import A1, mix

I, II, III = PartitionType.I, PartitionType.II, PartitionType.III


def _net(layers, batch=2, sequence=2, name="t"):
    return parse_network({"version": 1, "name": name, "batch": batch, "sequence": sequence, "layers": layers}, name)


def _attention_net(heads: int):
    """qkv: fc 4 -> 12 (fused Q, K, V of 4 channels each), att (4 or 2 heads), o: fc 4 -> 4; batch 2, 2 tokens."""
    return _net([{"name": "qkv", "kind": "fc", "in_features": 4, "out_features": 12, "inputs": []},
                 {"name": "att", "kind": "attention", "heads": heads, "inputs": ["qkv"]},
                 {"name": "o", "kind": "fc", "in_features": 4, "out_features": 4, "inputs": ["att"]}])


# Sizes (B = 2, S = 2): qkv A(F) = 2*4*2 = 16, A(W) = 48, A(F_out) = 48, FLOPs 6*B*S*12*4 = 1152;
# att A(F) = 2*12*2 = 48 (Q, K, V together; the fused edge carries all of it), no weights,
# FLOPs 6*B*S^2*(D_qk + D_v) = 6*2*4*(4 + 4) = 384 (Q.K^T over the 4 Q/K channels, softmax.V over
# the 4 V channels; 576 = 6*B*S^2*12 before the fix: Q.K^T was counted over D_q + D_k = 8);
# o A(F) = 16, A(W) = 16, A(F_out) = 16, FLOPs 6*2*2*4*4 = 384. 1152 + 384 + 384 = 1920 in all.
NET4 = _attention_net(4)


def plan1(types, alphas):
    return Plan((tuple(types),), (tuple(F(a) for a in alphas),))


def test_attention_golden_heads_split_unevenly():
    """qkv III(1/4), att II(1/4) (1 head | 3 heads), o II(1/4), on A1 (1 and 3 TFLOPS, 10 GB/s, 2 B):
    qkv reduces E_in (16) each way; qkv leaves F col(1/4), att needs col(1/4): 0 both ways (col ->
    col at the same alpha); att leaves its context col(1/4), o needs col(1/4): 0; o reduces F_out
    (16) each way. Sides (32, 32): 6.4 ns. Compute: a quarter of 1920 FLOP at 1 TFLOPS = 480 FLOP =
    0.48 ns, three quarters (1440 FLOP) at 3 TFLOPS = 0.48 ns. Step 6.4 + 0.48 = 6.88 ns. Memory (elements): leaf 0: qkv 2*48/4 +
    16 (III keeps F_in whole) = 40, att 0 (a join holds nothing), o 2*16/4 + 16/4 = 12: 52 -> 104 B;
    leaf 1: 72 + 16 + 24 + 12 = 124 -> 248 B."""
    ev = evaluate_split(NET4, A1, plan1((III, II, II), ("1/4", "1/4", "1/4")))
    assert ev.group_amounts == (((F(32), F(32)),),)
    assert ev.leaf_compute_s == (F(480, 10**12), F(480, 10**12))
    assert ev.step_time_s == F(6880, 10**12)
    assert ev.leaf_memory_bytes == (F(104), F(248))


def test_attention_golden_context_to_duplicated():
    """qkv III(1/4), att II(1/4), o III(1/2): o needs its input duplicated, so att's context col(1/4)
    -> dup sends (1/4, 3/4) of o's A(F) = 16: (4, 12); back, o leaves E duplicated: nothing. Intra:
    qkv E_in 16 and o E_in 16 each way. Sides (36, 44): 8.8 ns. Compute: leaf 0 1152/4 + 384/4 +
    384/2 = 288 + 96 + 192 = 576 FLOP at 1 TFLOPS = 0.576 ns, leaf 1 864 + 288 + 192 = 1344 at
    3 TFLOPS = 0.448 ns. Step 8.8 + 0.576 = 9.376 ns."""
    ev = evaluate_split(NET4, A1, plan1((III, II, III), ("1/4", "1/4", "1/2")))
    assert ev.group_amounts == (((F(36), F(44)),),)
    assert ev.leaf_compute_s == (F(576, 10**12), F(448, 10**12))
    assert ev.step_time_s == F(9376, 10**12)


def test_attention_golden_batch_to_heads():
    """qkv I(1/4), att II(1/2), o I(1/4): intra dW 48 + 16 = 64 each way. qkv -> att (X = 48):
    F row(1/4) -> col(1/2) = (1/4*1/2, 3/4*1/2) = (1/8, 3/8), E col(1/2) -> row(1/4) = (3/8, 1/8):
    (24, 24). att -> o (X = 16): F col(1/2) -> row(1/4) = (3/8, 1/8), E (1/8, 3/8): (8, 8).
    Sides (96, 96): 19.2 ns. Compute: leaf 0 1152/4 + 384/2 + 384/4 = 288 + 192 + 96 = 576 FLOP,
    0.576 ns; leaf 1 864 + 192 + 288 = 1344 at 3 TFLOPS, 0.448 ns. Step 19.2 + 0.576 = 19.776 ns."""
    ev = evaluate_split(NET4, A1, plan1((I, II, I), ("1/4", "1/2", "1/4")))
    assert ev.group_amounts == (((F(96), F(96)),),)
    assert ev.leaf_compute_s == (F(576, 10**12), F(448, 10**12))
    assert ev.step_time_s == F(19776, 10**12)


def test_whole_heads_rule():
    """II on an attention node with heads gives each side whole heads: alpha * (the group's heads) an integer."""
    att4, att2 = NET4.layers[1], _attention_net(2).layers[1]
    assert split_units(att4) == (4, Dim.D_I, "head") and split_units(NET4.layers[0]) is None
    assert whole_units(att4, [II], [[F(1, 4)]]) and whole_units(att4, [II], [[F(3, 4)]])
    assert not whole_units(att4, [II], [[F(1, 8)]]) and not whole_units(att2, [II], [[F(1, 4)]])
    assert whole_units(att2, [II], [[F(1, 2)]]) and whole_units(att2, [I], [[F(1, 8)]])  # a batch split: no rule
    assert not whole_units(att4, [II, II], [[F(1, 4)], [F(1, 2), F(1, 2)]])  # 1 head | 3: the 1 cannot split
    assert whole_units(att4, [II, II], [[F(1, 2)], [F(1, 2), F(1, 2)]])
    with pytest.raises(ValueError, match="a head split leaves a side a fraction of its 2 heads"):
        evaluate_split(_attention_net(2), A1, plan1((III, II, II), ("1/4", "1/4", "1/4")))
    # every solver's candidates: att's II at 1/4, 1/2 and 3/4 of the 1/8 grid with 4 heads, at 1/2 alone with 2
    cols = _columns(NET4, Space.ACCPAR, alpha_space(A1, alpha_grid(8)), 1)
    assert sorted(c[0][1][0] for c in cols[1] if c[0][0] is II) == [F(1, 4), F(1, 2), F(3, 4)]
    assert len([c for c in cols[1] if c[0][0] is I]) == 7 and not any(c[0][0] is III for c in cols[1])
    cols2 = _columns(_attention_net(2), Space.ACCPAR, alpha_space(A1, alpha_grid(8)), 1)
    assert [c[0][1][0] for c in cols2[1] if c[0][0] is II] == [F(1, 2)]
    # without heads: II at every alpha
    free = _net([{"name": "qkv", "kind": "fc", "in_features": 4, "out_features": 12, "inputs": []},
                 {"name": "att", "kind": "attention", "inputs": ["qkv"]}])
    assert split_units(free.layers[1]) is None
    assert len([c for c in _columns(free, Space.ACCPAR, alpha_space(A1, alpha_grid(8)), 1)[1] if c[0][0] is II]) == 7


def test_proportional_rounds_to_whole_heads():
    """15/56 of 4 heads is 15/14 heads: the proportional rule takes the nearest whole count, 1 head (1/4);
    a group of one head below cannot split: that node's alphas fall back to 1/2 (the DP's equal split)."""
    plan = Plan(((III, II, II),), ((F(15, 56),) * 3,))
    assert round_to_whole_units(NET4, plan).alphas == (((F(15, 56), F(1, 4), F(15, 56)),),)
    two = Plan(((I, II, I), (I, II, I)), ((F(15, 56),) * 3, ((F(1, 2),) * 3, (F(1, 3),) * 3)))
    got = round_to_whole_units(NET4, two)
    assert [row[1] for level in got.alphas for row in level] == [F(1, 2)] * 3  # 1 | 3 heads, then 1 head cannot split
    assert got.alphas[1][1][0] == F(1, 3)  # other nodes keep theirs


# ---- embeddings ---------------------------------------------------------------------------

# tok: embedding, vocabulary 10, hidden 4; fc 4 -> 5; batch 2, 3 tokens (the equal-split golden of the
# README). tok: A(F) = 6 token ids, A(W) = 40, A(F_out) = 24, no FLOPs; fc: A(F) = 24, A(W) = 20,
# A(F_out) = 30, FLOPs 6*2*3*5*4 = 720.
EMB = _net([{"name": "tok", "kind": "embedding", "vocab": 10, "hidden": 4, "inputs": []},
            {"name": "fc", "kind": "fc", "in_features": 4, "out_features": 5, "inputs": ["tok"]}], sequence=3)


def test_embedding_golden_hidden_split_exchanges_nothing():
    """tok III(1/4) (hidden width 1 | 3: no reduction, its input has no error), fc I(1/4): fc's dW 20
    each way; tok -> fc (X = 24): F col(1/4) -> row(1/4) = (3/16, 3/16), E row -> col the same:
    (9, 9). Sides (29, 29): 5.8 ns. Compute 180 FLOP at 1 TFLOPS = 540 at 3 = 0.18 ns: 5.98 ns.
    (At 1/2: 20 + 12 = 32, the README's equal-split golden.) Memory: leaf 0 tok 2*40/4 + 6 (III keeps
    the ids whole) = 26, fc 40 + 24/4 = 46: 72 -> 144 B; leaf 1 60 + 6 + 40 + 18 = 124 -> 248 B."""
    ev = evaluate_split(EMB, A1, plan1((III, I), ("1/4", "1/4")))
    assert ev.group_amounts == (((F(29), F(29)),),)
    assert ev.step_time_s == F(5980, 10**12)
    assert ev.leaf_memory_bytes == (F(144), F(248))


def test_embedding_golden_to_duplicated():
    """tok III(1/4), fc III(1/2): fc reduces E_in (24) each way; fc needs F duplicated: col(1/4) -> dup
    = (6, 18); back, fc leaves E duplicated: nothing. Sides (30, 42): 8.4 ns; compute 360 FLOP on
    each: 0.36 ns on leaf 0: 8.76 ns. (At 1/2: 0 + 24 + 12 = 36, the README's golden.)"""
    ev = evaluate_split(EMB, A1, plan1((III, III), ("1/4", "1/2")))
    assert ev.group_amounts == (((F(30), F(42)),),)
    assert ev.step_time_s == F(8760, 10**12)


def test_embedding_golden_vocabulary_split():
    """tok II(1/4) (vocabulary split: partial outputs summed, F_out 24 each way, output duplicated),
    fc II(1/4) (F_out 30 each way; needs F col(1/4) from duplicated: nothing); back, fc's E col(1/4)
    -> dup for tok: (6, 18). Sides (60, 72): 14.4 ns; compute 0.18 ns: 14.58 ns. Memory leaf 0: tok
    2*40/4 + 6/4 (II splits the ids with D_i, as the equal-split footprint does), fc 2*20/4 + 24/4."""
    ev = evaluate_split(EMB, A1, plan1((II, II), ("1/4", "1/4")))
    assert ev.group_amounts == (((F(60), F(72)),),)
    assert ev.step_time_s == F(14580, 10**12)
    assert ev.leaf_memory_bytes[0] == 2 * (F(20) + F(6, 4) + F(10) + F(6))


@pytest.mark.parametrize("model", ["vit-b16", "bert-base", "gpt2-small"])
def test_equal_split_identity_on_transformers(model):
    """Every alpha 1/2 on a one-kind array: evaluate_split == evaluate (step time, traffic, compute,
    memory with a weight copy), on random plans of the nodes' offered types (attention II only at
    the levels where it splits whole heads; embeddings all three)."""
    net = load_model(model)
    assert any(L.kind is LayerKind.ATTENTION and L.heads for L in net.layers)
    arr = synthetic_array(3, [10, 40, 80], dtype_bytes=2, peak_TFLOPS=3)
    rng = random.Random(model)
    for _ in range(3):
        plan = Plan(tuple(tuple(rng.choice([t for t in ALL_TYPES if L.offers(t, h)]) for L in net.layers) for h in range(3)))
        ev = evaluate(net, arr, Space.ACCPAR, plan, weight_copies=1)
        hv = evaluate_split(net, arr, Plan.even(plan), weight_copies=1)
        assert hv.step_time_s == ev.step_time_s and hv.traffic_bytes == ev.traffic_bytes
        assert hv.leaf_compute_s == (ev.compute_s,) * 8 and set(hv.leaf_memory_bytes) == {ev.memory_bytes}


# ---- every solver on random tiny instances ------------------------------------------------------


def _instance(rng):
    """A random tiny transformer-like network (an embedding or an fc, Q/K/V fused or fanned in, an
    attention node with or without heads) on a random mix; at most 200 plans for brute force."""
    while True:
        H = rng.choice([1, 1, 2])
        space = rng.choice([Space.HYPAR, Space.ACCPAR])
        grid = rng.choice([2, 3, 4] if H == 2 else [2, 3, 4, 6, 8])
        free = rng.choice([FreeAlphas.UNLIKE, FreeAlphas.ALL])
        if H == 2 and rng.random() < 0.6:
            p, q = rng.sample([1, 2, 3, 5], 2)
            peaks = [p, p, q, q]  # one kind per half: in the joint solver's scope
        else:
            peaks = [rng.choice([1, 2, 3, 5]) for _ in range(2**H)]
        arr = mix(H, peaks, bw=rng.choice([10, 100, 1000]), dtype=rng.choice([1, 2, 4]))
        net = parse_network(random_attention_spec(rng.randrange(10**6), fan_in=rng.random() < 0.3), "att")
        aspace = alpha_space(arr, alpha_grid(grid), free)
        n = 1
        for cols in _columns(net, space, aspace, H):
            n *= len(cols)
        if n <= 200:
            return net, arr, space, aspace


def test_all_solvers_agree_on_random_attention_and_embedding_instances():
    """brute == exact == CP-SAT == joint (where each applies) == evaluator on 90 random instances;
    the AccPar-style heuristics (levels DP, accpar, search) give plans of the space, never better."""
    rng = random.Random(1331)
    ran = {"exact": 0, "cpsat": 0, "joint": 0, "fan-in": 0, "embedding": 0, "att II": 0, "emb III": 0, "uneven": 0}
    for k in range(90):
        net, arr, space, aspace = _instance(rng)
        b = brute_split(net, arr, space, aspace)
        assert evaluate_split(net, arr, b.plan).step_time_s == b.step_time_s and aspace.contains(b.plan)
        att = next(i for i, L in enumerate(net.layers) if L.kind is LayerKind.ATTENTION)
        emb = net.layers[0].kind is LayerKind.EMBEDDING
        ran["embedding"] += emb
        ran["att II"] += II in [b.plan.types[h][att] for h in range(arr.levels)]
        ran["emb III"] += emb and III in [b.plan.types[h][0] for h in range(arr.levels)]
        ran["uneven"] += any(a != F(1, 2) for level in b.plan.alphas for row in level for a in row)
        if len(net.edges) == len(net.layers) - 1:
            e = exact_uneven(net, arr, space, aspace)
            assert e.step_time_s == b.step_time_s == evaluate_split(net, arr, e.plan).step_time_s
            ran["exact"] += 1
            if k % 3 == 0:
                c = cpsat_uneven(net, arr, space, aspace)
                assert c.status is Status.OPTIMAL and c.step_time_s == c.bound_s == b.step_time_s
                assert evaluate_split(net, arr, c.plan).step_time_s == c.step_time_s
                ran["cpsat"] += 1
        else:
            ran["fan-in"] += 1
            with pytest.raises(Refused, match="chains only"):
                exact_uneven(net, arr, space, aspace)
        lv = levels_uneven(net, arr, space, aspace)
        assert evaluate_split(net, arr, lv.plan).step_time_s == lv.step_time_s >= b.step_time_s
        assert aspace.contains(lv.plan)
        s = search_level_alphas(net, arr, Plan.even(b.plan.plan), aspace)  # from 1/2: may stay off an odd grid
        assert evaluate_split(net, arr, s.plan).step_time_s == s.step_time_s
        assert s.step_time_s >= b.step_time_s or not aspace.contains(s.plan)
        try:
            check_scope(net, arr, aspace)
        except Refused:
            continue
        j = joint_uneven(net, arr, space, aspace)
        assert j.status is Status.OPTIMAL and j.step_time_s == j.bound_s == b.step_time_s
        assert evaluate_split(net, arr, j.plan).step_time_s == j.step_time_s and aspace.contains(j.plan)
        a = accpar_uneven(net, arr, space, aspace)
        assert evaluate_split(net, arr, a.plan).step_time_s == a.step_time_s >= b.step_time_s
        ran["joint"] += 1
    print(ran)
    assert ran["exact"] >= 50 and ran["cpsat"] >= 15 and ran["joint"] >= 20 and ran["fan-in"] >= 15, ran
    assert ran["embedding"] >= 30 and ran["att II"] >= 15 and ran["emb III"] >= 5 and ran["uneven"] >= 10, ran


def test_the_optimum_splits_heads_unevenly():
    """fc -> attention (4 heads) -> fc on A1 (1 and 3 TFLOPS), grid 1/4: every proving solver finds the
    golden plan above, qkv III, att II, o II all at 1/4 (1 head | 3), 6.88 ns (6.928 ns before the attention-MACs fix); with 2 heads the
    attention node can split 1 | 1 only, and the optimum is slower."""
    aspace = alpha_space(A1, alpha_grid(4))
    want = plan1((III, II, II), ("1/4", "1/4", "1/4"))
    for solve in (brute_split, exact_uneven, cpsat_uneven, joint_uneven):
        s = solve(NET4, A1, Space.ACCPAR, aspace)
        assert s.status is Status.OPTIMAL and s.plan == want and s.step_time_s == s.bound_s == F(6880, 10**12), s.solver
    two = _attention_net(2)
    b, e = brute_split(two, A1, Space.ACCPAR, aspace), exact_uneven(two, A1, Space.ACCPAR, aspace)
    assert b.step_time_s == e.step_time_s > F(6880, 10**12)
    assert all(p.plan.alphas[0][0][1] == F(1, 2) for p in (b, e) if p.plan.types[0][1] is II)
    lv = levels_uneven(NET4, A1, Space.ACCPAR, aspace)
    assert lv.step_time_s >= F(6880, 10**12) and evaluate_split(NET4, A1, lv.plan).step_time_s == lv.step_time_s


def test_proportional_split_keeps_whole_heads_on_a_4_12_mix():
    """llama-7b (32 heads) on 4 v2 + 12 v3: the DP's plan splits heads (II) at level 1, where group 0's
    proportional alpha is 15/56 (8.57 of 32 heads): ``explore split --split proportional`` rounds it to
    9/32 and splits the 9 and 23 heads below 4 | 5 and 11 | 12; the plan holds whole heads everywhere."""
    from explorer.app.split import Split, split_run
    from explorer.core.array import AcceleratorKind, ArraySpec

    v2, v3 = AcceleratorKind("v2", F(45), F(16)), AcceleratorKind("v3", F(123), F(32))
    arr = ArraySpec("mix-4-12", 4, 2, (F(70),) * 4, F(45), F(16), leaves=(v2,) * 4 + (v3,) * 12)
    net = load_model("llama-7b")
    r = split_run(net, arr, Space.ACCPAR, Split.PROPORTIONAL)
    atts = [i for i, L in enumerate(net.layers) if L.heads]
    for i in atts:
        assert whole_units(net.layers[i], [r.plan.types[h][i] for h in range(4)],
                           [[row[i] for row in r.plan.alphas[h]] for h in range(4)])
    split = [i for i in atts if r.plan.types[1][i] is II]
    assert split and {r.plan.alphas[1][0][i] for i in split} == {F(9, 32)}
    assert {(r.plan.alphas[2][0][i], r.plan.alphas[2][1][i]) for i in split if r.plan.types[2][i] is II} == {(F(4, 9), F(11, 23))}


def test_exact_and_cpsat_refuse_in_one_line_when_too_large():
    """``explore check --uneven`` bounds the exact Pareto DP by its time limit and CP-SAT by its count
    of column pairs (an attention node's few columns let the pairs of a 4-level array through)."""
    arr = mix(2, [1, 1, 3, 3])
    late = exact_uneven(NET4, arr, Space.ACCPAR, alpha_space(arr, alpha_grid(4), FreeAlphas.ALL), time_limit_s=0)
    assert late.status is Status.UNKNOWN and late.plan is None  # the time limit is not bad input: no plan, no proof
    late = cpsat_uneven(NET4, arr, Space.ACCPAR, alpha_space(arr, alpha_grid(2)), time_limit_s=1e-9)
    assert late.status is Status.UNKNOWN and late.plan is None  # CP-SAT out of time alike (it raised Refused)
    with pytest.raises(Refused, match=r"cpsat \(uneven splits\): [\d,]+ column pairs, more than 100"):
        cpsat_uneven(NET4, arr, Space.ACCPAR, alpha_space(arr, alpha_grid(4)), max_pairs=100)


def test_joint_proves_a_tiny_transformer_block_equal_to_brute():
    """An embedding, Q/K/V fanning into a 2-head attention node, its output projection and the
    residual add (the series-parallel shape of ViT's and BERT's blocks): the joint solver proves
    the brute-force optimum on a 1 : 3 pair, grid 1/3 (8192 plans; the head split needs 1/2, off the
    grid, so the attention node takes I only) and grid 1/2 (the head split offered)."""
    fc = lambda n, i, o, src: {"name": n, "kind": "fc", "in_features": i, "out_features": o, "inputs": [src]}  # noqa: E731
    net = _net([{"name": "tok", "kind": "embedding", "vocab": 6, "hidden": 4, "inputs": []},
                fc("q", 4, 2, "tok"), fc("k", 4, 2, "tok"), fc("v", 4, 2, "tok"),
                {"name": "att", "kind": "attention", "heads": 2, "inputs": ["q", "k", "v"]},
                fc("o", 2, 4, "att"), {"name": "add", "kind": "add", "inputs": ["tok", "o"]}], batch=2, sequence=4)
    arr = mix(1, [1, 3], bw=100)
    for grid, space in ((3, Space.HYPAR), (2, Space.ACCPAR)):
        aspace = alpha_space(arr, alpha_grid(grid), proportional=False)  # the grid alone: brute force's size
        b = brute_split(net, arr, space, aspace, max_plans=20_000)
        j = joint_uneven(net, arr, space, aspace)
        assert j.status is Status.OPTIMAL and j.step_time_s == j.bound_s == b.step_time_s
        assert evaluate_split(net, arr, j.plan).step_time_s == j.step_time_s and aspace.contains(j.plan)
