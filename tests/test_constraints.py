"""Caps, memory, pins and forbids: parsing, who enforces what, infeasibility, the time model."""

import json
import random
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from explorer.core.array import synthetic_array
from explorer.frontends.array_yaml import load_array_file
from explorer.app.cli import main  # noqa: F401
from explorer.core.comm import footprint_elements, training_flops
from explorer.frontends.constraints_yaml import ConstraintOptions, build_constraints
from explorer.core.constraints import Cap, Constraints, Forbid, Pin
from explorer.core.errors import SpecError
from explorer.core.evaluate import evaluate, violations
from explorer.core.network import Network
from explorer.core.objective import Objective
from explorer.core.partition import PartitionType as T
from explorer.core.partition import Space
from explorer.core.plan import Plan
from explorer.core.problem import Problem
from explorer.core.randnet import random_chain
from explorer.app.run import rescore
from explorer.frontends import load_array, load_model
from explorer.solvers import brute, cpsat, dp, exact
from explorer.core.solution import SolveOptions, Status
from explorer.solvers.cpsat import explain_infeasible

from .conftest import fc, make_array
from .conftest import run_cli as run

ONE = SolveOptions(workers=1, seed=0)


def test_footprint_golden(three_layer):
    # three_layer, batch 4: L0 A(F)=128 A(W)=72; L1 A(F)=64 A(W)=32; L2 A(F)=128 A(W)=320
    # plan levels: (I, II, III), (III, I, II) -> final counts L0 (1,0,1), L1 (1,1,0), L2 (0,1,1)
    # weight_copies 1: (2+1) * A(W)/2^(nII+nIII) + A(F)/2^(nI+nII)
    # L0: 3*72/2^1 + 128/2^1 = 108 + 64 = 172
    # L1: 3*32/2^1 + 64/2^2 = 48 + 16 = 64
    # L2: 3*320/2^2 + 128/2^1 = 240 + 64 = 304;  total 540 elements = 2160 bytes (4-byte)
    plan = Plan(((T.I, T.II, T.III), (T.III, T.I, T.II)))
    ev = evaluate(three_layer, make_array(2), Space.ACCPAR, plan, weight_copies=1)
    assert ev.final_counts == ((1, 0, 1), (1, 1, 0), (0, 1, 1))
    assert ev.footprint_bytes == (172 * 4, 64 * 4, 304 * 4)
    assert ev.memory_bytes == 2160
    p = Problem(three_layer, make_array(2), Space.ACCPAR, constraints=Constraints(weight_copies=1))
    assert p.footprint_units(plan.types) == 540 * p.tables.unit_per_element
    assert footprint_elements(three_layer.layers[2], 4, (0, 1, 1), 1) == 304


def test_time_model_golden():
    # one fc layer 4 -> 2, batch 2, one level, 10 GB/s, 1 TFLOPS per accelerator, 2 accelerators
    # MACs = 2*2*4 = 16 -> training FLOPs = 3 * 2 * 16 = 96; compute = 96 / (2 * 1e12) s
    # plan I: c_0 = A(W) = 8 elements -> 32 bytes over 10 GB/s = 3.2e-9 s
    # energy (1 pJ/FLOP, 10 pJ/byte): 96 pJ + traffic bytes 2*4*8 = 64 B * 10 pJ = 640 pJ -> 736e-12 J
    from dataclasses import replace

    net = Network.chain("t", 2, [fc("a", 4, 2)])
    assert training_flops(net.layers[0], 2) == 96
    arr = replace(synthetic_array(1, [10]), energy_pJ_per_FLOP=Fraction(1), link_energy_pJ_per_byte=Fraction(10))
    ev = evaluate(net, arr, Space.HYPAR, Plan(((T.I,),)))
    assert ev.compute_s == Fraction(96, 2 * 10**12)
    assert ev.comm_time_s == Fraction(32, 10**10)
    assert ev.step_time_s == ev.compute_s + ev.comm_time_s
    assert ev.energy_J == Fraction(736, 10**12)


def test_caps_from_array_yaml(tmp_path):
    p = tmp_path / "a.yaml"
    p.write_text(
        "version: 1\nname: a\nlevels: 2\nlink_bandwidth_GBps: [10, 20]\npeak_TFLOPS: 1\nmemory_GiB: 1\n"
        "cap_bytes_per_step: [2GB, null]\ncap_seconds_per_step: [1s, 1ms]\n"
    )
    arr = load_array_file(p)
    # level 0: min(2 GB, 1 s * 10 GB/s) = 2e9; level 1: 1 ms * 20 GB/s = 2e7
    assert arr.cap_bytes == (2 * 10**9, 2 * 10**7)
    assert arr.with_levels(3).cap_bytes == (2 * 10**9, 2 * 10**7, None)
    p.write_text(p.read_text().replace("[2GB, null]", "[5ms, null]"))
    with pytest.raises(SpecError, match=r"cap_bytes_per_step\[0\]: '5ms' is in seconds, this key takes bytes"):
        load_array_file(p)


def test_cli_caps_pins_forbids_and_file(tmp_path):
    net, arr = load_model("lenet-c"), load_array("hypar-16")
    f = tmp_path / "c.yaml"
    f.write_text("version: 1\ncaps: {0: 1GB, 1: 1ms}\nmemory_GiB: 2\nweight_copies: 2\npins: ['ip1@*=II']\nforbids: ['conv1=III']\n")
    c = build_constraints(net, arr, Space.ACCPAR, ConstraintOptions(caps=("0=512MiB", "2=3GB"), constraints_file=str(f), pins=("conv2@1=I",)))
    assert [(x.level, x.bytes) for x in c.caps] == [(0, 512 * 2**20), (1, Fraction(60 * 10**9, 1000)), (2, 3 * 10**9)]
    assert c.memory_bytes == 2 * 2**30 and c.weight_copies == 2
    assert {p.name for p in c.pins} == {"pin ip1@*=II", "pin conv2@1=I"}
    assert [x.name for x in c.forbids] == ["forbid conv1=III"]
    c2 = build_constraints(net, arr, Space.ACCPAR, ConstraintOptions(memory_GiB=8, weight_copies=1, constraints_file=str(f)))
    assert c2.memory_bytes == 8 * 2**30 and c2.weight_copies == 1


@pytest.mark.parametrize(
    "opts,message",
    [
        (dict(caps=("0=2XB",)), "--cap: '0=2XB': unknown unit 'XB'"),
        (dict(caps=("9=2GB",)), "--cap: '9=2GB': level 9 is out of range 0..3"),
        (dict(caps=("2GB",)), "--cap: '2GB' is not LEVEL=AMOUNT"),
        (dict(pins=("fc9@0=I",)), "--pin: 'fc9@0=I': unknown layer 'fc9'"),
        (dict(pins=("ip1@x=I",)), "--pin: 'ip1@x=I': level must be an integer or *"),
        (dict(pins=("ip1@0=III",)), "--pin: 'ip1@0=III': type III is not in the hypar space"),
        (dict(pins=("ip1=I",)), "is not LAYER@LEVEL=TYPE"),
        (dict(forbids=("ip1=IV",)), "--forbid: 'ip1=IV': unknown partition type 'IV'"),
        (dict(memory_GiB=-1.0), "--memory: must be > 0"),
        (dict(weight_copies=-1), "--weight-copies: must be >= 0"),
    ],
)
def test_constraint_option_errors(opts, message):
    with pytest.raises(SpecError) as err:
        build_constraints(load_model("lenet-c"), load_array("hypar-16"), Space.HYPAR, ConstraintOptions(**opts))
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "text,message",
    [
        ("version: 1\ncolour: red\n", "colour: unknown key"),
        ("version: 1\ncaps: {0: 1GB}\ncaps: {1: 1GB}\n", "duplicate key 'caps'"),
        ("version: 2\n", "version: must be 1"),
        ("version: 1\npins: ['zz@0=I']\n", "pins[0]: unknown layer 'zz'"),
        ("version: 1\ncaps: [1GB]\n", "caps: must be a mapping LEVEL: AMOUNT"),
        ("version: 1\nweight_copies: -2\n", "weight_copies: must be a non-negative integer"),
    ],
)
def test_constraints_file_errors(tmp_path, text, message):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    with pytest.raises(SpecError) as err:
        build_constraints(load_model("lenet-c"), load_array("hypar-16"), Space.HYPAR, ConstraintOptions(constraints_file=str(f)))
    assert str(err.value).startswith(str(f)) and message in str(err.value)


def random_constrained(seed: int) -> Problem:
    rng = random.Random(seed)
    space = Space.HYPAR if seed % 2 else Space.ACCPAR
    K = len(space.types)
    while True:
        H, L = rng.randint(1, 3), rng.randint(1, 4)
        if K ** (H * L) <= 6000:
            break
    net = random_chain(seed, L)
    base = Problem(net, make_array(H), space, rng.choice(list(Objective)))
    free = dp.solve(base)  # scale limits around a real plan so that some bind and some are infeasible
    caps = []
    for h in range(H):
        if rng.random() < 0.5:
            c_bytes = Fraction(free.level_units[h] * 4, base.tables.unit_per_element)
            caps.append(Cap(h, c_bytes * Fraction(rng.choice([3, 5, 8, 10, 12]), 10), "test"))
    memory = None
    if rng.random() < 0.5:
        ev = evaluate(net, base.array, space, free.plan)
        memory = ev.memory_bytes * Fraction(rng.choice([5, 8, 10, 15]), 10)
    pins = tuple(Pin(rng.randrange(L), rng.choice([None] + list(range(H))), rng.choice(space.types)) for _ in range(rng.randint(0, 1)))
    forbids = tuple(Forbid(rng.randrange(L), rng.choice(space.types)) for _ in range(rng.randint(0, 1)))
    return base.with_constraints(Constraints(pins, forbids, tuple(caps), memory, rng.randint(0, 2)))


@pytest.mark.parametrize("seed", range(120))
def test_cpsat_equals_brute_under_random_constraints(seed):
    p = random_constrained(seed)
    b, c = brute.solve(p), cpsat.solve(p, ONE)
    assert b.status is c.status
    if b.status is Status.INFEASIBLE:
        assert b.plan is None and c.plan is None
        return
    assert b.status is Status.OPTIMAL and b.objective == c.objective
    for sol in (b, c):
        rescore(p, sol)  # raises if the plan breaks a constraint while not marked infeasible
        ev = evaluate(p.network, p.array, p.space, sol.plan, p.constraints.weight_copies)
        assert violations(ev, p.constraints, p.array, sol.plan) == []
    d = dp.solve(p)
    if d.plan is not None:
        rescore(p, d)  # the DP names exactly the violations the evaluator finds
        assert d.status is not Status.INFEASIBLE  # a heuristic's plan proves no infeasibility
        if not d.violations:
            assert d.objective >= b.objective
    e = exact.solve(p)  # the exact solver enforces caps and memory too: the same answer, proven
    assert e.status is b.status and e.objective == b.objective == e.bound


def test_dp_names_violations_and_cpsat_honours_the_cap():
    # VGG-A, hypar-16: the DP's level-3 cost is 14,857,920 elements = 59.43 MB; cap it at 55 MB
    p = Problem(load_model("vgg-a"), load_array("hypar-16"), Space.HYPAR,
                constraints=Constraints(caps=(Cap(3, Fraction(55 * 10**6), "test"),)))
    d = dp.solve(p)
    # the DP's plan breaks the cap: it keeps its status (not proven infeasible) and names what it breaks
    assert d.status is Status.LEVEL_OPTIMAL and d.plan is not None
    assert d.violations == ("cap level 3 <= 55 MB (test)",)
    ev, _ = rescore(p, d)
    (v,) = violations(ev, p.constraints, p.array, d.plan)
    assert v.actual_bytes == 14_857_920 * 4 and v.excess_bytes == 14_857_920 * 4 - 55 * 10**6
    c = cpsat.solve(p, ONE)
    assert c.status is Status.OPTIMAL
    assert c.level_units[3] * 4 <= 55 * 10**6 * p.tables.unit_per_element
    # the same total traffic as the DP: an equally good plan that respects the cap
    assert c.objective == d.objective


def test_exact_proves_a_binding_cap_on_chains_and_graphs():
    p = Problem(load_model("lenet-c"), load_array("hypar-16"), Space.ACCPAR,
                constraints=Constraints(caps=(Cap(0, Fraction(10**5), "test"),)))
    e, c = exact.solve(p), cpsat.solve(p, ONE)
    assert e.status is c.status
    assert e.objective == c.objective and e.bound == c.bound
    p = p.with_constraints(Constraints(caps=(Cap(0, Fraction(15 * 10**5), "test"),)))  # the free optimum needs 1.722 MB
    e, c = exact.solve(p), cpsat.solve(p, ONE)
    assert e.status is c.status is Status.OPTIMAL and e.objective == c.objective == e.bound
    assert e.info["method"] != "chain-dp"  # the cap binds: the unconstrained optimum breaks it
    rescore(p, e)
    # on graphs too (Lagrangian bound, then CP-SAT over the vectors it leaves): here it proves infeasibility
    g = Problem(load_model("resnet18"), load_array("hypar-16"), Space.HYPAR,
                constraints=Constraints(caps=(Cap(0, Fraction(10**5), "test"),)))
    e, c = exact.solve(g), cpsat.solve(g, ONE)
    assert e.status is c.status is Status.INFEASIBLE


def test_infeasible_explained_with_nearest_cap():
    # level-0 traffic of VGG-A can't go below the DP's level-0 optimum: 22,443,712 elements = 89,774,848 bytes
    p = Problem(load_model("vgg-a"), load_array("hypar-16"), Space.HYPAR,
                constraints=Constraints(caps=(Cap(0, Fraction(50 * 10**6), "--cap"),), memory_bytes=Fraction(4 * 2**30)))
    assert cpsat.solve(p, ONE).status is Status.INFEASIBLE
    why = explain_infeasible(p)
    assert why["conflict"] == ["cap level 0 <= 50 MB (--cap)"]
    assert "smallest feasible cap at level 0 is 89.77 MB (89774848 bytes)" in why["suggestion"]
    # and that cap is indeed feasible
    q = p.with_constraints(Constraints(caps=(Cap(0, Fraction(89774848), "--cap"),)))
    assert cpsat.solve(q, ONE).status is Status.OPTIMAL


def test_conflicting_pin_and_forbid_named():
    p = Problem(load_model("lenet-c"), load_array("hypar-16"), Space.HYPAR,
                constraints=Constraints(pins=(Pin(2, 1, T.II, "pin ip1@1=II"),), forbids=(Forbid(2, T.II, "forbid ip1=II"), Forbid(0, T.I, "forbid conv1=I"))))
    why = explain_infeasible(p)
    assert sorted(why["conflict"]) == ["forbid ip1=II", "pin ip1@1=II"]


def test_cli_infeasible_exit_1_with_message(capsys):
    code, out, err = run(["--cap", "0=50MB", "--solver", "cpsat", "--workers", "1"], capsys)
    assert code == 1
    assert "no plan satisfies the constraints; these conflict: cap level 0 <= 50 MB (--cap)" in err
    assert "try --cap 0=89.774848MB" in err


def test_cli_dp_violation_exit_1_and_json(capsys):
    code, out, _ = run(["--cap", "3=55MB", "--format", "json"], capsys)
    assert code == 1
    r = json.loads(out)
    assert r["status"] == "level-optimal" and r["ok"] is False and r["plan"] is not None
    (v,) = r["violations"]
    assert v["constraint"] == "cap level 3 <= 55 MB (--cap)"
    assert v["excess_bytes"] == 14_857_920 * 4 - 55 * 10**6
    code, out, _ = run(["--cap", "3=55MB", "--format", "json", "--solver", "cpsat", "--workers", "1"], capsys)
    r = json.loads(out)
    assert code == 0 and r["status"] == "optimal" and r["ok"] is True and r["violations"] == []
    assert {"step_time_s", "speedup_over_all_I", "memory_bytes_per_accelerator"} <= set(r)


def test_cli_check_with_constraints(capsys):
    # lenet-c at 4 accelerators: the DP's level-1 cost is 173,980 elements = 695,920 bytes; cap it at 650 kB
    code, out, _ = run(["check", "--model", "lenet-c", "--levels", "2", "--space", "accpar", "--cap", "1=650kB",
                        "--forbid", "ip2=III", "--workers", "1", "--format", "json"], capsys)
    assert code == 0
    r = json.loads(out)
    assert r["agree"] and r["dp"]["status"] == "level-optimal" and r["dp"]["ok"] is False
    assert r["solvers"]["cpsat"]["status"] == r["solvers"]["brute"]["status"] == "optimal"
    assert r["solvers"]["cpsat"]["objective"] == r["solvers"]["brute"]["objective"] == 1849764
    # the exact solver now enforces the cap on chains: it proves the same optimum, and check names its method
    assert r["solvers"]["exact"]["status"] == "optimal" and r["solvers"]["exact"]["objective"] == 1849764
    assert r["optimum"]["method"] == r["solvers"]["exact"]["method"] != "exact:chain-dp"
    assert r["optimum"]["dp_satisfies_constraints"] is False


# -- where a memory conflict came from (as a cap's name says it) ---------------------------------


def _memory_conflict(args, capsys) -> list[str]:
    from .conftest import run_cli

    code, out, err = run_cli(["--model", "lenet-c", "--levels", "2", "--solver", "exact", *args, "--format", "json"], capsys)
    assert code == 1, err
    return json.loads(out)["conflict"]


def test_memory_conflict_names_its_source(tmp_path, capsys):
    """--memory, a constraints file's memory_GiB, the array file's memory_GiB: the conflict says which."""
    assert _memory_conflict(["--memory", "0.0001"], capsys) == ["memory <= 104.9 KiB per accelerator (--memory)"]
    cons = tmp_path / "c.yaml"
    cons.write_text("version: 1\nmemory_GiB: 0.0001\n")
    assert _memory_conflict(["--constraints", str(cons)], capsys) == [
        f"memory <= 104.9 KiB per accelerator ({cons} memory_GiB)"]
    arr = tmp_path / "a.yaml"
    arr.write_text((Path(__file__).parents[1] / "spaces" / "arrays" / "hypar-16.yaml").read_text().replace("memory_GiB: 4", "memory_GiB: 0.0001"))
    assert _memory_conflict(["--array", str(arr)], capsys) == ["memory <= 104.9 KiB per accelerator (array memory_GiB)"]


def test_memory_conflict_source_in_check_and_the_uneven_split(capsys):
    """explore check and explore --split optimal name the source as explore does."""
    from .conftest import run_cli

    code, out, _ = run_cli(["check", "--model", "lenet-c", "--levels", "2", "--solvers", "exact", "--memory", "0.0001",
                            "--format", "json"], capsys)
    assert code == 0 and json.loads(out)["conflict"] == ["memory <= 104.9 KiB per accelerator (--memory)"]
    code, out, _ = run_cli(["--model", "lenet-c", "--array", "tpu-mix-16", "--split", "optimal", "--solver", "exact",
                            "--alpha-grid", "4", "--memory", "0.00001", "--format", "json"], capsys)
    assert code == 1 and json.loads(out)["conflict"] == ["memory <= 10.49 KiB per accelerator (--memory)"]


def test_with_sources_leaves_option_pins_bare_and_names_memory():
    c = Constraints(pins=(Pin(0, None, T.I, origin="--pin"),), memory_bytes=Fraction(1000), memory_set=True,
                    memory_origin="--memory")
    assert c.with_sources(c.side_names()) == ["pin layer 0@*=I", "memory <= 1000 B per accelerator (--memory)"]
    assert replace(c, memory_set=False, memory_origin="").with_sources([c.memory_name]) == [
        "memory <= 1000 B per accelerator (array memory_GiB)"]
