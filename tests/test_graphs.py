"""Graph networks: joins, hand-computed residual costs, chain-as-graph, solvers on DAGs, ONNX import."""

import itertools
import json
import random
from fractions import Fraction

import onnx
import pytest

from explorer.core.array import synthetic_array
from explorer.app.cli import main
from explorer.core.errors import Refused, SpecError
from explorer.core.evaluate import evaluate
from explorer.core.network import LayerKind
from explorer.frontends.network_yaml import load_network_file, load_network_text, parse_network
from explorer.core.partition import PartitionType as T
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.problem import Problem
from explorer.core.randnet import random_dag_spec
from explorer.app.run import rescore
from explorer.frontends import load_model, load_network_path
from explorer.frontends.onnx import load_onnx
from explorer.solvers import brute, cpsat, dp, elimination, exact
from explorer.core.solution import SolveOptions, Status

from .conftest import make_array
from .onnx_nets import (
    RESIDUAL_YAML,
    attention_net,
    constant_weight_net,
    grouped_conv_net,
    residual_net,
    resnet18,
    unsupported_net,
    weight_first_matmul_net,
)

ONE = SolveOptions(workers=1, seed=0)

RESIDUAL = """version: 1
name: block
batch: 2
layers:
  - {name: A, kind: fc, in_features: 4, out_features: 8}
  - {name: B, kind: fc, in_features: 8, out_features: 8}
  - {name: res, kind: add, inputs: [A, B]}
"""

# batch 2. A: A(F)=8, A(W)=32, A(Fout)=16. B: A(F)=16, A(W)=64, A(Fout)=16. res: tensor 2*8 = 16.
# Edges A->B (weighted -> weighted, on B's F=16), A->res and B->res (into the join, on its 16).
# Join types: I keeps the row layout, II the column layout (explorer/network.py).
#   (I, II, I):  intra A I 32 + B II 16; A->B I->II 4+4 = 8; A->res row->row 0;
#                B->res: fwd dup->row 0, bwd row->dup 16/2 = 8               -> 64
#   (II, II, II): 16 + 16; A->B II->II E/2 = 8; A->res: fwd dup->col 0, bwd col->dup 8;
#                B->res: 8                                                   -> 56
#   (I, I, I):   32 + 64, every edge row->row 0                              -> 96
#   (II, I, II): 16 + 64; A->B II->I E/2 = 8; A->res: 8;
#                B->res: fwd row->col 4, bwd col->row 4 = 8                  -> 104
RESIDUAL_GOLDEN = {(T.I, T.II, T.I): 64, (T.II, T.II, T.II): 56, (T.I, T.I, T.I): 96, (T.II, T.I, T.II): 104}


@pytest.mark.parametrize("plan", list(RESIDUAL_GOLDEN))
def test_residual_block_golden(plan):
    net = load_network_text(RESIDUAL, "block")
    assert net.edges == ((0, 1), (0, 2), (1, 2)) and net.layers[2].kind is LayerKind.ADD
    ev = evaluate(net, make_array(1), Space.HYPAR, Plan((plan,)))
    assert ev.level_cost == (RESIDUAL_GOLDEN[plan],)
    p = Problem(net, make_array(1), Space.HYPAR)
    assert dp.solve(p).objective == 56 * p.tables.unit_per_element  # min over all 8 plans: 56


def test_edge_out_of_a_join_golden():
    # RESIDUAL plus C: fc 8 -> 2 reading res (batch 2: A(F_C) = 16, A(W_C) = 16, A(Fout_C) = 4).
    #   (II, II, II, I):  56 as above + intra C I 16 + res(II: column) -> C(I: needs rows):
    #                     fwd col->row 16/4 = 4, bwd C's row error -> res's column: 4  -> 80
    #   (II, II, II, II): 56 + intra C II 4 + res -> C: col->col both ways 0          -> 60
    #   (I, I, I, II):    96 + 4 + res(I: row) -> C(II: needs columns, produces column error):
    #                     fwd row->col 4, bwd col->row 4                               -> 108
    text = RESIDUAL + "  - {name: C, kind: fc, in_features: 8, out_features: 2, inputs: [res]}\n"
    net = load_network_text(text, "block+C")
    for plan, cost in (((T.II, T.II, T.II, T.I), 80), ((T.II, T.II, T.II, T.II), 60), ((T.I, T.I, T.I, T.II), 108)):
        assert evaluate(net, make_array(1), Space.HYPAR, Plan((plan,))).level_cost == (cost,), plan


def test_join_takes_no_type_iii():
    net = load_network_text(RESIDUAL, "block")
    p = Problem(net, make_array(2), Space.ACCPAR)
    assert p.allowed(0, 2) == (T.I, T.II)
    for sol in (dp.solve(p), cpsat.solve(p, ONE), brute.solve(p)):
        assert all(row[2] is not T.III for row in sol.plan.types)


def test_concat_edges_carry_their_share():
    text = """version: 1
name: cat
batch: 1
layers:
  - {name: a, kind: conv, in_channels: 2, out_channels: 4, kernel: 1, in_size: 2, out_size: 2, inputs: []}
  - {name: b, kind: conv, in_channels: 2, out_channels: 12, kernel: 1, in_size: 2, out_size: 2, inputs: []}
  - {name: cat, kind: concat, inputs: [a, b]}
  - {name: c, kind: conv, in_channels: 16, out_channels: 4, kernel: 1, in_size: 2, out_size: 2}
"""
    net = load_network_text(text)
    assert net.layers[2].in_channels == 16
    assert net.edge_shares == (Fraction(1, 4), Fraction(3, 4), Fraction(1))
    # level 0, (a=I, b=II, cat=II, c=II): cat tensor 1*16*4 = 64 elements
    # a->cat: fwd row->col 1/4, bwd col->row 1/4 of a's share 16 -> 8;  b->cat: fwd dup->col 0, bwd col->dup 1/2 of 48 -> 24
    # cat->c (join II -> conv II): fwd col->col 0, bwd col->col 0 -> 0
    # intra: a I: A(W)=8; b II: A(Fout)=48; c II: A(Fout)=16  -> 8+48+16 + 8+24 = 104
    ev = evaluate(net, make_array(1), Space.HYPAR, Plan(((T.I, T.II, T.II, T.II),)))
    assert ev.level_cost == (104,)


def test_chain_written_as_graph_costs_the_same():
    rng = random.Random(0)
    for name in ("lenet-c", "alexnet"):
        chain = load_model(name)
        text = open(chain.source).read()
        spec = parse_network_dict(text)
        layers = spec["layers"]
        for i, L in enumerate(layers):
            L["inputs"] = [layers[i - 1]["name"]] if i else []
        spec["layers"] = list(reversed(layers))  # any order: sorted topologically
        graph = parse_network(spec, "graph")
        assert graph.layer_names == chain.layer_names and graph.edges == chain.edges and graph.is_chain
        for space in Space:
            for _ in range(5):
                plan = Plan(tuple(tuple(rng.choice(space.types) for _ in chain.layers) for _ in range(3)))
                arr = make_array(3)
                assert evaluate(chain, arr, space, plan).level_cost == evaluate(graph, arr, space, plan).level_cost


def parse_network_dict(text):
    import yaml

    return yaml.safe_load(text)


@pytest.mark.parametrize(
    "text,message",
    [
        (RESIDUAL.replace("inputs: [A, B]", "inputs: [A, Z]"), "layers[2].inputs: names no node 'Z' (a dangling input)"),
        (RESIDUAL.replace("inputs: [A, B]", "inputs: [A]"), "layers[2].inputs: an add node joins two or more inputs"),
        (RESIDUAL.replace("out_features: 8}\n  - {name: res", "out_features: 8, inputs: [A, res]}\n  - {name: res"),
         "layers[1].inputs: a fc layer takes one input"),
        (RESIDUAL.replace("{name: A, kind: fc, in_features: 4, out_features: 8}",
                          "{name: A, kind: fc, in_features: 4, out_features: 8, inputs: [res]}"),
         "the inputs form a cycle through A, B, res"),
        (RESIDUAL.replace("in_features: 8, out_features: 8", "in_features: 8, out_features: 6"),
         "inputs of add node 'res' have different channels [8, 6]"),
        (RESIDUAL.replace("inputs: [A, B]}", "inputs: [A, B], stride: 2}"), "layers[2].stride: unknown key"),
        (RESIDUAL.replace("name: res", "name: input"), "'input' is reserved"),
    ],
)
def test_graph_spec_errors(text, message):
    with pytest.raises(SpecError) as err:
        load_network_text(text, "g.yaml")
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("seed", range(80))
def test_cpsat_equals_brute_on_random_dags(seed):
    spec = random_dag_spec(seed, random.Random(seed).randint(3, 5))
    net = parse_network(spec, "dag")
    space = Space.HYPAR if seed % 2 else Space.ACCPAR
    H = 1 + (seed // 2) % 2
    p = Problem(net, synthetic_array(H), space)
    if brute.plan_count(p) > 60_000:
        p = Problem(net, synthetic_array(1), space)
    b, c, d, e = brute.solve(p), cpsat.solve(p, ONE), dp.solve(p), exact.solve(p)
    for s in (b, c, d, e):
        rescore(p, s)
    assert b.status is c.status is e.status is Status.OPTIMAL and b.objective == c.objective == e.objective
    assert d.objective >= b.objective


def test_graph_dp_is_level_optimal_on_random_dags():
    from explorer.app.check import CheckOptions, level_result

    for seed in range(20):
        net = parse_network(random_dag_spec(100 + seed, 6), "dag")
        p = Problem(net, synthetic_array(3), Space.ACCPAR)
        d = dp.solve(p)
        for h in range(3):
            res = level_result(p, d.plan.types, h, CheckOptions())
            assert res.method == "enumeration" and res.value == d.level_units[h]


def test_exact_on_graphs_and_its_refusal(monkeypatch):
    p = Problem(load_network_text(RESIDUAL), make_array(2), Space.HYPAR)
    e, b = exact.solve(p), brute.solve(p)
    assert e.status is Status.OPTIMAL and e.objective == b.objective
    rescore(p, e)
    # ResNet-50 at 16 accelerators, accpar: variable elimination agrees with CP-SAT's proof
    r50 = Problem(load_model("resnet50"), make_array(4), Space.ACCPAR)
    e, c = exact.solve(r50), cpsat.solve(r50, SolveOptions(workers=2))
    assert c.status is Status.OPTIMAL and e.objective == c.objective and e.info["width"] == 3
    # ResNet-18 at 64 accelerators, accpar: once refused ((3^6)^3 tables); now chain steps around the joins
    r18 = Problem(load_model("resnet18"), make_array(6), Space.ACCPAR)
    e = exact.solve(r18)
    assert e.status is Status.OPTIMAL and e.info["method"] == "graph-elimination"
    rescore(r18, e)
    assert e.objective <= dp.solve(r18).objective
    monkeypatch.setattr(elimination, "MAX_GRAPH_TABLE", 1000)
    with pytest.raises(Refused, match=r"exact: eliminating this graph would need a table beyond 1,000 entries"):
        exact.solve(r18)


@pytest.mark.parametrize("name,weighted,joins,params", [
    ("resnet18", 21, 8, 11_678_912), ("resnet34", 37, 16, 21_779_648),
    ("resnet50", 54, 16, 25_502_912),
    # BERT-base: 72 encoder matrices (84,934,656) + word/type/position embeddings
    # (30522*768 + 2*768 + 512*768 = 23,837,184) + pooler (589,824)
    ("bert-base", 76, 38, 109_360_128),
    # GPT-2 small: 12 * (768*2304 + 768*768 + 2 * 768*3072) = 84,934,656 + wte 50257*768 + wpe 1024*768
    ("gpt2-small", 50, 37, 124_318_464),
    # LLaMA-7B: 32 * (4 * 4096^2 + 3 * 4096*11008) + 2 * 32000*4096 = 6,738,149,376
    ("llama-7b", 226, 128, 6_738_149_376),
    ("vit-b16", 74, 36, 86_292_480),
    ("mobilenet-v2", 53, 10, 3_469_760),
    ("efficientnet-b0", 82, 25, 5_236_192),
])
def test_graph_zoo(name, weighted, joins, params):
    net = load_model(name)
    assert sum(not L.is_join for L in net.layers) == weighted
    assert sum(L.is_join for L in net.layers) == joins
    assert sum(L.weight_elements() for L in net.layers) == params
    assert not net.is_chain


def test_onnx_residual_equals_yaml(tmp_path):
    path = tmp_path / "res.onnx"
    onnx.save(residual_net(), str(path))
    from_onnx = load_network_path(path)
    from_yaml = load_network_text(RESIDUAL_YAML, "residual.yaml")
    assert from_onnx.layers == from_yaml.layers
    assert from_onnx.edges == from_yaml.edges and from_onnx.edge_shares == from_yaml.edge_shares
    for space in Space:
        a, b = Problem(from_onnx, make_array(3), space), Problem(from_yaml, make_array(3), space)
        assert dp.solve(a).plan == dp.solve(b).plan
        ca, cb = cpsat.solve(a, ONE), cpsat.solve(b, ONE)
        assert ca.objective == cb.objective and ca.status is Status.OPTIMAL
        for row in itertools.product(space.types, space.types, (T.I, T.II), space.types):  # the join: I or II
            plan = Plan((row,) * 3)
            assert evaluate(from_onnx, make_array(3), space, plan) == evaluate(from_yaml, make_array(3), space, plan)


def test_onnx_attention_and_errors(tmp_path):
    p = tmp_path / "att.onnx"
    onnx.save(attention_net(), str(p))
    net = load_onnx(p)
    kinds = [L.kind.value for L in net.layers]
    # Q.K^T and softmax.V are one attention node over Q, K, V (was two joins, the second one
    # read as an image); a 3-D score tensor [N, S, S] is one head.
    assert kinds == ["fc", "fc", "fc", "attention", "fc", "add"]
    att = net.layers[3]
    assert (att.in_channels, att.out_channels, att.heads, att.in_size) == (96, 32, 1, (16, 1))
    assert net.layers[0].input_elements(net.batch) == 2 * 16 * 32  # sequence as spatial extent
    assert net.approximations == ()
    (dw,) = load_onnx_model(tmp_path, grouped_conv_net()).layers  # grouped convolutions import
    assert (dw.groups, dw.in_channels, dw.out_channels, dw.weight_elements()) == (8, 8, 8, 8 * 9)
    for model, message in ((unsupported_net(), "node 'cmp' (Greater): combines activations of fc1, fc2"),
                           (weight_first_matmul_net(), "node 'wx' (MatMul): its stored weight is its first input (weight times activation)"),
                           (residual_net("N"), "input 'x' has a symbolic batch dimension 'N': pass --batch")):
        f = tmp_path / "bad.onnx"
        onnx.save(model, str(f))
        with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
            load_onnx(f)
    assert load_onnx(f, batch=6).batch == 6
    c = tmp_path / "cw.onnx"
    onnx.save(constant_weight_net(), str(c))
    (fc,) = load_onnx(c).layers
    assert (fc.kind, fc.in_channels, fc.out_channels) == (LayerKind.FC, 4, 5)
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not a protobuf at all")
    with pytest.raises(SpecError, match="cannot read as ONNX|shape inference failed|no weighted layer"):
        load_onnx(junk)


def load_onnx_model(tmp_path, model, **kw):
    f = tmp_path / "m.onnx"
    onnx.save(model, str(f))
    return load_onnx(f, **kw)


def test_cli_onnx_with_symbolic_batch(tmp_path, capsys):
    f = tmp_path / "resN.onnx"
    onnx.save(residual_net("N"), str(f))
    with pytest.raises(SystemExit) as ex:
        main(["--model", str(f), "--format", "json"])
    assert ex.value.code == 2 and "pass --batch" in capsys.readouterr().err
    with pytest.raises(SystemExit) as ex:
        main(["--model", str(f), "--batch", "16", "--solver", "cpsat", "--workers", "1", "--format", "json"])
    r = json.loads(capsys.readouterr().out)
    assert ex.value.code == 0 and r["batch"] == 16 and r["layers"] == ["convA", "convB", "res", "fc"]


def test_check_on_a_graph(capsys):
    with pytest.raises(SystemExit) as ex:
        main(["check", "--model", "resnet18", "--levels", "2", "--space", "accpar", "--workers", "1", "--format", "json"])
    r = json.loads(capsys.readouterr().out)
    assert ex.value.code == 0 and r["agree"]
    assert r["solvers"]["exact"]["status"] == r["solvers"]["cpsat"]["status"] == "optimal"
    assert r["solvers"]["exact"]["objective"] == r["solvers"]["cpsat"]["objective"]
    assert all(lv["dp_is_level_optimal"] for lv in r["levels"])


def test_onnx_resnet18_equals_the_zoo_yaml(tmp_path):
    # conv + batch norm + relu, max-pool, projection shortcuts, global pooling, flatten, gemm
    path = tmp_path / "resnet18.onnx"
    onnx.save(resnet18(), str(path))
    from_onnx, zoo = load_network_path(path), load_model("resnet18")
    assert from_onnx.layers == zoo.layers
    assert from_onnx.edges == zoo.edges and from_onnx.edge_shares == zoo.edge_shares
    assert from_onnx.batch == zoo.batch == 512


def test_is_chain_is_computed_once_and_stays_right():
    """``Network.is_chain`` is cached on the instance (it cost ~2 ms a call on a 10,000-layer chain):
    the cached answer equals a fresh computation, a replaced network computes its own, and the
    cache takes no part in equality, hashing, the repr or pickling."""
    import dataclasses
    import pickle

    from explorer.core.network import Network

    chain = load_model("alexnet")
    graph = load_model("resnet18")
    assert chain.is_chain and not graph.is_chain
    assert chain._chain is True and graph._chain is False  # cached after the first call
    assert chain.is_chain and not graph.is_chain
    rewired = dataclasses.replace(chain, edges=chain.edges[:-1] + ((0, len(chain.layers) - 1),))
    assert rewired._chain is None and not rewired.is_chain
    skipped = Network("x", 1, chain.layers[:3], ((0, 1), (1, 2), (0, 2)))
    assert not skipped.is_chain
    fresh = Network(chain.name, chain.batch, chain.layers, chain.edges, chain.source, chain.edge_shares)
    assert fresh == chain and hash(fresh) == hash(chain) and repr(fresh) == repr(chain)
    assert "_chain" not in repr(chain) and pickle.loads(pickle.dumps(chain)).is_chain
    assert chain.with_batch(2).is_chain and not graph.with_batch(2).is_chain
