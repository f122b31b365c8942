"""The one-resource dominance filter shared by the graph labels (``labels._pareto``) and the chain
labels (``chain_labels._dominance``): the rows it keeps, and their order, against a plain
definition and against the many-resource scan (``dominance_scan``) on seeded random instances."""

import random

import numpy as np
import pytest

from explorer.solvers.labels import dominance_scan, one_resource_front


def _plain(key, f, g):
    """Rows in (key, f, g) order (ties: the lower index first), each kept when its resource is
    below every earlier row's of the same key."""
    order = sorted(range(len(key)), key=lambda i: (key[i], f[i], g[i], i))
    kept, least = [], {}
    for i in order:
        if key[i] not in least or g[i] < least[key[i]]:
            kept.append(i)
        least[key[i]] = min(g[i], least.get(key[i], g[i]))
    return kept


@pytest.mark.parametrize("seed", range(40))
def test_one_resource_front_keeps_the_plain_front_in_scan_order(seed):
    rng = random.Random(seed)
    n = rng.randint(2, 300)
    spread = rng.choice([2, 5, 50, 10**6, 2**40])  # few values: many ties
    key = np.array([rng.randrange(rng.randint(1, 8)) for _ in range(n)], dtype=np.int64)
    f = np.array([rng.randrange(spread) for _ in range(n)], dtype=np.int64)
    g = np.array([rng.randrange(spread) for _ in range(n)], dtype=np.int64)
    got = one_resource_front(key, f, g).tolist()
    assert got == _plain(key.tolist(), f.tolist(), g.tolist())
    assert sorted(got) == dominance_scan(key, f, [g]).tolist()


def test_one_resource_front_with_values_too_wide_for_the_shifted_bands():
    """Resources spanning near 2^62 over several keys take the per-group loop; same rows."""
    key = np.array([0, 0, 1, 1, 2, 2, 2], dtype=np.int64)
    f = np.array([1, 2, 1, 2, 1, 2, 3], dtype=np.int64)
    g = np.array([2**62, 5, 0, 2**62 - 1, 7, 7, 3], dtype=np.int64)
    got = one_resource_front(key, f, g).tolist()
    assert got == _plain(key.tolist(), f.tolist(), g.tolist()) == [0, 1, 2, 4, 6]
