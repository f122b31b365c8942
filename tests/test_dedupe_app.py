"""One concept in one place in the app layer (issues 20 and 23 leftovers): one number checker for
the API's arguments, one code stamp for the caches, one sentinel and one shape for a cut heuristic."""

from __future__ import annotations

import pytest

from explorer import api
from explorer.core.errors import SpecError


@pytest.mark.parametrize("value", ["80", True])
def test_solve_and_plan_llm_refuse_a_memory_that_is_not_a_number_alike(value):
    # solve said 'must be a number', plan_llm 'must be a number of GiB': two checkers of one rule
    messages = []
    for call in (lambda: api.solve("lenet-c", "hypar-16", memory_GiB=value),
                 lambda: api.plan_llm("gpt3-1.7b", "dgx-a100", gpus=8, batch=8, memory_GiB=value)):
        with pytest.raises(SpecError) as err:
            call()
        messages.append(str(err.value))
    assert messages[0] == messages[1] == f"memory_GiB: must be a number of GiB, got {value!r}"
