"""Batches of cheap points per task, shared by the local pool and the Dask engine (issue 23,
item 6): the batch sizes by hand, and a Dask sweep of cheap points sent in fewer tasks than
points with the rows of a plain loop."""

from __future__ import annotations

import json

import pytest

from explorer.app.sweep import batches
from explorer.app.sweep.batches import Batches
from explorer.app.sweep.point import Outcome, solve_point
from explorer.app.sweep.spec import parse_sweep


def _tasks(n):
    return [(i, {"model": "lenet-c"}) for i in range(n)]


def test_batch_sizes_by_hand(monkeypatch):
    monkeypatch.setattr(batches, "BATCH_SECONDS", 0.05)
    monkeypatch.setattr(batches, "MAX_BATCH", 64)
    queue = list(reversed(_tasks(100)))
    b = Batches(queue, workers=2)
    assert b.take() == [(0, {"model": "lenet-c"})]  # nothing finished yet: one point
    for _ in range(10):
        b.finished(Outcome.make(0, None, "optimal", "", 0.001))  # 1 ms a point
    # 0.05 s / 1 ms = 50 points; fair share: ceil(99 left / (2 * 2 workers)) = 25
    assert [i for i, _ in b.take()] == list(range(1, 26))
    assert b.size() == 19  # ceil(74 / 4)
    b.seen[:] = [1, 0.2]  # a 200 ms point: one a task
    assert b.size() == 1
    b.seen[:] = [1000, 0.01]  # 10 us a point: 5,000, capped at MAX_BATCH... and at the fair share
    assert b.size() == 19
    big = Batches(list(reversed(_tasks(1000))), workers=1, seen=[1000, 0.01])
    assert big.size() == 64  # fair share ceil(1000 / 2) = 500: MAX_BATCH binds
    tail = Batches(list(reversed(_tasks(3))), workers=2, seen=[10, 0.01])
    assert [len(tail.take()) for _ in range(4)] == [1, 1, 1, 0]


CHEAP = {"version": 1, "name": "cheap", "fixed": {"array": "hypar-16"},
         "grid": {"model": ["lenet-c", "sfc", "alexnet"], "levels": [1, 2, 3, 4], "space": ["hypar", "accpar"],
                  "batch": [16, 64, 256]}}  # 72 DP points of a few ms


def test_dask_sends_cheap_points_in_batches_with_the_loops_answers():
    pytest.importorskip("distributed")
    from explorer.app.sweep.engine import DaskEngine, run_points

    sw = parse_sweep(CHEAP, "cheap", ".")
    eng = DaskEngine(workers=2)
    sizes = []
    submit = eng.client.submit

    def spy(fn, batch, **kw):
        sizes.append(len(batch))
        return submit(fn, batch, **kw)

    eng.client.submit = spy
    try:
        got = list(run_points(sw.points, sw.base_dir, eng))
    finally:
        eng.close()
    assert sum(sizes) == 72 and max(sizes) > 1 and len(sizes) < 72, sizes
    assert sizes[:4] == [1, 1, 1, 1]  # one point a task until points have finished
    plain = [solve_point(i, _params(sw, i)) for i in range(72)]
    assert [o.index for o in got] == list(range(72))
    assert [(o.status, _answer(o)) for o in got] == [(o.status, _answer(o)) for o in plain]
    assert {o.status for o in got} == {"level-optimal"}


def _params(sw, index):
    from explorer.app.sweep.spec import defaults_for, resolve_paths

    p = sw.points[index].as_dict()
    return resolve_paths({**defaults_for(p), **p}, sw.base_dir, {})


def _answer(o):
    r = json.loads(o.result_text)
    return json.dumps({k: v for k, v in r.items() if k != "wall_s"}, sort_keys=True)
