"""CP-SAT refuses a memory row beyond int64 before it builds the model (trial 8 item 8: 7 s of
building at 20 levels before the same refusal)."""

import pytest

from explorer.api import build_problem
from explorer.core.errors import InstanceTooLarge
from explorer.solvers import cpsat
from explorer.solvers.formulation import build, memory_row_reach


def test_the_memory_row_is_refused_before_the_build(monkeypatch):
    p = build_problem("vgg-e", space="accpar", levels=20, batch=2**40)

    def no_build(*args, **kwargs):
        raise AssertionError("built the model before refusing it")

    monkeypatch.setattr(cpsat, "build", no_build)
    with pytest.raises(InstanceTooLarge, match=r"cpsat: the row of 'memory <= 4 GiB per accelerator' "
                                               r"can reach 7.508e\+23, beyond CP-SAT's int64 range"):
        cpsat.solve(p)


def test_the_reach_is_the_built_rows():
    p = build_problem("lenet-c", space="accpar", levels=3, memory_GiB=0.001)
    rows = [row for sc in build(p).side if sc.name == p.constraints.memory_name for row in sc.le_rows]
    assert rows and memory_row_reach(p) == sum(abs(c) for _, coefs, _ in rows for c in coefs)
    assert memory_row_reach(build_problem("lenet-c", space="accpar", levels=3)) == 0  # 4 GiB: beyond reach, no row
