"""Mixture of experts (Mixtral) in the LLM planner: hand goldens on a tiny MoE (parameters,
FLOPs with the router, activations, all-to-all amounts, expert parallelism's memory and traffic),
Mixtral's published counts, the HF config and the zoo YAML building the same network, bad input."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from explorer.core.cluster import ClusterSpec, GpuKind, Tier
from explorer.core.llm_experts import alltoall_elements, alltoall_seconds
from explorer.core.llm_memory import Parallelism, Recompute, Tokens, ZeroStage, moe_activation_bytes_per_layer
from explorer.core.llm_stage import data_seconds, part_costs
from explorer.core.llm_step import LlmLayout, evaluate_llm
from explorer.frontends.transformer import Family, TransformerShape, build_transformer
from explorer.frontends.transformer_params import active_parameter_count, parameter_count
from explorer.frontends.transformer_problem import llm_problem
from explorer.frontends.transformer_source import load_transformer

HF = Path(__file__).resolve().parent / "hf_configs"
NONE, SEL, FULL = Recompute.NONE, Recompute.SELECTIVE, Recompute.FULL

# a tiny MoE: l = 2, h = 8, a = 2 heads of 4, 1 KV head, 4 experts of ffn 4, top-2, V = 16, untied; s = 4, B = 4
TINY = TransformerShape(Family.LLAMA, layers=2, hidden=8, heads=2, kv_heads=1, ffn=4, vocab=16, experts=4, top_k=2)


def toy_cluster(gpus: int = 4, per_node: int = 2) -> ClusterSpec:
    """Nodes of 2 GPUs: 100 GB/s each way inside a node, 10 GB/s between nodes; 1 TFLOP/s, 1 GiB."""
    tiers = (Tier("nvlink", per_node, Fraction(100)),) + ((Tier("ib", gpus, Fraction(10)),) if gpus > per_node else ())
    return ClusterSpec("toy", GpuKind("toy-gpu", Fraction(1), Fraction(1)), per_node, gpus, tiers)


def tiny(gpus: int = 4, batch: int = 4):
    return llm_problem(TINY, toy_cluster(gpus), batch, 4, "tiny-moe")


def layout(t=1, p=1, d=4, e=1, b=1, r=NONE, z=ZeroStage.ZERO0):
    return LlmLayout(Parallelism(t, p, d, expert=e), b, r, z)


# --- counts ---------------------------------------------------------------------------------

def test_tiny_parameters_by_hand():
    # per layer: q 8x8 = 64, k and v 8 x (1 x 4) = 32 each, o 64: 192; experts 4 x 3 x 8 x 4 = 384;
    # router 8 x 4 = 32; two RMSNorms 16: 624, of which 384 expert weights. Embedding and untied
    # head 16 x 8 = 128 each, final norm 8: 2 x 624 + 264 = 1,512; active: 2 of 4 experts, 1,512 - 2 x 192 = 1,128.
    pc = parameter_count(TINY)
    assert (pc.per_layer, pc.expert_per_layer, pc.embedding, pc.head, pc.final_norm) == (624, 384, 128, 128, 8)
    assert pc.total == 1512 and active_parameter_count(TINY) == 1128


@pytest.mark.parametrize("name,total,active", [
    # Mistral AI, arXiv 2401.04088: 47B total, 13B active (their release post: 46.7B and 12.9B)
    ("mixtral-8x7b", 46_702_792_704, 12_879_925_248),
    # mistral.ai/news/mixtral-8x22b: 141B total, 39B active
    ("mixtral-8x22b", 140_630_071_296, 39_161_468_928),
])
def test_mixtral_counts_match_the_published_figures(name, total, active):
    shape = load_transformer(name).shape
    assert parameter_count(shape).total == total and active_parameter_count(shape) == active
    published = {"mixtral-8x7b": (46.7e9, 12.9e9), "mixtral-8x22b": (141e9, 39e9)}[name]
    assert abs(total - published[0]) / published[0] < 0.005 and abs(active - published[1]) / published[1] < 0.01


def test_tiny_flops_by_hand():
    # forward per token: attention matmuls 192 MACs, the 2 routed experts' SwiGLU 3 x 8 x 8 = 192,
    # router 32: 416 MACs = 832 FLOPs, x 4 tokens = 3,328; attention core 2 x s^2 x 8 = 256 MACs = 512
    # FLOPs a sample: 3,840 forward, 11,520 training per layer and sample.
    p = tiny()
    assert part_costs(p, layout(b=1)).block.flops == 11_520
    assert part_costs(p, layout(b=1, r=FULL)).block.flops == 11_520 + 3_840  # the whole forward again
    assert part_costs(p, layout(b=1, r=SEL)).block.flops == 11_520 + 512  # the attention core again
    ev = evaluate_llm(p, layout(d=4, b=1))
    # model FLOPs of the step: 4 samples x (2 layers x 11,520 + head 6 x 4 x 8 x 16 = 3,072) = 104,448
    assert ev.mfu * ev.step_time_s * 4 * 10**12 == 104_448


def test_moe_activations_by_hand():
    tok = Tokens(4, 1, 8, 2)
    # s b h = 32; split: 4 + 4 kv/a (2) + 6 k ffn/h (6) + 2 a s/h (2) = 14, replicated 8: 22 x 32 = 704;
    # routed copies 4 k s b h = 256 and router probabilities 4 s b E = 64: 1,024 bytes
    assert moe_activation_bytes_per_layer(tok, 1, 4, 4, 2) == 1024
    assert moe_activation_bytes_per_layer(tok, 1, 4, 4, 2, recompute=SEL) == 1024 - 64
    assert moe_activation_bytes_per_layer(tok, 1, 4, 4, 2, recompute=FULL) == 64  # the layer input
    assert moe_activation_bytes_per_layer(tok, 1, 4, 4, 2, tensor=2) == 512  # all of it split with sequence parallelism


def test_alltoall_by_hand():
    p = tiny()
    # e = 2, t = 1, b = 1: a GPU's routed token-vectors k s b h = 2 x 4 x 8 = 64 elements; an
    # all-to-all keeps 1/2 of them: 32 sent; 4 a layer and micro-batch (dispatch and combine, forward
    # and backward): 128 elements = 256 bytes, at 100 GB/s (2 ranks: one node)
    assert alltoall_elements(p, layout(e=2)) == 32
    assert alltoall_seconds(p, layout(e=2)) == Fraction(256, 100 * 10**9)
    assert alltoall_seconds(p, layout(e=2, r=FULL)) == Fraction(384, 100 * 10**9)
    # e = 4: keeps 1/4, sends 48; 4 ranks span the two nodes: 10 GB/s
    assert alltoall_elements(p, layout(e=4)) == 48
    assert alltoall_seconds(p, layout(e=4)) == Fraction(4 * 2 * 48, 10 * 10**9)
    assert alltoall_elements(p, layout(e=1)) == 0
    # in the step: 2 layers x m = B / (d b) = 1 micro-batch x the layer's all-to-alls
    ev = evaluate_llm(p, layout(e=4))
    assert ev.expert_comm_s == 2 * 1 * alltoall_seconds(p, layout(e=4)) and ev.expert_comm_s <= ev.tensor_comm_s


def test_expert_parallelism_divides_the_expert_states():
    p = tiny()
    # 768 expert weights, 744 others; t = 1, d = 4, ZeRO 0: e = 2 halves the experts' 16 bytes
    m1 = evaluate_llm(p, layout(e=1)).memory
    m2 = evaluate_llm(p, layout(e=2)).memory
    assert m1.weights == 2 * 1512 and m2.weights == 2 * (744 + 384)
    assert m2.optimizer == 12 * (744 + 384) and m1.activations == m2.activations
    # ZeRO-1 shards the experts' optimizer over the d / e = 2 ranks holding them: 12 x 768 / (2 x 2)
    z = evaluate_llm(p, layout(e=2, z=ZeroStage.ZERO1)).memory
    assert z.optimizer == Fraction(12 * 744, 4) + Fraction(12 * 768, 4)


def test_expert_gradients_are_all_reduced_over_d_over_e():
    p = tiny()
    # d = 4, t = 1: 744 dense parameters all-reduced over 4 ranks (2 x 3/4 x 2 bytes each), spanning
    # both nodes (10 GB/s); the 768 expert weights: e = 2, 384 a GPU over d / e = 2 ranks (2 x 1/2 x 2)
    bw = 10 * 10**9
    assert data_seconds(p, layout(e=2), 1512, 768) == Fraction(3 * 744 + 2 * 384, bw)
    assert data_seconds(p, layout(e=4), 1512, 768) == Fraction(3 * 744, bw)  # each expert on one rank
    assert data_seconds(p, layout(e=1), 1512, 768) == data_seconds(p, layout(e=1), 1512) == Fraction(3 * 1512, bw)


# --- the HF config and the zoo YAML ---------------------------------------------------------

def test_hf_config_and_zoo_yaml_build_the_same_mixtral():
    hf = load_transformer(str(HF / "Mixtral-8x7B-v0.1.json"), 4096)
    zoo = load_transformer("mixtral-8x7b")
    assert hf.shape == zoo.shape and parameter_count(hf.shape) == parameter_count(zoo.shape)
    a = build_transformer(hf.shape, "a", 8, 4096, "a")
    b = build_transformer(zoo.shape, "b", 8, 4096, "b")
    assert (a.layers, a.edges, a.edge_shares) == (b.layers, b.edges, b.edge_shares)


def test_tiny_hf_config_and_yaml_agree(tmp_path):
    cfg = {"model_type": "mixtral", "num_hidden_layers": 2, "hidden_size": 8, "num_attention_heads": 2,
           "num_key_value_heads": 1, "intermediate_size": 4, "vocab_size": 16, "num_local_experts": 4,
           "num_experts_per_tok": 2, "max_position_embeddings": 4, "tie_word_embeddings": False}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "m.yaml").write_text("# tiny\nversion: 1\nname: m\nbatch: 4\nsequence: 4\ntransformer: {family: llama, "
                                     "layers: 2, hidden: 8, heads: 2, kv_heads: 1, ffn: 4, vocab: 16, experts: 4, top_k: 2}\n")
    hf, y = load_transformer(str(tmp_path / "config.json")), load_transformer(str(tmp_path / "m.yaml"))
    assert hf.shape == y.shape == TINY and hf.sequence == y.sequence == 4
    names = [L.name for L in build_transformer(TINY, "t", 1, 4, "t").layers if L.name.startswith("l0_")]
    assert names == ["l0_q", "l0_k", "l0_v", "l0_att", "l0_o", "l0_add1", "l0_moe_gate", "l0_moe_up", "l0_moe_mul",
                     "l0_moe_down", "l0_add2"]
    net = build_transformer(TINY, "t", 1, 4, "t")
    gate = net.layers[net.layer_names.index("l0_moe_gate")]
    assert (gate.in_channels, gate.out_channels) == (8, 8)  # 2 routed experts of 4, side by side
    assert any(n.startswith("mixture of experts:") for n in net.approximations)


def test_dense_models_are_unchanged():
    shape = load_transformer("llama3-8b").shape
    assert not shape.moe and parameter_count(shape).expert_per_layer == 0
    assert parameter_count(shape).total == active_parameter_count(shape) == 8_030_261_248


# --- the search: expert degree searched, re-scored, against exhaustive scoring ---------------

SMALL_MOE = TransformerShape(Family.LLAMA, layers=4, hidden=1024, heads=8, kv_heads=4, ffn=4096, vocab=4096, experts=16,
                             top_k=2)


def small_moe(gpus: int = 16, memory_GiB=None):
    from dataclasses import replace as dc_replace

    from explorer.frontends import load_cluster

    c = load_cluster("dgx-h100", gpus)
    if memory_GiB is not None:
        c = dc_replace(c, gpu=dc_replace(c.gpu, memory_GiB=Fraction(memory_GiB)))
    return llm_problem(SMALL_MOE, c, 64, 1024, "small-moe")


def test_candidates_take_every_expert_degree_dividing_experts_and_data():
    from explorer.solvers.llm_space import expert_degrees

    assert expert_degrees(8, 16) == [1, 2, 4, 8] and expert_degrees(8, 12) == [1, 2, 4]
    assert expert_degrees(16, 8, 4) == [4] and expert_degrees(8, 6, 4) == [] and expert_degrees(0, 16) == [1]


def test_search_equals_exhaustive_under_a_memory_limit():
    """2 GiB a GPU: about half the layouts do not fit; the search (bounds, pruning) and scoring every
    layout find the same optimum, every bound holds, and the best is the evaluator's own verdict."""
    from explorer.app.llm_check import check_llm
    from explorer.solvers.llm_space import LlmSpace

    p = small_moe(memory_GiB=2)
    c = check_llm(p, LlmSpace(max_micro_batch=4, zeros=(ZeroStage.ZERO0,)))
    assert c.agree and c.bound_violations == 0 and c.search.pruned_memory > 0
    experts_seen = {s.candidate.degrees.expert for s in c.exhaustive.evaluated}
    assert experts_seen == {1, 2, 4, 8, 16}
    assert any(not s.fits for s in c.exhaustive.evaluated) and any(s.fits for s in c.exhaustive.evaluated)
    best = c.search.best
    again = evaluate_llm(p, best.layout)
    assert again == best.evaluation and again.fits
    d, e = best.candidate.degrees.data, best.candidate.degrees.expert
    assert best.layout.parallelism.expert == e and d % e == 0 and 16 % e == 0


def test_expert_parallelism_pays_when_the_experts_do_not_fit_otherwise():
    """Fixed t = 1, p = 1, d = 16, ZeRO 0, 5 GiB a GPU: 826 M parameters, 805 M of them expert
    weights, 16 bytes each: 12.3 GiB a GPU holding every expert, 6.3 GiB at e = 2; only e >= 4 fits,
    and the search's best (re-scored by the evaluator) shards them."""
    from explorer.solvers.llm_search import search
    from explorer.solvers.llm_space import LlmSpace

    p = small_moe(memory_GiB=5)
    space = LlmSpace(tensor=1, pipeline=1, data=16, max_micro_batch=2, zeros=(ZeroStage.ZERO0,))
    every = search(p, space, prune=False)
    fits = {(s.candidate.degrees.expert, s.fits) for s in every.evaluated}
    assert fits == {(1, False), (2, False), (4, True), (8, True), (16, True)}
    r = search(p, space)
    assert r.best is not None and r.best.candidate.degrees.expert >= 4 and r.pruned_memory > 0
    assert evaluate_llm(p, r.best.layout) == r.best.evaluation and r.best.step_time_s == every.best.step_time_s


# --- the CLI --------------------------------------------------------------------------------

MIXTRAL = ["--array", "dgx-h100", "--gpus", "16", "--model", "mixtral-8x7b", "--batch", "64", "--seq", "1024"]


def test_cli_megatron_layout_with_an_expert_degree(capsys):
    from .conftest import run_cli

    code, out, err = run_cli(MIXTRAL + ["--layout", "megatron", "--degrees", "tensor=2,pipeline=4,data=2,expert=2",
                                        "--micro-batch", "1", "--recompute", "selective", "--zero", "1"], capsys)
    assert code == 0, err
    assert ("plan: t=2 (tensor), p=4 (pipeline, 1F1B), d=2 (data), e=2 (expert parallel, EP: experts sharded 2 ways "
            "inside d), micro-batch size 1,") in out
    assert "8 experts (top-2, routing assumed balanced)" in out and "expert all-to-all" in out
    assert "moe_gate III, moe_up III, moe_mul II, moe_down II" in out


def test_cli_json_says_the_expert_degree(capsys):
    from .conftest import run_cli

    code, out, err = run_cli(MIXTRAL + ["--layout", "megatron", "--degrees", "t=2,p=4,d=2,e=2", "--micro-batch", "1",
                                        "--recompute", "selective", "--zero", "1", "--format", "json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["degrees"] == {"tensor": 2, "pipeline": 4, "data": 2, "expert": 2}
    assert data["inputs"]["experts"] == 8 and data["inputs"]["top_k"] == 2
    assert Fraction(str(data["expert_comm_s"])) > 0


def test_cli_check_on_a_mixture_of_experts(capsys):
    from .conftest import run_cli

    code, out, err = run_cli(["check", *MIXTRAL, "--degrees", "tensor=2,pipeline=4", "--recompute", "selective",
                              "--zero", "1"], capsys)
    assert code == 0, err
    assert "agree: yes" in out and " e=" in out


@pytest.mark.parametrize("args, line", [
    (["--degrees", "tensor=2,pipeline=4,data=2,expert=3"], "--degrees: expert=3 does not divide the model's 8 experts"),
    (["--degrees", "tensor=2,pipeline=4,data=2,expert=4"],
     "--degrees: expert=4 does not divide data=2 (experts are sharded inside the data-parallel group)"),
    (["--degrees", "tensor=8,pipeline=2,expert=2"], "--degrees: expert=2 divides the data degree of no layout"),
    (["--degrees", "expert=2,expert=2"], "--degrees: expert given twice"),
    (["--degrees", "expert=0"], "--degrees: expert=0: must be between 1 and 10,000,000"),
])
def test_cli_bad_expert_degree(args, line, capsys):
    from .conftest import run_cli

    code, out, err = run_cli(MIXTRAL + args, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and line in err and "Traceback" not in err


def test_cli_expert_degree_on_a_dense_model(capsys):
    from .conftest import run_cli

    code, out, err = run_cli(["--array", "dgx-h100", "--gpus", "16", "--model", "llama3-8b", "--batch", "64",
                              "--degrees", "expert=2"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--degrees: expert=2 on a dense model" in err


@pytest.mark.parametrize("change, drop, line", [
    ({"num_experts_per_tok": 9}, (), "num_experts_per_tok: 9 experts a token is more than the 8 experts"),
    ({"num_local_experts": 0}, (), "num_local_experts: must be a positive integer, got 0"),
])
def test_cli_bad_mixtral_config(change, drop, line, capsys, tmp_path):
    from .conftest import run_cli

    cfg = json.loads((HF / "Mixtral-8x7B-v0.1.json").read_text())
    cfg.update(change)
    for k in drop:
        del cfg[k]
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    code, out, err = run_cli(["--array", "dgx-h100", "--gpus", "8", "--model", str(p), "--batch", "8"], capsys)
    assert code == 2 and out == "" and err.strip().splitlines() == [f"explore: error: {p}: {line}"]


@pytest.mark.parametrize("block, line", [
    ("experts: 4", "transformer.top_k: missing"),
    ("experts: 2, top_k: 3", "transformer.top_k: 3 experts a token is more than the 2 experts"),
    ("top_k: 2", "transformer.experts: top_k 2 given without experts"),
])
def test_cli_bad_moe_yaml(block, line, capsys, tmp_path):
    from .conftest import run_cli

    p = tmp_path / "m.yaml"
    p.write_text("version: 1\nname: m\nbatch: 8\nsequence: 64\ntransformer: {family: llama, layers: 2, hidden: 64, "
                 f"heads: 4, ffn: 64, vocab: 100, {block}}}\n")
    code, out, err = run_cli(["--array", "dgx-h100", "--gpus", "8", "--model", str(p)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and line in err


def test_mixtral_step_flops_against_a_closed_form():
    """Model FLOPs of a step (evaluate_llm's MFU x time x GPUs x peak) against a count by hand of
    Mixtral's active work: per token and layer 2 (h q + 2 h kv + q h) for the attention matmuls,
    2 k 3 h ffn for the k routed experts, 2 h E for the router; per sample and layer 4 s^2 q for the
    attention core; 2 s h V a sample for the head; training = 3 x forward."""
    from explorer.frontends import load_cluster

    shape = load_transformer("mixtral-8x7b").shape
    B, s, h, l, V, E, k, f = 16, 512, 4096, 32, 32000, 8, 2, 14336
    q, kv = 4096, 1024
    per_token = 2 * (h * q + 2 * h * kv + q * h) + 2 * k * 3 * h * f + 2 * h * E
    forward = B * (l * (s * per_token + 4 * s * s * q) + 2 * s * h * V)
    p = llm_problem(shape, load_cluster("dgx-h100", 16), B, s, "mixtral-8x7b")
    ev = evaluate_llm(p, LlmLayout(Parallelism(2, 2, 4, expert=4), 1, SEL, ZeroStage.ZERO1))
    peak = p.cluster.gpu.peak_TFLOPS * 10**12
    assert ev.mfu * ev.step_time_s * 16 * peak == 3 * forward
    # Megatron's count (tflops_per_gpu) adds selective recomputation's attention core, 4 s^2 q a sample and layer
    assert ev.tflops_per_gpu * ev.step_time_s * 16 * 10**12 == 3 * forward + B * l * 4 * s * s * q


def test_a_given_layout_has_no_expert_parallelism_unless_asked(capsys):
    from .conftest import run_cli

    code, out, err = run_cli(MIXTRAL + ["--layout", "zero3", "--format", "json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["degrees"] == {"tensor": 1, "pipeline": 1, "data": 16, "expert": 1} and data["zero"] == 3
    code, out, err = run_cli(MIXTRAL + ["--layout", "zero3", "--degrees", "expert=2"], capsys)
    assert code == 2 and "--degrees: expert=2 with --layout zero3" in err


def test_zoo_mixtral_is_refused_on_an_accelerator_array(capsys):
    from .conftest import run_cli

    code, out, err = run_cli(["--model", "mixtral-8x7b", "--levels", "1"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--model: 'mixtral-8x7b' is a mixture of experts: it is planned on a GPU cluster" in err


def test_routed_copies_tensor_exchange_by_hand():
    """e = 2 and t = 2 (Megatron-Core's all-to-all dispatcher): the 2 routed copies of a token are
    all-gathered over the tensor ranks and reduce-scattered back, one copy more than the dense MLP's
    exchanges the nodes charge: s b h = 32; (1/2 + 1/2) x 32 forward, as much backward: 64 elements,
    128 bytes at 100 GB/s (t = 2: one node) a layer and micro-batch; none at e = 1 or t = 1."""
    from dataclasses import replace as dc_replace

    from explorer.core.llm_experts import routed_tensor_elements

    p = llm_problem(dc_replace(TINY, kv_heads=2), toy_cluster(4), 4, 4, "tiny-moe-mha")  # t = 2 splits 2 KV heads
    lay = LlmLayout(Parallelism(2, 1, 2, expert=2), 1, NONE, ZeroStage.ZERO0)
    assert routed_tensor_elements(p, lay) == 64
    assert routed_tensor_elements(p, LlmLayout(Parallelism(2, 1, 2, expert=2), 1, FULL)) == 96
    assert routed_tensor_elements(p, LlmLayout(Parallelism(2, 1, 2), 1, NONE)) == 0
    assert routed_tensor_elements(p, layout(e=2)) == 0  # t = 1
    with_e = part_costs(p, lay).block.tensor_s
    without = part_costs(p, LlmLayout(Parallelism(2, 1, 2), 1, NONE, ZeroStage.ZERO0)).block.tensor_s
    assert with_e - without == Fraction(128, 100 * 10**9) + alltoall_seconds(p, lay)


def seeded_moe_instances(n: int, seed: int = 7):
    import random

    rng = random.Random(seed)
    for i in range(n):
        experts = rng.choice([2, 4, 8])
        shape = TransformerShape(Family.LLAMA, layers=rng.choice([2, 4]), hidden=512, heads=8, kv_heads=rng.choice([2, 8]),
                                 ffn=rng.choice([1024, 2048]), vocab=2048, experts=experts,
                                 top_k=rng.randint(1, min(2, experts)))
        yield pytest.param(shape, rng.choice([8, 16]), rng.choice([16, 32]), rng.choice([256, 512]),
                           rng.choice([None, Fraction(1, 8), Fraction(1, 4)]),
                           tuple(rng.sample(list(ZeroStage), rng.randint(1, 2))), id=f"moe-{i}")


@pytest.mark.parametrize("shape, gpus, batch, seq, memory_GiB, zeros", list(seeded_moe_instances(3)))
def test_search_equals_exhaustive_on_seeded_moe_instances(shape, gpus, batch, seq, memory_GiB, zeros):
    """Seeded random small mixtures of experts (experts, top-k, widths, GPUs, memory caps, ZeRO):
    the search and exhaustive scoring agree, no scored layout lies below its time or memory bound,
    and the best is the evaluator's verdict on its layout."""
    from dataclasses import replace as dc_replace

    from explorer.app.llm_check import check_llm
    from explorer.frontends import load_cluster
    from explorer.solvers.llm_space import LlmSpace

    c = load_cluster("dgx-h100", gpus)
    if memory_GiB is not None:
        c = dc_replace(c, gpu=dc_replace(c.gpu, memory_GiB=memory_GiB))
    p = llm_problem(shape, c, batch, seq, "random-moe")
    chk = check_llm(p, LlmSpace(max_micro_batch=2, zeros=zeros, recomputes=(SEL, FULL)))
    assert chk.agree and chk.bound_violations == 0
    assert {s.candidate.degrees.expert for s in chk.exhaustive.evaluated} > {1}
    if chk.search.best is not None:
        assert evaluate_llm(p, chk.search.best.layout) == chk.search.best.evaluation


@pytest.mark.parametrize("recomputes", [(SEL,), (FULL,)])
def test_moe_time_bound_counts_the_tensor_level_and_stays_a_bound(recomputes):
    """The search's time bound with the tensor level of a mixture of experts (Megatron's block and,
    under expert parallelism, the routed tokens' extra copies) is at most the scored step time of
    every layout of a small MoE's space; at t > 1 the tensor term is there (it was 0) and equals
    what the step model charges a layer (linear in the micro-batch), and it raises the bound."""
    from explorer.core.llm_block import megatron_types
    from explorer.core.llm_experts import routed_tensor_elements
    from explorer.core.llm_stage import block_amounts
    from explorer.solvers.llm_bounds import time_bound_s
    from explorer.solvers.llm_search import block_floor, search, time_bound
    from explorer.solvers.llm_space import LlmSpace
    from explorer.solvers.llm_type_choice import TypeChooser

    p = small_moe()
    space = LlmSpace(max_micro_batch=4, zeros=(ZeroStage.ZERO1,), recomputes=recomputes)
    full, types = search(p, space, prune=False), TypeChooser(p, space)
    mega = tuple(megatron_types(p.network, p.dims.layers))
    raised = routed = 0
    for s in full.evaluated:
        c, lay = s.candidate, s.layout
        tb = time_bound(p, c, full.floor_s, types)
        assert tb <= s.step_time_s
        if c.degrees.tensor == 1:
            continue
        floor = block_floor(p, c, types)
        charged = block_amounts(p, mega, c.degrees.tensor, c.micro_batch, lay.parallelism.sequence_parallel,
                                c.recompute).activations + routed_tensor_elements(p, lay)
        assert floor > 0 and floor * c.micro_batch == charged
        raised += tb > time_bound_s(p, c, full.floor_s)
        routed += c.degrees.expert > 1 and routed_tensor_elements(p, lay) > 0
    assert raised and routed
