"""Seeded random chains for cross-checks and benchmarks."""

from __future__ import annotations

import random

from .network import Layer, LayerKind, Network


def random_chain(seed: int, layers: int, batch: int | None = None, max_channels: int = 64, max_size: int = 16,
                 consistent: bool = True) -> Network:
    """A chain of random conv and fc layers with small shapes. Each layer reads what its input
    outputs, as ``core.network_check`` (and so the Python API) requires: a conv after a conv takes
    its channels, an fc its channels times a spatial size up to its own. ``consistent=False``
    keeps the drawn input sizes as they are (the solvers do not need them consistent; the
    benchmarks' chains stay as measured); the random draws are the same either way."""
    rng = random.Random(seed)
    batch = batch or rng.choice([1, 2, 4, 8, 16, 32])
    out: list[Layer] = []
    for i in range(layers):
        p = out[-1] if out else None
        if rng.random() < 0.6:
            k = rng.choice([1, 3, 5])
            s_in = rng.randint(1, max_size)
            s_out = rng.randint(1, s_in)
            din = rng.randint(1, max_channels)
            if consistent and p is not None and p.kind is LayerKind.CONV:
                din = p.out_channels
            out.append(Layer(f"conv{i}", LayerKind.CONV, din, rng.randint(1, max_channels), (k, k), (s_in, s_in), (s_out, s_out)))
        else:
            din = rng.randint(1, 4 * max_channels)
            if consistent and p is not None:
                din = p.out_channels * (1 + din % p.s_out)
            out.append(Layer(f"fc{i}", LayerKind.FC, din, rng.randint(1, 4 * max_channels)))
    return Network.chain(f"random-{seed}-{layers}", batch, out)


def random_dag_spec(seed: int, nodes: int, batch: int | None = None) -> dict:
    """A random graph network spec (a dict as the YAML would give): fc and conv layers with
    random single inputs, add joins over nodes of equal width, concat joins of any two."""
    rng = random.Random(seed)
    batch = batch or rng.choice([1, 2, 4, 8])
    width = rng.choice([4, 8, 16])
    size = rng.choice([1, 2, 4])
    specs: list[dict] = []
    out_ch: dict[str, int] = {}

    def producers():
        return [s["name"] for s in specs]

    for i in range(nodes):
        names = producers()
        same = [n for n in names if out_ch[n] == width]
        r = rng.random()
        if len(same) >= 2 and r < 0.25:
            a, b = rng.sample(same, 2)
            specs.append({"name": f"add{i}", "kind": "add", "inputs": [a, b]})
            out_ch[f"add{i}"] = width
        elif len(names) >= 2 and r < 0.4:
            a, b = rng.sample(names, 2)
            specs.append({"name": f"cat{i}", "kind": "concat", "inputs": [a, b]})
            out_ch[f"cat{i}"] = out_ch[a] + out_ch[b]
        else:
            src = [rng.choice(names)] if names else []
            din = out_ch[src[0]] if src else rng.randint(1, 16)
            if size > 1 or rng.random() < 0.5:
                specs.append({"name": f"conv{i}", "kind": "conv", "in_channels": din, "out_channels": width,
                              "kernel": rng.choice([1, 3]), "in_size": size, "out_size": size, "inputs": src})
            else:  # fc layers only where the maps are 1 x 1, so joins see equal sizes
                specs.append({"name": f"fc{i}", "kind": "fc", "in_features": din, "out_features": width, "inputs": src})
            out_ch[specs[-1]["name"]] = width
    return {"version": 1, "name": f"dag-{seed}-{nodes}", "batch": batch, "layers": specs}


def random_attention_spec(seed: int, fan_in: bool = False) -> dict:
    """A tiny transformer-like network spec (a dict as the YAML would give), S tokens per sample:
    a first node (an embedding of token ids, or an fc), then Q, K and V (one fused fc, or with
    ``fan_in`` three fc nodes reading the first), an attention node (``heads`` random: none, or
    1 to 8 heads of 1 or 2 channels), and on a chain an fc after it."""
    rng = random.Random(seed)
    heads = rng.choice([0, 1, 2, 3, 4, 4, 6, 8])
    d = max(heads, 1) * rng.choice([1, 2]) if heads else rng.choice([2, 3, 4])
    width = rng.choice([2, 4, 6])
    if rng.random() < 0.5:
        first = {"name": "tok", "kind": "embedding", "vocab": rng.randint(2, 12), "hidden": width, "inputs": []}
    else:
        first = {"name": "x", "kind": "fc", "in_features": rng.randint(1, 8), "out_features": width, "inputs": []}
    att = {"name": "att", "kind": "attention", **({"heads": heads} if heads else {})}
    if fan_in:
        qkv = [{"name": n, "kind": "fc", "in_features": width, "out_features": d, "inputs": [first["name"]]} for n in "qkv"]
        layers = [first, *qkv, {**att, "inputs": ["q", "k", "v"]}]
    else:
        layers = [first, {"name": "qkv", "kind": "fc", "in_features": width, "out_features": 3 * d, "inputs": [first["name"]]},
                  {**att, "inputs": ["qkv"]},
                  {"name": "o", "kind": "fc", "in_features": d, "out_features": rng.choice([1, 2, 4]), "inputs": ["att"]}]
    return {"version": 1, "name": f"att-{seed}", "batch": rng.choice([1, 2, 4]), "sequence": rng.choice([1, 2, 3, 8]),
            "layers": layers}
