"""Defects found by trying the README as a new (and hostile) user, each pinned here.

- sub-microsecond times rendered as "0 us" (a 2-accelerator array's step time of 2.688 ns);
- the README's uneven-split model worked by hand on the smallest case (a 2-layer fc network on
  two accelerators of 1 and 3 TFLOPS, ``explore split --split proportional``) against the tool.
"""

from __future__ import annotations

import json
import os
import re
import stat
from fractions import Fraction

import pytest

from explorer.app.render import fmt_joules, fmt_seconds

from .conftest import run_cli

NET = """version: 1
name: tiny2
batch: 8
layers:
  - {name: f1, kind: fc, in_features: 4, out_features: 2}
  - {name: f2, kind: fc, in_features: 2, out_features: 2}
"""
ARRAY = """version: 1
name: two-kinds
levels: 1
dtype_bytes: 2
kinds:
  slow: {peak_TFLOPS: 1, memory_GiB: 1}
  fast: {peak_TFLOPS: 3, memory_GiB: 1}
accelerators: [slow, fast]
link_bandwidth_GBps: 10
"""


@pytest.fixture
def files(tmp_path):
    (tmp_path / "net.yaml").write_text(NET)
    (tmp_path / "arr.yaml").write_text(ARRAY)
    return str(tmp_path / "net.yaml"), str(tmp_path / "arr.yaml")


@pytest.mark.parametrize("seconds,text", [
    (Fraction(2688, 10**12), "2.69 ns"), (Fraction(24, 10**10), "2.4 ns"), (Fraction(288, 10**12), "2.88e-10 s"),
    (Fraction(5, 10**7), "500 ns"), (0, "0 us"), (Fraction(48, 10**6), "48 us"), (Fraction(658, 10**6), "658 us"),
    (Fraction(6044, 10**6), "6.04 ms"),
])
def test_small_times_keep_their_digits(seconds, text):
    assert fmt_seconds(seconds) == text


def test_small_energies_keep_their_digits():
    assert fmt_joules(3e-9) == "3.000e-09 J" and fmt_joules(2.5e-6) == "2.5 uJ" and fmt_joules(0) == "0.0 uJ"


def test_nanosecond_step_is_not_printed_as_zero(files, capsys):
    net, arr = files
    code, out, err = run_cli(["--model", net, "--array", arr, "--objective", "time"], capsys)
    assert code == 0, err
    # equal split: compute 576 FLOP / 2 at the slow kind's 1 TFLOPS = 0.288 ns; comm (8 + 4) x 2 B / 10 GB/s
    assert "objective: step time 2.69 ns = compute 2.88e-10 s" in out and "+ communication 2.4 ns" in out
    dp_row = next(line for line in out.splitlines() if line.startswith("dp "))
    assert "2.4 ns" in dp_row and "2.69 ns" in dp_row and " 0 us" not in out


def test_proportional_split_by_hand(files, capsys):
    """By hand from the README's model section: the DP's equal-split plan is I, I (c = dW: 8 + 4 = 12
    elements, less than II's F_out 16 + 16); proportional alpha = 1 / (1 + 3) = 1/4; training FLOPs
    3 x 2 x (8*4*2 + 8*2*2) = 576: the 1-TFLOPS side computes 576/4 = 144 FLOP in 0.144 ns, the
    3-TFLOPS side 432 FLOP in 0.144 ns; the exchange is dW's partial sums at full size on both
    sides, 12 elements x 2 B at 10 GB/s = 2.4 ns (row(1/4) -> row(1/4) re-lays nothing); step time
    0.144 + 2.4 = 2.544 ns on both sides, against 0.288 + 2.4 = 2.688 ns split equally."""
    net, arr = files
    code, out, err = run_cli(["split", "--model", net, "--array", arr, "--split", "proportional", "--format", "json"],
                             capsys)
    assert code == 0, err
    d = json.loads(out)
    assert d["plan"] == [["I", "I"]] and d["alphas"] == [[["1/4", "1/4"]]]
    assert d["objective_value"] == "159/62500000000" and Fraction(d["objective_value"]) == Fraction(2544, 10**12)
    assert d["step_time_s"] == 2.544e-09 and d["group_times_s"] == [2.544e-09] * 2 and d["idle_s"] == 0
    assert d["baselines"]["all-I"]["step_time_s"] == float(Fraction(2688, 10**12))


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can give a file to another user")
def test_output_keeps_the_owner_of_the_file_it_replaces(tmp_path):
    """As root, --output onto another user's file replaced it with a root-owned one."""
    from explorer.app.output import write_text

    p = tmp_path / "theirs.txt"
    p.write_text("old\n")
    os.chown(p, 65534, 65534)
    p.chmod(0o640)
    write_text(str(p), "new\n")
    st = p.stat()
    assert p.read_text() == "new\n" and (st.st_uid, st.st_gid) == (65534, 65534) and stat.S_IMODE(st.st_mode) == 0o640


def test_output_written_in_place_when_the_owner_cannot_be_kept(tmp_path, monkeypatch):
    from explorer.app import output

    p = tmp_path / "theirs.txt"
    p.write_text("old and longer\n")
    inode = p.stat().st_ino
    monkeypatch.setattr(output, "_keep_owner", lambda tmp, st: False)
    output.write_text(str(p), "new\n")
    assert p.read_text() == "new\n" and p.stat().st_ino == inode
    assert [q.name for q in tmp_path.iterdir()] == ["theirs.txt"], "no temp file left behind"


def test_sweep_peak_override_on_an_array_of_kinds_is_bad_input(tmp_path, capsys):
    """It raised ValueError from ArraySpec (a traceback, exit 1) while checking the sweep file."""
    (tmp_path / "s.yaml").write_text("version: 1\nname: mix\ngrid:\n  peak_TFLOPS: [10, 100]\n"
                                     "fixed:\n  model: alexnet\n  array: tpu-mix-16\n  objective: time\n")
    code, out, err = run_cli(["sweep", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and err.startswith("explore: error: ") and err.count("\n") == 1, err
    assert "grid.peak_TFLOPS[0]: array 'tpu-mix-16' gives its peaks per kind" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_fractions_of_a_byte_are_not_printed_as_zero():
    from explorer.app.render import fmt_bytes

    assert fmt_bytes(Fraction(3, 50)) == "0.06 B" and fmt_bytes(0) == "0 B" and fmt_bytes(48) == "48 B"
    assert fmt_bytes(Fraction(1, 3)) == "0.333 B" and fmt_bytes(2e9) == "2.000 GB"


@pytest.mark.parametrize("args,says", [
    ([], "the memory limit the smallest (16 GiB)"),
    (["--memory", "8"], "the memory limit would be the smallest (16 GiB; 8 GiB is set instead)"),
])
def test_kinds_warning_names_the_memory_limit_in_force(args, says, capsys):
    """With --memory on an array of kinds the warning said the limit was the smallest kind's 16 GiB
    while the constraints line said 8 GiB."""
    code, out, err = run_cli(["--model", "lenet-c", "--array", "tpu-mix-16", *args], capsys)
    assert code == 0, err
    warning = next(line for line in out.splitlines() if line.startswith("warning: accelerators of 2 kinds"))
    assert says in warning


def test_sweep_name_must_be_printable(tmp_path, capsys):
    (tmp_path / "s.yaml").write_text('version: 1\nname: "sw\\nFAKE"\ngrid:\n  model: [lenet-c]\n')
    code, out, err = run_cli(["sweep", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out")], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "name: must be printable (no control, format or separator characters but the ASCII space), got 'sw\\nFAKE'" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("fast", [True, False])
def test_yaml_merge_may_override_a_merged_key(fast):
    """``b: {<<: *a, peak_TFLOPS: 3}`` (the natural way to write a table of kinds) was refused as a
    'duplicate key'; a key written twice in one mapping still is."""
    from explorer.core.errors import SpecError
    from explorer.frontends.yamlio import load_yaml_text

    data = load_yaml_text("a: &k {p: 1, m: 1}\nb: {<<: *k, p: 3}\nc: {<<: [*k, {p: 9, q: 2}], m: 5}\n", "x", fast=fast)
    assert data == {"a": {"p": 1, "m": 1}, "b": {"p": 3, "m": 1}, "c": {"p": 1, "m": 5, "q": 2}}
    for bad, key in [("a: 1\na: 2\n", "'a'"), ("a: &k {p: 1}\nb: {<<: *k, p: 3, p: 4}\n", "'p'")]:
        with pytest.raises(SpecError, match=f"duplicate key {key}"):
            load_yaml_text(bad, "x", fast=fast)


def test_kinds_table_written_with_a_merge(tmp_path, capsys):
    (tmp_path / "a.yaml").write_text(ARRAY.replace(
        "  slow: {peak_TFLOPS: 1, memory_GiB: 1}\n  fast: {peak_TFLOPS: 3, memory_GiB: 1}\n",
        "  slow: &base {peak_TFLOPS: 1, memory_GiB: 1}\n  fast: {<<: *base, peak_TFLOPS: 3}\n"))
    (tmp_path / "net.yaml").write_text(NET)
    code, out, err = run_cli(["split", "--model", str(tmp_path / "net.yaml"), "--array", str(tmp_path / "a.yaml"),
                              "--split", "proportional", "--format", "json"], capsys)
    assert code == 0, err
    assert Fraction(json.loads(out)["objective_value"]) == Fraction(2544, 10**12)


def _token_mlp_onnx(path):
    """A PyTorch-style export of two token-wise linear layers on a [batch, sequence, 64] input,
    both axes symbolic (torch.onnx.export with dynamic_axes)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.zeros(s, dtype=np.float32), n) for n, s in [("l1.weight", (64, 128)),
                                                                                     ("l2.weight", (128, 64))]]
    nodes = [helper.make_node("MatMul", ["x", "l1.weight"], ["a"], name="/l1/MatMul"),
             helper.make_node("Relu", ["a"], ["b"], name="/act/Relu"),
             helper.make_node("MatMul", ["b", "l2.weight"], ["y"], name="/l2/MatMul")]
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", "sequence", 64]) for n in ("x", "y")]
    graph = helper.make_graph(nodes, "main_graph", io[:1], io[1:], inits)
    onnx.save(helper.make_model(graph, producer_name="pytorch", opset_imports=[helper.make_opsetid("", 17)]), path)


TOKEN_MLP = """version: 1
name: token-mlp
batch: 8
sequence: 16
layers:
  - {name: l1, kind: fc, in_features: 64, out_features: 128}
  - {name: l2, kind: fc, in_features: 128, out_features: 64}
"""


def test_split_and_check_uneven_take_seq(tmp_path, capsys):
    """An ONNX model with a symbolic sequence axis asked for --seq, which `explore split` did not
    have and `explore check --uneven` accepted but ignored (the same 'pass --seq' error)."""
    onnx_path, yaml_path = tmp_path / "m.onnx", tmp_path / "m.yaml"
    _token_mlp_onnx(str(onnx_path))
    yaml_path.write_text(TOKEN_MLP)
    steps = []
    for model, extra in [(onnx_path, ["--batch", "8", "--seq", "16"]), (yaml_path, [])]:
        code, out, err = run_cli(["split", "--model", str(model), "--split", "proportional", "--format", "json", *extra],
                                 capsys)
        assert code == 0, err
        steps.append(Fraction(json.loads(out)["objective_value"]))
    assert steps[0] == steps[1]
    code, out, err = run_cli(["check", "--uneven", "--model", str(onnx_path), "--batch", "8", "--seq", "16",
                              "--array", "tpu-mix-16", "--solvers", "joint", "--objective", "time", "--format", "json"],
                             capsys)
    assert code == 0, err
    d = json.loads(out)
    assert d["agree"] and d["optimum"]["proven_by"] == ["joint"]


def test_a_solver_named_twice_runs_once(capsys):
    """`--solvers exact,exact` ran exact twice (two table rows) and `check --uneven` said
    'proven optimum ... (joint, joint)'."""
    code, out, err = run_cli(["check", "--model", "lenet-c", "--solvers", "exact,exact"], capsys)
    assert code == 0, err
    assert sum(line.split()[:1] == ["exact"] for line in out.splitlines()) == 1, out
    code, out, err = run_cli(["check", "--uneven", "--model", "lenet-c", "--array", "tpu-mix-16", "--solvers", "joint, joint",
                              "--format", "json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert list(d["solvers"]) == ["joint"] and d["optimum"]["proven_by"] == ["joint"]


# trial2 (D, F): explore split says its free alphas and batch, warns of a batch below the accelerators,
# and says when --free all is why --split optimal refuses

def test_split_reports_free_and_batch_and_warns_of_a_small_batch(capsys):
    from explorer.app.results import batch_warning

    code, out, err = run_cli(["split", "--model", "lenet-c", "--batch", "8", "--free", "all", "--split", "search",
                              "--format", "json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    assert d["free"] == "all" and d["batch"] == 8 and d["warnings"] == [batch_warning(8, 16)]
    assert "batch 8 is smaller than the 16 accelerators" in d["warnings"][0]
    code, out, err = run_cli(["split", "--model", "lenet-c", "--split", "search"], capsys)
    head = out.splitlines()[0]
    assert code == 0 and "free alphas unlike" in head and "batch 256" in head and "warning:" not in out, out
    code, out, err = run_cli(["split", "--model", "lenet-c", "--batch", "8", "--split", "equal"], capsys)
    assert out.splitlines()[1] == "warning: " + batch_warning(8, 16), out
    # explore's own warning is the same sentence
    code, out, err = run_cli(["--model", "lenet-c", "--batch", "8", "--format", "json"], capsys)
    assert batch_warning(8, 16) in json.loads(out)["warnings"]


def test_split_optimal_says_free_all_is_why_it_refuses(capsys):
    code, out, err = run_cli(["split", "--model", "lenet-c", "--split", "optimal", "--free", "all"], capsys)
    assert code == 2 and err.count("\n") == 1 and out == "", err
    assert "--free all frees every class of groups below the top split" in err and "or --free unlike" in err, err
    code, out, err = run_cli(["split", "--model", "lenet-c", "--split", "optimal", "--free", "unlike", "--alpha-grid", "4",
                              "--time-limit", "5"], capsys)
    assert code == 0, err


def test_check_uneven_status_column_fits_level_optimal(capsys):
    """Trial 10, finding 12: 'level-optimal' (13 characters) overflowed the 9-wide status column
    and pushed its row's figures one character right of the header and the other rows."""
    code, out, _ = run_cli(["check", "--uneven", "--model", "alexnet"], capsys)
    lines = out.splitlines()
    header = next(x for x in lines if x.startswith("solver"))
    rows = [x for x in lines if x.split()[:1] in (["dp"], ["exact"], ["joint"])]
    assert any("level-optimal" in x for x in rows), out
    step_end = header.index("step time") + len("step time")
    assert all(list(re.finditer(r"\S+", x))[3].end() == step_end for x in rows), out  # one right edge (the unit's)
