"""Sweep hardening: the point count is checked before any point is built, messages show a cut
user value, malformed cache entries are recomputed, every distinct input is validated up front,
non-numeric Pareto columns are refused, outputs follow the umask, help and exit statuses."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from explorer.api import sweep
from explorer.app.sweep import cache as cache_mod
from explorer.app.sweep import spec as spec_mod
from explorer.app.sweep.spec import MAX_POINTS, load_sweep
from explorer.core.errors import SpecError, shown

from .conftest import run_cli


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_huge_grid_is_refused_before_any_point_is_built(tmp_path, capsys, monkeypatch):
    built = []
    real = spec_mod.Point
    monkeypatch.setattr(spec_mod, "Point", lambda *a: built.append(1) or real(*a))
    lists = ", ".join(f"{k}: [{', '.join(str(i) for i in range(1, 33))}]"
                      for k in ("batch", "seed", "time_limit", "memory_GiB", "peak_TFLOPS"))
    f = write(tmp_path / "s.yaml", f"version: 1\ngrid: {{{lists}}}\n")  # 32^5 = 33,554,432 points
    t0 = time.perf_counter()
    code, out, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o")], capsys)
    assert time.perf_counter() - t0 < 5 and not built
    assert code == 2 and err.count("\n") == 1
    assert "33,554,432 points (grid 32 x 32 x 32 x 32 x 32, plus 0 listed) exceed the limit of 100,000" in err
    assert "--max-points" in err and not (tmp_path / "o").exists()


def test_max_points_raises_the_limit(tmp_path, capsys):
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {model: [lenet-c], levels: [1, 2, 3]}\npoints: [{levels: 1}]\n")
    with pytest.raises(SpecError, match="4 points .* exceed the limit of 3 points"):
        load_sweep(f, max_points=3)
    assert len(load_sweep(f, max_points=4).points) == 4
    code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o"), "--max-points", "3"], capsys)
    assert code == 2 and "exceed the limit of 3 points" in err
    code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o"), "--max-points", "4", "--workers", "1"], capsys)
    assert code == 0, err
    assert MAX_POINTS == 100_000
    from explorer import api

    assert api.MAX_POINTS == MAX_POINTS  # api's default, named there so that importing api skips the sweep
    with pytest.raises(SpecError, match="exceed the limit of 2 points"):
        sweep(f, max_points=2)


BOMB = """\
version: 1
reference:
  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
  g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
  h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
grid: {model: *h}
"""


def test_an_anchor_bomb_gives_a_short_message(tmp_path, capsys):
    f = write(tmp_path / "s.yaml", BOMB)
    code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and err.count("\n") == 1 and len(err) < 2000, len(err)
    assert "grid.model[0]: must be a non-empty string, got [[[[" in err


def test_shown_cuts_any_value():
    assert shown("abc") == "'abc'" and shown(5) == "5"
    assert len(shown("x" * 10_000)) <= 80 and len(shown(list(range(10_000)))) <= 80
    big = [[[[["lol"] * 9] * 9] * 9] * 9] * 9
    assert len(shown(big)) <= 80


def test_field_messages_cut_the_value():
    from explorer.frontends.fields import check_pos_int

    errors: list[str] = []
    check_pos_int("y" * 100_000, "layers[0].kernel", errors)
    assert len(errors) == 1 and len(errors[0]) < 200 and errors[0].startswith("layers[0].kernel: must be a positive integer, got 'yyy")


def test_malformed_cache_entries_are_recomputed(tmp_path):
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {model: [lenet-c], levels: [1, 2, 3]}\n")
    first = list(sweep(f, tmp_path / "o", workers=1))
    entries = sorted((tmp_path / "o" / "cache").glob("*/*.json"))
    assert len(entries) == 3
    bad = [{"result": 5}, [1, 2], {"status": "optimal", "error": "", "wall_s": 0.1, "summary": 5, "result_text": None}]
    for path, data in zip(entries, bad):
        path.write_text(json.dumps(data))
    again = list(sweep(f, tmp_path / "o", workers=1))
    assert [r["cached"] for r in again] == [False] * 3
    assert [r["traffic_elements"] for r in again] == [r["traffic_elements"] for r in first]
    assert all(cache_mod.well_formed(json.loads(p.read_text())) for p in entries)  # rewritten whole
    assert [r["cached"] for r in sweep(f, tmp_path / "o", workers=1)] == [True] * 3


@pytest.mark.parametrize("body, message", [
    ("grid: {caps: [['3=5']]}", "s.yaml: grid.caps[0]: '3=5': '5' has no unit"),
    ("grid: {caps: [['x=5MB']]}", "s.yaml: grid.caps[0]: 'x=5MB': level 'x' is not an integer"),
    ("grid: {model: [n/broken.yaml]}", "s.yaml: grid.model[0]: "),
    ("grid: {link_bandwidth_GBps: [[1, 2]]}", "s.yaml: grid.link_bandwidth_GBps[0]: 2 values for 4 levels (array hypar-16)"),
    ("grid: {levels: [1, 2]}\nfixed: {link_bandwidth_GBps: [1, 2]}", "s.yaml: fixed.link_bandwidth_GBps: 2 values for 1 levels"),
    ("grid: {array: [a/broken.yaml]}", "s.yaml: grid.array[0]: "),
    ("grid: {model: alexnet}", "s.yaml: grid.model: must be a non-empty list of values, got 'alexnet'"),
    ("grid: {constraints: [c/broken.yaml]}", "s.yaml: grid.constraints[0]: "),
])
def test_every_distinct_input_is_validated_up_front(tmp_path, capsys, body, message):
    (tmp_path / "n").mkdir()
    (tmp_path / "n" / "broken.yaml").write_text("version: 1\nname: x\nlayers: [{kind: conv, name: c}]\n")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "broken.yaml").write_text("version: 1\nname: x\nlevels: 2\ncolour: red\n")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "broken.yaml").write_text("version: 1\ncaps: [0=1GB\n")
    f = write(tmp_path / "s.yaml", f"version: 1\n{body}\n")
    code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o")], capsys)
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert "broken.yaml" in err or "broken" not in body
    assert not (tmp_path / "o").exists()
    if "model: alexnet" in body:
        assert "needs a grid or points" not in err and "grid.model[" not in err  # one problem only


def test_summary_counts_invalid_apart_from_failed(tmp_path, capsys):
    f = write(tmp_path / "s.yaml", "version: 1\npoints: [{model: lenet-c, levels: 2}, {model: lenet-c, levels: 2, caps: ['9=1GB']}]\n")
    code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o"), "--workers", "1"], capsys)
    assert code == 0, err  # an invalid point answers (a row with its reason), like an infeasible one
    assert "2 points (0 reused from the cache, 2 computed; 0 without a plan, 1 invalid, 0 failed)" in err


@pytest.mark.parametrize("cols, bad", [("model,step_time_s", "model"), ("error,cached", "error, cached"),
                                       ("traffic_bytes,status", "status")])
def test_pareto_refuses_non_numeric_columns(tmp_path, capsys, cols, bad):
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {model: [lenet-c], levels: [1, 2]}\n")
    code, _, err = run_cli(["sweep", str(f), "--out", str(tmp_path / "o"), "--pareto", cols], capsys)
    assert code == 2 and f"--pareto: column {bad} is not numeric" in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_outputs_follow_the_umask(tmp_path):
    f = write(tmp_path / "s.yaml", "version: 1\ngrid: {model: [lenet-c], levels: [1, 2]}\n")
    old = os.umask(0o022)
    try:
        list(sweep(f, tmp_path / "o", workers=1))
    finally:
        os.umask(old)
    for name in ("results.csv", "plans.jsonl", "sweep.json"):
        assert stat.S_IMODE((tmp_path / "o" / name).stat().st_mode) == 0o644, name
    for entry in (tmp_path / "o" / "cache").glob("*/*.json"):
        assert stat.S_IMODE(entry.stat().st_mode) == 0o644


def test_sweep_help_shows_the_run_options(capsys):
    code, out, _ = run_cli(["sweep", "--help"], capsys)
    assert code == 0
    for opt in ("FILE", "--out", "--shard", "--pareto", "--workers", "--max-points", "explore sweep merge"):
        assert opt in out, opt
    code, _, err = run_cli(["sweep", "s.yaml"], capsys)  # no --out
    assert code == 2 and "explore sweep --help" in err and "sweep run" not in err


def test_the_progress_bar_is_closed_on_ctrl_c():
    from explorer.app.cli_sweep import Reporter

    class Bar:
        n = 0
        disable = False

        def close(self):
            raise KeyboardInterrupt  # Ctrl-C while tqdm redraws

    r = Reporter(quiet=False)
    r.bar = Bar()
    r.close()  # does not raise
    assert r.bar is None
    r.close()  # twice is fine


# --- single runs: API argument types, extreme figures, explore list --------------------------


def test_api_caps_as_mapping_or_strings():
    from explorer import api

    as_map = api.solve("lenet-c", levels=2, caps={1: "1kB"}).to_json()
    as_list = api.solve("lenet-c", levels=2, caps=["1=1kB"]).to_json()
    assert as_map["violations"] and as_map["violations"] == as_list["violations"]  # the cap was applied
    for bad, message in [({3: 5}, "caps: a mapping must take a level"), (7, "caps: must be a list of LEVEL=AMOUNT"),
                         ([1, 2], "caps: must be a list"), (5, "caps:")]:
        with pytest.raises(SpecError, match=message):
            api.solve("lenet-c", caps=bad)
    with pytest.raises(SpecError, match="pins: must be a list of LAYER@LEVEL=TYPE strings, got 5"):
        api.solve("lenet-c", pins=5)
    with pytest.raises(SpecError, match="weight_copies: must be an integer, got 'x'"):
        api.solve("lenet-c", weight_copies="x")
    with pytest.raises(SpecError, match="time_limit: must be a finite number of seconds >= 0.1, got .x."):
        api.solve("lenet-c", solver="cpsat", time_limit="x")


def test_extreme_figures_keep_the_columns_apart(tmp_path, capsys):
    from explorer.app.render import fmt_bytes, fmt_seconds

    assert fmt_seconds(1.4609452892159999e33) == "1.461e+33 s" and fmt_seconds(2.5) == "2.500 s"
    from fractions import Fraction

    assert fmt_bytes(Fraction(10**400)) == "1.000e+400 B" and fmt_bytes(2e9) == "2.000 GB"
    arr = write(tmp_path / "a.yaml", "version: 1\nname: ext\nlevels: 2\nlink_bandwidth_GBps: 1.0e+100\n"
                                     "peak_TFLOPS: 1.0e-30\nmemory_GiB: 16\n")
    code, out, err = run_cli(["--model", "lenet-c", "--levels", "1", "--array", str(arr)], capsys)
    assert code == 0, err
    assert "(2 accelerators, 1 level)" in out
    table = out[out.index("plan  "):].splitlines()
    head = table[0]
    for row in table[1:5]:
        cells = row.split()
        # the comm time (about 1e-103 s) keeps its digits: never a rounded-off "0 us"
        assert cells[5] == "s" and 0 < float(cells[4]) < 1e-100 and cells[6] == "1.761e+27" and cells[7] == "s", row
        assert row.index(" 1.761e+27 s") + len(" 1.761e+27 s") == head.index("step time") + len("step time"), (row, head)


def test_list_aligns_long_names(capsys):
    code, out, _ = run_cli(["list"], capsys)
    assert code == 0
    models = [line for line in out.splitlines()[1:] if " layers " in line]
    assert len({line.index(" layers ") for line in models}) == 1, models  # alexnet-paper included
    arrays = [line for line in out.splitlines() if " H=" in line]
    assert len({line.index(" H=") for line in arrays}) == 1, arrays


@pytest.mark.parametrize("name", ["m.json", "m", "m.pbx"])
def test_dump_model_only_pb_or_text(tmp_path, capsys, name, monkeypatch):
    import explorer.app.run as run_module

    monkeypatch.setattr(run_module, "run", lambda *a, **k: (_ for _ in ()).throw(AssertionError("solved")))
    code, _, err = run_cli(["--model", "lenet-c", "--solver", "cpsat", "--dump-model", str(tmp_path / name)], capsys)
    assert code == 2 and "must end in .pb (binary protobuf), .txt or .pbtxt (text)" in err
    assert not (tmp_path / name).exists()


def test_dump_model_pbtxt_is_text(tmp_path, capsys):
    code, _, err = run_cli(["--model", "lenet-c", "--levels", "2", "--solver", "cpsat", "--workers", "1",
                            "--dump-model", str(tmp_path / "m.pbtxt")], capsys)
    assert code == 0, err
    assert (tmp_path / "m.pbtxt").read_text().lstrip().startswith("variables")


def test_the_dp_clock_starts_after_its_imports():
    """The DP's reported wall time is the solve: numpy (imported on first use) is loaded before
    the solver starts its clock, so a first solve does not report ~100 ms of import; a network
    under the threshold (``thresholds.NUMPY_FROM_LAYERS``, set to 128 here) never needs it (issue 23)
    and does not import it."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from explorer.app import run as R\n"
        "real = R.get_solver\n"
        "seen = []\n"
        "def spy(name):\n"
        "    fn = real(name)\n"
        "    return lambda p, o: (seen.append('numpy' in sys.modules), fn(p, o))[1]\n"
        "R.get_solver = spy\n"
        "from explorer.core import thresholds\n"
        "thresholds.NUMPY_FROM_LAYERS = 128\n"
        "from explorer import api\n"
        "assert 'numpy' not in sys.modules\n"
        "api.solve('lenet-c')\n"
        "api.solve('gpt3-1.7b')\n"
        "print(seen)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[False, True]"



def test_the_summary_line_counts_the_start_up(tmp_path):
    """The summary's seconds run from the process's start (issue 23): the interpreter's start-up,
    the imports and the sweep file's loading count, so they come close to the process's wall time."""
    import re
    import subprocess
    import sys
    import time

    (tmp_path / "s.yaml").write_text("version: 1\nname: s\ngrid:\n  levels: [1, 2]\nfixed:\n  model: lenet-c\n")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "explorer.app.cli", "sweep", str(tmp_path / "s.yaml"), "--out",
                           str(tmp_path / "out"), "--workers", "1"], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr
    said = float(re.search(r" in ([0-9.]+) s \(start-up included\)", proc.stderr).group(1))
    assert 0.7 * wall - 0.1 <= said <= wall + 0.05
