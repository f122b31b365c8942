"""Plans people compare against (model.md section 8)."""

from __future__ import annotations

from ..core.network import LayerKind
from ..core.partition import PartitionType
from ..core.plan import Plan
from ..core.problem import Problem

BASELINES = ("all-I", "all-II", "trick")


def baseline_plan(problem: Problem, name: str) -> Plan:
    """all-I: data parallelism everywhere; all-II: model parallelism; trick: conv I, fc II.

    Join nodes follow: I, II, and in the trick the type of their first input. A node that
    does not offer the type at a level (``Problem.level_types``: type II beyond a grouped conv's
    groups or an attention node's heads) takes type I there."""
    net = problem.network
    if name == "all-I":
        row = [PartitionType.I] * len(net.layers)
    elif name == "all-II":
        row = [PartitionType.II] * len(net.layers)
    elif name == "trick":
        first_input = {v: u for u, v in reversed(net.edges)}
        row = []
        for i, L in enumerate(net.layers):
            if L.is_join:
                row.append(row[first_input[i]])
            else:
                row.append(PartitionType.I if L.kind is LayerKind.CONV else PartitionType.II)
    else:
        raise ValueError(f"unknown baseline {name!r}")
    table = problem.types_by_layer
    rows = tuple(tuple(t if t in table[l][h] else PartitionType.I for l, t in enumerate(row))  # noqa: E741
                 for h in range(problem.levels))
    return Plan(rows)
