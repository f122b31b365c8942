"""The time bar of a long solve (new-user trial, item 2): drawn on a terminal only, after its
delay, with the seconds of the limit, lines written above it, and cleared when the solve ends."""

from __future__ import annotations

import io
import time

from explorer.app.cli_ticker import Ticker, shows_ticker
from explorer.core.kinds import solve_limit
from explorer.core.kinds import SOLVE_TIME_LIMIT

from .conftest import run_cli


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_only_on_a_terminal():
    assert shows_ticker(FakeTty()) and not shows_ticker(io.StringIO())
    assert not shows_ticker(object())  # no isatty at all


def test_the_limit_shown_is_the_one_the_solve_keeps():
    assert solve_limit("cpsat", None, False) == SOLVE_TIME_LIMIT == 60.0
    assert solve_limit("pruned", None, False) == SOLVE_TIME_LIMIT
    assert solve_limit("exact", None, True) == SOLVE_TIME_LIMIT  # under caps or memory
    assert solve_limit("exact", None, False) is None  # no limit: the seconds alone
    assert solve_limit("dp", None, True) is None
    assert solve_limit("exact", 7, False) == 7.0


def test_the_bar_counts_seconds_of_the_limit_and_is_cleared(monkeypatch):
    monkeypatch.setattr(Ticker, "DELAY_S", 0.0)
    monkeypatch.setattr(Ticker, "EVERY_S", 0.01)
    tty = FakeTty()
    with Ticker(30.0, time.perf_counter() - 12.2, "exact", stream=tty) as tick:
        deadline = time.perf_counter() + 5
        while tick.bar is None and time.perf_counter() < deadline:
            time.sleep(0.01)
        tick.echo("[explore] a line above it")
    text = tty.getvalue()
    assert "[explore] exact 12 s of 30 s |" in text, text
    assert "[explore] a line above it\n" in text
    assert text.endswith("\r") and tick.bar is None and not tick._thread.is_alive()  # leave=False: the line cleared


def test_no_bar_before_its_delay_and_none_without_a_limit_claimed(monkeypatch):
    monkeypatch.setattr(Ticker, "EVERY_S", 0.01)
    tty = FakeTty()
    with Ticker(30.0, stream=tty):  # ends before DELAY_S: nothing drawn
        pass
    assert tty.getvalue() == ""
    monkeypatch.setattr(Ticker, "DELAY_S", 0.0)
    with Ticker(None, time.perf_counter() - 3.4, "exact", stream=tty) as tick:
        while tick.bar is None:
            time.sleep(0.01)
    assert "[explore] exact 3 s" in tty.getvalue() and " of " not in tty.getvalue()


def test_nothing_is_drawn_into_a_pipe_or_a_file(monkeypatch):
    monkeypatch.setattr(Ticker, "DELAY_S", 0.0)
    buf = io.StringIO()
    with Ticker(30.0, stream=buf) as tick:
        time.sleep(0.05)
        tick.echo("a line")
    assert buf.getvalue() == "a line\n" and tick._thread is None


def _slow(monkeypatch, module):
    real = module.solve

    def slow(*a, **k):
        time.sleep(0.3)  # long enough for the bar (its delay at 0)
        return real(*a, **k)

    monkeypatch.setattr(module, "solve", slow)


def test_explore_draws_the_bar_of_cpsats_default_limit_on_a_terminal(capsys, monkeypatch):
    import json
    import sys

    from explorer.solvers import cpsat

    monkeypatch.setattr(Ticker, "DELAY_S", 0.0)
    monkeypatch.setattr(Ticker, "EVERY_S", 0.01)
    _slow(monkeypatch, cpsat)
    args = ["--model", "lenet-c", "--solver", "cpsat", "--workers", "1", "--format", "json"]
    code, out, err = run_cli(args, capsys)  # stderr a buffer: no bar
    assert code == 0 and "|" not in err and "\r" not in err, err
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    code, out, err = run_cli(args, capsys)
    assert code == 0 and json.loads(out)["status"] == "optimal"  # the report alone on stdout
    assert "[explore] cpsat " in err and f" s of {SOLVE_TIME_LIMIT:g} s |" in err, err
    assert "[explore] solving lenet-c on hypar-16 with cpsat\n" in err and err.endswith("\r")


def _slow_first_evaluation(monkeypatch, during: str = "round 1"):
    """The split's first evaluation in the step named ``during`` takes 0.3 s: the bar (its delay at 0,
    redrawn every 0.01 s) draws that step's label meanwhile."""
    import explorer.solvers.search_scorer as hs  # (the search scores its plans there)
    from explorer.app.cli_common import _last_step

    real, calls = hs.evaluate_split, []

    def slow(*a, **k):
        if not calls and during in "".join(_last_step):
            calls.append(1)
            time.sleep(0.3)
        return real(*a, **k)

    monkeypatch.setattr(hs, "evaluate_split", slow)


def test_a_split_run_draws_the_time_bar_of_its_limit_named_by_its_step(capsys, monkeypatch):
    """CLI polish, item 2: --split runs had only a bar redrawn when a step reported; now the even
    runs' time bar (seconds of the split's limit, from the process's start), named by the step under way."""
    import json
    import sys

    from explorer.core.kinds import SPLIT_TIME_LIMIT

    monkeypatch.setattr(Ticker, "DELAY_S", 0.0)
    monkeypatch.setattr(Ticker, "EVERY_S", 0.01)
    _slow_first_evaluation(monkeypatch)
    args = ["split", "--model", "lenet-c", "--alpha-grid", "128", "--format", "json"]
    code, out, err = run_cli(args, capsys)  # stderr a buffer: no bar
    assert code == 0 and "|" not in err and "\r" not in err, err
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    code, out, err = run_cli(args, capsys)
    assert code == 0 and json.loads(out)["split"] == "search"  # the report alone on stdout
    assert "[explore] split: search: level 0, class 1 of 1, round 1" in err, err
    assert f" s of {SPLIT_TIME_LIMIT:g} s |" in err and err.endswith("\r"), err  # cleared at the end
    args = ["--array", "tpu-mix-16", "--split", "optimal", "--model", "lenet-c", "--alpha-grid", "4",
            "--time-limit", "30"]
    code, out, err = run_cli(args, capsys)
    assert code == 0 and "[explore] split: optimal (the joint solver, up to " in err, err
    assert " s of 30 s |" in err and "split optimal" in out, (out, err)


def test_explore_check_draws_the_bar_of_its_default_limit_on_a_terminal(capsys, monkeypatch):
    """Trial finding 6: pruned, split and the LLM check drew a bar, the default ``explore check`` only
    a line per level (20 s apart on a 12-layer transformer). Now the bar of the check's limit (the
    default 60 s, or --time-limit), its steps' lines above it; the seconds alone without a limit."""
    import json
    import sys

    from explorer.solvers import cpsat

    monkeypatch.setattr(Ticker, "DELAY_S", 0.0)
    monkeypatch.setattr(Ticker, "EVERY_S", 0.01)
    _slow(monkeypatch, cpsat)
    args = ["check", "--model", "lenet-c", "--solvers", "exact,cpsat", "--workers", "1", "--format", "json"]
    code, out, err = run_cli(args, capsys)  # stderr a buffer: no bar
    assert code == 0 and "|" not in err and "\r" not in err, err
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    code, out, err = run_cli(args, capsys)
    assert code == 0 and json.loads(out)["agree"]  # the report alone on stdout
    assert "[explore] check " in err and f" s of {SOLVE_TIME_LIMIT:g} s |" in err, err
    assert "[explore] joint optimum: cpsat\n" in err and err.endswith("\r"), err  # lines above it; cleared
    code, out, err = run_cli(args + ["--time-limit", "30"], capsys)
    assert code == 0 and " s of 30 s |" in err, err
