"""Issue 21 items 5 to 8: the LLM step model (``core.llm_step.evaluate_llm``), its calibration
and the validation tables. Hand goldens on a tiny GPT on a 2-node toy cluster, the Korthikanti /
Narayanan closed forms reused (``core.llm_flops``, ``core.llm_memory``), memory never
under-counted, ZeRO-3's traffic, the calibration constant, and the validation errors within
the band measured by bench/validate_llm.py (a regression guard, not a claim of accuracy)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from explorer.core.cluster import ClusterSpec, GpuKind, Tier
from explorer.core.llm_block import block_parts, megatron_types
from explorer.core.llm_calibration import EFFICIENCY_A100, calibrate_efficiency, efficiency_for, rounded
from explorer.core.llm_flops import GptIteration, hardware_flops, model_flops, recompute_flops
from explorer.core.llm_memory import Parallelism, Recompute, Tokens, ZeroStage, stage_memory
from explorer.core.llm_stage import stage_cut
from explorer.core.llm_step import LlmLayout, evaluate_llm
from explorer.core.partition import PartitionType
from explorer.frontends.transformer import Family, TransformerShape
from explorer.frontends.transformer_problem import llm_problem

I, II, III = PartitionType.I, PartitionType.II, PartitionType.III
NONE, SEL, FULL = Recompute.NONE, Recompute.SELECTIVE, Recompute.FULL
NS = Fraction(1, 10**9)


# --- a toy GPU cluster ----------------------------------------------------------------------

def toy_cluster(gpus: int = 4, name: str = "toy-gpu", peak=Fraction(1), memory=Fraction(1), per_node: int = 2):
    """Nodes of 2 GPUs: 100 GB/s each way inside a node, 10 GB/s between nodes; 1 TFLOP/s, 1 GiB."""
    tiers = (Tier("nvlink", per_node, Fraction(100)),) + ((Tier("ib", gpus, Fraction(10)),) if gpus > per_node else ())
    return ClusterSpec("toy", GpuKind(name, peak, memory), per_node, gpus, tiers)


# a tiny GPT: l = 2, h = 8, a = 2, ffn = 4h = 32, V = 16, s = 4 (4 learned positions), tied head, B = 4
TINY = TransformerShape(Family.GPT, layers=2, hidden=8, heads=2, ffn=32, vocab=16, positions=4, tied_head=True)
HALF = Fraction(1, 2)


def tiny(batch: int = 4):
    return llm_problem(TINY, toy_cluster(), batch, 4, name="tiny")


def layout(t=2, p=2, d=1, b=1, rc=SEL, zero=ZeroStage.ZERO0, sp=True, **kw):
    return LlmLayout(Parallelism(t, p, d, sp), b, rc, zero, **kw)


def test_megatron_types_of_a_gpt_block():
    parts = block_parts(tiny().network, 2)
    assert len(parts.pre) == 3 and parts.block_len == 7 and parts.post == ()  # wte, wpe, emb | 7 nodes | (tied)
    # c_attn, attn, attn_proj, res1, mlp_fc, mlp_proj, res2
    assert megatron_types(tiny().network, 2) == (III, II, II, I, III, II, I)


def test_megatron_types_of_a_llama_block():
    """q, k, v column-parallel (III), attention II, o row-parallel (II), residual I, gate and up
    III, their SwiGLU product a II join, down II, residual I."""
    shape = TransformerShape(Family.LLAMA, layers=2, hidden=8, heads=4, ffn=16, vocab=16, kv_heads=2)
    prob = llm_problem(shape, toy_cluster(), 4, 4)
    assert megatron_types(prob.network, 2) == (III, III, III, II, II, I, III, III, II, II, I)
    ev = evaluate_llm(prob, layout(), efficiency=HALF)  # untied head: no explicit logit layer
    assert ev.fits and not any("tied" in n for n in ev.notes)


def test_tiny_gpt_pipeline_step_by_hand():
    """t = 2, p = 2, d = 1, b = 1 (m = 4), selective recompute, sequence parallelism (the
    default), efficiency 1/2 (so one FLOP costs 1 / (t x 10^12 x 1/2) = 1 ps).

    Compute per layer and micro-batch: 72 b s h^2 + 12 b s^2 h = 18,432 + 1,536 = 19,968 FLOPs,
    + selective recompute 4 b s^2 h = 512: 20,480 FLOPs = 20.48 ns. Tied logit layer (last stage):
    6 b s h V = 3,072 FLOPs = 3.072 ns.
    Tensor level (k = 2: reduce-scatter and all-gather (k-1)/k = 1/2 of the tensor, s b h = 32
    elements): sequence parallelism reduce-scatters into the token-split (type I, row) residual
    stream: proj (II) and fc2 (II) their outputs (each feeds only its residual add), QKV (III)
    and fc1 (III) their input errors (each is fed only by a residual add): 4 x 16 = 64; the
    stream is all-gathered four times (res2 -> next QKV and res1 -> fc1 forward, the adds'
    errors into proj and fc2 backward, II needs E_out whole): 4 x 16 = 64; the re-layouts from
    the reduce-scattered tensors (row -> row) are free. 128 elements x 2 bytes / 100 GB/s =
    2.56 ns per layer (Megatron's 8 (k-1)/k s b h). Embedding: wte (II) reduce-scatters its
    output into the add 16, wte -> emb backward 16, wpe (III, column) -> emb (row) all-to-all
    (k-1)/k^2 x 32 = 8 each way: 48 elements = 0.96 ns. Head (III): the all-gather of res2 into
    it 16 + its input error reduce-scattered into res2's rows 16: 32 = 0.64 ns.
    Point to point: s b h x 2 bytes / t = 32 bytes at 10 GB/s (2 t d = 4 spans both nodes) =
    3.2 ns, one send per micro-batch from each of the two stages.
    Stages (1 layer each): tau_0 = 20.48 + 2.56 + 0.96 + 3.2 = 27.2 ns; tau_1 = 20.48 + 2.56 +
    3.072 + 0.64 + 3.2 = 29.952 ns. Step = (m + p - 1) tau_1 = 5 x 29.952 = 149.76 ns."""
    ev = evaluate_llm(tiny(), layout(), efficiency=HALF)
    assert ev.stage_layers == (1, 1) and ev.microbatches == 4
    assert ev.stage_times_s == (Fraction("27.2") * NS, Fraction("29.952") * NS)
    assert ev.step_time_s == Fraction("149.76") * NS
    assert ev.compute_s == 4 * Fraction("23.552") * NS  # the slowest stage's m micro-batches of FLOPs
    assert ev.tensor_comm_s == 4 * Fraction("3.2") * NS
    assert ev.pipeline_comm_s == 4 * Fraction("3.2") * NS
    assert ev.bubble_s == Fraction("29.952") * NS and ev.bubble_fraction == Fraction(1, 5)
    assert ev.data_comm_s == 0
    assert ev.compute_s + ev.tensor_comm_s + ev.pipeline_comm_s + ev.bubble_s + ev.data_comm_s == ev.step_time_s
    # throughput: model FLOPs of the step = 4 samples x (2 x 19,968 + 3,072) = 172,032; + recompute 4 x 2 x 512
    assert ev.mfu == Fraction(172_032) / (ev.step_time_s * 4 * 10**12)
    assert ev.tflops_per_gpu == Fraction(172_032 + 4096) / (ev.step_time_s * 4 * 10**12)
    assert ev.efficiency == HALF and not ev.calibrated  # given, not the calibrated one
    assert any("tied" in n for n in ev.notes)


def test_tiny_gpt_without_sequence_parallelism_by_hand():
    """As above with sequence_parallel=False: every partial sum all-reduced (2(k-1)/k = 1 x the
    tensor): QKV, fc1 (III) their input errors, proj, fc2 (II) their outputs: 4 x 32 = 128; the
    four all-gathers of the split residual stream as above, 64: 192 elements = 3.84 ns a layer
    (12 (k-1)/k s b h). Embedding: wte's all-reduce 32 + 16 + 16 = 64 = 1.28 ns; head: 16 + its
    all-reduce 32 = 48 = 0.96 ns. tau_0 = 20.48 + 3.84 + 1.28 + 3.2 = 28.8 ns; tau_1 = 20.48 +
    3.84 + 3.072 + 0.96 + 3.2 = 31.552 ns; step 5 x 31.552 = 157.76 ns."""
    ev = evaluate_llm(tiny(), layout(sp=False), efficiency=HALF)
    assert ev.stage_times_s == (Fraction("28.8") * NS, Fraction("31.552") * NS)
    assert ev.step_time_s == Fraction("157.76") * NS
    assert ev.tensor_comm_s == 4 * Fraction("4.8") * NS


def test_tiny_gpt_full_recompute_by_hand():
    """As above (sequence parallelism on) with full recomputation: a layer's compute is 19,968 +
    its forward again (24 b s h^2 + 4 b s^2 h = 6,144 + 512) = 26,624 FLOPs = 26.624 ns; the
    recompute forward sends the forward's exchanges again: proj's and fc2's reduce-scatters,
    2 x 16, and the stream's forward all-gathers into QKV and fc1, 2 x 16: 64 of the 128
    elements, so 192 elements = 3.84 ns a layer. tau_0 = 26.624 + 3.84 + 0.96 + 3.2 = 34.624 ns;
    tau_1 = 26.624 + 3.84 + 3.072 + 0.64 + 3.2 = 37.376 ns; step 5 x 37.376 = 186.88 ns."""
    ev = evaluate_llm(tiny(), layout(rc=FULL), efficiency=HALF)
    assert ev.stage_times_s == (Fraction("34.624") * NS, Fraction("37.376") * NS)
    assert ev.step_time_s == Fraction("186.88") * NS
    assert ev.tensor_comm_s == 4 * (Fraction("3.84") + Fraction("0.64")) * NS


def test_tiny_gpt_memory_by_hand():
    """Parameters: a layer 12 h^2 + 13 h = 872; embedding (V + s) h = 160; final norm 2h = 16;
    the tied head's copy of the embedding on the last stage V h = 128 (Megatron keeps one for p > 1).
    Stage 0: (872 + 160) / t = 516 parameters x 16 bytes = 8,256; activations (selective, sequence
    parallel) 34 s b h / t = 544 bytes a layer x min(p, m) = 2 in flight = 1,088, + the embedding's
    dropout mask s b h p / t = 32, + the layer being recomputed (selective: its attention core, held
    while it runs) s b h (5 a s / h) / t = 16 x 5 = 80: 9,456 bytes. Stage 1: (872 + 16 + 128) / 2 =
    508 x 16 = 8,128; 544 x 1 in flight + the output layer 4 s b h / t (1 + V/h) = 192 + 80: 8,944."""
    ev = evaluate_llm(tiny(), layout(), efficiency=HALF)
    assert ev.memory_bytes_per_accelerator == 9456
    assert ev.memory.model_states == 8256 and ev.memory.activations == 1088 + 32 + 80
    assert ev.memory_limit_bytes == 2**30 and ev.fits


def test_tiny_gpt_data_parallel_all_reduce_by_hand():
    """t = 2, p = 1, d = 2: every parameter on the one stage, 2 x 872 + 160 + 16 = 1,920; a GPU's
    bf16 gradients 2 bytes x 1,920 / t = 1,920 bytes; ring all-reduce 2(d-1)/d = 1 of them at 10 GB/s
    (the data group spans t d = 4 ranks, both nodes): 192 ns, once a step, not overlapped."""
    ev = evaluate_llm(tiny(), layout(p=1, d=2), efficiency=HALF)
    assert ev.data_comm_s == 192 * NS
    assert ev.bubble_fraction == 0 and ev.pipeline_comm_s == 0
    assert ev.step_time_s == ev.compute_s + ev.tensor_comm_s + ev.data_comm_s


def test_zero3_adds_traffic_and_saves_memory():
    """ZeRO-3 over d = 2, m = 2: reduce-scatter (d-1)/d + two all-gathers a micro-batch (forward,
    backward), (1 + 2 x 2) x 1/2 x 1,920 = 4,800 bytes = 480 ns (> ZeRO-0's 192); with full
    recomputation a third gather a micro-batch: (1 + 3 x 2) x 1/2 x 1,920 = 6,720 bytes = 672 ns."""
    z0 = evaluate_llm(tiny(), layout(p=1, d=2), efficiency=HALF)
    z3 = evaluate_llm(tiny(), layout(p=1, d=2, zero=ZeroStage.ZERO3), efficiency=HALF)
    z3f = evaluate_llm(tiny(), layout(p=1, d=2, zero=ZeroStage.ZERO3, rc=FULL), efficiency=HALF)
    assert z3.data_comm_s == 480 * NS > z0.data_comm_s
    assert z3f.data_comm_s == 672 * NS
    assert z3.memory.model_states < z0.memory.model_states
    z1 = evaluate_llm(tiny(), layout(p=1, d=2, zero=ZeroStage.ZERO1), efficiency=HALF)
    assert z1.data_comm_s == z0.data_comm_s and z1.memory.optimizer == z0.memory.optimizer / 2


def test_tensor_one_has_no_tensor_traffic():
    ev = evaluate_llm(tiny(), layout(t=1, p=2, d=2), efficiency=HALF)
    assert ev.tensor_comm_s == 0 and ev.pipeline_comm_s > 0


@pytest.mark.parametrize("bad,field", [
    (dict(t=2, p=2, d=2), "degrees: tensor 2 x pipeline 2 x data 2 = 8, but the cluster has 4 GPUs"),
    (dict(t=1, p=2, d=1), "degrees"), (dict(t=1, p=4, d=1), "pipeline: 4 stages is deeper than the 2 layers"),
    (dict(t=4, p=1, d=1), "tensor: 4 does not divide the 2 attention heads"),
    (dict(t=2, p=2, d=1, b=3), "micro_batch"), (dict(t=2, p=2, stage_layers=(2, 1)), "stage_layers"),
    (dict(t=2, p=2, tensor_types=(I, II)), "tensor_types")])
def test_bad_layouts_name_the_field(bad, field):
    with pytest.raises(ValueError, match=field):
        evaluate_llm(tiny(), layout(**bad), efficiency=HALF)


def test_stage_cut_is_the_min_max_of_every_cut():
    """The exact cut equals brute force over all contiguous cuts (small cases)."""
    from itertools import combinations

    import random

    rng = random.Random(21)
    cases = [(7, 3, Fraction(3), (Fraction(2), Fraction(0), Fraction(5))),
             (10, 4, Fraction(1), (Fraction(0), Fraction(1), Fraction(1), Fraction(7, 2))),
             (5, 5, Fraction(2), (Fraction(0),) * 5), (9, 2, Fraction(1, 3), (Fraction(4), Fraction(0)))]
    for _ in range(40):  # random: a first, middle and last extra (as the step model has), or any
        layers = rng.randint(2, 11)
        p = rng.randint(2, min(layers, 5))
        ends = [Fraction(rng.randint(0, 12), rng.randint(1, 4)) for _ in range(3)]
        extras = tuple(ends[0] if s == 0 else ends[2] if s == p - 1 else ends[1] for s in range(p))
        if rng.random() < 0.3:
            extras = tuple(Fraction(rng.randint(0, 9), 2) for _ in range(p))
        cases.append((layers, p, Fraction(rng.randint(1, 6), rng.randint(1, 3)), extras))
    for layers, p, per, extras in cases:
        best = min(max(n * per + e for n, e in zip(c, extras))
                   for cuts in combinations(range(1, layers), p - 1)
                   for c in [tuple(b - a for a, b in zip((0, *cuts), (*cuts, layers)))])
        cut = stage_cut(layers, p, per, extras)
        assert sum(cut) == layers and min(cut) >= 1
        assert max(n * per + e for n, e in zip(cut, extras)) == best


# --- the closed forms, reused ---------------------------------------------------------------

GPT3 = TransformerShape(Family.GPT, 96, 12288, 96, 4 * 12288, 51200, positions=2048, tied_head=True)


def _a100(gpus):
    return toy_cluster(gpus, "A100-SXM4-80GB", Fraction(312), Fraction(80), per_node=8)


@pytest.mark.parametrize("rc", [NONE, SEL, FULL])
def test_step_flops_are_the_closed_forms(rc):
    """The FLOPs counted from the nodes (+ the explicit tied logit layer) are Narayanan et al.'s
    model_flops, and the recompute forward is llm_flops.recompute_flops, for GPT-3 175B; so the
    reported TFLOP/s under full recomputation is Megatron's count."""
    prob = llm_problem(GPT3, _a100(64), 64, 2048)
    ev = evaluate_llm(prob, layout(t=8, p=8, d=1, rc=rc))
    it = GptIteration(64, 2048, 96, 12288, 51200)
    assert ev.mfu * ev.step_time_s * 64 * 312 * 10**12 == model_flops(it)
    assert ev.tflops_per_gpu * ev.step_time_s * 64 * 10**12 == hardware_flops(it, rc) == model_flops(it) + recompute_flops(it, rc)


def test_stage_memory_is_llm_memory_plus_the_stated_extras():
    """Korthikanti's closed forms come from llm_memory.stage_memory; the step model adds only the
    embedding dropout mask (first stage), the output layer (last stage) and the layer being
    recomputed (selective: its attention core, s b h (5 a s / h) / t, held while it runs)."""
    prob = llm_problem(GPT3, _a100(64), 64, 2048)
    ev = evaluate_llm(prob, layout(t=8, p=8, d=1, rc=SEL))
    tok = Tokens(2048, 1, 12288, 96)
    first = stage_memory(prob.params.stage(0, 12, 8, 0), 12, tok, Parallelism(8, 8, 1), 64, 0, SEL)
    assert ev.memory.model_states == first.model_states
    assert ev.memory.activations == first.activations + Fraction(2048 * 12288 * 8, 8) + Fraction(2048 * 12288 * 80, 8)


def test_interleaved_schedule():
    """v = 2 chunks a stage on a 4-layer tiny GPT (t = 2, p = 2, m = 4): the fill is (p - 1)/v = 1/2
    a stage time, so bubble_fraction = (1/2) / (4 + 1/2) = 1/9; every GPU sends 2v - 1 = 3 times a
    micro-batch; activations x (1 + (p - 1)/(p v)) = 5/4."""
    shape = TransformerShape(Family.GPT, layers=4, hidden=8, heads=2, ffn=32, vocab=16, positions=4, tied_head=True)
    prob = llm_problem(shape, toy_cluster(), 4, 4)
    one = evaluate_llm(prob, layout(), efficiency=HALF)
    two = evaluate_llm(prob, layout(virtual_stages=2), efficiency=HALF)
    assert two.stage_layers == (2, 2) and two.bubble_fraction == Fraction(1, 9)
    assert two.pipeline_comm_s == 3 * one.pipeline_comm_s
    assert two.bubble_s == Fraction(1, 2) * max(two.stage_times_s)
    sbh_t = Fraction(4 * 8, 2)  # s b h / t
    # first stage: 2 layers x 34 s b h / t x 2 in flight, x 5/4; + the embedding's dropout mask s b h p / t;
    # + the layer being recomputed, its attention core s b h (5 a s / h) / t = 5 s b h / t
    assert two.memory.activations == 2 * 34 * sbh_t * 2 * Fraction(5, 4) + sbh_t * 2 + 5 * sbh_t
    with pytest.raises(ValueError, match="virtual_stages"):
        evaluate_llm(prob, layout(virtual_stages=4), efficiency=HALF)  # 4 layers = 2 stages x 2 layers: not x 4


ZOO_GPT3 = ["gpt3-1.7b", "gpt3-3.6b", "gpt3-7.5b", "gpt3-18.4b", "gpt3-39.1b", "gpt3-76.1b", "gpt3-145.6b",
            "gpt3-310.1b", "gpt3-529.6b", "gpt3-1t", "gpt3-175b"]


@pytest.mark.parametrize("name", ZOO_GPT3)
def test_zoo_gpt3_flops_from_the_nodes_are_model_flops(name):
    """Every gpt3 zoo model (tied head: the network leaves the logit layer out; the step model adds
    it): the step's model FLOPs equal llm_flops.model_flops, with full recomputation Megatron's count."""
    import yaml

    from explorer.frontends.transformer import parse_shape
    from explorer.frontends.zoo import resolve_model

    data = yaml.safe_load(resolve_model(name).read_text())
    shape = parse_shape(data["transformer"], "transformer", [])
    one = toy_cluster(gpus=1)
    prob = llm_problem(shape, one, 8, 2048)
    ev = evaluate_llm(prob, layout(t=1, p=1, d=1, rc=FULL), efficiency=HALF)
    it = GptIteration(8, 2048, shape.layers, shape.hidden, shape.vocab)
    assert ev.mfu * ev.step_time_s * 10**12 == model_flops(it)
    assert ev.tflops_per_gpu * ev.step_time_s * 10**12 == hardware_flops(it, FULL)


def test_llama_layer_activations_by_hand():
    """LLaMA 3 405B (h = 16384, a = 128, 8 KV heads, ffn = 53248), s = 8192, b = 1, t = 8,
    sequence parallel: s b h = 134,217,728; selective keeps s b h (8 + 4 + 4 x 8/128 + 6 x
    53248/16384) / t = s b h x 31.75 / 8 = 532,676,608 bytes; none adds the softmax output
    2 a s/h = 128 s b h / t; full keeps 2 s b h / t = 33,554,432. Without sequence parallelism the
    8 s b h of norms and matmul inputs are not split."""
    from explorer.core.llm_memory import gated_activation_bytes_per_layer as gated

    tok = Tokens(8192, 1, 16384, 128)
    assert gated(tok, 8, 53248, 8, True, SEL) == 532_676_608
    assert gated(tok, 8, 53248, 8, True, NONE) == 134_217_728 * Fraction(3175 + 12800, 800)
    assert gated(tok, 8, 53248, 8, True, FULL) == 33_554_432
    assert gated(tok, 8, 53248, 8, False, SEL) == 134_217_728 * (8 + Fraction(2375, 800))


def test_the_step_model_counts_a_llama_layer_as_llama():
    """A LLaMA block (SwiGLU product node) takes gated_activation_bytes_per_layer, not the GPT form."""
    from explorer.core.llm_memory import gated_activation_bytes_per_layer as gated

    shape = TransformerShape(Family.LLAMA, layers=2, hidden=8, heads=4, ffn=16, vocab=16, kv_heads=2)
    ev = evaluate_llm(llm_problem(shape, toy_cluster(), 4, 4), layout(t=2, p=2), efficiency=HALF)
    per_layer = gated(Tokens(4, 1, 8, 4), 2, 16, 2, True, SEL)
    transient = gated(Tokens(4, 1, 8, 4), 2, 16, 2, True, NONE) - per_layer  # the layer being recomputed
    assert ev.memory.activations == per_layer * 2 + Fraction(4 * 8, 2) * 2 + transient  # 2 in flight + embedding mask


def test_a_plan_over_the_memory_is_never_reported_as_fitting():
    """Korthikanti et al.: without recomputation the 530B model's first stage exceeds 80 GiB at
    t = 8, p = 35; with selective recomputation it fits."""
    shape = TransformerShape(Family.GPT, 105, 20480, 128, 4 * 20480, 51200, positions=2048, tied_head=True)
    prob = llm_problem(shape, _a100(280), 280, 2048)
    none = evaluate_llm(prob, layout(t=8, p=35, d=1, rc=NONE))
    assert not none.fits and none.memory_bytes_per_accelerator > 80 * 2**30
    assert evaluate_llm(prob, layout(t=8, p=35, d=1, rc=SEL)).fits


def test_efficiency_lookup():
    assert efficiency_for("A100-SXM4-80GB") == (EFFICIENCY_A100, True)
    assert efficiency_for("H100-SXM5-80GB") == (EFFICIENCY_A100, False)
    h100 = toy_cluster(64, "H100-SXM5-80GB", Fraction(989), Fraction(80), per_node=8)
    ev = evaluate_llm(llm_problem(GPT3, h100, 64, 2048), layout(t=8, p=8, d=1))
    assert ev.calibrated is False and any("uncalibrated" in n for n in ev.notes)


# --- calibration and validation (the shipped tables on the shipped clusters) -----------------

@pytest.fixture(scope="module")
def shipped():
    from explorer.frontends import llm_validation

    return llm_validation


def test_calibration_constant_is_the_recomputation(shipped):
    """llm_calibration.EFFICIENCY_A100 is calibrate_efficiency on Korthikanti Table 5's 8 rows,
    rounded to 4 decimal places (bench/calibrate_llm.py prints the same)."""
    rows = shipped.calibration_rows()
    assert len(rows) == 8
    exact = calibrate_efficiency(rows)
    assert rounded(exact) == EFFICIENCY_A100
    # the criterion: the mean of predicted / measured is 1 at the exact root
    assert sum(evaluate_llm(p, lay, exact).step_time_s / t for p, lay, t in rows) == 8


# The band each table's rows stay within, as bench/validate_llm.py measured them (docs/llm-training.md):
# a regression guard on the model, not a claim about its accuracy elsewhere.
BANDS = {"korthikanti-table5": Fraction(22, 100), "megatron-sc21-table1": Fraction(28, 100),
         "llama3-table4": Fraction(34, 100)}


@pytest.mark.parametrize("table", sorted(BANDS))
def test_validation_errors_stay_within_the_measured_band(shipped, table):
    rows = [r for r in shipped.load_validation(table) if r.role != "unsupported"]
    assert rows
    for row in rows:
        pr = shipped.predict(row)
        assert abs(pr.error) <= BANDS[table], (row.model, float(pr.error))
        assert pr.evaluation.fits
        assert pr.evaluation.calibrated == (row.cluster == "dgx-a100")


def test_the_data_parallel_530b_run_is_slower_than_without(shipped):
    """Korthikanti et al.: 8-way data parallelism moved the 530B run from 37.83 s to 39.15 s; the
    model's prediction moves the same way (by its gradient all-reduce)."""
    rows = {(r.model, r.parallelism.data, r.recompute): r for r in shipped.load_validation("korthikanti-table5")}
    one, eight = (shipped.predict(rows[("530B", d, SEL)]) for d in (1, 8))
    assert eight.value > one.value and eight.evaluation.data_comm_s > 0 == one.evaluation.data_comm_s


def test_every_shipped_validation_table_loads(shipped):
    assert set(shipped.validation_files()) == {"korthikanti-table5", "megatron-sc21-table1", "llama3-table4"}
    for name in shipped.validation_files():
        rows = shipped.load_validation(name)
        assert rows and all(r.gpus == r.parallelism.gpus * r.context for r in rows)


@pytest.mark.parametrize("text,problem", [
    ("version: 1\nkind: gpu-cluster\nname: x\nmeasure: iteration_time_s\nrows: []\n", "kind: llm-validation"),
    ("version: 1\nkind: llm-validation\nname: x\ncluster: dgx-a100\nmeasure: seconds\nrows: []\n", "measure: one of"),
    ("version: 1\nkind: llm-validation\nname: x\ncluster: dgx-a100\nmeasure: iteration_time_s\n"
     "rows: [{model: m, layers: 2, hidden: 8, heads: 2, tensor: 1, pipeline: 1, data: 1, batch: 2, measured: 1, "
     "speed: 3}]\n", r"rows\[0\]\.speed: unknown key"),
    ("version: 1\nkind: llm-validation\nname: x\ncluster: dgx-a100\nmeasure: iteration_time_s\n"
     "rows: [{model: m, layers: 2, hidden: 8, heads: 2, tensor: 1, pipeline: 1, data: 1, batch: 2}]\n",
     r"rows\[0\]\.measured: missing"),
    ("version: 1\nkind: llm-validation\nname: x\ncluster: dgx-a100\nmeasure: iteration_time_s\nsequence: 4\nvocab: 8\n"
     "rows: [{model: m, layers: 2, hidden: 8, heads: 2, tensor: 1, pipeline: 1, data: 1, batch: 2, measured: 1, "
     "role: fit}]\n", "role: one of")])
def test_a_bad_validation_file_names_the_field(shipped, tmp_path, text, problem):
    from explorer.core.errors import SpecError

    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(SpecError, match=problem):
        shipped.load_validation(path)


def test_a_zero3_layout_on_the_shipped_cluster(shipped):
    """`--layout zero3 --degrees data=N`: GPT-3 175B on 1,024 A100 with ZeRO-3 over all of them.
    Without tensor parallelism a layer stores s b h (34 + 5 a s/h) bytes (2.87 GB at b = 1): 96
    layers do not fit in 80 GiB without recomputation; with full recomputation (2 s b h a layer)
    they do. The weight all-gathers make the data level the larger part of the step."""
    from explorer.frontends import load_cluster

    prob = llm_problem(GPT3, load_cluster("dgx-a100", gpus=1024), 1024, 2048)
    none = evaluate_llm(prob, layout(t=1, p=1, d=1024, rc=NONE, zero=ZeroStage.ZERO3))
    full = evaluate_llm(prob, layout(t=1, p=1, d=1024, rc=FULL, zero=ZeroStage.ZERO3))
    assert not none.fits and full.fits
    assert full.data_comm_s > full.compute_s and full.tensor_comm_s == 0 == full.bubble_s


def test_head_groups_is_what_a_tensor_degree_must_divide():
    """Qwen2-1.5B's 12 heads and 2 KV heads: t must divide 2; LLaMA-3's 32 and 8: 8; GPT (no GQA): the heads."""
    from explorer.core.llm_problem import TransformerDims

    def dims(heads, kv):
        return TransformerDims(layers=2, hidden=1536, heads=heads, kv_heads=kv, ffn=8, vocab=8, seq=4, batch=4)
    assert dims(12, 2).head_groups == 2 and dims(32, 8).head_groups == 8 and dims(96, 96).head_groups == 96
