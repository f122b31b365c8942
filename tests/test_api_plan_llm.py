"""``explorer.api.plan_llm``: the LLM planner from Python (trial 8, item 5: docs/api.md said the
API does what ``explore`` does, but a GPU cluster had no API route). It returns the report the
CLI prints, and its errors name its arguments."""

from __future__ import annotations

import json

import pytest

from explorer import api
from explorer.app.llm_report import llm_json, render_llm
from explorer.core.errors import SpecError

from .conftest import run_cli


def test_plan_llm_is_what_explore_prints(capsys):
    args = ["--model", "gpt3-1.7b", "--array", "dgx-a100", "--gpus", "8", "--layout", "megatron",
            "--degrees", "tensor=2,pipeline=1,data=4", "--micro-batch", "1", "--recompute", "selective"]
    code, out, _ = run_cli([*args, "--format", "json"], capsys)
    report = api.plan_llm("gpt3-1.7b", "dgx-a100", gpus=8, layout="megatron", degrees={"tensor": 2, "pipeline": 1, "data": 4},
                          micro_batch=1, recompute="selective")
    assert code == 0 and report.ok
    got, want = json.loads(json.dumps(llm_json(report))), json.loads(out)
    assert _no_wall(got) == _no_wall(want)
    assert "step time" in render_llm(report)


def _no_wall(d):
    """The JSON without its wall times (the one part that differs between two runs)."""
    if isinstance(d, dict):
        return {k: _no_wall(v) for k, v in d.items() if k != "wall_s"}
    if isinstance(d, list):
        return [_no_wall(v) for v in d]
    return d


@pytest.mark.parametrize("kwargs,message", [
    ({"layout": "megatron"}, "layout: megatron needs degrees tensor=T,pipeline=P,data=D"),
    ({"gpus": "8"}, "gpus: must be an integer, got '8'"),
    ({"zero": 2}, "zero: must be one of 0, 1, 3, got 2"),  # an int shown as an int (trial 10, finding 18)
    ({"degrees": "tensor=x"}, "degrees: 'tensor=x' is not NAME=N"),
    # a mapping's value named by its key, as its other errors are (was "tensor=-2", --degrees' text form)
    ({"degrees": {"pipeline": -2}}, "degrees: 'pipeline': must be between 1 and 10,000,000, got -2"),
    ({"degrees": {"tensor": 0}}, "degrees: 'tensor': must be between 1 and 10,000,000, got 0"),
    ({"time_limit": -1}, "time_limit: must be a finite number of seconds >= 0.1, got -1"),
])
def test_bad_arguments_are_named_as_arguments(kwargs, message):
    with pytest.raises(SpecError) as err:
        api.plan_llm("gpt3-1.7b", "dgx-a100", **kwargs)
    assert str(err.value).startswith(message)


def test_an_accelerator_array_is_refused_naming_solve():
    with pytest.raises(SpecError, match="array: 'hypar-16' is not a GPU cluster .*solve\\(\\) plans accelerator arrays"):
        api.plan_llm("gpt3-1.7b", "hypar-16")


def test_solve_on_a_cluster_points_an_api_user_at_plan_llm():
    """explorer.api.solve refuses a GPU cluster (it plans on accelerator arrays); its one line names
    the API function that plans on a cluster (trial 8 item 5)."""
    import pytest

    from explorer.api import solve
    from explorer.core.errors import SpecError

    with pytest.raises(SpecError, match=r"^array: .* is a GPU cluster .*explorer\.api\.plan_llm plans on it"):
        solve("gpt3-1.7b", array="dgx-a100")


def test_plan_llm_on_an_unknown_array_or_a_missing_file_says_so(tmp_path):
    """An array that is no array at all gets the loader's own error (it used to be told solve()
    plans accelerator arrays); an accelerator array still points at solve() (trial 9 item 3)."""
    import pytest

    from explorer.api import plan_llm
    from explorer.core.errors import SpecError

    with pytest.raises(SpecError, match=r"^array: unknown array 'nosuch' \(known: "):
        plan_llm("gpt3-1.7b", "nosuch")
    with pytest.raises(SpecError, match=r"none\.yaml: no such file$"):
        plan_llm("gpt3-1.7b", str(tmp_path / "none.yaml"))
    with pytest.raises(SpecError, match=r"^array: 'hypar-16' is not a GPU cluster .*solve\(\) plans accelerator arrays"):
        plan_llm("gpt3-1.7b", "hypar-16")
