"""Plans people compare against (model.md section 8)."""

from __future__ import annotations

from explorer.network import LayerKind
from explorer.partition import PartitionType
from explorer.plan import Plan
from explorer.problem import Problem

BASELINES = ("all-I", "all-II", "trick")


def baseline_plan(problem: Problem, name: str) -> Plan:
    """all-I: data parallelism everywhere; all-II: model parallelism; trick: conv I, fc II."""
    layers = problem.network.layers
    if name == "all-I":
        row = [PartitionType.I] * len(layers)
    elif name == "all-II":
        row = [PartitionType.II] * len(layers)
    elif name == "trick":
        row = [PartitionType.I if L.kind is LayerKind.CONV else PartitionType.II for L in layers]
    else:
        raise ValueError(f"unknown baseline {name!r}")
    return Plan.uniform(problem.levels, row)
