"""trial 16 #1: ``explore sweep`` started with SIGINT ignored (a background job of a script) keeps
it ignored, as Python and the API do: a Ctrl-C meant for the foreground job does not stop it. Where
SIGINT is not ignored, the sweep installs its own handler (the one-line "interrupted" message)."""

from __future__ import annotations

import signal

import yaml

from explorer.app import cli_sweep

from .conftest import run_cli

TINY = {"version": 1, "name": "tiny", "grid": {"model": ["lenet-c", "sfc"]}, "fixed": {"array": "hypar-16"}}


def _run(tmp_path, capsys, monkeypatch, before):
    installed = []
    real = signal.signal

    def spy(sig, handler):
        if sig == signal.SIGINT:
            installed.append(handler)
        return real(sig, handler)

    monkeypatch.setattr(cli_sweep.signal, "signal", spy)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(TINY))
    old = real(signal.SIGINT, before)
    try:
        code, _, err = run_cli(["sweep", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out")], capsys)
        now = signal.getsignal(signal.SIGINT)
    finally:
        real(signal.SIGINT, old)
    assert code == 0, err
    return installed, now


def test_an_ignored_sigint_stays_ignored(tmp_path, capsys, monkeypatch):
    installed, now = _run(tmp_path, capsys, monkeypatch, signal.SIG_IGN)
    assert cli_sweep._first_interrupt not in installed and now is signal.SIG_IGN


def test_otherwise_the_sweep_installs_its_handler_and_restores_the_previous(tmp_path, capsys, monkeypatch):
    installed, now = _run(tmp_path, capsys, monkeypatch, signal.default_int_handler)
    assert installed[0] is cli_sweep._first_interrupt and now is signal.default_int_handler
