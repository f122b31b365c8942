"""The Dask engine's local cluster from a user's script and under Ctrl-C (trial 14, findings 3
and 4): a script that starts it at its top level without ``if __name__ == "__main__":`` is refused
in one error before any worker starts (its spawned workers would re-run the script: "Nanny failed
to start", a dozen tracebacks); the guarded script runs; a Ctrl-C prints only the one line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from explorer.app.sweep.main_guard import _guarded_spans

from .conftest import sweep_process

pytest.importorskip("distributed")

SPEC = ('{"version": 1, "name": "guard", "grid": {"model": ["lenet-c", "sfc"], "levels": [1, 2]}}')


def _script(tmp_path, body: str):
    path = tmp_path / "run.py"
    path.write_text(textwrap.dedent(body).format(spec=SPEC, out=str(tmp_path / "o")))
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, cwd=tmp_path)


def test_an_unguarded_script_is_refused_in_one_error_before_any_worker_starts(tmp_path):
    done = _script(tmp_path, """\
        import json
        from explorer.api import sweep
        rows = list(sweep(json.loads('{spec}'), out={out!r}, engine="dask", workers=2))
        print(len(rows))
        """)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("Traceback") == 1 and "Nanny" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("explorer.core.errors.SpecError: engine: dask without a scheduler starts worker processes")
    assert f"({tmp_path / 'run.py'}, line 3)" in last and 'if __name__ == "__main__":' in last
    assert not (tmp_path / "o").exists()  # refused before anything ran or was written


def test_a_guarded_script_runs_the_dask_sweep(tmp_path):
    """A call made in a function that the guard calls: not refused; and
    with Dask's default HTTP port 8787 taken, no "Port 8787 is already in use" UserWarning (the
    library prints nothing)."""
    busy = socket.socket()
    try:
        busy.bind(("", 8787))
        busy.listen()
    except OSError:
        pass  # already taken by another process: as busy
    with busy:
        done = _script(tmp_path, MAIN_GUARDED)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "4 ['level-optimal']\n", done.stdout
    assert done.stderr == "", done.stderr


MAIN_GUARDED = """\
        import json
        from explorer.api import sweep


        def main():
            rows = list(sweep(json.loads('{spec}'), out={out!r}, engine="dask", workers=2))
            print(len(rows), sorted({{r["status"] for r in rows}}))


        if __name__ == "__main__":
            main()
        """


def test_guarded_spans_cover_if_name_blocks_only(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("x = 1\nif __name__ == '__main__':\n    a = 2\n    b = (3,\n         4)\nelse:\n    c = 5\n"
                    "if x:\n    d = 6\nif '__main__' == __name__ and x:\n    e = 7\n")
    assert _guarded_spans(str(path), path.stat().st_mtime_ns) == ((3, 7), (11, 11))
    path.write_text("if (:\n")
    assert _guarded_spans(str(path), path.stat().st_mtime_ns + 1) is None  # unparsable: nothing refused


def test_ctrl_c_of_a_dask_sweep_prints_only_the_one_line(tmp_path):
    """SIGINT to the process group (a terminal's Ctrl-C) while CP-SAT points run on the workers:
    exit 130 and the one ``interrupted`` line, no worker's KeyboardInterrupt traceback."""
    f = tmp_path / "s.yaml"
    f.write_text("version: 1\ngrid: {model: [lenet-c, sfc], levels: [1, 2]}\n"
                 "points: [{model: resnet50, levels: 8, space: accpar, solver: cpsat, time_limit: 60},"
                 " {model: bert-base, levels: 8, space: accpar, solver: cpsat, time_limit: 60}]\n")
    p = sweep_process(f, tmp_path / "o", "--engine", "dask", "--workers", "2")
    cache = tmp_path / "o" / "cache"
    deadline = time.time() + 120
    while time.time() < deadline and len(list(cache.rglob("*.json"))) < 4 and p.poll() is None:
        time.sleep(0.1)
    time.sleep(1.0)  # the CP-SAT points are running on both workers
    err = _interrupted(p)
    assert err.strip().splitlines()[-1] == ("explore: interrupted; 4 points cached this run, 4 in all in "
                                            f"{tmp_path / 'o'}'s cache: rerun the same command to resume"), err


def _interrupted(p) -> str:
    """Ctrl-C to the sweep's process group: its stderr, after checking it exited 130 with no traceback
    (killed if it does not end within 60 s)."""
    os.killpg(p.pid, signal.SIGINT)
    try:
        err = p.communicate(timeout=60)[1]
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    return err


def test_ctrl_c_while_the_dask_cluster_starts_prints_only_the_one_line(tmp_path):
    """SIGINT to the process group while the LocalCluster's worker processes are being spawned
    (the sweep's first child is multiprocessing's resource tracker, the next two the workers, importing):
    exit 130, the one ``interrupted`` line; no KeyboardInterrupt traceback from a half-started
    worker, none from Dask's exit hook closing a half-started cluster, and no process left."""
    psutil = pytest.importorskip("psutil")
    f = tmp_path / "s.yaml"
    f.write_text("version: 1\ngrid: {model: [lenet-c, sfc], levels: [1, 2]}\n")
    p = sweep_process(f, tmp_path / "o", "--engine", "dask", "--workers", "2")
    try:
        me, deadline, children = psutil.Process(p.pid), time.time() + 120, []
        while time.time() < deadline and len(children) < 3 and p.poll() is None:
            children = me.children(recursive=True)
            time.sleep(0.01)
        assert len(children) >= 3, "the workers did not start"
    except BaseException:
        os.killpg(p.pid, signal.SIGKILL)
        raise
    err = _interrupted(p)
    assert err.strip().splitlines() == [f"explore: interrupted; 0 points cached this run, 0 in all in {tmp_path / 'o'}'s "
                                        "cache: rerun the same command to resume"], err
    assert psutil.wait_procs(children, timeout=30)[1] == []  # every one ended
