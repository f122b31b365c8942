"""Issue 21 groundwork (items 5 and 6): training memory, FLOPs and parameter counts of
transformers, by hand and against the numbers the papers state (docs/llm-training.md)."""

from __future__ import annotations

from fractions import Fraction

import pytest
import yaml

from explorer.core.llm_flops import (GptIteration, hardware_flops, megatron_flops, mfu, model_flops,
                                     recompute_flops, tflops_per_gpu)
from explorer.core.llm_memory import (Parallelism, Recompute, Tokens, ZeroStage, activation_bytes_per_layer,
                                      in_flight_microbatches, model_state_bytes, stage_memory)
from explorer.frontends.transformer import parse_shape
from explorer.frontends.transformer_params import parameter_count
from explorer.frontends.zoo import resolve_model

NONE, SEL, FULL = Recompute.NONE, Recompute.SELECTIVE, Recompute.FULL
GPT3 = Tokens(sequence=2048, micro_batch=1, hidden=12288, heads=96)  # GPT-3 175B
# Korthikanti et al. Table 5 shapes (s = 2048, b = 1): 22B, 175B, 530B, 1T
KORTHIKANTI = {"22B": Tokens(2048, 1, 6144, 64), "175B": GPT3, "530B": Tokens(2048, 1, 20480, 128),
               "1T": Tokens(2048, 1, 25600, 160)}


def shape_of(name: str):
    data = yaml.safe_load(resolve_model(name).read_text())
    errors: list[str] = []
    shape = parse_shape(data["transformer"], "transformer", errors)
    assert not errors
    return shape


# --- activations per layer -------------------------------------------------------------------

def test_gpt3_per_layer_activations_by_hand():
    # s b h = 2048 x 12288 = 25,165,824; 5 a s / h = 5 x 96 x 2048 / 12288 = 80
    sbh = 25_165_824
    assert activation_bytes_per_layer(GPT3) == sbh * 114 == 2_868_903_936  # t = 1: 34 + 80
    assert activation_bytes_per_layer(GPT3, 1, sequence_parallel=False) == 2_868_903_936  # same at t = 1
    assert activation_bytes_per_layer(GPT3, 8) == sbh * 114 / 8 == 358_612_992  # tensor + sequence
    assert activation_bytes_per_layer(GPT3, 8, recompute=SEL) == sbh * 34 / 8 == 106_954_752
    assert activation_bytes_per_layer(GPT3, 8, recompute=FULL) == 2 * sbh / 8 == 6_291_456
    # tensor only: 10 + 24/8 + 80/8 = 23; selective 10 + 3 = 13; full keeps the whole input
    assert activation_bytes_per_layer(GPT3, 8, False) == 23 * sbh == 578_813_952
    assert activation_bytes_per_layer(GPT3, 8, False, SEL) == 13 * sbh == 327_155_712
    assert activation_bytes_per_layer(GPT3, 8, False, FULL) == 2 * sbh == 50_331_648


def test_uneven_tensor_degree_stays_exact():
    # t = 3: 24/3 = 8 exactly, 5 a s/(h t) = 80/3: s b h (10 + 8 + 80/3) = s b h x 134/3
    assert activation_bytes_per_layer(GPT3, 3, False) == Fraction(25_165_824 * 134, 3)


@pytest.mark.parametrize("name,scores,saving", [("175B", 80, "0.70"), ("530B", 64, "0.65")])
def test_selective_recompute_saving_stated_by_korthikanti(name, scores, saving):
    """Section 5: 5as/h = 80 for GPT-3 and 64 for MT-NLG, so selective recomputation saves 70%
    and 65% of the activation memory (80/114, 64/98)."""
    tok = KORTHIKANTI[name]
    assert Fraction(5 * tok.heads * tok.sequence, tok.hidden) == scores
    kept = activation_bytes_per_layer(tok, 8, recompute=SEL) / activation_bytes_per_layer(tok, 8)
    assert round(1 - kept, 2) == Fraction(saving)


def test_sequence_parallel_plus_selective_is_about_5x():
    """The abstract's "reduces activation memory by 5x" (t = 8, against tensor parallelism alone):
    22B 26.33/4.25 = 6.2, 175B 23/4.25 = 5.4, 530B and 1T 21/4.25 = 4.9."""
    ratios = {n: activation_bytes_per_layer(t, 8, False) / activation_bytes_per_layer(t, 8, recompute=SEL)
              for n, t in KORTHIKANTI.items()}
    assert ratios["175B"] == Fraction(23 * 4, 17) and ratios["530B"] == ratios["1T"] == Fraction(21 * 4, 17)
    assert ratios["22B"] == Fraction(79 * 4, 3 * 17)  # 10 + 3 + (5 x 64 x 2048 / 6144)/8 = 79/3
    assert all(Fraction(49, 10) < r < Fraction(63, 10) for r in ratios.values())


# --- pipeline and model states ---------------------------------------------------------------

def test_in_flight_microbatches_1f1b():
    assert [in_flight_microbatches(i, 8, 64) for i in range(8)] == [8, 7, 6, 5, 4, 3, 2, 1]
    assert [in_flight_microbatches(i, 8, 3) for i in range(8)] == [3, 3, 3, 3, 3, 3, 2, 1]
    with pytest.raises(ValueError, match="stage"):
        in_flight_microbatches(8, 8, 64)


def test_first_stage_holds_all_layers_worth():
    """Korthikanti section 4: the first of p stages, L/p layers and p micro-batches in flight,
    stores s b h L (34 + 5as/h)/t regardless of p (175B: t = 8, p = 8, 96 layers, 64 micro-batches)."""
    for p in (1, 2, 4, 8):
        mem = stage_memory(0, 96 // p, GPT3, Parallelism(8, p), microbatches=64, recompute=SEL)
        assert mem.activations == Fraction(25_165_824 * 96 * 34, 8) == 10_267_656_192


@pytest.mark.parametrize("zero,expect", [(ZeroStage.ZERO0, (2000, 2000, 12000)), (ZeroStage.ZERO1, (2000, 2000, 3000)),
                                         (ZeroStage.ZERO3, (500, 500, 3000))])
def test_zero_stages(zero, expect):
    assert model_state_bytes(1000, 4, zero) == expect  # 16 bytes a parameter; ZeRO-1 shards 12, ZeRO-3 all 16


def test_gpt3_175b_first_stage_memory_by_hand():
    """Korthikanti Table 5's 175B run, t = 8, p = 8, d = 1, 64 micro-batches of 1, stage 0:
    layers 0..11 of 12 h^2 + 13 h = 1,812,099,072 each, 21,745,188,864, plus the embedding
    (51200 + 2048) x 12288 = 654,311,424: 22,399,500,288 parameters, / 8 = 2,799,937,536 a GPU."""
    params = parameter_count(shape_of("gpt3-175b"))
    stage0 = params.stage(0, 12, 8, 0)
    assert stage0 == 22_399_500_288
    mem = stage_memory(stage0, 12, GPT3, Parallelism(8, 8, 1), 64, recompute=SEL)
    assert (mem.weights, mem.gradients, mem.optimizer) == (5_599_875_072, 5_599_875_072, 33_599_250_432)
    assert mem.activations == 10_267_656_192  # 96 layers' worth, as above
    assert mem.total == 55_066_656_768  # 51.3 GiB: fits 80 GiB
    none = stage_memory(stage0, 12, GPT3, Parallelism(8, 8, 1), 64)
    assert none.activations == 96 * 358_612_992 and none.total == 44_799_000_576 + 34_426_847_232
    z1 = stage_memory(stage0, 12, GPT3, Parallelism(8, 8, 16), 64, recompute=SEL, zero=ZeroStage.ZERO1)
    assert z1.optimizer == 33_599_250_432 // 16 and z1.weights == 5_599_875_072
    z3 = stage_memory(stage0, 12, GPT3, Parallelism(8, 8, 16), 64, recompute=SEL, zero=ZeroStage.ZERO3)
    assert z3.model_states == 44_799_000_576 / 16


def test_bad_degrees_are_refused():
    with pytest.raises(ValueError, match="tensor: must be an integer >= 1, got 0"):
        Parallelism(0)
    with pytest.raises(ValueError, match="micro_batch"):
        Tokens(2048, 0, 12288, 96)


# --- parameter counts ------------------------------------------------------------------------

TABLE1 = [("gpt3-1.7b", "1.7", 24, 2304), ("gpt3-3.6b", "3.6", 30, 3072), ("gpt3-7.5b", "7.5", 36, 4096),
          ("gpt3-18.4b", "18.4", 40, 6144), ("gpt3-39.1b", "39.1", 48, 8192), ("gpt3-76.1b", "76.1", 60, 10240),
          ("gpt3-145.6b", "145.6", 80, 12288), ("gpt3-310.1b", "310.1", 96, 16384),
          ("gpt3-529.6b", "529.6", 105, 20480), ("gpt3-1t", "1008", 128, 25600)]


@pytest.mark.parametrize("name,billions,l,h", TABLE1, ids=[r[0] for r in TABLE1])
def test_megatron_parameter_formula(name, billions, l, h):
    """SC21: P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)), to Table 1's digits; our count adds
    the final layer norm (2h) that the formula leaves out."""
    p = parameter_count(shape_of(name))
    assert p.total - 2 * h == 12 * l * h * h + 13 * l * h + (51200 + 2048) * h
    digits = len(billions.split(".")[1]) if "." in billions else 0
    assert round(Fraction(p.total, 10**9), digits) == Fraction(billions)


@pytest.mark.parametrize("name,total", [("llama3-8b", 8_030_261_248), ("llama3-70b", 70_553_706_496),
                                        ("llama3-405b", 405_853_388_800)])
def test_llama3_parameters(name, total):
    """The published checkpoints' counts: the zoo's weights (tests/test_llm_zoo.py) plus
    (2 l + 1) h RMSNorm weights, e.g. 8B: 8,029,995,008 + 65 x 4096."""
    shape = shape_of(name)
    p = parameter_count(shape)
    assert p.total == total == shape.weights() + (2 * shape.layers + 1) * shape.hidden
    assert p.stage(0, shape.layers, 1, 0) == total


def test_stage_split_covers_the_model():
    p = parameter_count(shape_of("gpt3-175b"))
    cuts = [0, 12, 24, 36, 48, 60, 72, 84, 96]
    assert sum(p.stage(a, b, 8, i) for i, (a, b) in enumerate(zip(cuts, cuts[1:]))) == p.total
    assert p.stage(84, 96, 8, 7) == 21_745_188_864 + 2 * 12288  # tied head: only the final norm


# --- FLOPs and throughput --------------------------------------------------------------------

SC21 = [  # Table 1: l, h, GPUs, batch, TFLOP/s per GPU, % of peak, aggregate PFLOP/s
    (24, 2304, 32, 512, 137, 44, "4.4"), (30, 3072, 64, 512, 138, 44, "8.8"), (36, 4096, 128, 512, 142, 46, "18.2"),
    (40, 6144, 256, 1024, 135, 43, "34.6"), (48, 8192, 512, 1536, 138, 44, "70.8"),
    (60, 10240, 1024, 1792, 140, 45, "143.8"), (80, 12288, 1536, 2304, 148, 47, "227.1"),
    (96, 16384, 1920, 2160, 155, 50, "297.4"), (105, 20480, 2520, 2520, 163, 52, "410.2"),
    (128, 25600, 3072, 3072, 163, 52, "502.0")]


@pytest.mark.parametrize("row", SC21, ids=[str(r[1]) for r in SC21])
def test_megatron_flops_formula_and_sc21_table1(row):
    l, h, gpus, B, tflops, percent, aggregate = row
    it = GptIteration(B, 2048, l, h, 51200)
    s, V = 2048, 51200
    assert megatron_flops(it) == 96 * B * s * l * h**2 * (1 + Fraction(s, 6 * h) + Fraction(V, 16 * l * h))
    assert model_flops(it) == 72 * B * s * l * h**2 * (1 + Fraction(s, 6 * h) + Fraction(V, 12 * l * h))
    assert hardware_flops(it, FULL) == megatron_flops(it) and hardware_flops(it, NONE) == model_flops(it)
    # the table's TFLOP/s per GPU against A100's 312 peak, as a percentage, and times GPUs
    assert round(100 * mfu(tflops, 312)) == percent
    assert abs(Fraction(tflops * gpus, 1000) - Fraction(aggregate)) <= Fraction(gpus, 2000)  # per-GPU rounding
    # tflops_per_gpu inverts the time the table's throughput implies
    seconds = Fraction(megatron_flops(it), tflops * gpus * 10**12)
    assert tflops_per_gpu(megatron_flops(it), seconds, gpus) == tflops


@pytest.mark.parametrize("l,h,percent", [(96, 12288, "2.7"), (105, 20480, "1.6")])
def test_selective_recompute_flops_stated_by_korthikanti(l, h, percent):
    """Section 5: selective recomputation adds 2.7% (GPT-3) and 1.6% (MT-NLG) FLOPs to a
    layer's forward: 4 s^2 h / (24 s h^2 + 4 s^2 h) = s/(6h + s)."""
    it = GptIteration(1, 2048, l, h, 51200)
    share = Fraction(recompute_flops(it, SEL), recompute_flops(it, FULL))
    assert share == Fraction(2048, 6 * h + 2048)
    assert round(100 * share, 1) == Fraction(percent)


def test_gpt3_175b_training_days():
    """SC21 section 5.1: 300B tokens on 1,024 A100 at 140 TFLOP/s a GPU take about 34 days by
    their estimate 8 T P / (n X); the exact count (batch 1,536) is 3.05% higher
    (s/(6h) + V/(16 l h)) and P = 175e9 is 0.6% above 12 l h^2: 34.7 days."""
    it = GptIteration(1536, 2048, 96, 12288, 51200)
    iterations = Fraction(300 * 10**9, 1536 * 2048)
    seconds = iterations * megatron_flops(it) / (1024 * 140 * 10**12)
    assert round(seconds / 86400, 1) == Fraction("34.7")
    assert round(Fraction(8 * 300 * 10**9 * 175 * 10**9, 1024 * 140 * 10**12) / 86400, 1) == Fraction("33.9")


def test_throughput_inputs_are_checked():
    with pytest.raises(ValueError):
        tflops_per_gpu(10**15, 0, 8)
    with pytest.raises(ValueError):
        mfu(100, 0)
    with pytest.raises(ValueError, match="layers"):
        GptIteration(1, 2048, 0, 12288, 51200)


def test_floats_are_refused():
    with pytest.raises(TypeError, match="Fraction"):
        tflops_per_gpu(10**15, 37.83, 8)
    with pytest.raises(TypeError, match="Fraction"):
        mfu(150.5, 312)


def test_docs_example_numbers():
    """docs/llm-training.md's example and its Table 5 row for 175B."""
    tok = Tokens(sequence=2048, micro_batch=1, hidden=12288, heads=96)
    mem = stage_memory(22_399_500_288, 12, tok, Parallelism(8, 8, 1), microbatches=64, recompute=SEL)
    assert round(mem.total / 2**30, 2) == Fraction("51.28")
    it = GptIteration(64, 2048, 96, 12288, 51200)
    assert round(tflops_per_gpu(megatron_flops(it), Fraction("13.75"), 64), 2) == Fraction("213.59")
    assert round(100 * mfu(tflops_per_gpu(model_flops(it), Fraction("13.75"), 64), 312), 1) == Fraction("51.4")
    assert round(100 * mfu(tflops_per_gpu(hardware_flops(it, SEL), Fraction("13.75"), 64), 312), 1) == Fraction("51.8")
