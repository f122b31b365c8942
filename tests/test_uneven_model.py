"""The uneven-split model (explorer.core.uneven): hand-computed goldens, equality with the
homogeneous model at alpha = 1/2, and the solvers cross-checked (brute == exact)."""

import random
from fractions import Fraction as F

import pytest

from explorer.api import solve
from explorer.core.array import AcceleratorKind, ArraySpec, synthetic_array
from explorer.core.errors import SpecError
from explorer.core.evaluate import evaluate
from explorer.core.uneven import (
    FreeAlphas,
    alpha_grid,
    alpha_space,
    group_shares,
    proportional_alphas,
    whole_units,
)
from explorer.core.evaluate import evaluate_split
from explorer.core.network import Layer, LayerKind, Network
from explorer.core.partition import ALL_TYPES, LAYER_TYPES, Dim, Layout, PartitionType, Space, node_inter_split, relayout_fraction, relayout_split
from explorer.core.plan import Plan
from explorer.core.randnet import random_chain
from explorer.frontends import load_array, load_model

from .conftest import CLASSIC_ZOO
from explorer.core.solution import Status
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.uneven import exact_uneven
from explorer.solvers.uneven_cpsat import cpsat_uneven
from explorer.solvers.uneven_levels import levels_uneven

I, II, III = PartitionType.I, PartitionType.II, PartitionType.III
ROW, COL, DUP = Layout.ROW, Layout.COL, Layout.DUP


def fc(name, i, o):
    return Layer(name, LayerKind.FC, i, o)


# f1: 4 -> 2, f2: 2 -> 2, batch 8.  f1: A(F)=32, A(W)=8, A(F_out)=16;  f2: A(F)=16, A(W)=4, A(F_out)=16.
# Training FLOPs = 6 * B * D_i * D_o: f1 384, f2 192; 576 in all.
NET = Network.chain("two-fc", 8, [fc("f1", 4, 2), fc("f2", 2, 2)])


def mix(levels, peaks, bw=10, dtype=2):
    kinds = {p: AcceleratorKind(f"k{p}", F(p), F(16)) for p in set(peaks)}
    leaves = tuple(kinds[p] for p in peaks)
    return ArraySpec("mix", levels, dtype, (F(bw),) * levels, min(F(p) for p in peaks), F(16), leaves=leaves)


A1 = mix(1, [1, 3])  # one level: a 1-TFLOPS and a 3-TFLOPS accelerator, 10 GB/s, 2-byte elements


def plan1(t1, a1, t2, a2):
    return Plan(((t1, t2),), ((F(a1), F(a2)),))


def test_relayout_split_is_the_binary_relayout_at_one_half():
    for src in Layout:
        for dst in Layout:
            assert relayout_split(src, F(1, 2), dst, F(1, 2)) == (relayout_fraction(src, dst, 2),) * 2


def test_relayout_split_goldens():
    # row(1/4) -> col(3/4): side 0 keeps 1/4*3/4, receives 3/4*3/4 = 9/16; side 1 receives 1/4*1/4 = 1/16
    assert relayout_split(ROW, F(1, 4), COL, F(3, 4)) == (F(1, 16), F(9, 16))
    # row(1/4) -> row(1/2): side 0 holds [0, 1/4), needs [0, 1/2): receives 1/4 from side 1
    assert relayout_split(ROW, F(1, 4), ROW, F(1, 2)) == (0, F(1, 4))
    assert relayout_split(COL, F(3, 4), COL, F(1, 4)) == (F(1, 2), 0)
    assert relayout_split(ROW, F(1, 4), DUP, F(1, 2)) == (F(1, 4), F(3, 4))  # each sends what it holds
    assert relayout_split(DUP, F(1, 4), COL, F(1, 8)) == (0, 0)


def test_balanced_type_I_golden():
    # f1 I(1/4), f2 I(1/4). Intra: dW of f1 (8) + dW of f2 (4) = 12 each way; I -> I same alpha: 0.
    # Comm: 12 elements * 2 B / 10 GB/s = 2.4 ns. Compute: leaf 0: 576/4 FLOP at 1 TFLOPS = 0.144 ns;
    # leaf 1: 576*3/4 at 3 TFLOPS = 0.144 ns (balanced). Step: 2.544 ns.
    ev = evaluate_split(NET, A1, plan1(I, "1/4", I, "1/4"))
    assert ev.group_amounts == (((F(12), F(12)),),)
    assert ev.leaf_compute_s == (F(144, 10**12), F(144, 10**12))
    assert ev.step_time_s == F(2544, 10**12)
    assert ev.traffic_bytes == 24 * 2
    # Equal split: leaf 0 computes 288 FLOP at 1 TFLOPS = 0.288 ns: 2.688 ns.
    assert evaluate_split(NET, A1, plan1(I, "1/2", I, "1/2")).step_time_s == F(2688, 10**12)


def test_I_to_II_golden():
    # f1 I(1/4), f2 II(3/4). Intra: dW f1 = 8, F_out f2 = 16: 24 each way.
    # Inter on f2's input (16): F row(1/4) -> col(3/4) = (1/16, 9/16); E col(3/4) -> row(1/4) = (9/16, 1/16):
    # (10/16, 10/16) * 16 = (10, 10). Sides: (34, 34), 34 * 2 / 1e10 = 6.8 ns.
    # Compute: leaf 0: f1 384/4 = 96, f2 192*3/4 = 144: 240 FLOP / 1 TFLOPS = 0.24 ns;
    # leaf 1: 288 + 48 = 336 / 3 TFLOPS = 0.112 ns. Step: 0.24 + 6.8 = 7.04 ns.
    assert node_inter_split(I, F(1, 4), II, F(3, 4), LAYER_TYPES, LAYER_TYPES) == (F(10, 16), F(10, 16))
    ev = evaluate_split(NET, A1, plan1(I, "1/4", II, "3/4"))
    assert ev.group_amounts == (((F(34), F(34)),),)
    assert ev.leaf_compute_s == (F(240, 10**12), F(112, 10**12))
    assert ev.step_time_s == F(7040, 10**12)


def test_uneven_directions_golden():
    # f1 I(1/4), f2 III(1/2). Intra: dW f1 = 8, E_l of f2 = 16: 24 each way.
    # Inter: F row(1/4) -> dup = (1/4, 3/4) of 16 = (4, 12); III produces E duplicated: nothing back.
    # Sides (28, 36): the link's busier direction, 36 * 2 / 1e10 = 7.2 ns.
    # Compute: leaf 0: 96 + 192/2 = 192 FLOP at 1 TFLOPS; leaf 1: 288 + 96 = 384 at 3 TFLOPS = 0.128 ns.
    ev = evaluate_split(NET, A1, plan1(I, "1/4", III, "1/2"))
    assert ev.group_amounts == (((F(28), F(36)),),)
    assert ev.step_time_s == F(192, 10**12) + F(7200, 10**12)
    assert ev.traffic_bytes == (28 + 36) * 2


def test_group_shares_two_levels():
    # Level 0: f1 I(1/4); level 1: f1 II(1/3). Group 2 of level 2 = path (side 1, side 0):
    # B share 3/4 (side 1 of 1/4), D_i share 1/3 (side 0 of 1/3), D_o whole.
    plan = Plan(((I, I), (II, II)), ((F(1, 4), F(1, 2)), (F(1, 3), F(1, 2))))
    assert group_shares(plan, 2, 2, 0) == {Dim.B: F(3, 4), Dim.D_I: F(1, 3), Dim.D_O: F(1), Dim.G: F(1)}
    assert group_shares(plan, 1, 0, 0) == {Dim.B: F(1, 4), Dim.D_I: F(1), Dim.D_O: F(1), Dim.G: F(1)}


def test_proportional_rule():
    a = load_array("tpu-mix-16")
    # level 0: 8*45 / (8*45 + 8*123) = 360/1344 = 15/56; below, each group is one kind: 1/2.
    assert proportional_alphas(a) == ((F(15, 56),), (F(1, 2),) * 2, (F(1, 2),) * 4, (F(1, 2),) * 8)
    # groups of one level may differ: [1, 1 | 1, 3] splits 1:1 and 1:3
    assert proportional_alphas(mix(2, [1, 1, 1, 3])) == ((F(2, 6),), (F(1, 2), F(1, 4)))


# 4 v2 + 12 v3 in tree order (the shipped peaks 45 and 123 TFLOPS; 1 and 3 in the evaluation golden)
MIX_4_12 = [45] * 4 + [123] * 12


def test_alpha_space_of_a_4_12_mix():
    # level 0: v2x4 v3x4 | v3x8: unlike, free. Level 1: group 0 v2x4 | v3x4 free; group 1 v3x4 | v3x4
    # fixed 1/2. Level 2: v2x2|v2x2 (group 0) and v3x2|v3x2 (groups 1-3, one class): fixed. Level 3 alike.
    s = alpha_space(mix(4, MIX_4_12), alpha_grid(16))
    assert s.group_class == ((0,), (0, 1), (0, 1, 1, 1), (0, 0, 1, 1, 1, 1, 1, 1))
    assert s.class_free == ((True,), (True, False), (False, False), (False, False))
    assert s.free_classes() == [(0, 0), (1, 0)]
    # a free class: the multiples of 1/16 and its own proportional ratio (level 0: 28/69, level 1: 15/56)
    grid = set(alpha_grid(16))
    assert s.choices(1, 1) == (F(1, 2),) and len(s.choices(1, 0)) == 16
    assert set(s.choices(1, 0)) == grid | {F(15, 56)} and set(s.choices(0, 0)) == grid | {F(28, 69)}
    assert list(s.choices(0, 0)) == sorted(s.choices(0, 0)) and s.choices(1, 0)[4] == F(15, 56)  # 1/4 < 15/56 < 5/16
    assert len(s.level_rows(1)) == 16 and s.level_rows(1)[0] == (F(1, 16), F(1, 2))
    assert s.values() == tuple(sorted(grid | {F(15, 56), F(28, 69)}))
    assert (s.class_ratio(0, 0), s.class_ratio(1, 0), s.class_ratio(1, 1)) == (F(28, 69), F(15, 56), F(1, 2))
    only = alpha_space(mix(4, MIX_4_12), alpha_grid(16), proportional=False)  # --grid-only
    assert only.choices(1, 0) == only.choices(0, 0) == alpha_grid(16) and only.choices(1, 1) == (F(1, 2),)
    odd = alpha_space(mix(4, MIX_4_12), alpha_grid(3))  # an odd grid: 1/2 is not declared for a free class
    assert odd.choices(0, 0) == (F(1, 3), F(28, 69), F(2, 3)) and F(1, 2) not in odd.choices(1, 0)
    every = alpha_space(mix(4, MIX_4_12), alpha_grid(4), FreeAlphas.ALL)
    assert every.class_free == ((True,), (True, True), (True, True), (True, True))
    assert len(every.level_rows(2)) == 9  # two classes of 3 alphas each (their ratio 1/2 is on the grid): groups 1-3 share one
    assert every.choices(1, 0) == (F(1, 4), F(15, 56), F(1, 2), F(3, 4))
    # 8 + 8 (tpu-mix-16): only the top split is free
    assert alpha_space(load_array("tpu-mix-16"), alpha_grid(16)).free_classes() == [(0, 0)]
    # proportional: level 0: (4*45 + 4*123) / (4*45 + 12*123) = 672/1656 = 28/69; level 1 group 0:
    # 180/672 = 15/56, group 1: 1/2; below, one kind per group: 1/2.
    assert proportional_alphas(mix(4, MIX_4_12)) == ((F(28, 69),), (F(15, 56), F(1, 2)), (F(1, 2),) * 4, (F(1, 2),) * 8)


def test_per_group_alphas_golden_4_12():
    """NET on 4 + 12 leaves of 1 and 3 TFLOPS, 4 levels, 10 GB/s, 2-byte elements. Type I
    everywhere; every alpha 1/2 except level 1 group 0's f1: 1/4.
    Intra (dW of f1 + f2, never split by I): 8 + 4 = 12 each way in every group.
    Level 1 group 0, edge f1 -> f2 (f2's input 16, B share 1/2 from level 0: X = 8): F row(1/4) ->
    row(1/2): (0, 1/4); E row(1/2) -> row(1/4): (1/4, 0); (2, 2) elements: sides (14, 14), 2.8 ns.
    Every other group (12, 12): 2.4 ns. Comm: leaves 0-7: 2.4 + 2.8 + 2.4 + 2.4 = 10.0 ns; 8-15: 9.6.
    Compute (576 FLOP in all: f1 384, f2 192; I splits B): leaf 0 (1 TFLOPS): f1 share 1/2 * 1/4 *
    1/4 = 1/32 -> 12, f2 1/16 -> 12: 24 ps. Leaf 4 (3 TFLOPS): f1 1/2 * 3/4 * 1/4 = 3/32 -> 36, f2
    12: 16 ps. Leaf 8: f1 24 + f2 12 = 36 / 3 = 12 ps. Step: leaf 0's 10.024 ns.
    Traffic: (24 + 52 + 4*24 + 8*24) elements * 2 B = 728 B."""
    arr = mix(4, [1] * 4 + [3] * 12)
    types = ((I, I),) * 4
    alphas = (((F(1, 2), F(1, 2)),), ((F(1, 4), F(1, 2)), (F(1, 2), F(1, 2))),
              ((F(1, 2), F(1, 2)),) * 4, ((F(1, 2), F(1, 2)),) * 8)
    plan = Plan(types, alphas)
    ev = evaluate_split(NET, arr, plan)
    assert ev.group_amounts[1] == ((F(14), F(14)), (F(12), F(12)))
    assert ev.group_amounts[0] == ((F(12), F(12)),) and set(ev.group_amounts[3]) == {(F(12), F(12))}
    assert ev.leaf_comm_s == (F(10, 10**9),) * 8 + (F(96, 10**10),) * 8
    assert ev.leaf_compute_s[0] == F(24, 10**12) and ev.leaf_compute_s[4] == F(16, 10**12)
    assert ev.leaf_compute_s[8] == F(12, 10**12)
    assert ev.step_time_s == F(10024, 10**12)
    assert ev.traffic_bytes == 728
    space = alpha_space(arr, alpha_grid(4))
    assert space.contains(plan)  # level 1 group 0 is free; its 1/4 is on the grid
    bad = Plan(types, alphas[:2] + (((F(1, 4), F(1, 2)),) * 4,) + alphas[3:])
    assert not space.contains(bad)  # level 2's groups split alike subtrees: 1/2 by rule
    # the old form (one alpha row per level) is every group's row
    assert Plan(types, ((F(1, 4), F(1, 2)),) * 4).alphas[2] == ((F(1, 4), F(1, 2)),) * 4


@pytest.mark.parametrize("model", CLASSIC_ZOO)  # the LLM zoo: tests/test_llm_zoo.py
def test_equal_split_on_one_kind_is_the_homogeneous_model(model):
    """alpha = 1/2 everywhere on an array of one kind: the same step time, traffic and memory as
    ``evaluate``, on every network of the zoo (attention and embedding nodes included)."""
    net = load_model(model)
    arr = synthetic_array(2, [10, 40], dtype_bytes=2, peak_TFLOPS=3)
    if any(L.groups > 1 for L in net.layers):  # mobilenet-v2, efficientnet-b0: grouped convs
        assert model in ("mobilenet-v2", "efficientnet-b0") or "grouped" in model
    rng = random.Random(model)
    for _ in range(2):
        plan = Plan(tuple(tuple(rng.choice([t for t in ALL_TYPES if L.offers(t, h)]) for L in net.layers) for h in range(2)))
        ev = evaluate(net, arr, Space.ACCPAR, plan)
        hv = evaluate_split(net, arr, Plan.even(plan))
        assert hv.step_time_s == ev.step_time_s and hv.traffic_bytes == ev.traffic_bytes
        assert hv.leaf_compute_s == (ev.compute_s,) * 4 and set(hv.leaf_memory_bytes) == {ev.memory_bytes}


def test_exact_with_alpha_one_half_is_the_time_optimum_plus_compute():
    """On an array of one kind with the grid {1/2}, the Pareto DP's optimum is the existing exact
    solver's time optimum (communication) plus the plan-independent compute."""
    net = load_model("lenet-c")
    arr = synthetic_array(2, [10, 40], dtype_bytes=2, peak_TFLOPS=3)
    r = solve(net, arr, solver="exact", objective="time", space="accpar")
    h = exact_uneven(net, arr, Space.ACCPAR, [F(1, 2)])
    assert h.step_time_s == r.figures.step_time_s
    assert evaluate_split(net, arr, h.plan).step_time_s == h.step_time_s


def _random_instance(rng):
    """Tiny: at most 256 plans for brute force (cells^(levels * layers)), in the declared space
    (the grid and each free class's proportional ratio)."""
    while True:
        H = rng.choice([1, 1, 2])
        L = rng.choice([2, 3]) if H == 1 else 2
        space = rng.choice([Space.HYPAR, Space.ACCPAR])
        grid = alpha_grid(rng.choice([2, 3, 4]))
        if (len(space.types) * len(grid)) ** (H * L) > 256:
            continue
        net = random_chain(rng.randrange(10**6), L, max_channels=16, max_size=4)
        peaks = [rng.choice([1, 2, 3, 5]) for _ in range(2**H)]
        arr = mix(H, peaks, bw=rng.choice([1, 10, 100]), dtype=rng.choice([1, 2, 4]))
        aspace = alpha_space(arr, grid)
        n = 1
        for h in range(H):
            n *= len(space.types) * len(aspace.level_rows(h))
        if n**L <= 256:
            return net, arr, space, aspace


def test_brute_equals_exact_equals_cpsat_on_300_random_instances():
    """brute == exact on all 300; CP-SAT (a third proof, ~0.15 s each) on every third of them."""
    rng = random.Random(13)
    better = 0
    for k in range(300):
        net, arr, space, aspace = _random_instance(rng)
        b = brute_split(net, arr, space, aspace)
        e = exact_uneven(net, arr, space, aspace)
        assert b.step_time_s == e.step_time_s
        assert evaluate_split(net, arr, e.plan).step_time_s == e.step_time_s
        if k % 3 == 0:
            c = cpsat_uneven(net, arr, space, aspace)
            assert c.status is Status.OPTIMAL and c.step_time_s == c.bound_s == e.step_time_s
            assert evaluate_split(net, arr, c.plan).step_time_s == c.step_time_s
        if F(1, 2) in aspace.grid:  # the best equal split is one of the plans searched: never better
            eq = exact_uneven(net, arr, space, alpha_space(arr, [F(1, 2)], proportional=False))
            assert e.step_time_s <= eq.step_time_s
            better += e.step_time_s < eq.step_time_s
    assert better > 0  # uneven splits do pay off on some mixes


# ---- grouped convolutions (the group split halves G: every tensor of the layer) ---------------

# c1: depthwise conv 4 -> 4, 1x1 kernel and maps, 4 groups; f2: fc 4 -> 2; batch 8.
# c1: A(F)=32, A(W)=4*4/4=4, A(F_out)=32, FLOPs 6*8*4*4/4 = 192;  f2: A(F)=32, A(W)=8, A(F_out)=16, FLOPs 384.
GNET = Network.chain("dw-fc", 8, [Layer("c1", LayerKind.CONV, 4, 4, groups=4), fc("f2", 4, 2)])


def test_group_split_golden():
    # c1 II (group split) 1/4: side 0 gets 1 group, side 1 3; f2 II 1/4.
    # Intra: c1's group split exchanges nothing; f2 reduces F_out (16) each way: (16, 16).
    # Inter on f2's input (32): the group split leaves F col(1/4), f2 needs col(1/4): 0; E col -> col: 0.
    # Comm 16 * 2 / 1e10 = 3.2 ns. Compute: leaf 0: 192/4 + 384/4 = 144 FLOP at 1 TFLOPS = 0.144 ns;
    # leaf 1: 144 + 288 = 432 at 3 TFLOPS = 0.144 ns. Step 3.344 ns.
    # Memory (elements): leaf 0: c1 2*4/4 + 32/4 = 10, f2 2*8/4 + 32/4 = 12: 22 -> 44 bytes;
    # leaf 1: c1 2*4*3/4 + 24 = 30, f2 12 + 24 = 36: 66 -> 132 bytes.
    ev = evaluate_split(GNET, A1, plan1(II, "1/4", II, "1/4"))
    assert ev.group_amounts == (((F(16), F(16)),),)
    assert ev.leaf_compute_s == (F(144, 10**12), F(144, 10**12))
    assert ev.step_time_s == F(3344, 10**12)
    assert ev.leaf_memory_bytes == (F(44), F(132))


def test_group_split_to_batch_split_golden():
    # c1 II (group split) 3/4, f2 I 1/4. Intra: f2's dW (8) each way.
    # Inter on f2's input (32): F col(3/4) -> row(1/4) = (3/4*3/4, 1/4*1/4) = (9/16, 1/16);
    # E row(1/4) -> col(3/4) = (1/4*1/4, 3/4*3/4) = (1/16, 9/16): (10/16, 10/16) * 32 = (20, 20).
    # Sides (28, 28): 5.6 ns. Compute: leaf 0: 192*3/4 + 384/4 = 240 FLOP at 1 TFLOPS = 0.24 ns;
    # leaf 1: 48 + 288 = 336 at 3 TFLOPS = 0.112 ns. Step 5.84 ns.
    ev = evaluate_split(GNET, A1, plan1(II, "3/4", I, "1/4"))
    assert ev.group_amounts == (((F(28), F(28)),),)
    assert ev.leaf_compute_s == (F(240, 10**12), F(112, 10**12))
    assert ev.step_time_s == F(5840, 10**12)


def test_grouped_equal_split_is_the_homogeneous_model():
    arr = synthetic_array(2, [10, 40], dtype_bytes=2, peak_TFLOPS=3)
    for types in [((II, II), (II, III)), ((I, II), (II, I)), ((II, I), (I, II))]:
        plan = Plan(types)
        ev = evaluate(GNET, arr, Space.ACCPAR, plan)
        hv = evaluate_split(GNET, arr, Plan.even(plan))
        assert hv.step_time_s == ev.step_time_s and hv.traffic_bytes == ev.traffic_bytes


def test_whole_units_rule():
    """A side must get a whole number of groups: alpha * (the group's count of groups) an integer."""
    c1 = GNET.layers[0]
    assert whole_units(c1, [II], [[F(1, 4)]]) and not whole_units(c1, [II], [[F(1, 8)]])
    # level 0 splits 1 : 3; level 1 halves each side: the side of 1 group cannot
    assert not whole_units(c1, [II, II], [[F(1, 4)], [F(1, 2), F(1, 2)]])
    assert whole_units(c1, [II, II], [[F(1, 2)], [F(1, 2), F(1, 2)]])
    assert not whole_units(c1, [II, II], [[F(1, 4)], [F(1, 2), F(1, 3)]])  # a side of 1 group cannot split at all
    assert whole_units(c1, [II, I], [[F(1, 4)], [F(1, 2), F(1, 3)]])  # a batch split below: 1 and 3 groups kept
    assert whole_units(c1, [I, II], [[F(1, 8)], [F(1, 4), F(3, 4)]])  # a batch split leaves 4 groups each
    assert whole_units(GNET.layers[1], [II], [[F(1, 8)]])  # not a grouped conv: no rule
    with pytest.raises(ValueError, match="fraction of its 4 groups"):
        evaluate_split(GNET, A1, plan1(II, "1/8", II, "1/4"))
    # the solvers' candidates: c1's group split only at 1/4, 1/2 and 3/4 of the 1/8 grid, its batch split at all 7
    from explorer.solvers.uneven import _columns
    cols = _columns(GNET, Space.ACCPAR, alpha_space(A1, alpha_grid(8)), 1)
    assert sorted(c[0][1][0] for c in cols[0] if c[0][0] is II) == [F(1, 4), F(1, 2), F(3, 4)]
    assert len([c for c in cols[0] if c[0][0] is I]) == 7 and not any(c[0][0] is III for c in cols[0])
    assert len(cols[1]) == 3 * 7


def _random_grouped_instance(rng):
    """Tiny chains with a depthwise or grouped conv among the layers (at most 400 plans)."""
    while True:
        H = rng.choice([1, 1, 2])
        L = rng.choice([2, 3]) if H == 1 else 2
        grid = alpha_grid(rng.choice([2, 3, 4, 6]))
        if (3 * len(grid)) ** (H * L) <= 400:
            break
    net = random_chain(rng.randrange(10**6), L, max_channels=16, max_size=4)
    k = rng.randrange(L)
    G = rng.choice([2, 3, 4, 6, 8])
    layers = list(net.layers)
    layers[k] = Layer(f"g{k}", LayerKind.CONV, G * rng.choice([1, 2]), G * rng.choice([1, 2]), (3, 3), (4, 4), (4, 4),
                      groups=G)
    net = Network.chain(net.name + "-g", net.batch, layers)
    peaks = [rng.choice([1, 2, 3, 5]) for _ in range(2**H)]
    arr = mix(H, peaks, bw=rng.choice([1, 10, 100]), dtype=rng.choice([1, 2, 4]))
    return net, arr, Space.ACCPAR, grid


def test_grouped_brute_equals_exact_equals_cpsat_on_random_instances():
    rng = random.Random(1313)
    uneven_group_split = 0
    for k in range(60):
        net, arr, space, grid = _random_grouped_instance(rng)
        b = brute_split(net, arr, space, grid)
        e = exact_uneven(net, arr, space, grid)
        assert b.step_time_s == e.step_time_s
        assert evaluate_split(net, arr, e.plan).step_time_s == e.step_time_s
        if k % 4 == 0:
            c = cpsat_uneven(net, arr, space, grid)
            assert c.status is Status.OPTIMAL and c.step_time_s == c.bound_s == e.step_time_s
        lv = levels_uneven(net, arr, space, grid)  # the AccPar-style level DP: a heuristic, a plan of the space
        assert evaluate_split(net, arr, lv.plan).step_time_s == lv.step_time_s >= e.step_time_s
        g = next(i for i, L in enumerate(net.layers) if L.groups > 1)
        uneven_group_split += any(e.plan.types[h][g] is II and e.plan.alphas[h][0][g] != F(1, 2) for h in range(arr.levels))
    assert uneven_group_split > 0  # some optima split the groups unevenly


def test_search_keeps_whole_units():
    """The search moves a class's alpha on every layer but a grouped conv whose sides would then
    hold a fraction of its groups: that layer keeps its alpha (the evaluator would refuse it)."""
    from explorer.solvers.uneven import search_level_alphas

    start = plan1(II, "1/2", I, "1/2")
    sol = search_level_alphas(GNET, A1, start, alpha_grid(8))
    c1, f2 = sol.plan.alphas[0][0]
    assert c1 in (F(1, 4), F(1, 2), F(3, 4)) and f2 != F(1, 2)  # f2 moved off 1/2; c1 only to whole groups
    assert evaluate_split(GNET, A1, sol.plan).step_time_s == sol.step_time_s
    assert sol.step_time_s < evaluate_split(GNET, A1, start).step_time_s
