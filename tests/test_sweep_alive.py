"""A sign of life inside a slow point (``sweep.alive``): while no point finishes, the engine says
each second which points run and for how long, and a terminal's progress bar shows the longest
running one in its postfix (before, the bar sat still for minutes on an uneven split or an H=10
proof). Nothing of it reaches a stderr that is not a terminal. A fake slow point: the real
``solve_point`` after a sleep, in the pool's forked workers (``batches.solve_point`` patched)."""

from __future__ import annotations

import io
import sys
import threading
import time

import pytest

from explorer.app.sweep import alive, batches, engine
from explorer.app.sweep.engine import LocalEngine, Progress, run_points
from explorer.app.sweep.point import solve_point
from explorer.app.sweep.runner import as_sweep

SPEC = {"version": 1, "name": "slow", "grid": {"model": ["lenet-c"], "levels": [1, 2]}}
SLEEP_S = 0.8


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _slow(index, params):
    time.sleep(SLEEP_S)
    return solve_point(index, params)


def _make_slow(monkeypatch) -> None:
    """Each point sleeps SLEEP_S in its worker before it is solved; the engine ticks every 0.1 s;
    no point is solved in the parent."""
    monkeypatch.setattr(batches, "solve_point", _slow)
    monkeypatch.setattr(engine, "TICK_S", 0.1)
    monkeypatch.setattr(engine, "in_parent", lambda params: False)


@pytest.fixture
def slow_points(monkeypatch):
    _make_slow(monkeypatch)


def test_the_engine_says_which_point_runs_and_for_how_long(slow_points):
    sw = as_sweep(SPEC)
    seen: list[Progress] = []
    outs = list(run_points(sw.points, sw.base_dir, LocalEngine(1), None, seen.append))
    assert [o.index for o in outs] == [0, 1] and {o.status for o in outs} == {"level-optimal"}
    beats = [p for p in seen if p.running]
    first = [p.running[0] for p in beats if p.done == 0]
    second = [p.running[0] for p in beats if p.done == 1]
    assert {label for label, _ in first} == {"#0 levels=1"} and {label for label, _ in second} == {"#1 levels=2"}
    assert all(len(p.running) == 1 for p in beats)  # one worker: one point at a time
    times = [s for _, s in first]
    # windows wide enough for a loaded 2-core machine (CI at load 9-11): the ticks count up from the
    # point's start and the last one comes near its end
    assert times == sorted(times) and 0 <= times[0] < 1.0 and SLEEP_S - 0.35 < times[-1] < SLEEP_S + 2.0
    assert len(first) >= 2  # about one each 0.1 s of a 0.8 s point, fewer when the parent waits for a core
    assert [p.running for p in seen if p.done == 2] == [()]  # a finished point's progress names none


def test_the_bar_shows_the_running_point_on_a_terminal_only(monkeypatch, tmp_path):
    """The whole command, in process, its stderr a terminal: the bar's postfix names the running
    point and its seconds; piped, stderr holds the summary line alone and stdout nothing."""
    from explorer.app.cli import main

    f = tmp_path / "s.json"
    f.write_text(str(SPEC).replace("'", '"'))
    for tty in (True, False):
        _make_slow(monkeypatch)
        err, out = (Terminal() if tty else io.StringIO()), io.StringIO()
        monkeypatch.setattr(sys, "stderr", err)
        monkeypatch.setattr(sys, "stdout", out)
        with pytest.raises(SystemExit) as ex:
            main(["sweep", str(f), "--out", str(tmp_path / f"o{tty}"), "--workers", "1"])
        monkeypatch.undo()
        assert ex.value.code == 0 and out.getvalue() == ""
        text = err.getvalue()
        if tty:
            assert "running=#0 levels=1 0 s" in text and "running=#1 levels=2 0 s" in text, text
        else:
            assert "running=" not in text and text.count("\n") == 1 and text.startswith("sweep slow: 2 points"), text


def test_running_text_and_labels():
    sw = as_sweep({"version": 1, "grid": {"model": ["lenet-c", "sfc"], "levels": [2]},
                   "fixed": {"caps": ["0=" + "9" * 30 + "B"]}})
    assert alive.point_labels(sw.points) == {0: "#0 model=lenet-c", 1: "#1 model=sfc"}  # only the keys that vary
    one = as_sweep({"version": 1, "grid": {"model": ["lenet-c"], "caps": [["0=1MB"], ["0=" + "9" * 30 + "B"]]}})
    assert alive.point_labels(one.points)[1] == "#1 caps=0=" + "9" * 19 + "..."  # 24 characters at most
    assert alive.running_text(()) == ""
    assert alive.running_text((("#4 model=sfc", 61.6),)) == "#4 model=sfc 62 s"
    assert alive.running_text((("#4 model=sfc", 61.6), ("#5 model=sfc +2", 3.0))) == "#4 model=sfc 62 s (+1 more)"


def test_flight_runs_the_first_tasks_in_submission_order():
    """Of the tasks in flight, the first ``slots`` run, each since it became one of them: a task
    queued behind a slow one starts when that one finishes, not when it was submitted."""
    now = [10.0]
    flight = alive.Flight(1, lambda: now[0])
    flight.submitted("a", [0])
    now[0] = 11.0
    flight.submitted("b", [1, 2])  # queued behind a
    now[0] = 70.0
    assert flight.snapshot().running == (((0,), 60.0),)
    flight.finished("a")
    now[0] = 72.5
    assert flight.snapshot().running == (((1, 2), 2.5),)
    two = alive.Flight(2, lambda: now[0])
    two.submitted("c", [3])
    now[0] = 73.0
    two.submitted("d", [4])
    two.submitted("e", [5])
    now[0] = 80.0
    assert two.snapshot().running == (((3,), 7.5), ((4,), 7.0))


def test_dask_waits_a_tick_for_a_finished_future():
    """The Dask engine's wait (``_ready_within``): False after the tick with none finished, True as
    soon as one is (woken by the condition ``as_completed`` notifies)."""
    class Running:
        def __init__(self):
            self.ready = False
            self.thread_condition = threading.Condition()

        def has_ready(self):
            return self.ready

    r = Running()
    t = time.monotonic()
    assert not engine._ready_within(r, 0.2) and 0.19 < time.monotonic() - t < 2.0

    def finish():
        time.sleep(0.1)
        with r.thread_condition:
            r.ready = True
            r.thread_condition.notify()

    threading.Thread(target=finish).start()
    t = time.monotonic()
    assert engine._ready_within(r, 5.0) and time.monotonic() - t < 2.5  # woken, not the 5 s wait
