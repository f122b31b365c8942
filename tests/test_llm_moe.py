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
