"""Seeded random chains for cross-checks and benchmarks."""

from __future__ import annotations

import random

from .network import Layer, LayerKind, Network


def random_chain(seed: int, layers: int, batch: int | None = None, max_channels: int = 64, max_size: int = 16) -> Network:
    """A chain of random conv and fc layers with small shapes (sizes are not made consistent)."""
    rng = random.Random(seed)
    batch = batch or rng.choice([1, 2, 4, 8, 16, 32])
    out = []
    for i in range(layers):
        if rng.random() < 0.6:
            k = rng.choice([1, 3, 5])
            s_in = rng.randint(1, max_size)
            s_out = rng.randint(1, s_in)
            out.append(
                Layer(f"conv{i}", LayerKind.CONV, rng.randint(1, max_channels), rng.randint(1, max_channels), (k, k), (s_in, s_in), (s_out, s_out))
            )
        else:
            out.append(Layer(f"fc{i}", LayerKind.FC, rng.randint(1, 4 * max_channels), rng.randint(1, 4 * max_channels)))
    return Network.chain(f"random-{seed}-{layers}", batch, out)
