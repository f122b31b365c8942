"""Published LLM training measurements (``spaces/llm-validation/*.yaml``) as step-model problems.

Each file (``kind: llm-validation``) names a GPU cluster, a measure (``iteration_time_s``,
``tflops_per_gpu`` in Megatron's count with the recompute forward, or ``model_tflops_per_gpu``)
and rows: a transformer shape, the layout that ran (tensor, pipeline, data; micro-batch,
recompute and virtual stages when the source gives them), the measured value, whether it was
verified against a source and its role (``calibration``: the rows ``core.llm_calibration``
fits; ``validation``: kept aside; ``unsupported``: listed, not predicted). Defaults for every
row may sit at the top level (``sequence``, ``vocab``, ``recompute``, ``zero``).
``bench/validate_llm.py`` and ``bench/calibrate_llm.py`` read them through this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from ..core.errors import SpecError
from ..core.llm_memory import Parallelism, Recompute, ZeroStage
from ..core.llm_problem import LlmEvaluation, LlmLayout, LlmProblem
from ..core.llm_step import evaluate_llm
from .fields import is_version
from .transformer import Family, TransformerShape
from .transformer_problem import llm_problem
from .yamlio import load_yaml_file

MEASURES = ("iteration_time_s", "tflops_per_gpu", "model_tflops_per_gpu")
ROLES = ("calibration", "validation", "unsupported")
_TOP = {"version", "kind", "name", "cluster", "sequence", "vocab", "measure", "recompute", "zero", "source", "rows"}
_ROW = {"model", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "family", "tensor", "pipeline", "data",
        "context", "sequence", "batch", "micro_batch", "virtual_stages", "recompute", "zero", "measured", "verified",
        "role", "note"}
_DEFAULTS = ("sequence", "vocab", "recompute", "zero")
_REQUIRED = {"model", "layers", "hidden", "heads", "vocab", "tensor", "pipeline", "data", "sequence", "batch", "measured"}


@dataclass(frozen=True, slots=True)
class ValidationRow:
    """One published run: its shape, cluster, layout (None: not given, searched), measured value."""

    table: str
    model: str
    shape: TransformerShape
    cluster: str
    sequence: int
    batch: int
    parallelism: Parallelism
    micro_batch: int | None
    recompute: Recompute | None
    zero: ZeroStage
    virtual_stages: int
    context: int
    measure: str
    measured: Fraction
    verified: bool
    role: str
    note: str = ""

    @property
    def gpus(self) -> int:
        return self.parallelism.gpus * self.context

    def problem(self) -> LlmProblem:
        """The step model's problem: the shape on ``cluster`` with this run's GPUs."""
        from . import load_cluster

        return llm_problem(self.shape, load_cluster(self.cluster, gpus=self.gpus), self.batch, self.sequence,
                           name=self.model)

    def layout(self, micro_batch: int | None = None, recompute: Recompute | None = None) -> LlmLayout:
        """The run's layout (a micro-batch or recompute mode the row leaves open must be given)."""
        b, rc = micro_batch or self.micro_batch, recompute or self.recompute
        if b is None or rc is None:
            raise ValueError(f"{self.table} {self.model}: give the micro-batch and recompute mode the row leaves open")
        p, L = self.parallelism.pipeline, self.shape.layers
        cut = (L // p,) * p if L % p == 0 else None  # Megatron's uniform cut when the layers divide evenly
        return LlmLayout(self.parallelism, b, rc, self.zero, stage_layers=cut, virtual_stages=self.virtual_stages)


def validation_dir() -> Path:
    from .zoo import _data_dir

    return _data_dir("explorer.spaces") / "llm-validation"


def validation_files() -> dict[str, Path]:
    return {p.stem: p for p in sorted(validation_dir().glob("*.yaml"))}


def load_validation(name_or_path: str | Path) -> list[ValidationRow]:
    """The rows of a shipped table (by name) or a file; SpecError naming the field on a problem."""
    path = validation_files().get(str(name_or_path)) or Path(name_or_path)
    data = load_yaml_file(path)
    src = str(path)
    bad = sorted(set(data) - _TOP)
    if bad or data.get("kind") != "llm-validation" or not is_version(data.get("version")):
        raise SpecError(src, f"an llm-validation file (version: 1, kind: llm-validation; keys {', '.join(sorted(_TOP))})"
                             + (f": unknown key {bad[0]}" if bad else ""))
    if data.get("measure") not in MEASURES:
        raise SpecError(src, f"measure: one of {', '.join(MEASURES)}, got {data.get('measure')!r}")
    return [_row(data, r, f"rows[{i}]", src) for i, r in enumerate(data.get("rows") or [])]


def _row(top: dict, r: dict, path: str, src: str) -> ValidationRow:
    bad = sorted(set(r) - _ROW)
    if bad:
        raise SpecError(src, f"{path}.{bad[0]}: unknown key")
    r = {**{k: top[k] for k in _DEFAULTS if k in top}, **r}
    missing = sorted(_REQUIRED - set(r))
    if missing:
        raise SpecError(src, f"{path}.{missing[0]}: missing (give it in the row or at the top level)")
    try:
        h, a = int(r["hidden"]), int(r["heads"])
        family = Family(r.get("family", "gpt"))
        seq = int(r["sequence"])
        shape = TransformerShape(family, int(r["layers"]), h, a, int(r.get("ffn", 4 * h)), int(r["vocab"]),
                                 kv_heads=int(r.get("kv_heads", 0)), positions=seq if family is Family.GPT else 0,
                                 tied_head=family is Family.GPT)
        par = Parallelism(int(r["tensor"]), int(r["pipeline"]), int(r["data"]))
        role = r.get("role", "validation")
        if role not in ROLES:
            raise ValueError(f"role: one of {', '.join(ROLES)}, got {role!r}")
        return ValidationRow(
            table=top["name"], model=str(r["model"]), shape=shape, cluster=top["cluster"], sequence=seq,
            batch=int(r["batch"]), parallelism=par, micro_batch=r.get("micro_batch"),
            recompute=Recompute(r["recompute"]) if "recompute" in r else None,
            zero={0: ZeroStage.ZERO0, 1: ZeroStage.ZERO1, 3: ZeroStage.ZERO3}[int(r.get("zero", 0))],
            virtual_stages=int(r.get("virtual_stages", 1)), context=int(r.get("context", 1)), measure=top["measure"],
            measured=Fraction(str(r["measured"])), verified=bool(r.get("verified", True)), role=role,
            note=str(r.get("note", "")))
    except (KeyError, ValueError, TypeError) as e:
        raise SpecError(src, f"{path}: {e.__class__.__name__} {e}") from None


@dataclass(frozen=True, slots=True)
class Prediction:
    """The step model's figure for a row, in the row's measure, and the layout it scored."""

    row: ValidationRow
    value: Fraction
    evaluation: LlmEvaluation
    layout: LlmLayout

    @property
    def error(self) -> Fraction:
        """predicted / measured - 1"""
        return self.value / self.row.measured - 1


MICRO_BATCHES = (1, 2, 4, 8)


def predict(row: ValidationRow, efficiency: Fraction | None = None) -> Prediction:
    """The row's measure under the step model. A micro-batch or recompute mode the row leaves
    open is chosen as ``--layout megatron`` chooses it: the fastest among those that fit
    (micro-batches 1, 2, 4, 8 dividing batch / d; recompute none, selective, full); if none fits,
    the one with the least memory."""
    if row.role == "unsupported":
        raise ValueError(f"{row.table} {row.model}: {row.note or 'not supported by the step model'}")
    problem = row.problem()
    per_rank = row.batch // row.parallelism.data
    bs = (row.micro_batch,) if row.micro_batch else tuple(b for b in MICRO_BATCHES if per_rank % b == 0)
    rcs = (row.recompute,) if row.recompute else tuple(Recompute)
    scored = []
    for b in bs:
        for rc in rcs:
            lay = row.layout(b, rc)
            scored.append((evaluate_llm(problem, lay, efficiency), lay))
    fitting = [s for s in scored if s[0].fits]
    ev, lay = (min(fitting, key=lambda s: s[0].step_time_s) if fitting
               else min(scored, key=lambda s: s[0].memory_bytes_per_accelerator))
    if row.measure == "iteration_time_s":
        value = ev.step_time_s
    elif row.measure == "tflops_per_gpu":
        value = ev.tflops_per_gpu
    else:
        value = ev.model_tflops_per_gpu
    return Prediction(row, value, ev, lay)


def calibration_rows(name: str = "korthikanti-table5") -> list[tuple[LlmProblem, LlmLayout, Fraction]]:
    """(problem, layout, measured seconds) of the table's calibration rows, for
    ``core.llm_calibration.calibrate_efficiency``."""
    return [(r.problem(), r.layout(), r.measured) for r in load_validation(name) if r.role == "calibration"]
