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
    (lambda: api.plan_llm("llama-7b", degrees={"tensor": BIG}), "degrees: tensor=1.000e+5000: must be between 1 and "
                                                                "10,000,000"),
    (lambda: api.plan_llm("llama-7b", degrees="tensor=" + "9" * 5000),
     "degrees: tensor=a 5,000-digit number: must be between 1 and 10,000,000"),
    (lambda: api.plan_llm("llama-7b", time_limit=BIG), "time_limit: must be a finite number of seconds >= 0.1, got "
                                                       "1.000e+5000"),
    (lambda: api.solve("sfc", time_limit=10**400), "time_limit: must be a finite number of seconds >= 0.1, got 1.000e+400"),
    (lambda: api.solve("sfc", levels=BIG), "levels: levels must be between 1 and 20 (2 to 1048576 accelerators), got "
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
