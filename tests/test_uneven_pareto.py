"""The joint solver's Pareto filters (``_filter_by_column``: small groups decided together, large
ones by chunks in ``_pareto_filter``) keep the same rows in the same order as the plain scan: rows
by increasing component sum, each kept unless a kept row before it dominates it."""

import numpy as np
import pytest

from explorer.solvers.joint_labels import _filter_by_column, _pareto_filter
from explorer.solvers.joint_columns import JointOptions


def _plain(P, slack):
    order = np.argsort(P.sum(axis=1), kind="stable")
    kept: list[int] = []
    for i in order:
        if not any(max(P[j, 0] - P[i, 0], P[j, 1] - P[i, 1]) + max(P[j, 2] - P[i, 2], P[j, 3] - P[i, 3]) <= -2 * slack
                   for j in kept):
            kept.append(int(i))
    return np.array(kept, dtype=np.int64)


def _scan(lab, vs, cand, vv, slack):
    out_P, out_c, out_l = [], [], []
    for v in np.unique(vs):
        idx = np.flatnonzero(vs == v)
        sub = _plain(cand[idx], slack)
        out_P.append(cand[idx][sub])
        out_c.append(np.full(len(sub), vv[v]))
        out_l.append(lab[idx][sub])
    return np.concatenate(out_P), np.concatenate(out_c), np.concatenate(out_l)


@pytest.mark.parametrize("seed", range(6))
def test_batched_filter_equals_scan(seed):
    rng = np.random.default_rng(seed)
    o = JointOptions(time_limit_s=1e9)
    for _ in range(12):
        n = int(rng.integers(1, 400))
        ncol = int(rng.integers(1, 60))
        vs = rng.integers(0, ncol, size=n)
        lab = rng.integers(0, 1000, size=n)
        cand = rng.integers(0, int(rng.choice([4, 40, 1000])), size=(n, 4)).astype(np.int64)
        vv = np.arange(ncol) * 7 + 3
        slack = int(rng.integers(0, 3))
        got = _filter_by_column(lab, vs, cand, vv, slack, o, 0.0)
        want = _scan(lab, vs, cand, vv, slack)
        for g, w in zip(got, want):
            assert np.array_equal(g, w)
        assert np.array_equal(_pareto_filter(cand, slack), _plain(cand, slack))
    # a filter that drops rows: dominated rows are gone, and an undominated one stays
    P = np.array([[5, 5, 5, 5], [1, 1, 1, 1], [1, 1, 1, 2]], dtype=np.int64)
    kept = _filter_by_column(np.arange(3), np.zeros(3, dtype=np.int64), P, np.array([9]), 0, o, 0.0)[0]
    assert kept.tolist() == [[1, 1, 1, 1]]


def test_a_label_whose_limit_term_is_free_dominates_whatever_that_term():
    # free floors (joint_close_graph._limit_rests): a memory term at most its free floor keeps the
    # limit under every completion, so a label better in the components dominates whatever its term
    P = np.array([[1, 1, 1, 1, 90], [9, 9, 9, 9, 10]], dtype=np.int64)  # the first: more memory
    assert sorted(_pareto_filter(P, 1).tolist()) == [0, 1]  # no free floor: both kept
    assert _pareto_filter(P, 1, np.array([90])).tolist() == [0]  # at its free floor: the second dropped
    assert sorted(_pareto_filter(P, 1, np.array([89])).tolist()) == [0, 1]  # above it: both kept
    many = np.repeat(P, [70, 1], axis=0)  # the chunked scan and the batched groups alike
    o = JointOptions(time_limit_s=1e9)
    for n in (3, 71):
        for free, kept in ((np.array([90]), {1}), (np.array([89]), {1, 9})):
            got = _filter_by_column(np.arange(n), np.zeros(n, dtype=np.int64), many[-n:], np.array([0]), 1, o, 0.0,
                                    free)[0]
            assert set(got[:, 0].tolist()) == kept
