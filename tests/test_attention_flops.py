"""An attention node's compute against Megatron-LM's per-layer count (Narayanan et al., SC21,
arXiv 2104.04473, appendix): a GPT layer's forward is 24*B*s*h^2 + 4*B*s^2*h FLOPs, the
attention core (Q.K^T and softmax(.).V) the 4*B*s^2*h, i.e. 2*B*s^2*h multiply-accumulates.
Hand-computed on models/gpt3-1.7b (s = 2048, h = 2304, 24 heads, 24 layers), batch 1."""

from explorer.core.comm import training_flops
from explorer.core.network import LayerKind
from explorer.frontends import load_model

S, H, L = 2048, 2304, 24


def test_gpt3_layer_matches_megatrons_forward_count():
    net = load_model("gpt3-1.7b").with_batch(1)
    layer0 = [x for x in net.layers if x.name.startswith("h0_")]
    att = next(x for x in layer0 if x.kind is LayerKind.ATTENTION)
    assert (att.in_channels, att.out_channels, att.heads, att.kv_heads) == (3 * H, H, 24, 0)
    # Q.K^T: 24 heads x (2048 x 96 by 96 x 2048) = 2048^2 * 2304 MACs; softmax.V the same:
    # 2 * 2048^2 * 2304 = 19,327,352,832 MACs = 4*B*s^2*h / 2 (before the fix: 3 * 2048^2 * 2304)
    assert att.forward_macs(1) == 2 * S * S * H == 19_327_352_832
    # fc nodes: c_attn h x 3h, attn_proj h x h, mlp_fc h x 4h, mlp_proj 4h x h: 12*s*h^2
    # = 12 * 2048 * 2304^2 = 130,459,631,616 MACs
    fcs = [x for x in layer0 if x.kind is LayerKind.FC]
    assert len(fcs) == 4 and sum(x.forward_macs(1) for x in fcs) == 12 * S * H * H == 130_459_631_616
    # Megatron: 24*s*h^2 + 4*s^2*h = 260,919,263,232 + 38,654,705,664 = 299,573,968,896 FLOPs
    assert 2 * sum(x.forward_macs(1) for x in layer0) == 24 * S * H * H + 4 * S * S * H == 299_573_968_896


def test_gpt3_step_flops_are_three_quarters_of_the_recomputing_count():
    """SC21's 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)) counts 4 forward-sized passes (activation
    recomputation) and the LM head; ours has 3 passes (forward, backward error, weight gradient)
    and no tied head (its V term): 3/4 * 96*s*l*h^2*(1 + s/(6h)) = 72*s*l*h^2 + 12*s^2*l*h
    = 3 * 24 * 299,573,968,896 = 21,569,325,760,512 FLOPs at batch 1 (the embeddings cost none)."""
    net = load_model("gpt3-1.7b").with_batch(1)
    total = sum(training_flops(x, 1) for x in net.layers)
    assert total == 72 * S * L * H * H + 12 * S * S * L * H == 21_569_325_760_512


def test_grouped_query_attention_counts_every_query_head():
    """llama3-8b (32 heads, 8 KV heads of 128, s = 128 here): each query head meets a K and a V
    head of its own width, so 2 * B * s^2 * D_q, as multi-head attention of width 4096:
    2 * 128^2 * 4096 = 134,217,728 MACs at batch 1 (not the 6144 input channels)."""
    net = load_model("llama3-8b", sequence=128).with_batch(1)
    att = net.layers[net.layer_names.index("l0_att")]
    assert att.forward_macs(1) == 2 * 128 * 128 * 4096 == 134_217_728
