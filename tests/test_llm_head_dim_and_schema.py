"""Trial 14's findings 1 and 7 on the LLM planner: a config's ``head_dim`` (heads x head_dim !=
hidden) sizes the activation memory as it sizes the FLOPs and weights (Q, K, V and the attention
output are a d and kv d wide); and the JSON has the same keys whether a plan fits or not
(``fits`` beside ``ok``, the plan's keys null)."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from explorer.core.cluster import ClusterSpec, GpuKind, Tier
from explorer.core.llm_memory import (Parallelism, Recompute, Tokens, ZeroStage, gated_activation_bytes_per_layer,
                                      moe_activation_bytes_per_layer)
from explorer.core.llm_step import LlmLayout, evaluate_llm
from explorer.frontends.transformer import Family, TransformerShape
from explorer.frontends.transformer_problem import llm_problem

from .conftest import run_cli

NONE, SEL, FULL = Recompute.NONE, Recompute.SELECTIVE, Recompute.FULL
# s = 16, b = 2, h = 64, a = 4 heads (h/a = 16), 2 KV heads, ffn 128: s b h = 2,048
TOK = Tokens(16, 2, 64, 4)


def test_gated_layer_with_head_dim_twice_hidden_over_heads_by_hand():
    """head_dim d = 32 = 2 h/a, t = 2. Bytes of the tensors the backward keeps (Korthikanti et al.
    section 4, 16-bit): norms' and QKV / gate-up inputs 8 s b h = 16,384 (replicated without
    sequence parallelism); Q 2 s b a d = 8,192; K and V 4 s b kv d = 8,192; the output projection's
    input 2 s b a d = 8,192; gate and up outputs 4 s b ffn = 16,384; down's input 2 s b ffn =
    8,192; the softmax output 2 a s^2 b = 4,096 (not kept under selective recomputation)."""
    d = 32
    assert gated_activation_bytes_per_layer(TOK, 2, 128, 2, True, SEL, d) == (16384 + 3 * 8192 + 16384 + 8192) // 2
    assert gated_activation_bytes_per_layer(TOK, 2, 128, 2, True, SEL, d) == 32_768
    assert gated_activation_bytes_per_layer(TOK, 2, 128, 2, True, NONE, d) == 32_768 + 2_048
    assert gated_activation_bytes_per_layer(TOK, 2, 128, 2, False, SEL, d) == 16_384 + 49_152 // 2
    assert gated_activation_bytes_per_layer(TOK, 2, 128, 2, True, FULL, d) == 2 * 2048 // 2  # the layer input
    # d = h/a: Q, K + V and the output projection's input are 4,096 each, 6,144 bytes less on this GPU
    assert gated_activation_bytes_per_layer(TOK, 2, 128, 2, True, SEL) == 32_768 - 3 * 4096 // 2
    # a head_dim below h/a (Mistral-NeMo's 128 < 5120/32): d = 8, Q, K + V and O 2,048 each
    assert gated_activation_bytes_per_layer(TOK, 2, 128, 2, True, SEL, 8) == 26_624 - 3 * 2048 // 2


def test_head_dim_equal_to_hidden_over_heads_changes_nothing():
    """A config that states the standard head_dim (h/a) gets the same bytes, exactly."""
    for mode in (NONE, SEL, FULL):
        for sp in (True, False):
            assert (gated_activation_bytes_per_layer(Tokens(8192, 1, 16384, 128), 8, 53248, 8, sp, mode, 128)
                    == gated_activation_bytes_per_layer(Tokens(8192, 1, 16384, 128), 8, 53248, 8, sp, mode))
    with pytest.raises(ValueError, match="head_dim: must be an integer >= 0"):
        gated_activation_bytes_per_layer(TOK, 2, 128, 2, True, SEL, -1)


def test_moe_layer_with_head_dim_by_hand():
    """The MoE layer takes the dense layer's attention tensors: d = 2 h/a adds Q, K + V and O's
    6,144 bytes on t = 2 (as above), the experts' and router's tensors unchanged."""
    base = moe_activation_bytes_per_layer(TOK, 2, 128, 4, 2, 2, True, SEL)
    assert moe_activation_bytes_per_layer(TOK, 2, 128, 4, 2, 2, True, SEL, 32) == base + 6_144
    assert moe_activation_bytes_per_layer(TOK, 2, 128, 4, 2, 2, True, FULL, 32) == 2_048


def _cluster() -> ClusterSpec:
    return ClusterSpec("toy", GpuKind("toy-gpu", Fraction(1), Fraction(1)), 2, 2, (Tier("nvlink", 2, Fraction(100)),))


def _activations(head_dim: int, rc: Recompute, **moe) -> Fraction:
    shape = TransformerShape(Family.LLAMA, layers=2, hidden=64, heads=4, kv_heads=2, ffn=128, vocab=256,
                             head_dim=head_dim, **moe)
    layout = LlmLayout(Parallelism(2, 1, 1), 2, rc, ZeroStage.ZERO0)
    return evaluate_llm(llm_problem(shape, _cluster(), 2, 16), layout).memory.activations


@pytest.mark.parametrize("moe", [{}, {"experts": 4, "top_k": 2}], ids=["dense", "moe"])
def test_the_step_model_sizes_the_attention_by_head_dim(moe):
    """Through the step model (t = 2, one stage, one micro-batch of 2): head_dim 32 = 2 h/a stores
    6,144 bytes more a layer (2 layers), with or without recomputation of the scores (the layer
    being recomputed holds the same scores); full recomputation keeps the layer inputs only, and
    the one layer rebuilt at a time for its backward holds its 6,144 more while it runs."""
    for rc in (SEL, NONE):
        assert _activations(32, rc, **moe) - _activations(0, rc, **moe) == 2 * 6_144
    assert _activations(16, SEL, **moe) == _activations(0, SEL, **moe)  # the standard head_dim, stated
    assert _activations(32, FULL, **moe) - _activations(0, FULL, **moe) == 6_144


LLAMA_HD = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
            "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 64}
GIVEN = ["--array", "dgx-a100", "--gpus", "8", "--batch", "8", "--seq", "32", "--layout", "megatron",
         "--degrees", "t=1,p=1,d=8", "--micro-batch", "1", "--recompute", "selective", "--zero", "0", "--format", "json"]


def test_the_cli_plan_counts_a_config_head_dim_in_memory(tmp_path, capsys):
    """An HF config with head_dim 32 (2 h/a) against the same without (d = h/a = 16; t = 1, one
    micro-batch of s = 32 tokens in flight): memory per GPU grows by the extra weights' 16 bytes a
    parameter (q 64 x a d, k and v 64 x kv d, o a d x 64: 2 layers x (3 x 8,192 - 3 x 4,096) =
    24,576 more parameters) and by the activations, s b (2 a d - 2 h) for Q and for O and s b (4 kv
    d - 4 kv h/a) for K and V: 3 x 32 x 128 = 12,288 bytes a layer, 24,576 for the 2 layers."""
    out = {}
    for name, extra in (("std", {}), ("hd", {"head_dim": 32})):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({**LLAMA_HD, **extra}))
        code, text, _ = run_cli(["--model", str(path)] + GIVEN, capsys)
        assert code == 0
        out[name] = json.loads(text)
    grow = out["hd"]["inputs"]["parameters"] - out["std"]["inputs"]["parameters"]
    assert grow == 2 * (64 * 128 + 2 * 64 * 64 + 128 * 64) - 2 * (64 * 64 + 2 * 64 * 32 + 64 * 64) == 24_576
    memory = [Fraction(out[k]["memory_bytes_per_accelerator"]) for k in ("std", "hd")]
    assert memory[1] - memory[0] == 16 * grow + 2 * 12_288


# ---- 7. the JSON's keys do not depend on whether a plan fits ---------------------------------

SMALL = ["--model", "gpt3-1.7b", "--array", "dgx-a100", "--gpus", "8", "--batch", "32", "--seq", "512",
         "--recompute", "none", "--zero", "0", "--format", "json"]


def test_json_has_the_same_keys_with_and_without_a_plan(capsys):
    """Nothing fits in 0.01 GiB: ``ok`` and its alias ``fits`` false, every plan key present and
    null (``runners_up`` empty), in the order a plan's JSON has them; with a plan ``reason`` and
    ``smallest_memory_bytes`` are null."""
    code, text, _ = run_cli(SMALL, capsys)
    plan = json.loads(text)
    code_none, text, _ = run_cli(SMALL + ["--memory", "0.01"], capsys)
    none = json.loads(text)
    assert (code, code_none) == (0, 1) and none["status"] == "infeasible"
    assert list(none) == list(plan) and list(none["approx"]) == list(plan["approx"])
    assert none["ok"] is False and none["fits"] is False and plan["fits"] is plan["ok"] is True
    for key in ("degrees", "micro_batch", "step_time_s", "memory_bytes_per_accelerator", "compute_s", "stages",
                "tensor_types", "tensor_types_origin", "recompute", "zero"):
        assert none[key] is None and plan[key] is not None, key
    assert none["runners_up"] == [] and none["approx"]["step_time_s"] is None
    assert none["reason"] == "no layout fits in the GPU's memory" and plan["reason"] is None
    assert plan["smallest_memory_bytes"] is None and none["memory_bound_bytes"] is not None


def test_moe_json_has_the_same_keys_with_and_without_a_plan(capsys):
    """A mixture of experts' JSON adds degrees' expert and expert_comm_s: null too without a plan."""
    args = ["--model", "mixtral-8x7b", "--array", "dgx-h100", "--gpus", "16", "--batch", "16", "--seq", "2048",
            "--layout", "megatron", "--degrees", "t=1,p=1,d=16,e=8", "--micro-batch", "1", "--recompute",
            "selective", "--zero", "3", "--format", "json"]
    code, text, _ = run_cli(args, capsys)
    plan = json.loads(text)
    code_none, text, _ = run_cli(args + ["--memory", "1"], capsys)
    none = json.loads(text)
    assert (code, code_none) == (0, 1) and list(none) == list(plan) and list(none["approx"]) == list(plan["approx"])
    assert "expert_comm_s" in none and none["expert_comm_s"] is None and none["fits"] is False
