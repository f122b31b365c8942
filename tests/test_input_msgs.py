"""Hostile input, the last trial's findings: each refused in one line naming the argument (or
file, or option) and the problem, never a TypeError, a ValueError from deep inside, a 401-digit
number or a misleading word."""

from __future__ import annotations

import pytest

from explorer import api
from explorer.core.errors import SpecError, format_count, shown

BIG = 10**5000  # beyond the 4,300 digits Python turns into text: str(BIG) raises ValueError


# --- the API's calls --------------------------------------------------------------------------


@pytest.mark.parametrize("call, source, first", [
    (lambda: api.solve("sfc", gpus=8), "gpus", "solve() has no such argument; it is an argument of plan_llm() "
                                                "(solve() takes model, array, solver, space, "),
    (lambda: api.check("sfc", colour="red"), "colour", "check() has no such argument (check() takes model, array, solvers, "),
    (lambda: api.build_problem("sfc", solver="exact"), "solver",
     "build_problem() has no such argument; it is an argument of solve() (build_problem() takes model, array, space, "),
    (lambda: api.plan_llm("llama-7b", space="hypar"), "space",
     "plan_llm() has no such argument; it is an argument of build_problem(), solve() and check() "),
    (lambda: api.sweep({}, worker=2), "worker", "sweep() has no such argument (sweep() takes spec, out, workers, "),
])
def test_an_unknown_keyword_is_a_spec_error_naming_it_and_the_accepted_ones(call, source, first):
    with pytest.raises(SpecError) as err:
        call()
    assert err.value.source == source and str(err.value).startswith(f"{source}: {first}")
    assert "\n" not in str(err.value)


def test_a_call_that_does_not_fit_is_a_spec_error_too():
    with pytest.raises(SpecError, match=r"^solve\(\): missing a required argument: 'model'$"):
        api.solve()
    with pytest.raises(SpecError, match=r"^solve\(\): too many positional arguments$"):
        api.solve("sfc", "hypar-16", "exact")
    with pytest.raises(SpecError, match=r"^plan_llm\(\): multiple values for argument 'model'$"):
        api.plan_llm("llama-7b", model="llama-7b")


def test_the_unwrapped_solve_refuses_an_unknown_keyword_as_a_spec_error_too():
    from explorer.app.request import solve  # as the CLI calls it: no API wrapper around it

    with pytest.raises(SpecError, match=r"^gpus: solve\(\) has no such argument; it is an argument of plan_llm\(\) "
                                        r"\(solve\(\) takes space, objective, "):
        solve("sfc", gpus=8)


def test_no_solvers_given_says_so():
    with pytest.raises(SpecError, match=r"^solvers: no solvers given \(choose from exact, cpsat, brute, pruned\)$"):
        api.check("sfc", solvers=[])
    with pytest.raises(SpecError, match=r"^solvers: no solvers given \(choose from brute, exact, "):
        api.check("sfc", solvers=(), split="optimal")


def test_no_solvers_given_on_the_command_line_says_so(capsys):
    from .conftest import run_cli

    code, _, err = run_cli(["check", "--model", "sfc", "--solvers", ","], capsys)
    assert code == 2 and err.strip() == "explore: error: --solvers: no solvers given (choose from exact, cpsat, brute, pruned)"


# --- huge integers: abbreviated, never 401 digits, never Python's 4,300-digit ValueError -------


def test_shown_abbreviates_an_integer_of_more_than_20_digits_in_a_list_too():
    assert shown(10**400) == "1.000e+400" == format_count(10**400)
    assert shown(BIG) == "1.000e+5000" and shown(-(10**30)) == "-1.000e+30"
    assert shown([1, 10**400]) == "[1, 1.000e+400]"
    assert shown(2**62) == "4611686018427387904"  # 19 digits: as it is


def test_plan_llm_batch_10_to_the_400_is_abbreviated():
    with pytest.raises(SpecError) as err:
        api.plan_llm("llama-7b", batch=10**400)
    assert str(err.value) == "batch: must be between 1 and 1,000,000,000, got 1.000e+400"


@pytest.mark.parametrize("call, message", [
    (lambda: api.plan_llm("llama-7b", gpus=BIG), "gpus: must be between 1 and 1,000,000,000, got 1.000e+5000"),
    (lambda: api.plan_llm("llama-7b", degrees={"tensor": BIG}), "degrees: 'tensor': must be between 1 and 10,000,000, "
                                                                "got 1.000e+5000"),
    (lambda: api.plan_llm("llama-7b", degrees="tensor=" + "9" * 5000),
     "degrees: tensor=a 5,000-digit number: must be between 1 and 10,000,000"),
    (lambda: api.plan_llm("llama-7b", time_limit=BIG), "time_limit: must be a finite number of seconds >= 0.1, got "
                                                       "1.000e+5000"),
    (lambda: api.solve("sfc", time_limit=10**400), "time_limit: must be a finite number of seconds >= 0.1, got 1.000e+400"),
    (lambda: api.solve("sfc", levels=BIG), "levels: must be between 1 and 20 (2 to 1048576 accelerators), got "
                                           "1.000e+5000; "),
    (lambda: api.solve("sfc", workers=BIG), "workers: must be an integer from 1 to 256, got 1.000e+5000"),
    (lambda: api.solve("sfc", seed=BIG), "seed: must be an integer from 0 to 2,147,483,647, got 1.000e+5000"),
    (lambda: api.solve("sfc", split="search", alpha_grid=BIG), "alpha_grid: must be between 2 and 1024, got 1.000e+5000"),
    (lambda: api.solve("sfc", caps={BIG: "5MB"}), "caps: {1.000e+5000: '5MB'}: level 1.000e+5000 is beyond the 20 "
                                                  "levels of any array"),
])
def test_a_huge_integer_argument_is_refused_in_one_short_line(call, message):
    with pytest.raises(SpecError) as err:
        call()
    assert str(err.value).startswith(message) and len(str(err.value)) < 300


# --- contradictory pins ------------------------------------------------------------------------


@pytest.mark.parametrize("pins, message", [
    (["conv1@0=I", "conv1@0=II"], "--pin: 'conv1@0=II': pin conv1@0=II contradicts pin conv1@0=I (--pin): layer "
                                  "'conv1' takes one type at level 0, not both I and II"),
    (["conv1@2=II", "conv1@*=I"], "--pin: 'conv1@*=I': pin conv1@*=I contradicts pin conv1@2=II (--pin): layer "
                                  "'conv1' takes one type at level 2, not both II and I"),
    (["conv1@*=I", "fc6@*=II", "conv1@1=II"], "--pin: 'conv1@1=II': pin conv1@1=II contradicts pin conv1@*=I (--pin)"),
    (["fc6@*=I", "fc6@*=II"], "--pin: 'fc6@*=II': pin fc6@*=II contradicts pin fc6@*=I (--pin): layer 'fc6' takes one "
                              "type at every level, not both I and II"),
])
def test_contradictory_pins_are_an_input_error_naming_both(capsys, pins, message):
    from .conftest import run_cli

    code, out, err = run_cli(["--model", "alexnet", *[a for p in pins for a in ("--pin", p)]], capsys)
    assert code == 2 and not out and err.strip().startswith(f"explore: error: {message}"), err
    assert len(err.strip().splitlines()) == 1


def test_the_same_pin_twice_and_pins_at_different_levels_are_fine(capsys):
    from .conftest import run_cli

    code, out, _ = run_cli(["--model", "alexnet", "--pin", "conv1@0=I", "--pin", "conv1@0=I", "--pin", "conv1@*=I",
                            "--pin", "fc6@0=I", "--pin", "fc6@1=II"], capsys)
    assert code == 0 and "level-optimal" in out


def test_contradictory_pins_in_one_constraints_file_name_their_places(tmp_path, capsys):
    from .conftest import run_cli

    f = tmp_path / "cp.yaml"
    f.write_text('version: 1\npins: ["conv1@0=I", "conv1@0=I", "conv1@0=II"]\n')
    code, out, err = run_cli(["--model", "alexnet", "--constraints", str(f)], capsys)
    assert code == 2 and not out and err.strip() == (
        f"explore: error: {f}: pins[2]: pin conv1@0=II contradicts pin conv1@0=I (pins[0]): layer 'conv1' takes one "
        "type at level 0, not both I and II")


def test_contradictory_pins_in_the_api_name_the_argument():
    with pytest.raises(SpecError) as err:
        api.build_problem("alexnet", pins=["conv1@0=I", "conv1@*=II"])
    assert str(err.value) == ("pins: 'conv1@*=II': pin conv1@*=II contradicts pin conv1@0=I (pins): layer 'conv1' takes "
                              "one type at level 0, not both I and II")


# --- ONNX: what lenient shape inference let pass, or misreported as an unknown dimension -------


def _onnx(tmp_path, nodes, inits, name, x_shape=(4, 16), y_shape=None, opset=17) -> str:
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], inits)
    path = tmp_path / f"{name}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)
    return str(path)


def _refusal(path: str, capsys, *more: str) -> str:
    from .conftest import run_cli

    code, out, err = run_cli(["--model", path, "--levels", "2", *more], capsys)
    assert code == 2 and not out and err.count("\n") == 1 and "Traceback" not in err, (code, out, err)
    return err.removeprefix(f"explore: error: {path}: ").rstrip("\n")


def _node(op, inputs, **attrs):
    from onnx import helper

    return helper.make_node(op, inputs, ["y"] if op in ("Gemm", "MatMul", "Conv", "Gather") else [f"{op}_out"], **attrs)


def test_a_gemm_with_trans_a_whose_shapes_mismatch_says_trans_a(tmp_path, capsys):
    from .onnx_nets import _w

    gemm = [_node("Gemm", ["x", "w"], transA=1)]  # x [4,16] read as [16,4]: K = 4 against the weight's 16 rows
    for y_shape, name in ((["N", "M"], "declared"), (None, "undeclared")):  # a declared symbolic output: was 'unknown'
        path = _onnx(tmp_path, gemm, [_w("w", 16, 8)], f"gemm_{name}", y_shape=y_shape)
        assert _refusal(path, capsys) == ("node 0 (Gemm): transA=1 is not supported (a Gemm reading its input "
                                          "transposed; export it as a MatMul of the activation with the weight)")


def test_a_mismatch_behind_a_declared_symbolic_output_gives_shape_inferences_reason(tmp_path, capsys):
    from .onnx_nets import _w

    path = _onnx(tmp_path, [_node("MatMul", ["x", "w"])], [_w("w", 12, 8)], "mm", y_shape=["N", "M"])
    assert _refusal(path, capsys) == ("node 0 (MatMul): tensor 'y' has the inferred shape [?, ?]: dimension 0 is "
                                      "unknown: shape inference says MatMul: Incompatible dimensions for matrix "
                                      "multiplication")


@pytest.mark.parametrize("op, shape, x_shape, attrs, role", [
    ("MatMul", (0, 8), (4, 16), {}, "weight (second input)"),  # was: dimension 0 is unknown
    ("Gemm", (8, 0), (4, 16), {"transB": 1}, "weight (second input)"),  # was: dimension 0 is unknown
    ("Conv", (8, 3, 0, 3), (2, 3, 8, 8), {}, "weight (second input)"),  # was: kernel_shape must be positive
    ("Gather", (0, 8), (2, 4), {}, "first input"),  # was: node 0 (Gather).vocab: must be a positive integer
])
def test_a_zero_size_weight_is_named_with_its_shape(tmp_path, capsys, op, shape, x_shape, attrs, role):
    from onnx import TensorProto

    from .onnx_nets import _w

    path = _onnx(tmp_path, [_node(op, ["x", "w"] if op != "Gather" else ["w", "x"], **attrs)], [_w("w", *shape)],
                 op, x_shape=x_shape, y_shape=["N", "M"] if op != "Conv" else None)
    if op == "Gather":  # token ids
        import onnx

        m = onnx.load(path)
        m.graph.input[0].type.tensor_type.elem_type = TensorProto.INT64
        onnx.save(m, path)
    assert _refusal(path, capsys) == (f"node 0 ({op}): its {role} 'w' has the shape {list(shape)}: a zero dimension, "
                                      "no elements (an empty weight is no layer)")


def test_a_gemm_bias_of_no_elements_is_refused(tmp_path, capsys):
    from .onnx_nets import _w

    path = _onnx(tmp_path, [_node("Gemm", ["x", "w", "b"])], [_w("w", 16, 8), _w("b", 0)], "bias")
    assert _refusal(path, capsys) == ("node 0 (Gemm): its bias (third input) 'b' has the shape [0]: a zero dimension, "
                                      "no elements (an empty weight is no layer)")


@pytest.mark.parametrize("perm, why", [([5, 0], "axis 5 is out of range"), ([0, 0], "an axis is repeated"),
                                       ([1, 0, 2], "it has 3 entries"), ([-1, 0], "axis -1 is out of range")])
def test_a_transpose_perm_out_of_range_is_refused_where_nothing_reads_it(tmp_path, capsys, perm, why):
    """The Transpose after the product: its output unshaped, nothing reads it; it was accepted."""
    from onnx import helper

    from .onnx_nets import _w

    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Transpose", ["m"], ["y"], perm=perm)]
    path = _onnx(tmp_path, nodes, [_w("w", 16, 8)], "perm")
    assert _refusal(path, capsys) == (f"node 1 (Transpose): Transpose perm {perm} is not a permutation of the input's "
                                      f"2 axes 0..1 ({why})")


def test_a_valid_transpose_still_imports(tmp_path):
    from onnx import helper

    from explorer.frontends.onnx import load_onnx

    from .onnx_nets import _w

    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Transpose", ["m"], ["y"], perm=[1, 0])]
    assert [layer.name for layer in load_onnx(_onnx(tmp_path, nodes, [_w("w", 16, 8)], "ok")).layers] == ["MatMul_0"]


def test_an_opset_beyond_the_installed_onnx_is_refused_naming_the_newest(tmp_path, capsys):
    import onnx
    from onnx import defs

    from .onnx_nets import _w

    latest = defs.onnx_opset_version()
    mm = [_node("MatMul", ["x", "w"])]
    path = _onnx(tmp_path, mm, [_w("w", 16, 8)], "future", opset=latest + 2)
    assert _refusal(path, capsys) == (
        f"opset_import: default-domain opset version {latest + 2} is beyond {latest}, the newest the installed onnx "
        f"{onnx.__version__} defines (its operators' definitions are unknown): export with opset {latest} or lower, "
        "or upgrade onnx")
    path = _onnx(tmp_path, mm, [_w("w", 16, 8)], "zero", opset=0)
    assert _refusal(path, capsys) == "opset_import: default-domain opset version 0 (ONNX opsets start at 1)"
    from explorer.frontends.onnx import load_onnx

    assert load_onnx(_onnx(tmp_path, mm, [_w("w", 16, 8)], "latest", opset=latest)).layers


# --- CLI wording leftovers ---------------------------------------------------------------------


def test_plot_kind_has_help_text():
    from click.testing import CliRunner

    from explorer.app.cli import cli

    out = " ".join(CliRunner().invoke(cli, ["plot", "--help"]).output.split())
    assert "--kind [line|bar|scatter|heatmap] Chart: line (--y over --x, one line per --hue value" in out
    assert "heatmap (--z in each --x, --y cell; needs --z)" in out


def test_the_time_bar_of_exact_without_caps_shows_the_default_limit_exact_keeps(capsys, monkeypatch):
    """Every array has memory_GiB: the layers are coupled and exact keeps SOLVE_TIME_LIMIT (the bar
    showed the seconds alone)."""
    from explorer.app import cli
    from explorer.core.kinds import SOLVE_TIME_LIMIT

    from .conftest import run_cli

    seen = []

    class Recording(cli.Ticker):
        def __init__(self, limit, *args, **kwargs):
            seen.append(limit)
            super().__init__(limit, *args, **kwargs)

    monkeypatch.setattr(cli, "Ticker", Recording)
    for more, limit in (([], SOLVE_TIME_LIMIT), (["--cap", "0=1GB"], SOLVE_TIME_LIMIT), (["--time-limit", "7"], 7.0)):
        code, _, _ = run_cli(["--model", "lenet-c", "--solver", "exact", *more], capsys)
        assert code == 0 and seen[-1] == limit
    run_cli(["--model", "lenet-c", "--solver", "dp"], capsys)
    assert seen[-1] is None  # the DP keeps no limit


def test_a_limit_is_named_as_given_only_when_given():
    from explorer.core.names import Frontend, named_for, time_limit_named

    assert time_limit_named(5, True) == "--time-limit 5 s"
    assert time_limit_named(60.0, False) == "the default limit of 60 s (--time-limit sets another)"
    with named_for(Frontend.API):
        assert time_limit_named(60.0, False) == "the default limit of 60 s (time_limit sets another)"


def test_pruneds_messages_name_the_default_limit_when_it_applied(monkeypatch):
    """pruned's set-up beyond the limit said '--time-limit 60 s' with no --time-limit given."""
    from explorer.core.partition import Space
    from explorer.core.problem import Problem
    from explorer.core.solution import SolveOptions, Status
    from explorer.frontends import load_model
    from explorer.solvers import pruned

    from explorer.core.array import synthetic_array

    from .test_pruned_guards import _no_arrays

    _no_arrays(monkeypatch)
    problem = Problem(load_model("alexnet"), synthetic_array(5), Space.ACCPAR)
    monkeypatch.setattr(pruned, "SETUP_RATE", pruned.setup_estimate_s(problem) * pruned.SETUP_RATE / 100.0)  # 100 s
    sol = pruned.solve(problem, SolveOptions())
    assert sol.status is Status.FEASIBLE and "--time-limit 60 s" not in sol.info["reason"]
    assert "left of the default limit of 60 s (--time-limit sets another): the DP's plan, no bound" in sol.info["reason"]
    sol = pruned.solve(problem, SolveOptions(time_limit_s=60.0))
    assert "left of --time-limit 60 s: the DP's plan, no bound" in sol.info["reason"]
