"""AccPar's hierarchical DP for uneven splits (solvers.uneven_levels): a hand-computed choice, each
level's DP against brute force over its own cost, plans in the declared space, re-scored by the
evaluator and never better than the proven optimum."""

import json
from dataclasses import replace
import random
from fractions import Fraction as F
from itertools import product
from pathlib import Path

import pytest

from explorer.api import solve
from explorer.core.array import AcceleratorKind, ArraySpec, synthetic_array
from explorer.core.errors import Refused
from explorer.core.comm import edge_split, training_flops
from explorer.core.timing import step_time
from explorer.core.uneven import FreeAlphas, alpha_grid, alpha_space, group_shares, side_share, spec_of
from explorer.core.evaluate import evaluate_split
from explorer.core.network import Layer, LayerKind, Network
from explorer.core.partition import JOIN_TYPES, Dim, PartitionType, Size, Space
from explorer.core.plan import Plan
from explorer.core.randnet import random_chain, random_dag_spec
from explorer.core.solution import Status
from explorer.frontends import load_array, load_model
from explorer.frontends.network_yaml import parse_network
from explorer.solvers.brute import solve_split as brute_split
from explorer.solvers.uneven import exact_uneven
from explorer.solvers.uneven_levels import level_cost, level_dp_plan, levels_uneven

I, II, III = PartitionType.I, PartitionType.II, PartitionType.III


def size_share(shares, size):
    """A size's share of the group's dimension shares (S is never split): the reference's own."""
    out = F(1)
    for d in size.dims:
        out *= shares.get(d, F(1))
    return out


def mix(levels, peaks, bw, dtype=2, overlap=False):
    kinds = {p: AcceleratorKind(f"k{p}", F(p), F(16)) for p in set(peaks)}
    return ArraySpec("mix", levels, dtype, (F(bw),) * levels, min(F(p) for p in peaks), F(16),
                     leaves=tuple(kinds[p] for p in peaks), overlap=overlap)


# f1: 4 -> 2, f2: 2 -> 2, batch 8: f1 A(F)=32, A(W)=8, A(F_out)=16, 384 FLOP; f2 A(F)=16, A(W)=4, A(F_out)=16, 192 FLOP.
NET = Network.chain("two-fc", 8, [Layer("f1", LayerKind.FC, 4, 2), Layer("f2", LayerKind.FC, 2, 2)])
# One level, a 1-TFLOPS and a 3-TFLOPS accelerator, 2-byte elements at 2000 GB/s: 1 ps per element.
A1 = mix(1, [1, 3], 2000)


def test_hand_computed_choice_on_a_two_layer_chain():
    """AccPar's cost by hand (ps), alpha in {1/4, 1/2, 3/4}, types {I, II}:
    f1 I(a): side 0 384a + 8 (dW), side 1 384(1-a)/3 + 8: a=1/4 104|104, 1/2 200|72, 3/4 296|40 -> 104 at 1/4.
    f1 II(a): the partial sums of F_out (16) instead of dW (8): 112 at best.
    f2 I(b) after f1 I(a): 192b + 4 + |a-b|*16 (forward row(a)->row(b) plus backward) and
    64(1-b) + 4 + |a-b|*16: b = a = 1/4: 52|52; a=1/4, b=1/2: 96 + 4 + 4 = 104|40; II costs 16 of F_out.
    Best: I(1/4), I(1/4), 104 + 52 = 156 ps; I(1/4), I(1/2): 104 + 104 = 208; I(1/2), I(1/2): 200 + 100 = 300."""
    sol = levels_uneven(NET, A1, Space.HYPAR, alpha_grid(4))
    assert sol.plan.types == ((I, I),) and sol.plan.alphas == (((F(1, 4), F(1, 4)),),)
    ps = F(1, 10**12)
    assert level_cost(NET, A1, sol.plan, 0) == 156 * ps
    assert level_cost(NET, A1, Plan(((I, I),), ((F(1, 4), F(1, 2)),)), 0) == 208 * ps
    assert level_cost(NET, A1, Plan(((I, I),), ((F(1, 2), F(1, 2)),)), 0) == 300 * ps
    # the evaluator: each accelerator computes 144 ps (576/4 at 1 TFLOPS = 576*3/4 at 3) and sends 12 (dW): 156 ps
    assert sol.step_time_s == evaluate_split(NET, A1, sol.plan).step_time_s == 156 * ps
    assert sol.status is Status.FEASIBLE and sol.bound_s is None and sol.solver == "levels"


def _level_candidates(network, space, aspace, h):
    rows = list(product(*(aspace.choices(h, c) for c in range(len(aspace.class_free[h])))))
    out = []
    for layer in network.layers:
        types = [t for t in space.types if not layer.is_join or t in JOIN_TYPES]
        out.append([(t, r) for t in types for r in rows])
    return out


def _brute_level(network, array, space, aspace, plan, h):
    """The least level-h cost over every choice of level h, the plan's levels above kept."""
    best = None
    for cand in product(*_level_candidates(network, space, aspace, h)):
        types = plan.types[:h] + (tuple(t for t, _ in cand),)
        alphas = plan.alphas[:h] + (tuple(tuple(r[c] for _, r in cand) for c in aspace.group_class[h]),)
        c = level_cost(network, array, Plan(types, alphas), h)
        best = c if best is None or c < best else best
    return best


def _random_mix(rng, H, in_order=False, overlap=False):
    """Two random kinds on 2^H leaves: sorted (the kinds apart, as tpu-mix-16) or in any order."""
    kinds = [rng.choice([1, 2, 3, 5]) for _ in range(2)]
    ordered = in_order or rng.random() < 0.5
    leaves = sorted(rng.choice(kinds) for _ in range(2**H)) if ordered else [rng.choice(kinds) for _ in range(2**H)]
    return mix(H, leaves, rng.choice([1, 10, 100, 2000]), overlap=overlap)


@pytest.mark.parametrize("seed", range(12))
def test_each_level_is_optimal_for_its_own_cost_on_random_chains_and_graphs(seed):
    """Every level's choice attains the least level cost by brute force (given the levels above):
    frontier elimination, the float tensors and the coefficient tables against the exact definition."""
    rng = random.Random(seed)
    H = 1 + seed % 2
    array = _random_mix(rng, H, overlap=seed % 5 == 1)  # with overlap a side's time is max(compute, exchange)
    if seed % 3 == 2:
        network = parse_network(random_dag_spec(seed, 4), "dag")
    else:
        network = random_chain(seed, 2 if H == 2 else 3, max_channels=16, max_size=4)
    space = Space.HYPAR if H == 2 or seed % 3 == 2 else Space.ACCPAR
    aspace = alpha_space(array, alpha_grid(4), FreeAlphas.UNLIKE if seed % 4 else FreeAlphas.ALL)
    sol = levels_uneven(network, array, space, aspace)
    assert aspace.contains(sol.plan)
    plan = level_dp_plan(network, array, space, aspace)[0]  # the DP's own plan (before the block moves)
    assert aspace.contains(plan)
    for h in range(H):
        got, best = level_cost(network, array, plan, h), _brute_level(network, array, space, aspace, plan, h)
        assert best <= got <= best * (1 + F(1, 10**9))  # the DP ranks in floats: equal up to rounding


@pytest.mark.parametrize("seed", range(40))
def test_never_better_than_the_proven_optimum_and_always_in_the_space(seed):
    """The optimum: brute force on the smallest cases, the exact Pareto DP (proven equal to it in
    test_uneven_model) on the others. A heuristic has no other guarantee; the gaps are in the bench."""
    rng = random.Random(100 + seed)
    H = 1 + seed % 2
    array = _random_mix(rng, H, in_order=H == 2)  # two levels: the exact DP stays under a second
    network = random_chain(seed, 2 + seed % 3 if H == 1 else 2, max_channels=32, max_size=4)
    aspace = alpha_space(array, alpha_grid(4), FreeAlphas.ALL if seed % 5 == 0 and H == 1 else FreeAlphas.UNLIKE)
    sol = levels_uneven(network, array, Space.HYPAR, aspace)
    best = (brute_split if seed % 4 == 0 and H == 1 else exact_uneven)(network, array, Space.HYPAR, aspace)
    assert aspace.contains(sol.plan)
    assert sol.step_time_s == evaluate_split(network, array, sol.plan).step_time_s
    assert best.status is Status.OPTIMAL and best.step_time_s <= sol.step_time_s


@pytest.mark.parametrize("name", ["alexnet", "vgg-a", "resnet18"])
def test_homogeneous_one_level_with_halves_is_hypars_time_optimum(name):
    """One kind, alpha fixed at 1/2, one level: the per-level cost is compute/2 plus the exchange,
    HyPar's c_0 in time: the step time is that of HyPar's time-optimal DP plan."""
    network = load_model(name)
    array = synthetic_array(1, [60], dtype_bytes=2, peak_TFLOPS=F(1, 2))
    sol = levels_uneven(network, array, Space.ACCPAR, (F(1, 2),))
    dp = solve(network, array=array, space="accpar", objective="time", solver="dp")
    ref = evaluate_split(network, array, Plan.even(dp.plan))
    assert sol.step_time_s == ref.step_time_s
    assert all(a == F(1, 2) for groups in sol.plan.alphas for row in groups for a in row)


def test_zoo_on_the_tpu_mix_is_in_the_space_and_scored_by_the_evaluator():
    array = load_array("tpu-mix-16")
    aspace = alpha_space(array, alpha_grid(16))
    for name in ("alexnet", "resnet18"):
        network = load_model(name)
        sol = levels_uneven(network, array, Space.ACCPAR, aspace)
        assert aspace.contains(sol.plan)
        assert sol.step_time_s == evaluate_split(network, array, sol.plan).step_time_s
        # level 0 (v2x8 | v3x8) gives the v2 side less than half of the first conv; every level below splits 1/2
        assert sol.plan.alphas[0][0][0] < F(1, 2)
        assert all(a == F(1, 2) for groups in sol.plan.alphas[1:] for row in groups for a in row)
        # measured, not guaranteed (a heuristic): faster than HyPar's time-optimal plan split equally
        dp = solve(network, array=array, space="accpar", objective="time", solver="dp")
        assert sol.step_time_s < evaluate_split(network, array, Plan.even(dp.plan)).step_time_s


@pytest.mark.parametrize("cells", [8_000, 400])
def test_a_mix_with_many_free_classes_uses_blocks(monkeypatch, cells):
    """Too many free classes for a joint level: block coordinate descent ((type, one class's
    alpha) blocks at 8,000 cells; types alone then alphas alone at 400), still in the space, and
    each level never above its start (all type I, the proportional split on the grid): every
    block is solved exactly given the others, from the current choice."""
    import explorer.solvers.uneven_levels as hl

    rng = random.Random(7)
    array = mix(3, [rng.choice([1, 3]) for _ in range(8)], 100)
    network = random_chain(3, 4, max_channels=16, max_size=4, consistent=False)  # the instance as measured
    aspace = alpha_space(array, alpha_grid(8), FreeAlphas.ALL)
    assert max(len(row) for row in aspace.class_free) >= 2
    joint = levels_uneven(network, array, Space.ACCPAR, aspace)
    joint = replace(joint, plan=level_dp_plan(network, array, Space.ACCPAR, aspace)[0])  # the DP's own plans
    monkeypatch.setattr(hl, "MAX_CELLS", cells)
    used = []
    make_blocks = hl._blocks
    monkeypatch.setattr(hl, "_blocks", lambda *a: used.append((a[1].h, len(b := make_blocks(*a)))) or b)
    blocks = replace(joint, plan=level_dp_plan(network, array, Space.ACCPAR, aspace)[0])
    # level 1 and 2 have two free classes: one block each, or types + one per class
    assert used[-2:] == [(1, 2), (2, 2)] if cells == 8_000 else used == [(0, 2), (1, 3), (2, 3)]
    assert aspace.contains(blocks.plan) and aspace.contains(joint.plan)
    assert level_cost(network, array, joint.plan, 0) <= level_cost(network, array, blocks.plan, 0)
    L = len(network.layers)
    for h in range(3):
        row = hl._start_row(array, aspace, h)
        start = Plan(blocks.plan.types[:h] + ((I,) * L,),
                           blocks.plan.alphas[:h] + (tuple((row[c],) * L for c in aspace.group_class[h]),))
        assert level_cost(network, array, blocks.plan, h) <= level_cost(network, array, start, h)


def test_explore_split_levels(capsys):
    """``explore split --split levels``: the levels DP's plan, scored by the evaluator, status feasible."""
    from explorer.app.split import Split, split_run

    from .conftest import run_cli

    net, arr = load_model("alexnet"), load_array("tpu-mix-16")
    r = split_run(net, arr, Space.ACCPAR, Split.LEVELS)
    assert r.plan == levels_uneven(net, arr, Space.ACCPAR, alpha_grid(16)).plan
    assert r.step_time_s == evaluate_split(net, arr, r.plan).step_time_s and r.status is Status.FEASIBLE
    eq = split_run(net, arr, Space.ACCPAR, Split.EQUAL)
    assert r.compared == eq.compared and r.step_time_s < eq.step_time_s
    code, out, err = run_cli(["split", "--model", "lenet-c", "--split", "levels", "--format", "json"], capsys)
    assert code == 0, err
    import json

    data = json.loads(out)
    assert data["split"] == "levels" and data["status"] == "feasible"


def test_a_level_too_wide_even_for_blocks_is_refused(monkeypatch):
    import explorer.solvers.uneven_levels as hl
    

    monkeypatch.setattr(hl, "MAX_CELLS", 10)
    monkeypatch.setattr(hl, "MAX_CELLS_ALONE", 10)
    with pytest.raises(Refused, match="level 0: the graph's frontier is too wide"):
        levels_uneven(NET, A1, Space.HYPAR, alpha_grid(4))


def test_each_level_is_optimal_for_its_own_cost_with_grouped_convs():
    """As above on tiny chains with a grouped conv: the DP's candidates (types the node offers at
    the level, whole groups on every side) against brute force over the same candidates."""
    from explorer.core.uneven import whole_units

    from .test_uneven_model import _random_grouped_instance

    rng = random.Random(77)
    split = 0
    for _ in range(12):
        network, array, space, grid = _random_grouped_instance(rng)
        aspace = alpha_space(array, grid)
        sol = levels_uneven(network, array, space, aspace)
        assert aspace.contains(sol.plan)
        sol = replace(sol, plan=level_dp_plan(network, array, space, aspace)[0])  # the DP's own plan
        for h in range(array.levels):
            rows = list(product(*(aspace.choices(h, c) for c in range(len(aspace.class_free[h])))))
            cands = []
            for l, layer in enumerate(network.layers):  # noqa: E741
                ok = []
                for t in space.types:
                    for r in rows:
                        alphas = [[row[l] for row in sol.plan.alphas[k]] for k in range(h)] + \
                                 [[r[c] for c in aspace.group_class[h]]]
                        if layer.offers(t, h) and whole_units(layer, [sol.plan.types[k][l] for k in range(h)] + [t], alphas):
                            ok.append((t, r))
                cands.append(ok)
            best = None
            for cand in product(*cands):
                types = sol.plan.types[:h] + (tuple(t for t, _ in cand),)
                alphas = sol.plan.alphas[:h] + (tuple(tuple(r[c] for _, r in cand) for c in aspace.group_class[h]),)
                c = level_cost(network, array, Plan(types, alphas), h)
                best = c if best is None or c < best else best
            got = level_cost(network, array, sol.plan, h)
            assert best <= got <= best * (1 + F(1, 10**9))
        g = next(i for i, L in enumerate(network.layers) if L.groups > 1)
        split += any(sol.plan.types[h][g] is PartitionType.II for h in range(array.levels))
    assert split > 0


# ---- the level DP reads the one integer table (core.split_costs): pinned against its former formulas ----

PINNED = json.loads((Path(__file__).parent / "snapshots" / "level-dp-tpu-mix-16.json").read_text())


@pytest.mark.parametrize("name", ["lenet-c", "alexnet", "vgg-a", "resnet18"])
def test_tpu_mix_plans_are_those_of_the_levels_own_formulas(name):
    """tests/snapshots/level-dp-tpu-mix-16.json: the plans and values the level DP found with its own
    share/exchange/re-layout formulas (before it read ``SplitCosts``), alpha grid 1/16, both
    spaces, time and traffic, the declared space and the proportional one: unchanged (the DP's
    plan or the equal split, before the block moves, ``moves=False``)."""
    from explorer.app.split import proportional_space
    from explorer.core.objective import Objective
    from explorer.core.split_rules import SplitRules

    array, network = load_array("tpu-mix-16"), load_model(name)
    aspace = alpha_space(array, alpha_grid(16))
    for which, asp in (("opt", aspace), ("prop", proportional_space(array, aspace))):
        for space, objective in product((Space.HYPAR, Space.ACCPAR), (Objective.TIME, Objective.TRAFFIC)):
            want = PINNED[f"{which}|{name}|{space.value}|{objective.value}"]
            plan = levels_uneven(network, array, space, asp, rules=SplitRules(objective), name="dp", moves=False)
            assert [" ".join(t.name for t in row) for row in plan.plan.types] == want["types"]
            assert [[" ".join(str(a) for a in g) for g in lvl] for lvl in plan.plan.alphas] == want["alphas"]
            assert str(plan.split_value) == want["value"]


def _former_level_cost(network, array, plan, h):
    """The level cost as the level DP computed it before the table: Fraction shares per group
    (``core.uneven.group_shares``), ``comm.edge_split`` coefficients, ``comm.training_flops``."""
    H, peaks = array.levels, array.leaf_peaks_TFLOPS()
    n = 2 ** (H - h)
    per_elem = array.dtype_bytes / array.bandwidth_Bps(h)
    in_edges = [[] for _ in network.layers]
    for (u, v), share in zip(network.edges, network.edge_shares):
        in_edges[v].append((u, share))
    b = network.batch
    total = F(0)
    for l, layer in enumerate(network.layers):  # noqa: E741
        t = plan.types[h][l]
        whole = (layer.input_elements(b), layer.weight_elements(), layer.output_elements(b))
        worst = F(0)
        for g in range(2**h):
            s = group_shares(plan, h, g, l, layer)
            a = plan.alphas[h][g][l]
            tensor = None if layer.is_join else spec_of(layer, t).exchanges
            x = 0 if tensor is None else whole[tensor.size.index] * size_share(s, tensor.size)
            sent = [F(x), F(x)]
            for u, share in in_edges[l]:
                pair = edge_split(network.layers[u], plan.types[h][u], plan.alphas[h][g][u], layer, t, a)
                for side in (0, 1):
                    sent[side] += pair[side] * whole[0] * size_share(s, Size.F_IN) * share
            flops = training_flops(layer, b) * s[Dim.B] * s[Dim.D_I] * s[Dim.D_O] * s[Dim.G]
            for side in (0, 1):
                peak = sum(peaks[g * n + side * n // 2: g * n + (side + 1) * n // 2]) * 10**12
                compute = flops * side_share(a, side) / peak
                worst = max(worst, step_time(compute, sent[side] * per_elem, array.overlap))
        total += worst
    return total


@pytest.mark.parametrize("seed", range(16))
def test_level_cost_from_the_table_equals_the_former_fraction_formulas(seed):
    """Random chains and graphs, one to three levels, random plans with random alphas per group
    (grid 1/8 and the proportional ratios: D not a power of 2), with and without overlap: the
    table's level cost is the former formulas' exactly, at every level."""
    rng = random.Random(500 + seed)
    H = 1 + seed % 3
    array = _random_mix(rng, H, overlap=seed % 4 == 3)
    network = parse_network(random_dag_spec(seed, 5), "dag") if seed % 2 else random_chain(seed, 4, max_channels=16)
    aspace = alpha_space(array, alpha_grid(8), FreeAlphas.ALL)
    values = list(aspace.values()) + [F(1, 3), F(2, 5)]
    for _ in range(4):
        types = tuple(tuple(rng.choice([t for t in Space.HYPAR.types if not layer.is_join or t in JOIN_TYPES])
                            for layer in network.layers) for _ in range(H))
        alphas = tuple(tuple(tuple(rng.choice(values) for _ in network.layers) for _ in range(2**h)) for h in range(H))
        plan = Plan(types, alphas)
        for h in range(H):
            assert level_cost(network, array, plan, h) == _former_level_cost(network, array, plan, h)
