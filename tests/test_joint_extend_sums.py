"""``joint_labels._extend`` weighs each candidate's terms without ``tensordot`` (whose transposed
copy of a chunk, with 4 M-pair chunks, cost seconds of page faults): the same int64 sums, over the
terms of nonzero weight only, and the same labels at every chunk size."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.solvers import joint_labels
from explorer.solvers.joint_labels import _extend, _weighted


@pytest.mark.parametrize("seed", range(5))
def test_the_weighted_sums_are_tensordots(seed):
    rng = np.random.default_rng(seed)
    terms = int(rng.integers(4, 9))
    cand = rng.integers(-2**40, 2**40, size=(int(rng.integers(1, 30)), terms, int(rng.integers(1, 20)))).astype(np.int64)
    w = np.r_[rng.integers(0, 2**20, size=4), np.zeros(terms - 4, dtype=np.int64)].astype(np.int64)  # limits: no weight
    w[int(rng.integers(0, 4))] = 0  # (a weight of 0 among the four too)
    want = np.tensordot(cand, w, axes=([1], [0]))
    got = _weighted(cand, w)
    assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("cells", [1, 7, 64, 10**9])
def test_extend_keeps_the_same_labels_at_every_chunk_size(monkeypatch, cells):
    rng = np.random.default_rng(cells)
    n, nv, terms = 40, 9, 6
    P = rng.integers(0, 60, size=(n, terms)).astype(np.int64)
    cols = rng.integers(0, 3, size=n)
    Ev = rng.integers(0, 60, size=(terms, 3, nv)).astype(np.int64)
    nodev = rng.integers(0, 60, size=(terms, nv)).astype(np.int64)
    bc = rng.integers(0, 30, size=(terms, nv)).astype(np.int64)
    w = np.r_[rng.integers(1, 5, size=4), 0, 0].astype(np.int64)
    case = (P, cols, Ev, nodev, bc, rng.integers(0, 40, size=nv).astype(np.int64), w, 3, 260, np.array([120, 130]))
    want = _extend(*case)
    monkeypatch.setattr(joint_labels, "EXTEND_CELLS", cells)
    got = _extend(*case)
    assert 0 < len(want[0]) < n * nv  # (the bounds and limits keep some pairs and drop some)
    assert all(np.array_equal(g, x) for g, x in zip(got, want))
