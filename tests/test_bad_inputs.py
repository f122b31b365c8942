"""A catalogue of bad inputs: each is exit status 2 with a one-line message naming the file or
option, the field and the problem; no traceback, and nothing written to --output.

Cases run in-process through ``explorer.app.cli.main`` (a few through a subprocess, as a user
runs them). Files are written into a temporary folder: ``{d}`` in an argument is that folder.
"""

import subprocess
import sys

import pytest

from .conftest import run_cli
from . import onnx_nets

NET = """version: 1
name: t
batch: 8
layers:
  - {name: c1, kind: conv, in_channels: 3, out_channels: 8, kernel: 3, in_size: 8, out_size: 8}
  - {name: f1, kind: fc, in_features: 512, out_features: 4}
  - {name: f2, kind: fc, in_features: 4, out_features: 2}
"""

GRAPH = """version: 1
name: g
batch: 8
layers:
  - {name: a, kind: conv, in_channels: 3, out_channels: 8, kernel: 3, in_size: 8, out_size: 8}
  - {name: b, kind: conv, in_channels: 8, out_channels: 8, kernel: 3, in_size: 8, out_size: 8}
  - {name: s, kind: add, inputs: [a, b]}
"""

ARRAY = """version: 1
name: arr
levels: 2
link_bandwidth_GBps: [10, 20]
peak_TFLOPS: 1
memory_GiB: 4
"""


KINDS = """version: 1
name: mix
levels: 2
link_bandwidth_GBps: [10, 20]
kinds:
  a: {peak_TFLOPS: 1, memory_GiB: 4}
  b: {peak_TFLOPS: 3, memory_GiB: 8}
accelerators: [a, a, b, b]
"""


def kinds_array(*replace, extra=""):
    text = KINDS
    for old, new in zip(replace[::2], replace[1::2]):
        assert old in text, old
        text = text.replace(old, new)
    return text + extra


def net(*replace):
    text = NET
    for old, new in zip(replace[::2], replace[1::2]):
        assert old in text, old
        text = text.replace(old, new)
    return text


def graph_with(*lines):
    return GRAPH + "".join(f"  - {x}\n" for x in lines)


def array(*replace, extra=""):
    text = ARRAY
    for old, new in zip(replace[::2], replace[1::2]):
        assert old in text, old
        text = text.replace(old, new)
    return text + extra


def densenet_yaml(blocks: int = 14) -> str:
    """DenseNet-like: every concat joins the stem and all earlier block outputs, which all stay alive."""
    lines = ["version: 1", "name: dense", "batch: 8", "layers:",
             "  - {name: c0, kind: conv, in_channels: 3, out_channels: 16, kernel: 3, in_size: 8, out_size: 8}"]
    prev, chans = "c0", 16
    for i in range(1, blocks + 1):
        lines.append(f"  - {{name: c{i}, kind: conv, in_channels: {chans}, out_channels: 8, kernel: 3, in_size: 8, "
                     f"out_size: 8, inputs: [{prev}]}}")
        ins = ", ".join(["c0"] + [f"c{j}" for j in range(1, i + 1)])
        lines.append(f"  - {{name: cat{i}, kind: concat, inputs: [{ins}]}}")
        prev, chans = f"cat{i}", 16 + 8 * i
    return "\n".join(lines) + "\n"


def onnx_bytes(model) -> bytes:
    return model.SerializeToString()


def _symbolic():
    return onnx_bytes(onnx_nets.residual_net("N"))


def _no_weights():
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "nw", [x], [y])
    return onnx_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


def _activation_weight():
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    graph = helper.make_graph([helper.make_node("Gemm", ["x", "w"], ["y"], name="g")], "aw", [x, w], [y])
    return onnx_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


def _fc_mismatch_onnx():
    """A Gemm reading a [2, 6] activation whose producer is a Gemm with 6 outputs, then a MatMul
    declaring 6 -> 3 on a tensor reshaped to [2, 3, 2]: in_features 2 vs 6 outputs x 1."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 3])
    nodes = [
        helper.make_node("Gemm", ["x", "w1"], ["a"], name="fc1"),
        helper.make_node("Reshape", ["a", "shape"], ["r"], name="reshape"),
        helper.make_node("MatMul", ["r", "w2"], ["y"], name="fc2"),
    ]
    inits = [numpy_helper.from_array(np.zeros((4, 6), dtype=np.float32), "w1"),
             numpy_helper.from_array(np.array([2, 3, 2], dtype=np.int64), "shape"),
             numpy_helper.from_array(np.zeros((2, 3), dtype=np.float32), "w2")]
    graph = helper.make_graph(nodes, "fcm", [x], [y], inits)
    return onnx_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


# (id, files {name: text | bytes | callable -> bytes}, args, message fragment)
CASES = [
    # --- network YAML
    ("net-version", {"n.yaml": net("version: 1", "version: 2")}, ["--model", "{d}/n.yaml"], "version: unsupported version 2"),
    ("net-no-name", {"n.yaml": net("name: t\n", "")}, ["--model", "{d}/n.yaml"], "name: missing"),
    ("net-unknown-key", {"n.yaml": NET + "colour: red\n"}, ["--model", "{d}/n.yaml"], "colour: unknown key"),
    ("net-empty-layers", {"n.yaml": "version: 1\nname: t\nlayers: []\n"}, ["--model", "{d}/n.yaml"], "layers: must be a non-empty list"),
    ("net-layer-not-mapping", {"n.yaml": "version: 1\nname: t\nlayers: [3]\n"}, ["--model", "{d}/n.yaml"], "layers[0]: must be a mapping"),
    ("net-bad-kind", {"n.yaml": net("kind: conv", "kind: pool")}, ["--model", "{d}/n.yaml"], "layers[0].kind: must be one of"),
    ("net-missing-kernel", {"n.yaml": net("kernel: 3, ", "")}, ["--model", "{d}/n.yaml"], "layers[0].kernel: missing"),
    ("net-zero-channels", {"n.yaml": net("in_channels: 3", "in_channels: 0")}, ["--model", "{d}/n.yaml"], "layers[0].in_channels: must be a positive integer, got 0"),
    ("net-float-channels", {"n.yaml": net("in_channels: 3", "in_channels: 3.5")}, ["--model", "{d}/n.yaml"], "must be a positive integer, got 3.5"),
    ("net-kernel-triple", {"n.yaml": net("kernel: 3", "kernel: [3, 3, 3]")}, ["--model", "{d}/n.yaml"], "must be an integer or a list [h, w]"),
    ("net-duplicate-name", {"n.yaml": net("name: f2", "name: f1")}, ["--model", "{d}/n.yaml"], "duplicate layer name 'f1'"),
    ("net-duplicate-key", {"n.yaml": NET + "batch: 4\n"}, ["--model", "{d}/n.yaml"], "duplicate key 'batch'"),
    ("net-reserved-name", {"n.yaml": net("name: c1", "name: input")}, ["--model", "{d}/n.yaml"], "'input' is reserved"),
    ("net-fc-after-fc", {"n.yaml": net("in_features: 4,", "in_features: 5,")}, ["--model", "{d}/n.yaml"],
     "layers[2].in_features: 5 does not match the 4 outputs of its input 'f1'"),
    ("net-fc-after-conv", {"n.yaml": net("in_features: 512", "in_features: 520")}, ["--model", "{d}/n.yaml"],
     "layers[1].in_features: 520 does not match its input 'c1' (8 channels x 8x8)"),
    ("net-fc-after-conv-too-big", {"n.yaml": net("in_features: 512", "in_features: 1024")}, ["--model", "{d}/n.yaml"],
     "at most 64"),
    ("net-conv-channels", {"n.yaml": GRAPH.replace("in_channels: 8, out_channels: 8", "in_channels: 4, out_channels: 8")},
     ["--model", "{d}/n.yaml"], "layers[1].in_channels: 4 does not match the 8 channels of its input 'a'"),
    ("net-size-huge", {"n.yaml": net("in_size: 8", "in_size: 99999999999999999999999")}, ["--model", "{d}/n.yaml"],
     "layers[0].in_size: must be at most 2^40 = 1,099,511,627,776, got 1.000e+23"),
    ("net-batch-zero", {"n.yaml": net("batch: 8", "batch: 0")}, ["--model", "{d}/n.yaml"], "batch: must be a positive integer, got 0"),
    ("net-bad-yaml", {"n.yaml": "version: 1\nname: [t\n"}, ["--model", "{d}/n.yaml"], "invalid YAML at line"),
    ("net-list-key", {"n.yaml": "version: 1\nname: t\n? [a, b]\n: 1\n"}, ["--model", "{d}/n.yaml"],
     "invalid YAML: a key must be a plain value, not a list (line 3)"),
    ("net-python-tag", {"n.yaml": "version: 1\nname: !!python/object:os.system 'echo hi'\n"}, ["--model", "{d}/n.yaml"],
     "invalid YAML: could not determine a constructor for the tag"),
    ("net-top-list", {"n.yaml": "- 1\n- 2\n"}, ["--model", "{d}/n.yaml"], "top level must be a mapping"),
    ("net-huge-int", {"n.yaml": net("batch: 8", "batch: 1" + "0" * 5000)}, ["--model", "{d}/n.yaml"], "invalid YAML: Exceeds the limit"),
    ("net-deep-nesting", {"n.yaml": "version: 1\nname: t\nlayers: " + "[" * 1500 + "]" * 1500 + "\n"}, ["--model", "{d}/n.yaml"],
     "invalid YAML: nested too deeply"),
    ("net-not-utf8", {"n.yaml": b"\xff\xfe\x00"}, ["--model", "{d}/n.yaml"], "cannot read"),
    ("net-missing-file", {}, ["--model", "{d}/none.yaml"], "none.yaml: no such file"),
    ("net-directory", {}, ["--model", "{d}"], "is a directory, not a file"),
    ("net-directory-onnx", {"m.onnx/x": ""}, ["--model", "{d}/m.onnx", "--batch", "2"], "m.onnx: is a directory, not a file"),
    ("net-directory-config", {"c/config.json/x": ""}, ["--model", "{d}/c/config.json"],
     "config.json: is a directory, not a file"),
    ("net-layer-unknown-key", {"n.yaml": net("out_features: 2}", "out_features: 2, stride: 2}")}, ["--model", "{d}/n.yaml"],
     "layers[2].stride: unknown key"),
    ("net-unknown-model", {}, ["--model", "nope"], "--model: unknown model 'nope'"),
    ("net-endless-file", {}, ["--model", "/dev/zero"], "/dev/zero: larger than 64 MiB: not a spec file"),
    # --- graph YAML
    ("graph-dangling", {"g.yaml": graph_with("{name: t, kind: add, inputs: [s, zz]}")}, ["--model", "{d}/g.yaml"],
     "layers[3].inputs: names no node 'zz'"),
    ("graph-cycle", {"g.yaml": GRAPH.replace("in_size: 8, out_size: 8}\n  - {name: b", "in_size: 8, out_size: 8, inputs: [b]}\n  - {name: b")
                     .replace("out_size: 8}\n  - {name: s", "out_size: 8, inputs: [a]}\n  - {name: s")},
     ["--model", "{d}/g.yaml"], "form a cycle"),
    ("graph-self", {"g.yaml": graph_with("{name: t, kind: conv, in_channels: 8, out_channels: 8, kernel: 1, in_size: 8, out_size: 8, inputs: [t]}")},
     ["--model", "{d}/g.yaml"], "a node cannot read itself"),
    ("graph-join-one-input", {"g.yaml": graph_with("{name: t, kind: add, inputs: [s]}")}, ["--model", "{d}/g.yaml"],
     "joins two or more inputs, got 1"),
    ("graph-conv-two-inputs", {"g.yaml": graph_with("{name: t, kind: conv, in_channels: 8, out_channels: 8, kernel: 1, in_size: 8, out_size: 8, inputs: [a, b]}")},
     ["--model", "{d}/g.yaml"], "takes one input, got 2"),
    ("graph-add-channels", {"g.yaml": graph_with("{name: t, kind: conv, in_channels: 8, out_channels: 4, kernel: 1, in_size: 8, out_size: 8, inputs: [s]}",
                                                 "{name: u, kind: add, inputs: [t, s]}")},
     ["--model", "{d}/g.yaml"], "have different channels [4, 8]"),
    ("graph-add-sizes", {"g.yaml": graph_with("{name: t, kind: conv, in_channels: 8, out_channels: 8, kernel: 1, in_size: 8, out_size: 4, inputs: [s]}",
                                              "{name: u, kind: add, inputs: [t, s]}")},
     ["--model", "{d}/g.yaml"], "have different spatial sizes"),
    ("graph-inputs-not-list", {"g.yaml": graph_with("{name: t, kind: add, inputs: s}")}, ["--model", "{d}/g.yaml"],
     "inputs: must be a list of node names"),
    ("graph-input-twice", {"g.yaml": graph_with("{name: t, kind: add, inputs: [s, s]}")}, ["--model", "{d}/g.yaml"],
     "names an input twice"),
    # --- array YAML
    ("array-version", {"a.yaml": array("version: 1", "version: 3")}, ["--array", "{d}/a.yaml"], "version: unsupported version 3"),
    ("array-levels-zero", {"a.yaml": array("levels: 2", "levels: 0")}, ["--array", "{d}/a.yaml"], "levels: must be between 1 and 20"),
    ("array-levels-big", {"a.yaml": array("levels: 2", "levels: 21")}, ["--array", "{d}/a.yaml"], "levels: must be between 1 and 20"),
    ("array-bw-length", {"a.yaml": array("[10, 20]", "[10, 20, 30]")}, ["--array", "{d}/a.yaml"], "link_bandwidth_GBps: needs one entry per level (2), got 3"),
    ("array-bw-negative", {"a.yaml": array("[10, 20]", "[10, -20]")}, ["--array", "{d}/a.yaml"], "link_bandwidth_GBps[1]: must be > 0"),
    ("array-batch-zero", {"a.yaml": array("levels: 2", "levels: 2\nbatch: 0")}, ["--array", "{d}/a.yaml"], "batch: must be a positive integer, got 0"),
    ("array-bw-nan", {"a.yaml": array("[10, 20]", "[10, .nan]")}, ["--array", "{d}/a.yaml"], "link_bandwidth_GBps[1]: must be a finite number"),
    ("array-cap-bare", {"a.yaml": array(extra="cap_bytes_per_step: [2000, null]\n")}, ["--array", "{d}/a.yaml"],
     "cap_bytes_per_step[0]: 2000 has no unit"),
    ("array-cap-seconds-bare", {"a.yaml": array(extra="cap_seconds_per_step: [null, 0.005]\n")}, ["--array", "{d}/a.yaml"],
     "cap_seconds_per_step[1]: 0.005 has no unit"),
    ("array-cap-wrong-kind", {"a.yaml": array(extra="cap_bytes_per_step: [5ms, null]\n")}, ["--array", "{d}/a.yaml"],
     "'5ms' is in seconds, this key takes bytes"),
    ("array-cap-unit", {"a.yaml": array(extra="cap_bytes_per_step: [2XB, null]\n")}, ["--array", "{d}/a.yaml"], "unknown unit 'XB'"),
    ("array-cap-exponent", {"a.yaml": array(extra="cap_bytes_per_step: [1e400000B, null]\n")}, ["--array", "{d}/a.yaml"], "is out of range"),
    ("array-bw-tiny", {"a.yaml": array("[10, 20]", "[10, 1.0e-300]")}, ["--array", "{d}/a.yaml"],
     "link_bandwidth_GBps[1]: must be between 1e-30 and 1e100, got 1e-300"),
    ("array-memory-huge-int", {"a.yaml": array("memory_GiB: 4", "memory_GiB: 1" + "0" * 4200)}, ["--array", "{d}/a.yaml"],
     "memory_GiB: must be between 1e-30 and 1e100, got 1.000e+4200"),
    ("array-dtype-huge", {"a.yaml": array(extra="dtype_bytes: 1099511627777\n")}, ["--array", "{d}/a.yaml"],
     "dtype_bytes: must be at most 2^40"),
    ("array-no-peak", {"a.yaml": array("peak_TFLOPS: 1\n", "")}, ["--array", "{d}/a.yaml"], "peak_TFLOPS: missing"),
    ("array-unknown", {}, ["--array", "nope"], "--array: unknown array 'nope'"),
    # --- array YAML with kinds (heterogeneous arrays)
    ("kinds-unknown-kind", {"a.yaml": kinds_array("[a, a, b, b]", "[a, a, b, c]")}, ["--array", "{d}/a.yaml"],
     "accelerators[3]: unknown kind 'c' (kinds: a, b)"),
    ("kinds-wrong-count", {"a.yaml": kinds_array("[a, a, b, b]", "[a, b, b]")}, ["--array", "{d}/a.yaml"],
     "accelerators: needs one kind per accelerator (2^2 = 4), got 3"),
    ("kinds-no-accelerators", {"a.yaml": kinds_array("accelerators: [a, a, b, b]\n", "")}, ["--array", "{d}/a.yaml"],
     "accelerators: missing"),
    ("kinds-no-kinds", {"a.yaml": kinds_array("kinds:\n  a: {peak_TFLOPS: 1, memory_GiB: 4}\n  b: {peak_TFLOPS: 3, memory_GiB: 8}\n", "")},
     ["--array", "{d}/a.yaml"], "kinds: missing"),
    ("kinds-not-mapping", {"a.yaml": kinds_array("  a: {peak_TFLOPS: 1, memory_GiB: 4}\n  b: {peak_TFLOPS: 3, memory_GiB: 8}\n", "  - a\n")},
     ["--array", "{d}/a.yaml"], "kinds: must be a mapping of kind name -> {peak_TFLOPS, memory_GiB}"),
    ("kinds-missing-peak", {"a.yaml": kinds_array("b: {peak_TFLOPS: 3, memory_GiB: 8}", "b: {memory_GiB: 8}")},
     ["--array", "{d}/a.yaml"], "kinds.b.peak_TFLOPS: missing"),
    ("kinds-bad-memory", {"a.yaml": kinds_array("b: {peak_TFLOPS: 3, memory_GiB: 8}", "b: {peak_TFLOPS: 3, memory_GiB: -8}")},
     ["--array", "{d}/a.yaml"], "kinds.b.memory_GiB: must be > 0, got -8"),
    ("kinds-unknown-key", {"a.yaml": kinds_array("b: {peak_TFLOPS: 3, memory_GiB: 8}", "b: {peak_TFLOPS: 3, memory_GiB: 8, clock: 1}")},
     ["--array", "{d}/a.yaml"], "kinds.b.clock: unknown key"),
    ("kinds-unused", {"a.yaml": kinds_array("[a, a, b, b]", "[a, a, a, a]")}, ["--array", "{d}/a.yaml"],
     "kinds: b not used by any accelerator"),
    ("kinds-and-peak", {"a.yaml": kinds_array(extra="peak_TFLOPS: 2\n")}, ["--array", "{d}/a.yaml"],
     "peak_TFLOPS: give it per kind under kinds: (not with kinds and accelerators)"),
    ("kinds-accelerators-not-list", {"a.yaml": kinds_array("[a, a, b, b]", "a")}, ["--array", "{d}/a.yaml"],
     "accelerators: must be a list of kind names, got str"),
    ("kinds-zero-peak", {"a.yaml": kinds_array("peak_TFLOPS: 1,", "peak_TFLOPS: 0,")}, ["--array", "{d}/a.yaml"],
     "kinds.a.peak_TFLOPS: must be > 0, got 0"),
    ("kinds-nan-peak", {"a.yaml": kinds_array("peak_TFLOPS: 1,", "peak_TFLOPS: .nan,")}, ["--array", "{d}/a.yaml"],
     "kinds.a.peak_TFLOPS: must be a finite number, got nan"),
    ("kinds-huge-peak", {"a.yaml": kinds_array("peak_TFLOPS: 1,", "peak_TFLOPS: 1.0e+300,")}, ["--array", "{d}/a.yaml"],
     "kinds.a.peak_TFLOPS: must be between 1e-30 and 1e100, got 1e+300"),
    ("kinds-int-name", {"a.yaml": kinds_array("  a: {", "  1: {", "[a, a, b, b]", "[1, 1, b, b]")}, ["--array", "{d}/a.yaml"],
     "kinds: a kind's name must be a non-empty string, got 1"),
    ("kinds-list-name", {"a.yaml": kinds_array("[a, a, b, b]", "[[a], a, b, b]")}, ["--array", "{d}/a.yaml"],
     "accelerators[0]: unknown kind ['a'] (kinds: a, b)"),
    ("split-kinds-bad-memory", {"a.yaml": kinds_array("memory_GiB: 4", "memory_GiB: -4")}, ["split", "--array", "{d}/a.yaml"],
     "kinds.a.memory_GiB: must be > 0, got -4"),
    ("split-attention", {}, ["split", "--model", "vit-b16", "--array", "hypar-paper"],
     "hypar-paper.yaml: communication: shared: uneven splits are modelled on per-level links (an H-tree or a torus) only"),
    ("split-embedding", {}, ["split", "--model", "bert-base", "--batch", "0"], "--batch: must be a positive integer, got 0"),
    ("split-alpha-grid-1", {}, ["split", "--alpha-grid", "1"], "Invalid value for '--alpha-grid': 1 is not in the range 2<=x<=1024"),
    ("split-alpha-grid-float", {}, ["split", "--alpha-grid", "1.5"], "Invalid value for '--alpha-grid'"),
    ("split-unknown-split", {}, ["split", "--split", "optimum"], "Invalid value for '--split'"),
    ("split-output-folder", {}, ["split", "--output", "{d}"], "--output: cannot write {d}: is a directory"),
    ("split-search-too-many-classes", {"a.yaml": "version: 1\nname: many\nlevels: 7\nlink_bandwidth_GBps: [10, 10, 10, 10, 10, 10, 10]\n"
                                       "kinds:\n" + "".join(f"  k{i}: {{peak_TFLOPS: {i + 1}, memory_GiB: 4}}\n" for i in range(128))
                                       + "accelerators: [" + ", ".join(f"k{i}" for i in range(128)) + "]\n"},
     ["split", "--model", "lenet-c", "--array", "{d}/a.yaml"],
     "--split: search: array 'many' has 127 free classes of groups, more than 64 (one is searched at a time); use --split proportional or equal"),
    ("split-memory-zero", {}, ["split", "--memory", "0"], "--memory: must be > 0, got 0.0"),
    ("split-weight-copies-negative", {}, ["split", "--weight-copies", "-1"], "--weight-copies: must be >= 0, got -1"),
    ("split-memory-nan", {}, ["split", "--memory", "nan"], "--memory: must be a finite number, got nan"),
    ("split-memory-huge", {}, ["split", "--memory", "1e308"], "--memory: must be between 1e-30 and 1e100, got 1e+308"),
    ("split-time-limit-nan", {}, ["split", "--split", "optimal", "--time-limit", "nan"],
     "'--time-limit': must be a finite number of seconds >= 0.1, got nan"),
    ("split-time-limit-inf", {}, ["split", "--split", "optimal", "--time-limit", "inf"],
     "'--time-limit': must be a finite number of seconds >= 0.1, got inf"),
    ("split-onnx-symbolic-batch", {"m.onnx": _symbolic}, ["split", "--model", "{d}/m.onnx"],
     "has a symbolic batch dimension 'N': pass --batch"),
    # check --uneven takes the side constraints (bad values refused as without it), not CP-SAT's controls
    ("uneven-cap", {}, ["check", "--uneven", "--cap", "9=1MB"], "--cap: '9=1MB': level 9 is out of range 0..3"),
    ("uneven-memory", {}, ["check", "--uneven", "--memory", "0"], "--memory: must be > 0"),
    ("uneven-weight-copies", {}, ["check", "--uneven", "--weight-copies", "-1"], "--weight-copies: must be >= 0"),
    ("uneven-pin", {}, ["check", "--uneven", "--pin", "nosuch@0=I"], "--pin: 'nosuch@0=I': unknown layer 'nosuch'"),
    ("uneven-forbid", {}, ["check", "--uneven", "--forbid", "fc6=IV"], "--forbid: 'fc6=IV': unknown partition type"),
    ("uneven-constraints", {}, ["check", "--uneven", "--constraints", "{d}/none.yaml"], "{d}/none.yaml: no such file"),
    ("uneven-levels", {}, ["check", "--uneven", "--levels", "0"], "--levels: must be between 1 and 20"),
    ("uneven-dump-model", {}, ["check", "--uneven", "--dump-model", "{d}/m.pb"], "--dump-model: not with --uneven"),
    ("uneven-workers", {}, ["check", "--uneven", "--workers", "2"], "--workers: not with --uneven"),
    ("uneven-seed", {}, ["check", "--uneven", "--seed", "3"], "--seed: not with --uneven"),
    ("uneven-output-folder", {}, ["check", "--uneven", "--output", "{d}/no/r.txt"], "--output: cannot write {d}/no/r.txt: folder"),
    ("uneven-empty-model", {}, ["check", "--uneven", "--model", ""], "--model: must not be empty"),
    ("uneven-empty-output", {}, ["check", "--uneven", "--output", ""], "--output: must not be empty"),
    ("check-alpha-grid-plain", {}, ["check", "--alpha-grid", "4"], "--alpha-grid: only with --uneven"),
    ("check-free-plain", {}, ["check", "--free", "all"], "--free: only with --uneven"),
    ("check-grid-only-plain", {}, ["check", "--grid-only"], "--grid-only: only with --uneven"),
    # --seq on a spec without a sequence made a CNN's fc layers read S tokens per sample (S x the traffic)
    ("seq-on-a-cnn", {}, ["--model", "lenet-c", "--seq", "5"], "lenet-c.yaml: --seq: the spec declares no sequence"),
    ("split-seq-on-a-cnn", {}, ["split", "--model", "lenet-c", "--seq", "5"], "--seq: the spec declares no sequence"),
    # trial 10, finding 18: the pin form given to --forbid was called an unknown layer 'fc6@*'
    ("forbid-pin-form", {}, ["--forbid", "fc6@*=I"],
     "'fc6@*=I' is not LAYER=TYPE (a forbid has no level: it holds at every level; LAYER@LEVEL=TYPE is a pin's form)"),
    # trial 10, finding 17: the zoo's learned position tables bound --seq as GPT-3's do; ViT's tokens come from the image
    ("seq-beyond-bert-positions", {}, ["--model", "bert-base", "--seq", "100000", "--memory", "1000"],
     "bert-base.yaml: --seq: 100,000 tokens is more than the 512 learned positions (layers[3].vocab, 'emb_pos': positions: true)"),
    ("seq-beyond-gpt2-positions", {}, ["--model", "gpt2-small", "--seq", "1025", "--memory", "1000"],
     "gpt2-small.yaml: --seq: 1,025 tokens is more than the 1,024 learned positions (layers[1].vocab, 'wpe': positions: true)"),
    ("seq-on-vit", {}, ["--model", "vit-b16", "--seq", "1000"],
     "vit-b16.yaml: --seq: vit-b16's 197 tokens are fixed by its input's size (224 x 224 into the conv 'patch': an image "
     "or signal, not token ids), so --seq does not apply; got --seq 1000"),
    ("net-positions-not-bool", {"n.yaml": "version: 1\nname: t\nsequence: 4\nlayers:\n"
                                          "  - {name: e, kind: embedding, vocab: 8, hidden: 4, positions: 1}\n"},
     ["--model", "{d}/n.yaml"], "layers[0].positions: must be true or false, got 1"),
    ("net-sequence-beyond-positions", {"n.yaml": "version: 1\nname: t\nsequence: 9\nlayers:\n"
                                                 "  - {name: e, kind: embedding, vocab: 8, hidden: 4, positions: true}\n"},
     ["--model", "{d}/n.yaml"], "n.yaml: sequence: 9 tokens is more than the 8 learned positions (layers[0].vocab, 'e'"),
    ("seq-on-a-fixed-onnx", {"m.onnx": lambda: onnx_bytes(onnx_nets.residual_net(batch=4))}, ["--model", "{d}/m.onnx", "--seq", "5"],
     "m.onnx: --seq: no input has a symbolic sequence axis for --seq 5 to fill"),
    ("kinds-name-newline", {"a.yaml": kinds_array("  a: {", '  "a\\nX": {', "[a, a, b, b]", '["a\\nX", "a\\nX", b, b]')},
     ["--array", "{d}/a.yaml"], "kinds: a kind's name must be printable (no control, format or separator characters but the ASCII space), got 'a\\nX'"),
    ("kinds-name-bidi", {"a.yaml": kinds_array("  b: {", '  "\\u202eb": {', "[a, a, b, b]", '[a, a, "\\u202eb", "\\u202eb"]')},
     ["--array", "{d}/a.yaml"], "kinds: a kind's name must be printable (no control, format or separator characters but the ASCII space), got '\\u202eb'"),
    ("array-name-newline", {"a.yaml": array("name: arr", 'name: "arr\\nFAKE LINE"')}, ["--array", "{d}/a.yaml"],
     "name: must be printable (no control, format or separator characters but the ASCII space), got 'arr\\nFAKE LINE'"),
    ("net-name-bell", {"n.yaml": net("name: t\n", 'name: "t\\a"\n')}, ["--model", "{d}/n.yaml"],
     "name: must be printable (no control, format or separator characters but the ASCII space), got 't\\x07'"),
    ("net-layer-name-tab", {"n.yaml": net("{name: f2,", '{name: "f\\t2",')}, ["--model", "{d}/n.yaml"],
     "layers[2].name: must be printable (no control, format or separator characters but the ASCII space), got 'f\\t2'"),
    ("kinds-levels-override", {"a.yaml": KINDS}, ["--array", "{d}/a.yaml", "--levels", "3"],
     "--levels: array 'mix' lists its 4 accelerators by kind, so its levels (2) cannot be overridden"),
    # --- constraints file
    ("cons-version", {"c.yaml": "caps: {0: 2GB}\n"}, ["--constraints", "{d}/c.yaml"], "version: missing (must be 1)"),
    ("cons-cap-bare", {"c.yaml": "version: 1\ncaps: {0: 2}\n"}, ["--constraints", "{d}/c.yaml"], "caps.0: 2 has no unit"),
    ("cons-cap-level", {"c.yaml": "version: 1\ncaps: {9: 2GB}\n"}, ["--constraints", "{d}/c.yaml"], "caps.9: level 9 is out of range 0..3"),
    ("cons-caps-list", {"c.yaml": "version: 1\ncaps: [2GB]\n"}, ["--constraints", "{d}/c.yaml"], "caps: must be a mapping LEVEL: AMOUNT"),
    ("cons-pin-layer", {"c.yaml": "version: 1\npins: ['zz@0=I']\n"}, ["--constraints", "{d}/c.yaml"], "pins[0]: unknown layer 'zz'"),
    ("cons-pin-join-III", {"c.yaml": "version: 1\npins: ['s1b1_add@*=III']\n"},
     ["--constraints", "{d}/c.yaml", "--model", "resnet18", "--space", "accpar"], "'s1b1_add' is a join node (add), which takes only I, II"),
    ("cons-forbid-type", {"c.yaml": "version: 1\nforbids: ['fc6=IV']\n"}, ["--constraints", "{d}/c.yaml"], "unknown partition type 'IV'"),
    ("cons-memory", {"c.yaml": "version: 1\nmemory_GiB: -1\n"}, ["--constraints", "{d}/c.yaml"], "memory_GiB: must be > 0"),
    ("cons-copies", {"c.yaml": "version: 1\nweight_copies: -2\n"}, ["--constraints", "{d}/c.yaml"], "weight_copies: must be a non-negative integer"),
    ("cons-copies-huge", {"c.yaml": "version: 1\nweight_copies: 1099511627777\n"}, ["--constraints", "{d}/c.yaml"],
     "weight_copies: must be a non-negative integer up to 2^40, got 1.100e+12"),
    ("cons-copies-bool", {"c.yaml": "version: 1\nweight_copies: true\n"}, ["--constraints", "{d}/c.yaml"],
     "weight_copies: must be a non-negative integer up to 2^40, got True"),
    ("cons-unknown-key", {"c.yaml": "version: 1\nlimits: 3\n"}, ["--constraints", "{d}/c.yaml"], "limits: unknown key"),
    ("cons-pins-string", {"c.yaml": "version: 1\npins: 'fc6@0=I'\n"}, ["--constraints", "{d}/c.yaml"], "pins: must be a list of strings"),
    ("cons-missing", {}, ["--constraints", "{d}/none.yaml"], "none.yaml: no such file"),
    ("cons-cap-bool", {"c.yaml": "version: 1\ncaps: {0: true}\n"}, ["--constraints", "{d}/c.yaml"], "caps.0: cannot read True as an amount"),
    ("cons-memory-string", {"c.yaml": "version: 1\nmemory_GiB: 1e30\n"}, ["--constraints", "{d}/c.yaml"],
     "memory_GiB: must be a positive number, got '1e30' (YAML reads a bare 1e30 as text: write 1.0e+30)"),
    # --- command-line flags
    ("cli-cap-bare", {}, ["--cap", "0=2"], "--cap: '0=2': '2' has no unit"),
    ("cli-cap-exponent", {}, ["--cap", "0=1e400000B"], "is out of range"),
    ("cli-cap-level", {}, ["--cap", "9=2GB"], "level 9 is out of range 0..3"),
    ("cli-cap-form", {}, ["--cap", "2GB"], "'2GB' is not LEVEL=AMOUNT"),
    ("cli-cap-zero", {}, ["--cap", "0=0B"], "'0B' must be > 0"),
    ("cli-cap-negative", {}, ["--cap", "0=-1GB"], "--cap: '0=-1GB': '-1GB' must be > 0"),
    ("cli-pin-join-III", {}, ["--model", "resnet18", "--space", "accpar", "--pin", "s1b1_add@0=III"],
     "--pin: 's1b1_add@0=III': 's1b1_add' is a join node (add)"),
    ("cli-pin-layer", {}, ["--pin", "fc9@0=I"], "--pin: 'fc9@0=I': unknown layer 'fc9'"),
    ("cli-pin-space", {}, ["--pin", "fc6@0=III"], "type III is not in the hypar space"),
    ("cli-forbid-type", {}, ["--forbid", "fc6=IV"], "--forbid: 'fc6=IV': unknown partition type 'IV'"),
    ("cli-memory-negative", {}, ["--memory", "-1"], "--memory: must be > 0"),
    ("cli-memory-nan", {}, ["--memory", "nan"], "--memory: must be a finite number"),
    ("cli-memory-inf", {}, ["--memory", "inf"], "--memory: must be a finite number"),
    ("cli-weight-copies", {}, ["--weight-copies", "-1"], "--weight-copies: must be >= 0"),
    ("cli-time-limit-nan", {}, ["--solver", "cpsat", "--time-limit", "nan"], "'--time-limit': must be a finite number of seconds >= 0.1, got nan"),
    ("cli-time-limit-inf", {}, ["--solver", "cpsat", "--time-limit", "inf"], "'--time-limit': must be a finite number of seconds >= 0.1, got inf"),
    ("cli-time-limit-negative", {}, ["--solver", "cpsat", "--time-limit", "-1"], "'--time-limit': must be a finite number"),
    ("cli-time-limit-zero", {}, ["--solver", "cpsat", "--time-limit", "0"], "'--time-limit': must be a finite number"),
    ("cli-seed-huge", {}, ["--solver", "cpsat", "--seed", "1180591620717411303424"], "'--seed': 1180591620717411303424 is not in the range 0<=x<=2147483647"),
    ("cli-seed-negative", {}, ["--solver", "cpsat", "--seed", "-1"], "'--seed': -1 is not in the range"),
    ("cli-workers-zero", {}, ["--solver", "cpsat", "--workers", "0"], "'--workers': 0 is not in the range 1<=x<=256"),
    ("cli-workers-huge", {}, ["--solver", "cpsat", "--workers", "4294967296"], "'--workers': 4294967296 is not in the range"),
    ("cli-dump-model-dp", {}, ["--dump-model", "{d}/m.pb"], "--dump-model: dp has no model to write; it is taken by --solver cpsat"),
    ("cli-dump-model-exact", {}, ["--solver", "exact", "--dump-model", "{d}/m.pb"], "--dump-model: exact has no model to write"),
    ("cli-dump-model-folder", {}, ["--solver", "cpsat", "--dump-model", "{d}/no/m.pb"], "--dump-model: cannot write {d}/no/m.pb: folder"),
    ("cli-dump-model-dir", {}, ["--solver", "cpsat", "--dump-model", "{d}"], "--dump-model: cannot write {d}: is a directory"),
    ("cli-dump-model-json", {}, ["--solver", "cpsat", "--dump-model", "{d}/m.json"], "--dump-model: {d}/m.json must end in .pb (binary protobuf), .txt or .pbtxt (text)"),
    ("cli-dump-model-nosuffix", {}, ["--solver", "cpsat", "--dump-model", "{d}/model"], "--dump-model: {d}/model must end in .pb"),
    ("cli-output-folder", {}, ["--output", "{d}/no/r.txt"], "--output: cannot write {d}/no/r.txt: folder"),
    ("cli-output-dir", {}, ["--output", "{d}"], "--output: cannot write {d}: is a directory"),
    ("cli-empty-model", {}, ["--model", ""], "--model: must not be empty"),
    ("cli-empty-constraints", {}, ["--constraints", " "], "--constraints: must not be empty"),
    ("cli-empty-dump-model", {}, ["--solver", "cpsat", "--dump-model", ""], "--dump-model: must not be empty"),
    ("check-empty-output", {}, ["check", "--output", ""], "--output: must not be empty"),
    ("cli-levels-zero", {}, ["--levels", "0"], "--levels: must be between 1 and 20"),
    ("cli-levels-big", {}, ["--levels", "21"], "--levels: must be between 1 and 20"),
    ("cli-batch-zero", {}, ["--batch", "0"], "--batch: must be a positive integer, got 0"),
    ("cli-solver", {}, ["--solver", "magic"], "Invalid value for '--solver'"),
    ("cli-format", {}, ["--format", "xml"], "Invalid value for '--format'"),
    ("cli-unknown-option", {}, ["--colour"], "No such option '--colour'"),
    ("check-solvers", {}, ["check", "--solvers", "cpsat,magic"], "--solvers: unknown solver magic"),
    ("check-dump-model", {}, ["check", "--solvers", "exact", "--dump-model", "{d}/m.pb"], "--dump-model: exact has no model to write"),
    ("brute-huge-count", {}, ["--model", "bert-base", "--levels", "7", "--space", "accpar", "--solver", "brute"],
     "brute: 6.929e+315 plans (114 nodes (76 layers, 38 joins) x 7 levels, up to 3 types each) exceeds its limit of 300,000; use --solver exact or cpsat"),
    ("exact-too-big", {}, ["--solver", "exact", "--space", "accpar", "--levels", "13"], "exact: 3^13 = 1,594,323 type vectors"),
    ("cpsat-int64", {}, ["--solver", "cpsat", "--weight-copies", str(10**12)], "beyond CP-SAT's int64 range (2^62); use fewer levels"),
    ("cli-batch-huge", {}, ["--batch", "1" + "0" * 4250], "--batch: must be at most 2^40 = 1,099,511,627,776, got 1.000e+4250"),
    ("cli-weight-copies-huge", {}, ["--weight-copies", str(2**41)], "--weight-copies: must be at most 2^40"),
    ("cli-memory-huge", {}, ["--memory", "1e308"], "--memory: must be between 1e-30 and 1e100, got 1e+308"),
    ("cli-cap-digits", {}, ["--cap", "0=0." + "0" * 50 + "1B"], "has too many digits (at most 40)"),
    # --- ONNX
    ("onnx-garbage", {"m.onnx": b"\x08\x01garbage\xff\xff"}, ["--model", "{d}/m.onnx"], "m.onnx: cannot read as ONNX"),
    ("onnx-missing", {}, ["--model", "{d}/none.onnx"], "none.onnx: no such file"),
    ("onnx-symbolic-batch", {"m.onnx": _symbolic}, ["--model", "{d}/m.onnx"], "has a symbolic batch dimension 'N': pass --batch"),
    # grouped convolutions import now (issue 11); a symbolic sequence needs --seq
    ("onnx-symbolic-seq", {"m.onnx": lambda: onnx_bytes(onnx_nets.hf_bert(layers=1))}, ["--model", "{d}/m.onnx", "--batch", "2"],
     "symbolic sequence dimension 'sequence' (axis 1): pass --seq"),
    # both missing: one line names both (the new-user trial had to rerun once for each)
    ("onnx-symbolic-batch-and-seq", {"m.onnx": lambda: onnx_bytes(onnx_nets.hf_bert(layers=1))}, ["--model", "{d}/m.onnx"],
     "input 'input_ids' has a symbolic batch dimension 'batch' and input 'input_ids' has a symbolic sequence dimension "
     "'sequence' (axis 1): pass --batch and pass --seq"),
    ("onnx-unsupported-join", {"m.onnx": lambda: onnx_bytes(onnx_nets.unsupported_net())}, ["--model", "{d}/m.onnx"],
     "is not a supported join"),
    ("onnx-weight-first", {"m.onnx": lambda: onnx_bytes(onnx_nets.weight_first_matmul_net())}, ["--model", "{d}/m.onnx"],
     "its stored weight is its first input (weight times activation)"),
    ("onnx-activation-weight", {"m.onnx": _activation_weight}, ["--model", "{d}/m.onnx"], "is not a constant tensor"),
    ("onnx-no-weights", {"m.onnx": _no_weights}, ["--model", "{d}/m.onnx"], "no weighted layer"),
    ("onnx-fc-mismatch", {"m.onnx": _fc_mismatch_onnx}, ["--model", "{d}/m.onnx"], "in_features: 2 does not match the 6 outputs of its input 'fc1'"),
]


def _write(d, files):
    for name, content in files.items():
        content = content() if callable(content) else content
        p = d / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)


def _expand(args, d):
    return [a.replace("{d}", str(d)) for a in args]


def test_catalogue_is_large_and_ids_unique():
    ids = [c[0] for c in CASES]
    assert len(ids) >= 60 and len(set(ids)) == len(ids)


@pytest.mark.parametrize("files,args,message", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input(files, args, message, tmp_path, capsys):
    _write(tmp_path, files)
    out_file = tmp_path / "report.txt"
    argv = _expand(args, tmp_path)
    if "--output" not in argv:
        argv += ["--output", str(out_file)]
    code, out, err = run_cli(argv, capsys)
    assert code == 2, err
    err = "".join(line for line in err.splitlines(keepends=True) if not line.startswith("[explore] "))  # progress
    assert err.startswith("explore: error: ") and err.count("\n") == 1, err
    assert message.replace("{d}", str(tmp_path)) in err
    assert "Traceback" not in err and out == ""
    assert not out_file.exists(), "nothing written on bad input"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".report")], "no temp file left behind"


@pytest.mark.parametrize("case", ["net-fc-after-fc", "cli-time-limit-nan", "cons-cap-bare"])
def test_bad_input_as_a_user_runs_it(case, tmp_path):
    _, files, args, message = next(c for c in CASES if c[0] == case)
    _write(tmp_path, files)
    r = subprocess.run([sys.executable, "-m", "explorer.app.cli", *_expand(args, tmp_path)], capture_output=True, text=True)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1 and r.stdout == ""


@pytest.mark.parametrize("case", ["kinds-zero-peak", "kinds-nan-peak", "kinds-huge-peak", "kinds-int-name",
                                  "kinds-bad-memory", "kinds-missing-peak", "kinds-unknown-key", "split-kinds-bad-memory",
                                  "kinds-name-newline", "kinds-name-bidi"])
def test_a_broken_kind_is_reported_once(case, tmp_path, capsys):
    """A kind whose entry is broken is reported for that entry only: the accelerators naming it are
    not also called 'unknown kind' (the kind is declared, just invalid)."""
    _, files, args, message = next(c for c in CASES if c[0] == case)
    _write(tmp_path, files)
    code, out, err = run_cli(_expand(args, tmp_path), capsys)
    assert code == 2 and message in err
    assert "unknown kind" not in err and "; " not in err.split(message)[-1], err


def test_dump_model_and_output_naming_one_file_is_refused(tmp_path, capsys):
    """The report written over the CP-SAT model it was just asked to dump (trial 3): refused up front."""
    from .conftest import run_cli

    same = str(tmp_path / "same.txt")
    code, out, err = run_cli(["--model", "lenet-c", "--solver", "cpsat", "--dump-model", same, "--output", same], capsys)
    assert code == 2 and err.count("\n") == 1 and "is also --output" in err
    assert not (tmp_path / "same.txt").exists()
