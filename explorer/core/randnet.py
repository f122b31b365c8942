"""Seeded random chains and graph specs for cross-checks and benchmarks."""

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
