"""The local pool under the spawn and forkserver start methods (forkserver: Linux's default from
Python 3.14): each worker first re-runs the calling script, so a script that calls ``sweep`` at its
top level without ``if __name__ == "__main__":`` is refused in one error before any worker starts,
as Dask's local cluster is; a guarded script runs its points in the pool."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


SPEC = '{"version": 1, "name": "guard", "grid": {"model": ["lenet-c", "sfc"], "levels": [1, 2]}}'


def _script(tmp_path, body: str):
    path = tmp_path / "run.py"
    path.write_text(textwrap.dedent(body).format(spec=SPEC, out=str(tmp_path / "o")))
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, cwd=tmp_path)


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_an_unguarded_script_under_spawn_is_refused_before_any_worker_starts(tmp_path, method):
    done = _script(tmp_path, f"""\
        import json, multiprocessing
        multiprocessing.set_start_method("{method}")
        from explorer.api import sweep
        rows = list(sweep(json.loads('{{spec}}'), out={{out!r}}, workers=2))
        print(len(rows))
        """)
    assert done.returncode == 1 and done.stdout == "", done.stderr
    assert done.stderr.count("Traceback") == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last == ("explorer.core.errors.SpecError: engine: the local pool starts worker processes by "
                    f"{method}, and each first re-runs the calling script ({tmp_path / 'run.py'}, line 4): "
                    'put that call under if __name__ == "__main__":'), last
    assert not (tmp_path / "o").exists()  # refused before anything ran or was written


def test_a_guarded_script_under_spawn_runs_its_points_in_the_pool(tmp_path):
    done = _script(tmp_path, """\
        import json, multiprocessing
        from explorer.api import sweep
        from explorer.app.sweep import engine


        def main():
            multiprocessing.set_start_method("spawn")
            engine.SERIAL_SOLVERS = ()  # every point to the pool (else the parent solves these cheap ones)
            rows = list(sweep(json.loads('{spec}'), out={out!r}, workers=2))
            print(len(rows), sorted({{r["status"] for r in rows}}))


        if __name__ == "__main__":
            main()
        """)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "4 ['level-optimal']\n" and done.stderr == "", (done.stdout, done.stderr)


def test_the_start_method_is_read_without_fixing_it():
    """In a fresh interpreter (the suite's own pools may have fixed it here): the platform's default,
    read without setting it, so that a script may still set it."""
    code = ("import multiprocessing as mp; from explorer.app.sweep import engine; "
            "m = engine.start_method(); print(m == mp.get_all_start_methods()[0], mp.get_start_method(allow_none=True))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "None"], done.stdout
