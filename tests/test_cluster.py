"""GPU clusters (issue 21, item 3): the core's ClusterSpec, the YAML form, the shipped DGX clusters,
resolution by name, and bad input (one line naming file, field and problem)."""

from __future__ import annotations

import json
import re
from fractions import Fraction

import pytest

from explorer.core.cluster import ClusterSpec, GpuKind, Tier
from explorer.core.errors import SpecError
from explorer.frontends import is_cluster, load_array, load_cluster, zoo
from explorer.frontends.cluster_yaml import load_cluster_file, parse_cluster
from explorer.frontends.yamlio import load_yaml_text

from .conftest import run_cli

GB = 10**9
A100 = GpuKind("A100", Fraction(312), Fraction(80))


def spine_cluster(gpus: int = 1024) -> ClusterSpec:
    """8-GPU nodes; a 256-GPU spine domain at 25 GB/s; the whole cluster at 12.5 GB/s (2:1 oversubscribed)."""
    return ClusterSpec("spine", A100, 8, gpus, (Tier("nvlink", 8, Fraction(300)), Tier("spine", 256, Fraction(25)),
                                                 Tier("network", gpus, Fraction(25, 2))))


# --- the core: bandwidth per span, instance sizes ----------------------------------------------

def test_dgx_a100_bandwidth_per_span():
    c = load_cluster("dgx-a100")
    # within a node (span <= 8): NVLink 3, 600 GB/s both ways = 300 GB/s each way per GPU;
    # beyond a node: one 200 Gb/s HDR NIC per GPU = 25 GB/s each way
    assert [c.bandwidth_Bps(s) for s in (1, 8, 9, 16, 1024)] == [300 * GB, 300 * GB, 25 * GB, 25 * GB, 25 * GB]
    assert c.gpus == 1024 and c.nodes == 128 and c.gpus_per_node == 8
    assert [t.name for t in c.tiers] == ["nvlink", "network"] and c.tiers[-1].size == 1024


def test_dgx_h100_figures():
    c = load_cluster("dgx-h100")
    assert c.gpu.peak_TFLOPS == Fraction(9894, 10) and c.gpu.peak_TFLOPS * 10**12 == 989_400 * 10**9  # exact, not 989.4000001
    assert c.gpu.memory_bytes == 80 * 2**30
    assert c.bandwidth_Bps(8) == 450 * GB and c.bandwidth_Bps(16) == 50 * GB and c.gpus == 16384


@pytest.mark.parametrize("n,nodes", [(1536, 192), (2520, 315), (1000, 125), (8, 1), (4, 1), (1, 1)])
def test_with_gpus_whole_nodes_or_part_of_one(n, nodes):
    c = load_cluster("dgx-a100").with_gpus(n)
    assert c.gpus == n and c.nodes == nodes and c.tiers[-1].size == n and c.tiers[0].size == 8
    assert c.bandwidth_Bps(min(n, 8)) == 300 * GB  # the node's GPUs still talk over NVLink
    if n > 8:
        assert c.bandwidth_Bps(n) == 25 * GB
    assert load_cluster("dgx-a100", gpus=n) == c


@pytest.mark.parametrize("n,message", [
    (0, "--gpus: must be >= 1, got 0"),
    (-8, "--gpus: must be >= 1, got -8"),
    (12, "--gpus: 12 is not a whole number of 8-GPU nodes (nearest: 8 = 8 x 1 or 16 = 8 x 2) (cluster dgx-a100)"),
    (1001, "--gpus: 1,001 is not a whole number of 8-GPU nodes (nearest: 1,000 = 8 x 125 or 1,008 = 8 x 126)"),
    (3, "--gpus: 3 GPUs is not a part of one 8-GPU node (a part must divide 8: 1, 2, 4, 8)"),
    (True, "--gpus: must be a positive integer, got True"),
    (8.0, "--gpus: must be a positive integer, got 8.0"),
    (2**43, "--gpus: must be at most 1,000,000,000, got "),
])
def test_with_gpus_refusals_name_the_option(n, message):
    with pytest.raises(SpecError) as err:
        load_cluster("dgx-a100").with_gpus(n)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_oversubscribed_tier_spans():
    c = spine_cluster()
    expected = {1: 300, 8: 300, 9: 25, 256: 25, 257: Fraction(25, 2), 1024: Fraction(25, 2),
                5000: Fraction(25, 2)}  # a span past every tier size: the outermost
    assert {s: c.bandwidth_Bps(s) / GB for s in expected} == expected
    small = c.with_gpus(128)  # inside one spine domain: the slower network tier is never reached
    assert small.bandwidth_Bps(128) == 25 * GB and small.tiers[1].size == 256 and small.tiers[-1].size == 128
    big = c.with_gpus(2520)  # 8 x 315: the last spine domain is partial, sizes need not divide
    assert big.bandwidth_Bps(256) == 25 * GB and big.bandwidth_Bps(512) == Fraction(25, 2) * GB


@pytest.mark.parametrize("span", [0, -1, True, 2.0])
def test_bad_span_is_a_programming_error(span):
    with pytest.raises(ValueError, match="span must be a positive integer"):
        load_cluster("dgx-a100").bandwidth_Bps(span)


@pytest.mark.parametrize("tiers,gpus,message", [
    ((Tier("n", 4, Fraction(1)), Tier("x", 16, Fraction(1))), 16, "the first tier (n) is the node: its size must be 8"),
    ((Tier("n", 8, Fraction(1)), Tier("a", 64, Fraction(1)), Tier("b", 32, Fraction(1)), Tier("x", 128, Fraction(1))),
     128, "tier sizes must increase outward: b (32) after a (64)"),
    ((Tier("n", 8, Fraction(1)), Tier("a", 20, Fraction(1)), Tier("x", 128, Fraction(1))), 128, "not a multiple of the 8-GPU node"),
    ((Tier("n", 8, Fraction(1)), Tier("x", 128, Fraction(2))), 128, "cannot grow outward"),
    ((Tier("n", 8, Fraction(0)), Tier("x", 128, Fraction(0))), 128, "bandwidth must be a positive exact number"),
    ((Tier("n", 8, Fraction(1)), Tier("x", 64, Fraction(1))), 128, "the outermost tier's size must be the GPU count 128"),
    ((), 8, "needs at least one tier"),
])
def test_core_invariants(tiers, gpus, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        ClusterSpec("c", A100, 8, gpus, tiers)


# --- the YAML form: every bad input one line naming file and field ------------------------------

GOOD = """\
version: 1
kind: gpu-cluster
name: c
gpu: {name: A100, peak_TFLOPS: 312, memory_GiB: 80}
gpus_per_node: 8
gpus: 1024
nvlink_GBps: 300
nic_GBps: 12.5
tiers:
  - {name: spine, size: 256, bandwidth_GBps: 25}
"""


def parse(text: str) -> ClusterSpec:
    return parse_cluster(load_yaml_text(text, "c.yaml"), "c.yaml")


def test_yaml_with_a_tier_is_the_core_spec():
    assert parse(GOOD) == ClusterSpec("c", GpuKind("A100", Fraction(312), Fraction(80), ""), 8, 1024, spine_cluster().tiers,
                                      "", "c.yaml")


@pytest.mark.parametrize("old,new,message", [
    ("nvlink_GBps: 300", "nvlink_GBps: -300", "c.yaml: nvlink_GBps: must be > 0, got -300"),
    ("nic_GBps: 12.5", "nic_GBps: .nan", "c.yaml: nic_GBps: must be a finite number, got nan"),
    ("nic_GBps: 12.5", "nic_GBps: 0", "c.yaml: nic_GBps: must be > 0, got 0"),
    ("bandwidth_GBps: 25}", "bandwidth_GBps: 0}", "c.yaml: tiers[0].bandwidth_GBps: must be > 0, got 0"),
    ("gpus: 1024", "gpus: 1024\nnodes: 128", "c.yaml: nodes: unknown key (allowed: "),
    ("gpu: {name: A100, peak_TFLOPS: 312, memory_GiB: 80}\n", "", "c.yaml: gpu: missing"),
    ("peak_TFLOPS: 312, ", "", "c.yaml: gpu.peak_TFLOPS: missing"),
    ("memory_GiB: 80}", "memory_GiB: 80, hbm: 5}", "c.yaml: gpu.hbm: unknown key"),
    ("gpus: 1024", "gpus: 1000\ngpus: 8", "c.yaml: invalid YAML: duplicate key 'gpus'"),
    ("gpus: 1024", "gpus: 1001", "c.yaml: gpus: 1,001 is not a whole number of 8-GPU nodes"),
    ("gpus: 1024", "gpus: 12", "c.yaml: gpus: 12 is not a whole number of 8-GPU nodes"),
    ("size: 256", "size: 260", "c.yaml: tiers[0].size: must be a multiple of gpus_per_node (8) larger than one node, got 260"),
    ("size: 256", "size: 8", "c.yaml: tiers[0].size: must be a multiple of gpus_per_node (8) larger than one node, got 8"),
    ("  - {name: spine, size: 256, bandwidth_GBps: 25}",
     "  - {name: spine, size: 256, bandwidth_GBps: 25}\n  - {name: row, size: 128, bandwidth_GBps: 25}",
     "c.yaml: tiers[1].size: must be larger than the tier inside it (tiers[0].size = 256), got 128"),
    ("  - {name: spine, size: 256, bandwidth_GBps: 25}",
     "  - {name: spine, size: 256, bandwidth_GBps: 25}\n  - {name: spine, size: 512, bandwidth_GBps: 25}",
     "c.yaml: tiers[1].name: 'spine' is taken"),
    ("name: spine", "name: nvlink", "c.yaml: tiers[0].name: 'nvlink' is taken"),
    ("bandwidth_GBps: 25}", "bandwidth_GBps: 400}",
     "c.yaml: tiers[0].bandwidth_GBps: 400 GB/s exceeds nvlink_GBps 300 GB/s (per GPU bandwidth cannot grow outward)"),
    ("nic_GBps: 12.5", "nic_GBps: 50", "c.yaml: nic_GBps: 50 GB/s exceeds tiers[0].bandwidth_GBps 25 GB/s"),
    ("  - {name: spine, size: 256, bandwidth_GBps: 25}", "  spine", "c.yaml: tiers: must be a list of {name, size, bandwidth_GBps}"),
    ("kind: gpu-cluster", "kind: array", "c.yaml: kind: must be gpu-cluster, got 'array'"),
    ("version: 1", "version: 2", "c.yaml: version: unsupported version 2"),
    ("gpus_per_node: 8", "gpus_per_node: 0", "c.yaml: gpus_per_node: must be a positive integer, got 0"),
])
def test_bad_yaml_one_line(old, new, message):
    assert old in GOOD
    with pytest.raises(SpecError) as err:
        parse(GOOD.replace(old, new, 1))
    text = str(err.value)
    assert text.startswith(message) and "\n" not in text, text


def test_every_problem_reported_at_once():
    bad = GOOD.replace("gpus: 1024", "gpus: 12").replace("nic_GBps: 12.5", "nic_GBps: -1")
    with pytest.raises(SpecError) as err:
        parse(bad)
    assert [p.split(":")[0] for p in err.value.problems] == ["gpus", "nic_GBps"]


def test_bad_cluster_file_through_the_cli_exit_2_one_line(tmp_path, capsys):
    # today a cluster file reaches the CLI through --array (which then refuses it as not an array);
    # a bad one says what is wrong with it first
    f = tmp_path / "bad.yaml"
    f.write_text(GOOD.replace("gpus: 1024", "gpus: 1001"))
    code, out, err = run_cli(["--model", "gpt3-1.7b", "--array", str(f)], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and f"{f}: gpus: 1,001 is not a whole number of 8-GPU nodes" in err
    assert "Traceback" not in err


# --- resolution, the shipped files, explore list ------------------------------------------------

def test_is_cluster_and_load_array_refuse_in_one_line(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text(GOOD)
    assert is_cluster("dgx-a100") and is_cluster("DGX-H100") and is_cluster(str(f))
    assert not is_cluster("hypar-16") and not is_cluster(str(zoo.array_files()["hypar-16"]))
    assert not is_cluster(str(tmp_path / "missing.yaml")) and not is_cluster("nope")
    assert load_cluster(str(f)).name == "c" and load_cluster(str(f), gpus=64).gpus == 64
    for ref in ("dgx-a100", str(f)):
        with pytest.raises(SpecError, match=r"^--array: .* is a GPU cluster \(kind: gpu-cluster\), not an accelerator array"):
            load_array(ref)
    with pytest.raises(SpecError, match=r"unknown array 'nope' \(known: .*; GPU clusters: dgx-a100, dgx-h100;"):
        load_array("nope")
    with pytest.raises(SpecError, match=r"^--array: unknown GPU cluster 'nope' \(known: dgx-a100, dgx-h100;"):
        load_cluster("nope")
    assert load_array("hypar-16").name == "hypar-16"  # arrays unchanged


@pytest.mark.parametrize("path", [pytest.param(p, id=n) for n, p in zoo.cluster_files().items()])
def test_shipped_clusters_load_and_every_figure_is_sourced(path):
    c = load_cluster_file(path)
    assert c.name == path.stem and c.gpus_per_node == 8 and c.gpu.memory_GiB == 80
    text = path.read_text()
    header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
    assert text.startswith("#") and "https://" in header
    for key, value in re.findall(r"^\s*(\w+): ([0-9][0-9.]*)\s*$", text, flags=re.M):
        if key != "version":
            assert f"{key} {value}" in header, f"{path.name}: {key}: {value} has no sourced line in the header"


def test_shipped_cluster_figures():
    a100, h100 = load_cluster("dgx-a100"), load_cluster("dgx-h100")
    assert (a100.gpu.peak_TFLOPS, a100.tiers[0].bandwidth_GBps, a100.tiers[-1].bandwidth_GBps) == (312, 300, 25)
    assert (h100.gpu.peak_TFLOPS, h100.tiers[0].bandwidth_GBps, h100.tiers[-1].bandwidth_GBps) == (Fraction("989.4"), 450, 50)


def test_explore_list_shows_clusters(capsys):
    code, out, _ = run_cli(["list"], capsys)
    assert code == 0
    lines = out.splitlines()
    at = lines.index("clusters (bandwidth per GPU each way; --gpus N sets the size):")
    assert lines[at + 1] == "  dgx-a100  1,024 GPUs (8 per node)  A100-SXM4-80GB 312 TFLOPS 80 GiB  nvlink 300 / network 25 GB/s"
    assert lines[at + 2].startswith("  dgx-h100 16,384 GPUs (8 per node)  H100-SXM5-80GB 989.4 TFLOPS")
    code, out, _ = run_cli(["list", "--format", "json"], capsys)
    clusters = {c["name"]: c for c in json.loads(out)["clusters"]}
    assert clusters["dgx-a100"]["tiers"] == [{"name": "nvlink", "size": 8, "bandwidth_GBps": 300},
                                             {"name": "network", "size": 1024, "bandwidth_GBps": 25}]
    assert clusters["dgx-h100"]["gpu"] == {"name": "H100-SXM5-80GB", "peak_TFLOPS": 989.4, "memory_GiB": 80}
    assert clusters["dgx-h100"]["nodes"] == 2048


def test_a_misspelt_kind_is_reported_by_the_cluster_loader(tmp_path, capsys):
    """A file with gpus_per_node is meant as a cluster: a misspelt kind names the field, in one line."""
    from explorer.app.cli import main

    path = tmp_path / "c.yaml"
    path.write_text("version: 1\nkind: gpu-clustr\nname: c\ngpu: {name: X, peak_TFLOPS: 100, memory_GiB: 80}\n"
                    "gpus_per_node: 8\ngpus: 16\nnvlink_GBps: 300\nnic_GBps: 25\n")
    with pytest.raises(SystemExit) as e:
        main(["--model", "gpt3-1.7b", "--array", str(path)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "kind: must be gpu-cluster" in err and len(err) < 400
