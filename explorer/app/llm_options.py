"""``explore`` on a GPU cluster: the LLM planner's options, parsed and checked before any work.

Bad input is a ``SpecError`` naming the option and the value (the CLI turns it into one line on
stderr and exit status 2); nothing is loaded or written before these checks pass.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from ..core.errors import SpecError, shown
from ..core.names import given_as
from ..core.llm_memory import Recompute, ZeroStage

DEGREE_NAMES = ("tensor", "pipeline", "data", "expert", "virtual")
DEFAULT_TIME_LIMIT_S = 300.0  # the search's wall-clock limit unless --time-limit (then: bound and gap)


class LayoutMode(enum.Enum):
    """``--layout``: evaluate a given layout instead of searching."""

    MEGATRON = "megatron"  # Megatron-LM: column- then row-parallel blocks, 1F1B
    ZERO3 = "zero3"  # pure data parallelism with ZeRO-3 (weights gathered per layer)


@dataclass(frozen=True, slots=True)
class LlmRequest:
    """What ``explore --array <cluster>`` was asked (checked)."""

    model: str
    cluster: str
    gpus: int | None
    batch: int | None
    seq: int | None
    layout: LayoutMode | None
    tensor: int | None
    pipeline: int | None
    data: int | None
    micro_batch: int | None
    recompute: Recompute | None  # None: searched
    zero: ZeroStage | None  # None: searched (--layout zero3: 3)
    time_limit_s: float
    memory_GiB: float | None = None  # --memory: each GPU's usable memory (headroom), instead of the cluster's
    expert: int | None = None  # --degrees expert=E: a mixture of experts' expert-parallel degree (None: searched)
    virtual: int | None = None  # --degrees virtual=V: model chunks a pipeline stage (interleaved 1F1B when > 1)


def parse_degrees(text: str) -> dict[str, int]:
    """``tensor=8,pipeline=8,data=16`` (any subset, any order; t/p/d/e and tp/pp/dp/ep as short
    names; ``expert`` for a mixture of experts) -> degrees."""
    out: dict[str, int] = {}
    short = {"t": "tensor", "p": "pipeline", "d": "data", "e": "expert", "v": "virtual",  # and Megatron's names:
             "tp": "tensor", "pp": "pipeline", "dp": "data", "ep": "expert", "vp": "virtual"}
    if not text.strip():
        raise SpecError("--degrees", "empty; give e.g. tensor=8,pipeline=8,data=16")
    for part in text.split(","):
        m = re.fullmatch(r"\s*([a-z]+)\s*=\s*([0-9]+)\s*", part)
        if m is None:
            raise SpecError("--degrees", f"{shown(part.strip())} is not NAME=N (e.g. tensor=8,pipeline=8,data=16)")
        name = short.get(m.group(1), m.group(1))
        if name not in DEGREE_NAMES:
            raise SpecError("--degrees", f"unknown degree {shown(m.group(1))} (tensor, pipeline, data, expert, virtual; "
                                            "t/tp, p/pp, d/dp, e/ep, v/vp for short)")
        if name in out:
            raise SpecError("--degrees", f"{name} given twice")
        digits = m.group(2).lstrip("0") or "0"
        out[name] = check_degree(name, int(digits) if len(digits) <= 12 else f"a {len(digits):,}-digit number")
    return out


MAX_DEGREE = 10**7  # the most of any parallelism degree


def check_degree(name: str, value: int | str, mapping: bool = False) -> int:
    """A degree's value (``value``: a text when too long to be read as a number), or SpecError: named
    as ``--degrees`` text gives it (``tensor=0``), or with ``mapping`` as the API's ``degrees``
    mapping does (its key, as its other errors name it: ``degrees: 'tensor': ..., got 0``)."""
    if not isinstance(value, str) and 1 <= value <= MAX_DEGREE:
        return value
    shown_value = value if isinstance(value, str) else shown(value)
    if mapping:
        raise SpecError("degrees", f"{shown(name)}: must be between 1 and {MAX_DEGREE:,}, got {shown_value}")
    raise SpecError("--degrees", f"{name}={shown_value}: must be between 1 and {MAX_DEGREE:,}")


def parse_request(model: str, cluster: str, gpus: int | None, batch: int | None, seq: int | None, layout: str | None,
                  degrees: str | None, micro_batch: int | None, recompute: str | None, zero: str | None,
                  time_limit_s: float | None, memory_GiB: float | None = None) -> LlmRequest:
    """The options of an LLM run, checked on their own (the model and the cluster check the rest)."""
    for option, value in (("--gpus", gpus), ("--batch", batch), ("--seq", seq), ("--micro-batch", micro_batch)):
        if value is not None and not 1 <= value <= 10**9:
            raise SpecError(option, f"must be between 1 and 1,000,000,000, got {shown(value)}")
    mode = None if layout is None else LayoutMode(layout)
    deg = parse_degrees(degrees) if degrees is not None else {}
    rec = None if recompute in (None, "search") else Recompute(recompute)
    z = None if zero is None else ZeroStage(int(zero))
    if mode is LayoutMode.ZERO3:
        extra = [f"{k}={v}" for k, v in deg.items() if k != "data" and v != 1]
        if extra:
            raise SpecError("--degrees", f"{', '.join(extra)} with {given_as('--layout')} zero3: ZeRO-3 is pure data "
                                         f"parallelism (give data=N, or {given_as('--layout')} megatron)")
        if z not in (None, ZeroStage.ZERO3):
            raise SpecError("--zero", f"{z.value} with {given_as('--layout')} zero3 (it is ZeRO stage 3)")
        deg = {"tensor": 1, "pipeline": 1, **({"data": deg["data"]} if "data" in deg else {})}
        z = ZeroStage.ZERO3
    elif mode is LayoutMode.MEGATRON and degrees is None:
        raise SpecError("--layout", f"megatron needs {given_as('--degrees')} tensor=T,pipeline=P,data=D")
    elif mode is LayoutMode.MEGATRON and sum(k in deg for k in ("tensor", "pipeline", "data")) < 2:
        given = ",".join(f"{k}={v}" for k, v in deg.items()) or "(none)"
        raise SpecError("--degrees", f"{given} with {given_as('--layout')} megatron, which scores one given layout: "
                                     "give tensor, pipeline and data (any two, the third is GPUs / their product; "
                                     f"without {given_as('--layout')} the search takes the rest)")
    return LlmRequest(model, cluster, gpus, batch, seq, mode, deg.get("tensor"), deg.get("pipeline"), deg.get("data"),
                      micro_batch, rec, z, DEFAULT_TIME_LIMIT_S if time_limit_s is None else time_limit_s,
                      _memory(memory_GiB), deg.get("expert"), deg.get("virtual"))


def _memory(memory_GiB: float | None) -> float | None:
    """--memory on a cluster: GiB a GPU may use (e.g. 76 to leave room for the CUDA context and NCCL)."""
    from ..frontends.fields import pos_number_problem

    problem = None if memory_GiB is None else pos_number_problem(memory_GiB)  # the accelerator arrays' words
    if problem is None and memory_GiB is not None and memory_GiB > 10**6:
        problem = f"must be at most 1,000,000 GiB, got {shown(memory_GiB)}"
    if problem:
        raise SpecError("--memory", problem)
    return memory_GiB

