"""Hostile use that must still work: --output destinations, limits beyond int64, refusals of
huge instances, Ctrl-C, small batches, graphs too wide for the DP."""

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from fractions import Fraction

import pytest

from explorer.core.errors import InstanceTooLarge, Refused
from explorer.core.partition import Space
from explorer.core.problem import Problem
from explorer.core.units import format_count
from explorer.frontends import load_array, load_model
from explorer.frontends.constraints_yaml import ConstraintOptions, build_constraints
from explorer.frontends.network_yaml import load_network_text

from .conftest import run_cli
from .test_bad_inputs import densenet_yaml

SMALL = ["--model", "sfc", "--levels", "2"]


# --- --output -------------------------------------------------------------------------------


def test_output_writes_through_a_symlink(tmp_path, capsys):
    target = tmp_path / "real.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    code, _, _ = run_cli(SMALL + ["--format", "json", "--output", str(link)], capsys)
    assert code == 0
    assert link.is_symlink() and os.readlink(link) == str(target), "the link stays a link"
    assert json.loads(target.read_text())["model"] == "sfc", "its target gets the report"


def test_output_through_a_dangling_symlink_creates_its_target(tmp_path, capsys):
    link = tmp_path / "link.txt"
    link.symlink_to(tmp_path / "new.txt")
    code, _, _ = run_cli(SMALL + ["--output", str(link)], capsys)
    assert code == 0 and link.is_symlink() and "sfc on" in (tmp_path / "new.txt").read_text()


def test_output_into_a_character_device_keeps_the_device(capsys):
    before = os.stat("/dev/null")
    code, _, err = run_cli(SMALL + ["--output", "/dev/null"], capsys)
    after = os.stat("/dev/null")
    assert code == 0 and "wrote /dev/null" in err
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_output_into_a_fifo(tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()))
    reader.start()
    code, _, _ = run_cli(SMALL + ["--format", "json", "--output", str(fifo)], capsys)
    reader.join(10)
    assert code == 0 and stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO is written into, not replaced"
    assert json.loads(got[0])["model"] == "sfc"


def test_output_dev_stdout_as_a_user_runs_it(tmp_path):
    r = subprocess.run([sys.executable, "-m", "explorer.app.cli", *SMALL, "--format", "json", "--output", "/dev/stdout"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and json.loads(r.stdout)["model"] == "sfc"
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_output_dev_stdout_redirected_to_a_file_writes_through_the_redirection(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("first line\n")
    inode = os.stat(target).st_ino
    with open(target, "a") as f:  # explore ... --output /dev/stdout >> r.json
        r = subprocess.run([sys.executable, "-m", "explorer.app.cli", *SMALL, "--format", "json", "--output", "/dev/stdout"],
                           stdout=f, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 0 and "Traceback" not in r.stderr
    assert os.stat(target).st_ino == inode, "the file the shell opened is written, not replaced"
    first, rest = target.read_text().split("\n", 1)
    assert first == "first line" and json.loads(rest)["model"] == "sfc"


def test_output_to_a_closed_descriptor_is_bad_input(capsys):
    code, _, err = run_cli(SMALL + ["--output", "/dev/fd/987"], capsys)
    assert code == 2 and err == "explore: error: --output: cannot write /dev/fd/987: Bad file descriptor\n"


def test_output_dash_is_stdout(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(SMALL + ["--format", "json", "--output", "-"], capsys)
    assert code == 0 and json.loads(out)["model"] == "sfc"
    assert not (tmp_path / "-").exists() and "wrote" not in err


def test_output_replaces_a_file_keeping_its_mode(tmp_path, capsys):
    target = tmp_path / "r.txt"
    target.write_text("old")
    os.chmod(target, 0o640)
    inode = os.stat(target).st_ino
    code, _, _ = run_cli(SMALL + ["--output", str(target)], capsys)
    assert code == 0 and "sfc on" in target.read_text()
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert os.stat(target).st_ino != inode, "replaced by rename (atomic), not rewritten in place"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.txt"], "no temp file left"


def test_new_output_file_follows_the_umask(tmp_path, capsys):
    old = os.umask(0o027)
    try:
        code, _, _ = run_cli(SMALL + ["--output", str(tmp_path / "a.txt")], capsys)
        os.umask(0o002)
        code2, _, _ = run_cli(SMALL + ["--output", str(tmp_path / "b.txt")], capsys)
    finally:
        os.umask(old)
    assert code == code2 == 0
    assert stat.S_IMODE(os.stat(tmp_path / "a.txt").st_mode) == 0o640
    assert stat.S_IMODE(os.stat(tmp_path / "b.txt").st_mode) == 0o664


def test_failed_replace_leaves_the_old_file(tmp_path, capsys, monkeypatch):
    target = tmp_path / "r.txt"
    target.write_text("old")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    code, out, err = run_cli(SMALL + ["--output", str(target)], capsys)
    assert code == 2 and err == f"explore: error: --output: cannot write {target}: No space left on device\n"
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.txt"], "the temp file is removed"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_output_into_a_read_only_folder_is_refused_before_solving(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o500)
    code, _, err = run_cli(SMALL + ["--output", str(ro / "r.txt")], capsys)
    assert code == 2 and "is not writable" in err


def _no_solving(monkeypatch):
    from explorer import api

    def refuse(*a, **k):
        raise AssertionError("solved before checking --output")

    for name in ("solve", "check"):
        monkeypatch.setattr(getattr(api, name), "with_option_names", refuse)


@pytest.mark.parametrize("command", [[], ["check"]])
def test_output_in_a_folder_that_takes_no_file_is_refused_before_solving(tmp_path, capsys, monkeypatch, command):
    # permission bits do not tell (root passes os.access anywhere): the folder is probed
    import tempfile

    real = tempfile.mkstemp

    def no_files_here(*a, dir=None, **k):
        if str(dir) == str(tmp_path):
            raise PermissionError(13, "Permission denied")
        return real(*a, dir=dir, **k)

    monkeypatch.setattr(tempfile, "mkstemp", no_files_here)
    _no_solving(monkeypatch)
    code, _, err = run_cli(command + SMALL + ["--output", str(tmp_path / "r.txt")], capsys)
    assert (code, err) == (2, f"explore: error: --output: cannot write {tmp_path / 'r.txt'}: folder {tmp_path} is not writable\n")


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
@pytest.mark.parametrize("path", ["/proc/x.txt", "/proc/version"])
def test_output_into_proc_is_refused_before_solving(capsys, monkeypatch, path):
    _no_solving(monkeypatch)
    code, _, err = run_cli(SMALL + ["--output", path], capsys)
    assert (code, err) == (2, f"explore: error: --output: cannot write {path}: folder /proc is not writable\n")


def test_output_checks_leave_nothing_behind(tmp_path, capsys):
    (tmp_path / "old.txt").write_text("old")
    code, _, err = run_cli(SMALL + ["--output", str(tmp_path / "sub") + "/"], capsys)
    assert code == 2 and err.endswith("names a folder (ends in /)\n")
    code, _, _ = run_cli(SMALL + ["--output", str(tmp_path / "old.txt")], capsys)
    assert code == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["old.txt"], "no probe file is left"


# --- --dump-model -----------------------------------------------------------------------------


def test_dump_model_writes_the_cpsat_model(tmp_path, capsys):
    code, _, _ = run_cli(SMALL + ["--solver", "cpsat", "--workers", "1", "--dump-model", str(tmp_path / "m.txt")], capsys)
    assert code == 0 and "variables" in (tmp_path / "m.txt").read_text()


def test_dump_model_error_comes_before_solving(tmp_path, capsys, monkeypatch):
    import explorer.app.run as run_module

    def no_solving(*a, **k):
        raise AssertionError("solved before checking --dump-model")

    monkeypatch.setattr(run_module, "run", no_solving)
    code, _, err = run_cli(SMALL + ["--solver", "cpsat", "--dump-model", str(tmp_path / "no" / "m.pb")], capsys)
    assert code == 2 and "--dump-model: cannot write" in err


# --- limits beyond int64 ----------------------------------------------------------------------


def _cpsat_json(args, capsys):
    code, out, err = run_cli(["--model", "lenet-c", "--solver", "cpsat", "--workers", "1", "--format", "json", *args], capsys)
    assert "Traceback" not in err
    return code, json.loads(out)


@pytest.mark.parametrize("args", [["--memory", "1e12"], ["--cap", "3=1e40B"], ["--cap", "0=1e90TB", "--memory", "1e99"]])
def test_limits_beyond_int64_are_no_limit(args, capsys):
    code, free = _cpsat_json([], capsys)
    code2, r = _cpsat_json(args, capsys)
    assert code == code2 == 0 and r["status"] == "optimal"
    assert r["objective_value"] == free["objective_value"] and r["violations"] == []


def test_huge_limits_in_files_are_no_limit(tmp_path, capsys):
    c = tmp_path / "c.yaml"
    c.write_text("version: 1\ncaps: {0: 1e40B, 3: 1e60GB}\nmemory_GiB: 1.0e+30\n")  # YAML 1.1 reads a bare 1e30 as a string
    a = tmp_path / "a.yaml"
    a.write_text("version: 1\nname: a\nlevels: 2\nlink_bandwidth_GBps: 10\npeak_TFLOPS: 1\nmemory_GiB: 4\n"
                 "cap_bytes_per_step: [1e50B, null]\ncap_seconds_per_step: [null, 1e30s]\n")
    code, r = _cpsat_json(["--constraints", str(c)], capsys)
    assert code == 0 and r["status"] == "optimal"
    code, r = _cpsat_json(["--array", str(a)], capsys)
    assert code == 0 and r["status"] == "optimal" and len(r["constraints"]["caps"]) == 2


def test_unreachable_limit_gives_cpsat_no_row():
    from explorer.solvers.formulation import build

    net, arr = load_model("lenet-c"), load_array("hypar-16")
    for caps, mem, rows in ((("3=1e40B",), 1e12, 0), (("3=1MB",), 1e-6, 2)):
        cons = build_constraints(net, arr, Space.HYPAR, ConstraintOptions(caps=caps, memory_GiB=mem))
        f = build(Problem(net, arr, Space.HYPAR, constraints=cons))
        assert sum(len(sc.le_rows) for sc in f.side) == rows


def test_huge_limits_print_without_float_overflow(capsys):
    code, out, err = run_cli(["--model", "sfc", "--memory", "1e99", "--cap", "0=1e100TB"], capsys)
    assert code == 0 and "Traceback" not in err
    assert "memory 9.766e+95 TiB/accelerator" in out and "1.000e+112 B" in out
    code, out, err = run_cli(["--model", "sfc", "--memory", "1e99", "--cap", "0=1e100TB", "--format", "json"], capsys)
    r = json.loads(out)
    assert r["constraints"]["memory_bytes"] == 10**99 * 2**30 and r["constraints"]["caps"][0]["bytes"] == 10**112


# --- refusals and huge counts -----------------------------------------------------------------


@pytest.mark.parametrize("n,text", [(0, "0"), (999_999_999_999, "999,999,999,999"), (10**12, "1.000e+12"),
                                    (10**5000 - 1, "1.000e+5000"), (-(7 * 10**400), "-7.000e+400")],
                         ids=["zero", "below-1e12", "1e12", "5000-digits", "negative"])
def test_format_count_never_overflows(n, text):
    assert format_count(n) == text


@pytest.mark.parametrize("n", [3**663, 2**1000 + 12345, 10**20 * 9995, 123456789 * 10**300, 3**2000])
def test_format_count_agrees_with_decimal(n):
    from decimal import Context

    assert format_count(n) == f"{Context(prec=4).create_decimal(n):.3e}".replace("E", "e")


def test_check_reports_refusals_and_does_not_call_them_disagreement(capsys):
    from explorer.app.check import check
    from explorer.solvers import get_solver

    def refusing(name):
        def solve(problem, options):
            if problem.custom_weights is not None:  # the level phase's sub-problems are solved
                return get_solver(name)(problem, options)
            raise InstanceTooLarge(f"{name}: {format_count(3**700)} plans exceeds its limit; use --solver exact")
        return solve

    p = Problem(load_model("lenet-c"), load_array("hypar-16").with_levels(2), Space.ACCPAR)
    r = check(p, lookup=lambda name: refusing(name) if name in ("brute", "cpsat") else get_solver(name))
    assert r.agree and r.problems == ()
    assert r.solver("brute").refused and "9.658e+333 plans" in r.solver("brute").reason and r.solver("cpsat").refused
    assert r.to_json()["solvers"]["brute"] == {"status": "refused", "reason": r.solver("brute").reason}
    assert r.optimum.proven_by == ("exact",)


# --- graphs too wide for the DP ---------------------------------------------------------------


def test_dp_answers_a_densenet_with_its_wide_levels_by_cpsat(tmp_path, capsys):
    """Too wide for the elimination: the DP solves those levels by CP-SAT and says so (issue 23)."""
    p = tmp_path / "dense.yaml"
    p.write_text(densenet_yaml(14))
    code, out, err = run_cli(["--model", str(p), "--space", "accpar", "--levels", "2"], capsys)
    assert code == 0, err
    assert ("note: levels 0, 1 solved by CP-SAT instead of the DP's elimination (after node 'cat10' the graph "
            "keeps 12 outputs alive, 354,294 type combinations (limit 200,000): too wide for the DP); each proven optimal") in out
    code, out, err = run_cli(["--model", str(p), "--space", "accpar", "--levels", "2", "--format", "json"], capsys)
    r = json.loads(out)
    assert code == 0 and r["status"] == "level-optimal" and "solved by CP-SAT" in r["reason"]


def test_frontier_check_passes_exactly_what_the_dp_can_hold():
    from explorer.solvers import dp

    from explorer.core.partition import zero_counts
    from explorer.solvers.dp import graph_level

    # the DP's own state count peaks exactly where the check says: a limit one below refuses,
    # the peak itself runs
    prob = Problem(load_network_text(densenet_yaml(7)), load_array("hypar-16").with_levels(1), Space.ACCPAR)
    peak = 3**8  # after c7: c0..c7 alive (3 types each) until cat7 reads them all; cat6 died with c7
    old = dp.MAX_FRONTIER_STATES
    try:
        dp.MAX_FRONTIER_STATES = peak - 1
        assert f"after node 'c7' the graph keeps 8 outputs alive, {peak:,} type combinations" in dp.wide_levels(prob)[0]
        with pytest.raises(NotImplementedError):
            graph_level(prob, 0, zero_counts(prob.num_layers))
        dp.MAX_FRONTIER_STATES = peak
        assert dp.wide_levels(prob) == {}
        graph_level(prob, 0, zero_counts(prob.num_layers))
    finally:
        dp.MAX_FRONTIER_STATES = old
    wide = Problem(load_network_text(densenet_yaml(13)), load_array("hypar-16").with_levels(1), Space.ACCPAR)
    assert "after node 'cat10' the graph keeps 12 outputs alive, 354,294 type combinations" in dp.wide_levels(wide)[0]
    assert isinstance(InstanceTooLarge("x"), Refused)


def test_cpsat_solves_the_densenet_without_the_dp_hint(tmp_path, capsys):
    p = tmp_path / "dense.yaml"
    p.write_text(densenet_yaml(14))
    code, out, err = run_cli(["--model", str(p), "--space", "accpar", "--levels", "2", "--solver", "cpsat", "--workers", "1",
                              "--format", "json"], capsys)
    assert code == 0, err
    assert json.loads(out)["status"] == "optimal"
    code, out, err = run_cli(["check", "--model", str(p), "--space", "accpar", "--levels", "1", "--workers", "1",
                              "--solvers", "cpsat,brute", "--format", "json"], capsys)
    r = json.loads(out)
    assert code == 0 and r["dp"]["status"] == "level-optimal"
    assert r["solvers"]["cpsat"]["status"] == "optimal" and r["agree"]


# --- small batches ----------------------------------------------------------------------------


def test_batch_smaller_than_the_array_warns(capsys):
    code, out, _ = run_cli(["--batch", "7"], capsys)
    assert code == 0 and "warning: batch 7 is smaller than the 16 accelerators" in out and "7/16 of a sample" in out
    code, out, _ = run_cli(["--batch", "7", "--format", "json"], capsys)
    assert json.loads(out)["warnings"] == [
        "batch 7 is smaller than the 16 accelerators: splitting the batch (type I) at every level gives 7/16 of a sample "
        "per accelerator (amounts are exact fractions, not whole samples)"]
    code, out, _ = run_cli(["--batch", "16", "--format", "json"], capsys)
    assert json.loads(out)["warnings"] == []


# --- Ctrl-C -----------------------------------------------------------------------------------

LONG_SOLVE = ["--model", "resnet50", "--levels", "7", "--space", "accpar", "--workers", "1"]


def _interrupt(args, after_line: str, delay: float, run=("-m", "explorer.app.cli")):
    """Run explore, wait for a progress line, send SIGINT after ``delay`` s; (code, stdout, stderr).
    The child gets SIGINT's default action back: pytest started as a background job of a
    non-interactive shell (nohup ... &, some CI runners) ignores SIGINT, a child inherits that, and
    Python then installs no KeyboardInterrupt handler, so the signal would be lost (as
    tests/test_sweep.py's Ctrl-C test does)."""
    p = subprocess.Popen([sys.executable, *run, *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = []
    for line in p.stderr:
        seen.append(line)
        if after_line in line:
            break
    time.sleep(delay)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    return p.returncode, out, "".join(seen) + err


# CP-SAT's first plan here (the DP's hint) comes at once and its proof takes minutes (none in 38 s under
# load; it improves the plan every few seconds): a Ctrl-C 0.5 s after the first plan always lands in the
# search. (At --levels 7 the proof came 1-2 s after the first plan on a quiet 2-core machine, so on a
# faster runner the signal could arrive after it: "a proof stands", reported optimal, exit 0.)
CPSAT_NO_QUICK_PROOF = ["--model", "resnet50", "--levels", "8", "--space", "accpar", "--workers", "1"]


def test_ctrl_c_during_cpsat_reports_the_plan_so_far():
    code, out, err = _interrupt(CPSAT_NO_QUICK_PROOF + ["--solver", "cpsat", "--format", "json"], "cpsat: plan at", 0.5)
    assert code == 130 and "Traceback" not in err, (code, out[-400:], err[-400:])
    r = json.loads(out)
    assert r["status"] == "interrupted" and r["plan"] is not None and r["violations"] == []
    assert "stopped by Ctrl-C" in r["reason"] and Fraction(r["objective_value"]) > 0 and r["gap"] is not None
    last = err.rstrip().splitlines()[-1]
    assert last.startswith("explore: interrupted after ") and last.endswith(": stopped by Ctrl-C; the best plan so far, optimality not proven")


# Under the check's time limit (60 s by default) a level check here is the frontier elimination's, a few
# milliseconds: each is slowed by 2 s so that the signal lands in the level phase (explore's own main).
SLOW_LEVELS = ("-c", "import time; import explorer.app.check as c; real = c._eliminated; "
                     "c._eliminated = lambda *a: (time.sleep(2), real(*a))[1]; "
                     "from explorer.app.cli import main; main()")


def test_ctrl_c_during_checks_level_phase():
    code, out, err = _interrupt(["check", *LONG_SOLVE], "level 1:", 0.3, run=SLOW_LEVELS)
    assert code == 130 and "Traceback" not in err and out == ""
    assert err.rstrip().splitlines()[-1] == ("explore: interrupted (Ctrl-C) during level 1: level-wise optimum given the "
                                             "DP's levels above; no report written")


# --- fc input shapes ---------------------------------------------------------------------------


def test_fc_inputs_chain_like_conv_ones():
    from explorer.core.errors import SpecError
    from explorer.frontends import zoo

    for path in zoo.zoo_files().values():  # every zoo network still loads (AlexNet: 256 x 13x13 pooled to 6x6 -> 9216)
        load_model(str(path))
    head = ("version: 1\nname: t\nbatch: 2\nlayers:\n"
            "  - {name: c, kind: conv, in_channels: 3, out_channels: 4, kernel: 3, in_size: 6, out_size: 6}\n")
    for ok in (144, 36, 4):  # flatten 4 x 6x6, pooled to 3x3, global pooling
        load_network_text(head + f"  - {{name: f, kind: fc, in_features: {ok}, out_features: 2}}\n")
    for bad in (145, 148, 6):  # not a multiple of 4, more than 4 x 36, not a multiple
        with pytest.raises(SpecError, match=rf"layers\[1\]\.in_features: {bad} does not match its input 'c'"):
            load_network_text(head + f"  - {{name: f, kind: fc, in_features: {bad}, out_features: 2}}\n")
    fcs = "version: 1\nname: t\nlayers:\n  - {name: a, kind: fc, in_features: 3, out_features: 4}\n"
    load_network_text(fcs + "  - {name: b, kind: fc, in_features: 4, out_features: 1}\n")
    with pytest.raises(SpecError, match=r"in_features: 5 does not match the 4 outputs of its input 'a'"):
        load_network_text(fcs + "  - {name: b, kind: fc, in_features: 5, out_features: 1}\n")


def test_ctrl_c_during_cpsats_exact_first_step_reports_its_plan_so_far():
    # under a memory limit, cpsat runs the exact constrained method first (minutes on this graph)
    code, out, err = _interrupt(LONG_SOLVE + ["--memory", "0.2", "--solver", "cpsat", "--format", "json"],
                                "solving", 4.0)
    assert code == 130 and "Traceback" not in err
    r = json.loads(out)
    assert r["status"] == "interrupted" and "stopped by Ctrl-C" in r["reason"]
    assert (r["plan"] is None) == ("before any plan" in r["reason"]) and (r["plan"] is None or r["violations"] == [])
    assert err.rstrip().splitlines()[-1].startswith("explore: interrupted after ")
