"""The LLM zoo (issue 21, item 4): GPT sizes of Megatron-LM SC21 Table 1, GPT-3 175B, LLaMA 3
8B/70B/405B, one transformer builder shared with ``--model config.json`` (Hugging Face configs
in tests/hf_configs, copied from the released models), and grouped-query attention."""

from __future__ import annotations

import json
import random
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from explorer import api
from explorer.core.array import synthetic_array
from explorer.core.errors import SpecError
from explorer.core.evaluate import PlanError, evaluate
from explorer.core.uneven import whole_units
from explorer.core.evaluate import evaluate_split
from explorer.core.network import LayerKind
from explorer.core.partition import ALL_TYPES, PartitionType as T, Space
from explorer.core.plan import Plan
from explorer.core.solution import Status
from explorer.frontends import load_array, load_model
from explorer.frontends.network_yaml import load_network_text
from explorer.frontends.transformer import Family, TransformerShape, build_transformer

from .conftest import LLM_ZOO, run_cli

HF = Path(__file__).resolve().parent / "hf_configs"
ROOT = Path(__file__).resolve().parent.parent


def weights(net) -> int:
    return sum(L.weight_elements() for L in net.layers)


def same_graph(a, b) -> bool:
    return (a.layers, a.edges, a.edge_shares, a.batch, a.sequence) == (b.layers, b.edges, b.edge_shares, b.batch, b.sequence)


def test_the_zoo_has_the_sixteen_llms():
    assert LLM_ZOO == sorted(["gpt3-1.7b", "gpt3-3.6b", "gpt3-7.5b", "gpt3-18.4b", "gpt3-39.1b", "gpt3-76.1b",
                              "gpt3-145.6b", "gpt3-310.1b", "gpt3-529.6b", "gpt3-1t", "gpt3-175b", "llama3-8b",
                              "llama3-70b", "llama3-405b", "mixtral-8x7b", "mixtral-8x22b"])


def test_llama3_weights_by_hand():
    # LLaMA 3 8B: embedding and untied head 2 x 128256 x 4096 = 1,050,673,152; per layer
    # Q, O 4096^2 = 16,777,216 each, K, V 4096 x (8 x 128) = 4,194,304 each, SwiGLU
    # 3 x 4096 x 14336 = 176,160,768: 218,103,808 x 32 = 6,979,321,856. Total 8,029,995,008
    # (Meta's 8.03B; the 65 RMSNorm vectors of 4096, 266,240, are not modelled).
    assert weights(load_model("llama3-8b")) == 8_029_995_008
    # 70B: 2 x 128256 x 8192 = 2,101,346,304; per layer 2 x 8192^2 + 2 x 8192 x 1024 +
    # 3 x 8192 x 28672 = 855,638,016, x 80 = 68,451,041,280. Total 70,552,387,584 (70.6B).
    assert weights(load_model("llama3-70b")) == 70_552_387_584
    # 405B: 2 x 128256 x 16384 = 4,202,692,608; per layer 2 x 16384^2 + 2 x 16384 x 1024 +
    # 3 x 16384 x 53248 = 3,187,671,040, x 126 = 401,646,551,040. Total 405,849,243,648.
    assert weights(load_model("llama3-405b")) == 405_849_243_648


def test_gpt3_175b_weights_by_hand():
    # 12 l h^2 = 12 x 96 x 12288^2 = 173,946,175,488; (V + s) h = (51200 + 2048) x 12288 =
    # 654,311,424; tied head: 174,600,486,912 (Megatron-LM SC21 Table 2 says 174.6B).
    assert weights(load_model("gpt3-175b")) == 174_600_486_912


# Megatron-LM SC21 Table 1: name, the table's parameters (billions, as printed), heads, hidden, layers
TABLE1 = [("gpt3-1.7b", "1.7", 24, 2304, 24), ("gpt3-3.6b", "3.6", 32, 3072, 30), ("gpt3-7.5b", "7.5", 32, 4096, 36),
          ("gpt3-18.4b", "18.4", 48, 6144, 40), ("gpt3-39.1b", "39.1", 64, 8192, 48),
          ("gpt3-76.1b", "76.1", 80, 10240, 60), ("gpt3-145.6b", "145.6", 96, 12288, 80),
          ("gpt3-310.1b", "310.1", 128, 16384, 96), ("gpt3-529.6b", "529.6", 128, 20480, 105),
          ("gpt3-1t", "1008", 160, 25600, 128)]


@pytest.mark.parametrize("name,params,heads,hidden,layers", TABLE1, ids=[r[0] for r in TABLE1])
def test_megatron_table1_parameter_counts(name, params, heads, hidden, layers):
    """The table's count is Megatron's P = 12 l h^2 (1 + 13/(12 h) + (V + s)/(12 l h)): our
    weights plus the 13 l h of layer norms and biases we do not model, to the table's digits."""
    net = load_model(name)
    w = weights(net)
    assert w == 12 * layers * hidden**2 + (51200 + 2048) * hidden
    digits = len(params.split(".")[1]) if "." in params else 0
    assert round(Fraction(w + 13 * layers * hidden, 10**9), digits) == Fraction(params)
    att = [L for L in net.layers if L.kind is LayerKind.ATTENTION]
    fcs = [L for L in net.layers if L.kind is LayerKind.FC]
    assert len(att) == layers and {(L.heads, L.in_channels, L.out_channels) for L in att} == {(heads, 3 * hidden, hidden)}
    assert len(fcs) == 4 * layers  # no LM head: tied to wte (an approximation the network names)
    assert (net.batch, net.sequence) == (dict(zip([r[0] for r in TABLE1], [512, 512, 512, 1024, 1536, 1792, 2304,
                                                                            2160, 2520, 3072]))[name], 2048)
    assert "LM head tied" in net.approximations[0]


@pytest.mark.parametrize("name", ["gpt3-1.7b", "llama3-8b", "llama3-405b"])
def test_shape_weights_agree_with_the_nodes(name):
    net = load_model(name)
    text = (ROOT / "models" / f"{name}.yaml").read_text()
    assert text.startswith("#") and "Generated by bench/make_graph_zoo.py" in text
    block = text.split("transformer: ", 1)[1]
    from explorer.frontends.yamlio import load_yaml_text
    from explorer.frontends.transformer import parse_shape

    errors: list[str] = []
    shape = parse_shape(load_yaml_text("t: " + block, "t")["t"], "transformer", errors)
    assert not errors and shape.weights() == weights(net)


def test_the_zoo_files_are_what_the_generator_writes():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import make_graph_zoo
    finally:
        sys.path.remove(str(ROOT / "bench"))
    for fname, text in make_graph_zoo.llm_zoo().items():
        assert (ROOT / "models" / fname).read_text() == text, fname


def test_grouped_query_attention_node():
    net = load_model("llama3-8b", sequence=128).with_batch(2)
    i = net.layer_names.index("l0_att")
    att = net.layers[i]
    # input Q 4096 + K 1024 + V 1024; context 4096; 32 heads, 8 KV heads of 128
    assert (att.in_channels, att.out_channels, att.heads, att.kv_heads) == (6144, 4096, 32, 8)
    shares = {net.layers[u].name: s for (u, v), s in zip(net.edges, net.edge_shares) if v == i}
    assert shares == {"l0_q": Fraction(2, 3), "l0_k": Fraction(1, 6), "l0_v": Fraction(1, 6)}
    # compute as multi-head attention of width 4096 (K, V shared by 4 query heads): Q.K^T
    # B*S^2*4096 (32 heads x S^2 x 128) + softmax.V B*S^2*4096 = 2*128*128*8192 = 268,435,456
    assert att.forward_macs(2) == 2 * 128 * 128 * 2 * 4096 == 268_435_456
    # whole KV heads: 8 = 2^3 -> type II at levels 0..2 only (32 heads alone would allow 5)
    assert att.split_levels == 3 and att.offers(T.II, 2) and not att.offers(T.II, 3)
    assert net.layers[net.layer_names.index("l0_k")].out_channels == 1024


def test_the_evaluator_refuses_a_split_inside_a_kv_group():
    net = load_model("llama3-8b", sequence=64).with_batch(16)
    arr = synthetic_array(4, [10, 20, 40, 80])
    i = net.layer_names.index("l0_att")
    ok = [[T.I] * len(net.layers) for _ in range(4)]
    ok[2][i] = T.II
    evaluate(net, arr, Space.HYPAR, Plan(tuple(map(tuple, ok))))
    bad = [list(row) for row in ok]
    bad[3][i] = T.II  # the 16 accelerators would hold half a KV head each
    with pytest.raises(PlanError, match="l0_att"):
        evaluate(net, arr, Space.HYPAR, Plan(tuple(map(tuple, bad))))


def test_uneven_splits_keep_whole_kv_heads():
    att = load_model("llama3-8b", sequence=64).layers[4]
    assert att.kv_heads == 8
    half, eighth = Fraction(1, 2), Fraction(1, 8)
    assert whole_units(att, [T.II], [[eighth]])  # 1 of 8 KV heads
    assert not whole_units(att, [T.II], [[Fraction(1, 16)]])  # 2 of 32 query heads, but half a KV head
    assert whole_units(att, [T.II, T.II, T.II], [[half], [half, half], [half] * 4])


def test_equal_split_on_one_kind_is_the_homogeneous_model_with_gqa():
    """As tests/test_uneven_model.py does for the classic zoo: alpha = 1/2 everywhere is evaluate."""
    net = load_model("llama3-8b", sequence=64).with_batch(8)
    arr = synthetic_array(2, [10, 40], dtype_bytes=2, peak_TFLOPS=3)
    rng = random.Random(21)
    for _ in range(2):
        plan = Plan(tuple(tuple(rng.choice([t for t in ALL_TYPES if L.offers(t, h)]) for L in net.layers) for h in range(2)))
        ev = evaluate(net, arr, Space.ACCPAR, plan)
        hv = evaluate_split(net, arr, Plan.even(plan))
        assert hv.step_time_s == ev.step_time_s and hv.traffic_bytes == ev.traffic_bytes


def test_the_builder_gives_the_hand_written_llama_and_gpt2():
    """Multi-head attention through the builder: node for node the zoo's llama-7b and gpt2-small."""
    llama = TransformerShape(Family.LLAMA, layers=32, hidden=4096, heads=32, ffn=11008, vocab=32000)
    assert same_graph(build_transformer(llama, "x", 4, 2048, "t"), load_model("llama-7b"))
    gpt2 = TransformerShape(Family.GPT, layers=12, hidden=768, heads=12, ffn=3072, vocab=50257, positions=1024,
                            tied_head=True)
    assert same_graph(build_transformer(gpt2, "x", 8, 1024, "t"), load_model("gpt2-small"))


def test_a_yaml_attention_node_takes_kv_heads():
    head = ("version: 1\nname: g\nbatch: 2\nsequence: 4\nlayers:\n  - {name: e, kind: embedding, vocab: 10, hidden: 8}\n"
            "  - {name: q, kind: fc, in_features: 8, out_features: 8, inputs: [e]}\n"
            "  - {name: k, kind: fc, in_features: 8, out_features: 4, inputs: [e]}\n"
            "  - {name: v, kind: fc, in_features: 8, out_features: 4, inputs: [e]}\n")
    net = load_network_text(head + "  - {name: a, kind: attention, inputs: [q, k, v], heads: 4, kv_heads: 2}\n")
    assert (net.layers[4].in_channels, net.layers[4].out_channels, net.layers[4].kv_heads) == (16, 8, 2)
    with pytest.raises(SpecError, match=r"layers\[4\].kv_heads: 3 must divide"):
        load_network_text(head + "  - {name: a, kind: attention, inputs: [q, k, v], heads: 4, kv_heads: 3}\n")
    with pytest.raises(SpecError, match=r"kv_heads: 1 KV heads of 2 channels need 8 \+ 2 x 2"):
        load_network_text(head + "  - {name: a, kind: attention, inputs: [q, k, v], heads: 4, kv_heads: 1}\n")


# --- Hugging Face config.json -------------------------------------------------------------


def test_llama3_config_builds_the_zoo_entry():
    for seq in (8192, 2048):
        from_json = load_model(str(HF / "Meta-Llama-3-8B.json"), 2048, seq if seq != 8192 else None)
        assert same_graph(from_json, load_model("llama3-8b", sequence=seq))
        assert from_json.name == "Meta-Llama-3-8B" and from_json.approximations == ()


def test_gpt2_config_builds_gpt2_small():
    net = load_model(str(HF / "gpt2.json"))  # n_positions 1024 tokens; batch: the default 8
    assert same_graph(net, load_model("gpt2-small"))
    # 124,318,464 weights: Hugging Face's 124,439,808 less the 121,344 biases and layer norms
    # (per block 2304 + 768 + 3072 + 768 + 2 x 2 x 768 = 9,984, x 12, plus ln_f 1,536)
    assert weights(net) == 124_439_808 - 121_344


def test_mistral_and_qwen2_configs():
    mistral = load_model(str(HF / "Mistral-7B-v0.1.json"), 4, 8192)
    # Mistral 7B: 7,241,732,096 published, less 65 RMSNorm vectors of 4096 (266,240)
    assert weights(mistral) == 7_241_732_096 - 65 * 4096
    assert mistral.approximations == ("sliding_window 4096 < sequence 8192: attention is counted over all 8192 tokens",)
    assert load_model(str(HF / "Mistral-7B-v0.1.json"), 4, 4096).approximations == ()
    qwen = load_model(str(HF / "Qwen2-7B.json"), 4, 4096)
    # Qwen2-7B: 7,615,616,512 published, less Q/K/V biases (3584 + 2 x 512) x 28 = 129,024 and
    # 57 RMSNorm vectors of 3584 (204,288)
    assert weights(qwen) == 7_615_616_512 - 129_024 - 204_288
    att = qwen.layers[qwen.layer_names.index("l0_att")]
    assert (att.heads, att.kv_heads, att.in_channels, att.out_channels, att.split_levels) == (28, 4, 3584 + 1024, 3584, 2)
    assert load_model(str(HF / "Qwen2-7B.json")).sequence == 131072  # max_position_embeddings


def bad_config(tmp_path, change: dict, drop: tuple[str, ...] = (), base: str = "Meta-Llama-3-8B.json") -> Path:
    cfg = json.loads((HF / base).read_text())
    cfg.update(change)
    for k in drop:
        del cfg[k]
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    return p


@pytest.mark.parametrize("change,drop,message", [
    ({}, ("hidden_size",), "hidden_size: missing"),
    ({"model_type": "falcon"}, (), "model_type: must be one of llama, mistral, qwen2, mixtral, gpt2, got 'falcon'"),
    ({"num_attention_heads": 24}, (), "num_attention_heads: 24 heads do not divide hidden 4096"),
    ({"num_key_value_heads": 5}, (), "num_key_value_heads: 5 KV heads do not divide 32 heads"),
    ({"intermediate_size": 14336.5}, (), "intermediate_size: must be a positive integer, got 14336.5"),
    ({"num_hidden_layers": "32"}, (), "num_hidden_layers: must be a positive integer, got '32'"),
    ({"vocab_size": 0}, (), "vocab_size: must be a positive integer, got 0"),
    ({"tie_word_embeddings": "no"}, (), "tie_word_embeddings: must be true or false, got 'no'"),
    ({"num_hidden_layers": 10**9}, (), "num_hidden_layers: at most 4,096 (the largest published models have ~160), "
                                       "got 1,000,000,000"),
])
def test_bad_configs_exit_2_naming_file_and_field(tmp_path, capsys, change, drop, message):
    p = bad_config(tmp_path, change, drop)
    code, out, err = run_cli(["--model", str(p), "--levels", "1"], capsys)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [f"explore: error: {p}: {message}"]


def test_mixtral_is_planned_on_a_cluster_only(capsys):
    """A mixture of experts builds (tests/test_llm_moe.py) but is refused on an accelerator array,
    whose model has no expert weights (the nodes hold the routed experts' work)."""
    p = HF / "Mixtral-8x7B-v0.1.json"
    code, out, err = run_cli(["--model", str(p)], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith(f"explore: error: --model: '{p}' is a mixture of experts: it is planned on a GPU cluster")


def test_a_config_that_is_not_json(tmp_path, capsys):
    p = tmp_path / "config.json"
    p.write_text("{\"model_type\": \"llama\",")
    code, _, err = run_cli(["--model", str(p)], capsys)
    assert code == 2 and err.startswith(f"explore: error: {p}: not valid JSON") and len(err.strip().splitlines()) == 1
    p.write_text("[1, 2]")
    code, _, err = run_cli(["--model", str(p)], capsys)
    assert code == 2 and "must be a JSON object" in err
    for hostile in ("[" * 100_000 + "]" * 100_000, '{"vocab_size": ' + "9" * 5000 + "}"):
        p.write_text(hostile)
        code, _, err = run_cli(["--model", str(p)], capsys)
        assert code == 2 and err.startswith(f"explore: error: {p}: not valid JSON"), err[:200]


def test_a_transformer_spec_checks_its_block():
    head = "version: 1\nname: t\nbatch: 2\nsequence: 8\n"
    with pytest.raises(SpecError, match=r"transformer.family: must be one of gpt, llama, got 'bert'"):
        load_network_text(head + "transformer: {family: bert, layers: 1, hidden: 8, heads: 2, ffn: 16, vocab: 10}\n")
    with pytest.raises(SpecError, match=r"transformer.positions: the gpt family learns its positions"):
        load_network_text(head + "transformer: {family: gpt, layers: 1, hidden: 8, heads: 2, ffn: 16, vocab: 10}\n")
    with pytest.raises(SpecError, match=r"transformer.ffn: missing"):
        load_network_text(head + "transformer: {family: llama, layers: 1, hidden: 8, heads: 2, vocab: 10}\n")
    with pytest.raises(SpecError, match=r"layers: give either layers or transformer"):
        load_network_text(head + "transformer: {family: llama, layers: 1, hidden: 8, heads: 2, ffn: 4, vocab: 10}\n"
                          "layers: [{name: a, kind: fc, in_features: 2, out_features: 2}]\n")
    with pytest.raises(SpecError, match=r"sequence: missing"):
        load_network_text("version: 1\nname: t\ntransformer: {family: llama, layers: 1, hidden: 8, heads: 2, ffn: 4, "
                          "vocab: 10}\n")


# --- solving --------------------------------------------------------------------------------


@pytest.mark.parametrize("model,seq", [("gpt3-1.7b", 2048), ("llama3-8b", 8192)])
def test_explore_solves_an_llm_on_a_small_array(model, seq, capsys):
    args = ["--model", model, "--seq", str(seq), "--batch", "16", "--memory", "200", "--format", "json"]
    code, out, err = run_cli(args, capsys)
    r = json.loads(out)
    assert code == 0 and r["status"] == "level-optimal" and (r["model"], r["sequence"]) == (model, seq)
    assert ("LM head tied" in err) == model.startswith("gpt3") == bool(r["approximations"])
    res = api.solve(model, "hypar-16", seq=seq, batch=16, memory_GiB=200.0)
    assert res.status is Status.LEVEL_OPTIMAL and res.ok
    net = load_model(model, sequence=seq).with_batch(16)
    ev = evaluate(net, load_array("hypar-16"), Space.HYPAR, res.plan)  # re-scored independently
    assert ev.level_cost == res.level_cost_elements and res.figures.ok


def test_written_out_as_layers_yaml_the_same_network():
    """llama3-8b (GQA) and gpt3-1.7b written as a ``layers:`` list (attention with kv_heads and
    channels) parse back to the builder's network (bench/bench_llm_zoo.py times the two)."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from bench_llm_zoo import as_layers_yaml
    finally:
        sys.path.remove(str(ROOT / "bench"))
    for name in ("llama3-8b", "gpt3-1.7b"):
        net = load_model(name, sequence=512)
        back = load_network_text(as_layers_yaml(net), name)
        assert same_graph(back, net), name
