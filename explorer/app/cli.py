"""The ``explore`` command. The only module that prints."""

from __future__ import annotations

import gc

# A run is one short process that builds large acyclic structures (a 10,000-layer spec, cost
# rows, evaluations): at CPython's default thresholds the cyclic collector rescans them again and
# again (half the time of loading a 10,000-layer YAML file). Collect far less often instead, from
# here on: the imports below allocate enough for ~15 collections at the default thresholds, and a
# 10,000-layer chain's run a few at 50,000 (~50 ms); at 200,000 it makes none.
GC_THRESHOLDS = (200_000, 20, 20)
gc.set_threshold(*GC_THRESHOLDS)

import json  # noqa: E402 - after the collector's thresholds
import os  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from typing import NamedTuple  # noqa: E402

import click

from .. import __version__
from ..solvers import MAX_SEED, MAX_WORKERS, REGISTRY

from ..core.kinds import (CHECK_SOLVERS, DEFAULT_ALPHA_GRID, MAX_ALPHA_GRID, MIN_ALPHA_GRID, SOLVE_TIME_LIMIT,
                          SPLIT_TIME_LIMIT, FreeAlphas, Objective, solve_limit)
from ..core.partition import Space
from ..core.errors import EvaluatorMismatch
from ..core.solution import Status, time_limit_problem
from ..frontends.zoo import DEFAULT_ARRAY, DEFAULT_MODEL
from .cli_ticker import Ticker, bar_width
from .cli_common import BAD_INPUT, EXIT_INTERRUPTED, InputError, _last_step, fail_on_bad_input, options, since_start
from .output import check_not_an_input, check_writable, inherited_fd, write_text

SPLITS = ("equal", "proportional", "search", "optimal", "levels")
SPLIT_HELP = ("equal: alpha 1/2 everywhere; proportional: each group's peak compute ratio; search: each free class's "
              "alpha in the declared space (the grid and its proportional ratio), from the better of those two (no "
              "proof); optimal: types and alphas jointly, proven optimum or bound and gap (arrays with one kind per "
              "half); levels: AccPar's hierarchical DP, a type and an alpha per layer level by level (no proof).")
# options of ``explore`` that ``--split`` does not take (CP-SAT's options of the even split's model)
NOT_WITH_SPLIT = ("--workers", "--seed", "--dump-model")
ALPHA_OPTIONS = ("--alpha-grid", "--free", "--grid-only")  # the uneven split's own options


def _keep_seq(ctx, _param, value):
    """--seq is read by build_problem from the context (it is not a parameter of every command)."""
    ctx.meta["seq"] = value
    return value


OBJECTIVE_HELP = ("traffic (the default): sum_h 2^h c_h; time: sum_h c_h*dtype/b_h (b_h: the array's time model). With "
                  "--split the default is time (the slowest accelerator); traffic: c_h is a level's busiest side.")
SPLIT_OBJECTIVE_HELP = ("time (the default): the slowest accelerator's step time; traffic: sum_h 2^h c_h, c_h a "
                        "level's busiest side.")
SOLVER_HELP = ("dp (the default): HyPar's hierarchical DP; cpsat: proven joint optimum; exact: joint DP over type vectors "
               "(chains); pruned: bound and prune over type vectors (large graphs; no caps); brute: enumeration (tiny nets). ")
SPLIT_SOLVER_HELP = ("With --split: optimal takes brute, exact, cpsat (their uneven forms: proofs; cpsat under caps or "
                     "memory runs exact first) or dp (the level DP: types and alphas level by level, no proof; without "
                     "--solver: the joint solver); proportional takes the same four (the types at the proportional "
                     "alphas); equal and levels take dp; search takes none.")


def objective_levels_options(split: bool = False):
    """--objective and --levels: every command that builds a problem (``problem_options``) and
    ``explore split`` (``split``: its own default, time)."""
    return options(
        click.option("--objective", type=click.Choice([o.value for o in Objective]), default="time" if split else "traffic",
                     help=SPLIT_OBJECTIVE_HELP if split else OBJECTIVE_HELP),
        click.option("--levels", type=int, default=None, help="Override the array's number of levels H (2^H accelerators; default: the array's)."),
    )


def solver_option(split: bool = False):
    """--solver: ``explore`` and ``explore split`` (with a split: the uneven form of the solver,
    ``app.split.check_split_solver``; ``split``: no default, the split's own method)."""
    if split:
        return click.option("--solver", type=click.Choice(list(REGISTRY)), default=None,
                            help="The split's solver (default: its own method: the alpha search, the joint solver "
                                 "for optimal, the level DP for levels, the even DP's types for equal and "
                                 "proportional). " + SPLIT_SOLVER_HELP.removeprefix("With --split: "))
    return click.option("--solver", type=click.Choice(list(REGISTRY)), default="dp", help=SOLVER_HELP + SPLIT_SOLVER_HELP)


# explore's and explore split's (the others of problem_options differ in their defaults or help there)
MODEL_OPTION = click.option("--model", "model", default=DEFAULT_MODEL, show_default=True, help="Zoo name, or a path to a network YAML, an ONNX model or a Hugging Face config.json.")
BATCH_OPTION = click.option("--batch", type=int, default=None, help="Override the network's batch size (samples a step; default: the network's).")
FORMAT_OPTION = click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True, help="Readable table or one JSON object.")

# Options shared by every command that builds a problem.
problem_options = options(
    MODEL_OPTION,
    click.option("--array", "array", default=DEFAULT_ARRAY, show_default=True, help="Shipped array name or path to an array YAML."),
    click.option("--space", type=click.Choice([s.value for s in Space]), default="hypar", show_default=True, help="Partition types: " + ", ".join(f"{s} = {{{', '.join(map(str, s.types))}}}" for s in Space) + "."),
    objective_levels_options(),
    BATCH_OPTION,
    click.option("--seq", type=int, default=None, expose_value=False, callback=_keep_seq,
                 help="Sequence length (tokens a sample): fills an ONNX model's symbolic sequence axis, overrides a YAML spec's sequence (the zoo's transformers: gpt3-*, llama3-*, mixtral-*, gpt2-small) and a Hugging Face config.json's context length (default: the model's own); at most a learned position table's rows (GPT, BERT); not on an image net (ViT: fixed by the image)."),
    FORMAT_OPTION,
    click.option("--output", type=str, default=None, metavar="FILE", help="Write the report to FILE instead of stdout (the default; '-': stdout; a symlink is written through, a device or FIFO written into, a regular file replaced atomically keeping its mode)."),
)


# Side constraints: caps, memory, pins, forbids (also from a constraints file).
constraint_options = options(
    click.option("--cap", "caps", multiple=True, metavar="LEVEL=AMOUNT", help="Cap the bytes one link carries per direction per step at LEVEL (e.g. 0=2GB, 1=512MiB, or a time budget 2=5ms; AMOUNT needs its unit). Repeatable; adds to or tightens the array's caps (default: the array's alone)."),
    click.option("--memory", "memory_GiB", type=float, default=None, metavar="GiB", help="Per-accelerator memory limit in GiB (default: the array's memory_GiB). On a GPU cluster: each GPU's usable memory, at most the GPU's own (a headroom setting, e.g. 76 to leave room for the CUDA context and NCCL; default: the GPU's own)."),
    click.option("--weight-copies", "weight_copies", type=int, default=None, help="Extra weight-sized buffers per layer for optimizer state (momentum 1, Adam 2; default 0)."),
    click.option("--pin", "pins", multiple=True, metavar="LAYER@LEVEL=TYPE", help="Fix a layer's type at a level (LEVEL may be *). Repeatable (default: none)."),
    click.option("--forbid", "forbids", multiple=True, metavar="LAYER=TYPE", help="Never give a layer this type. Repeatable (default: none)."),
    click.option("--constraints", "constraints_file", type=str, default=None, metavar="FILE", help="YAML file of caps, memory_GiB, weight_copies, pins, forbids (default: none)."),
)


# The LLM planner's options (taken when --array is a GPU cluster: explorer/app/llm_*.py).
llm_options = options(
    click.option("--gpus", type=int, default=None, help="GPU cluster: GPUs of the instance (whole nodes, or part of one node); default: the cluster's."),
    click.option("--layout", type=click.Choice(["megatron", "zero3"]), default=None, help="GPU cluster: score this layout instead of searching: megatron (column- then row-parallel blocks, 1F1B; needs --degrees) or zero3 (pure data parallelism, ZeRO-3). Default: the search."),
    click.option("--degrees", type=str, default=None, metavar="tensor=T,pipeline=P,data=D", help="GPU cluster: fix these degrees (the search: any of them, the rest searched; --layout megatron: tensor, pipeline and data, or two of them). Without it, tensor is at most the GPUs per node. virtual=V fixes the model chunks a pipeline stage (Megatron's interleaved 1F1B). A mixture of experts also takes expert=E (experts sharded E ways inside the data-parallel group)."),
    click.option("--micro-batch", "micro_batch", type=int, default=None, help="GPU cluster: samples per micro-batch (must divide batch / data); default: searched."),
    click.option("--recompute", type=click.Choice(["none", "selective", "full", "search"]), default=None, help="GPU cluster: activation recomputation (Korthikanti et al.); default: search."),
    click.option("--zero", type=click.Choice(["0", "1", "3"]), default=None, help="GPU cluster: ZeRO stage (0: none, 1: optimizer state sharded, 3: all model states, weights gathered per layer); default: searched."),
)


ALPHA_GRID = click.IntRange(min=MIN_ALPHA_GRID, max=MAX_ALPHA_GRID)  # every --alpha-grid
FREE = click.Choice([f.value for f in FreeAlphas])  # every --free
MODEL_SOLVERS = ("cpsat",)  # solvers with a model --dump-model can write
MODEL_SUFFIXES = ("pb", "txt", "pbtxt")  # CP-SAT writes text when the name ends in txt, else binary


def _check_time_limit(ctx, param, value):
    """Every command's --time-limit, split or not: one check, one message (``time_limit_problem``)."""
    problem = None if value is None else time_limit_problem(value)
    if problem:
        raise click.BadParameter(problem)
    return value


def check_not_empty(**paths: str | None) -> None:
    for name, value in paths.items():
        if value is not None and not value.strip():
            raise InputError(f"--{name.replace('_', '-')}: must not be empty")


def same_file(a: str, b: str) -> bool:
    """Whether two destinations name one file (the same path once resolved, or one existing file)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def check_files(model: str, array: str, output: str | None, constraints: str | None = None,
                dump_model: str | None = None, solvers: tuple[str, ...] = ()) -> None:
    """Bad file options are bad input, said before any loading or solving: none is empty, and no
    destination replaces an input (--model, --array, --constraints) or the other destination."""
    check_not_empty(model=model, array=array, constraints=constraints, output=output, dump_model=dump_model)
    inputs = {"--model": model, "--array": array, "--constraints": constraints}
    for option, path in (("--output", output), ("--dump-model", dump_model)):
        check_not_an_input(path, inputs, option)
    if output not in (None, "-") and dump_model is not None and same_file(output, dump_model):
        raise InputError(f"--dump-model: {dump_model} is also --output: the report would replace the model")
    if dump_model is not None:
        if not any(s in MODEL_SOLVERS for s in solvers):
            raise InputError(f"--dump-model: {', '.join(solvers)} has no model to write; it is taken by --solver "
                             f"{' or '.join(MODEL_SOLVERS)}")
        check_writable(dump_model, "--dump-model")
        name = dump_model.rsplit("/", 1)[-1]
        if "." not in name or name.rsplit(".", 1)[-1].lower() not in MODEL_SUFFIXES:
            raise InputError(f"--dump-model: {dump_model} must end in .pb (binary protobuf), .txt or .pbtxt (text)")
    if output is not None:
        check_writable(output, "--output")


# Options for solvers that search (CP-SAT) or may refuse (exact, brute).
solver_options = options(
    click.option("--time-limit", "time_limit", type=float, default=None, metavar="SECONDS", callback=_check_time_limit, help=f"Wall-clock limit in seconds, a finite number >= 0.1 (every command, split or not); a run without --split counts it from the process's start (its start-up and imports count): CP-SAT's, or the whole exact solve under caps or memory, or pruned's (default: {SOLVE_TIME_LIMIT:g} s each; pruned may overrun by one round; then the bound and the gap); brute force stops there with its best plan so far (feasible, no proof); with --solver cpsat under caps or memory, the exact method first takes up to half of it. explore check: the whole check (the DP, its level checks, the joint solvers in turn, each with what is left; default: {SOLVE_TIME_LIMIT:g} s when it runs cpsat or pruned, or exact under caps or memory, else none; a row it cuts short is not proven: its bound and gap). With --split and in check --uneven (default: 10 s): the whole run from the process's start too, each step (the search, the split's solver; check: the solvers in turn) with what the steps before it left; a step with no limit of its own is not started once it is spent. GPU cluster: the LLM search's, from the process's start (default: 300 s; then the bound and the gap); check's search and exhaustive scoring together (the search at most half; what was scored is compared)."),
    click.option("--workers", type=click.IntRange(min=1, max=MAX_WORKERS), default=None, help=f"CP-SAT worker threads, 1..{MAX_WORKERS} (default: one per core)."),
    click.option("--seed", type=click.IntRange(min=0, max=MAX_SEED), default=0, show_default=True, help=f"CP-SAT random seed, 0..{MAX_SEED} (deterministic with --workers 1)."),
    click.option("--dump-model", "dump_model", type=str, default=None, metavar="FILE", help="Write the CP-SAT model to FILE (.pb binary, .txt or .pbtxt text; nothing else); --solver cpsat only."),
)


def emit(text: str, output: str | None) -> None:
    """Print, or write FILE safely (``explorer.app.output``: never half-written, links written through)."""
    if output is None or output == "-":
        click.echo(text, nl=False)
        return
    write_text(output, text)
    if inherited_fd(output) is None:
        click.echo(f"wrote {output}", err=True)


def emit_report(report, fmt: str, output: str | None, render, to_json=None) -> None:
    """``report`` as --format asks: one JSON object (``to_json(report)``, else its ``to_json()``) or
    ``render(report)``'s table; then ``emit``."""
    if fmt == "json":
        emit(json.dumps(to_json(report) if to_json else report.to_json(), indent=2) + "\n", output)
    else:
        emit(render(report), output)


class HeldProgress:
    """Progress on stderr (``[explore] ...``); a step (not a solver's own news, which starts with its
    name) is remembered so that a Ctrl-C can say what it interrupted. The first line is held back
    until the run is under way (``HOLD_S``, the next line, or the run's end) and dropped when the
    run ends on bad input or a refusal: such a run prints its one error line alone. Lines go
    through ``echo`` (a ``Ticker``'s, above its time bar), else straight to stderr."""

    HOLD_S = 1.0

    def __init__(self, echo=None):
        self._echo = echo or (lambda text: click.echo(text, err=True))
        self._held: str | None = None
        self._timer = None
        self._started = False
        self._lock = threading.Lock()

    def __enter__(self):
        return self

    def __call__(self, msg: str) -> None:
        if not msg.startswith(tuple(f"{name}: " for name in REGISTRY)):
            _last_step[:] = [msg]
        with self._lock:
            if not self._started:
                self._started, self._held = True, msg
                self._timer = threading.Timer(self.HOLD_S, self.release)
                self._timer.daemon = True
                self._timer.start()
                return
        self.release()
        self._echo(f"[explore] {msg}")

    def release(self) -> None:
        """Print the held line now (once)."""
        with self._lock:
            held, self._held = self._held, None
            if self._timer is not None:
                self._timer.cancel()
            if held is not None:
                self._echo(f"[explore] {held}")

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None and issubclass(exc_type, BAD_INPUT):
            with self._lock:
                self._held = None
                if self._timer is not None:
                    self._timer.cancel()
        self.release()


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@problem_options
@solver_option()
@constraint_options
@solver_options
@click.option("--split", "split", type=click.Choice(SPLITS), default=None, help="Split fractions between the two subgroups of every group (arrays of kinds): " + SPLIT_HELP + " Takes --objective (time by default), --cap (on a level's busiest side), --memory (per kind), --pin, --forbid and --constraints: --solver brute, exact and cpsat keep to them, the other splits (and --solver dp) keep pins and forbids and report a cap or memory limit they break. Without --split every split is 1/2 (the even split); 'explore split' is the same with its own defaults.")
@click.option("--alpha-grid", "grid", type=ALPHA_GRID, default=DEFAULT_ALPHA_GRID, show_default=True, help="With --split: alphas searched are multiples of 1/N, and each free class's proportional ratio.")
@click.option("--free", "free", type=FREE, default=FreeAlphas.UNLIKE.value, show_default=True, help="With --split: which classes of groups choose alpha: unlike (two different subgroups; the others split 1/2) or all.")
@click.option("--grid-only", is_flag=True, help="With --split: free classes choose from the multiples of 1/N alone (without their proportional ratio).")
@llm_options
@click.version_option(version=__version__)  # (package_name: importlib.metadata, ~10 ms of every --version)
@click.pass_context
@fail_on_bad_input
def cli(ctx, model, array, space, objective, batch, levels, fmt, output, solver, caps, memory_GiB, weight_copies, pins,
        forbids, constraints_file, time_limit, workers, seed, dump_model, split, grid, free, grid_only, gpus, layout,
        degrees, micro_batch, recompute, zero):
    """Find how every layer of a network should be split at every level of an accelerator array.

    With no command: solve MODEL on ARRAY (default: VGG-A on HyPar's 16-accelerator H-tree,
    HyPar space, hierarchical DP) and compare with data parallelism (all-I), model
    parallelism (all-II) and the "one weird trick" (conv I, fc II).

    With --array a GPU cluster (dgx-a100, dgx-h100, or a YAML with kind: gpu-cluster) and a
    transformer --model: the LLM training planner (t, p, d, micro-batch, recompute, ZeRO; the
    --gpus ... --zero options below; docs/llm-training.md, "Planning").

    Exit status: 0 with a plan that satisfies every constraint; 1 when there is none (no plan
    exists or none was found in time, or a heuristic's plan breaks a cap or the memory limit:
    its status stays, it is not "infeasible", and the JSON says ok false); 2 on bad input;
    130 on Ctrl-C (CP-SAT's report then says "interrupted" and shows the plan so far).
    """
    if ctx.invoked_subcommand is not None:
        return
    given = _given_options(ctx)
    if llm_dispatch(ctx, given, model, array, batch, fmt, output, time_limit, gpus, layout, degrees, micro_batch,
                    recompute, zero):
        return
    check_split_options(given, split)
    if split is not None:
        run_split(model, array, space, split, grid, free, grid_only, SPLIT_TIME_LIMIT if time_limit is None else time_limit,
                  memory_GiB, weight_copies, batch, ctx.meta.get("seq"), fmt, output,
                  solver if "--solver" in given else None,
                  SplitConstraints(objective if "--objective" in given else "time", levels, caps, pins, forbids,
                                   constraints_file))
        return
    from .. import api
    from .render import render_table

    check_files(model, array, output, constraints_file, dump_model, (solver,))
    seq = click.get_current_context().meta.get("seq")
    # coupled: every array has memory_GiB, so every problem explore builds has a memory limit, which
    # couples the layers (solvers.exact.coupled): exact keeps the default limit, with or without --cap
    limit = solve_limit(solver, time_limit, coupled=True)
    with Ticker(limit, _limit_origin(), solver) as tick, HeldProgress(tick.echo) as say:
        result = api.solve.with_option_names(model, array, space=space, objective=objective, solver=solver, batch=batch, levels=levels,
                           seq=seq, caps=caps, memory_GiB=memory_GiB, weight_copies=weight_copies, pins=pins,
                           forbids=forbids, constraints=constraints_file, time_limit=time_limit, workers=workers,
                           seed=seed, dump_model=dump_model, progress=say if solver != "dp" else None,
                           started=_limit_origin())  # the limit counts the process's start-up
    say_approximations(result.inputs.approximations)
    emit_report(result, fmt, output, render_table)
    if result.status is Status.INTERRUPTED:
        click.echo(f"explore: interrupted after {result.wall_s:.1f} s: {result.reason or 'the search was stopped'}",
                   err=True)
        sys.exit(EXIT_INTERRUPTED)
    if not result.ok:
        click.echo(f"explore: {why_not_ok(result)}", err=True)
    _finish_run(0 if result.ok else 1)


def check_split_options(given: set[str], split: str | None) -> None:
    """--alpha-grid, --free and --grid-only only with --split (not with --split equal); the even
    split's CP-SAT options not with it."""
    if split is None:
        refuse_given(given, ALPHA_OPTIONS, "only with --split (uneven splits); without it every split is 1/2")
        return
    refuse_given(given, NOT_WITH_SPLIT, "not with --split (an option of the even split's CP-SAT model; "
                                        "--split optimal --solver cpsat builds its own)")
    if split == "equal":
        refuse_given(given, ALPHA_OPTIONS, "not with --split equal (every split is 1/2)")


# the options only the LLM planner takes (refused with an accelerator array; kept here, not in
# llm_options, so that a run on an accelerator array does not import the planner's modules)
LLM_OPTIONS = ("--gpus", "--layout", "--degrees", "--micro-batch", "--recompute", "--zero")
# the options of the HyPar/AccPar path a GPU cluster does not take
NOT_ON_CLUSTER = ("--space", "--objective", "--levels", "--solver", "--cap", "--weight-copies", "--pin",
                  "--forbid", "--constraints", "--workers", "--seed", "--dump-model", "--split", "--alpha-grid",
                  "--free", "--grid-only")


def llm_dispatch(ctx, given: set[str], model, array, batch, fmt, output, time_limit, gpus, layout, degrees, micro_batch,
                 recompute, zero, check: bool = False, array_only: tuple[str, ...] = ()) -> bool:
    """Run the LLM planner (``check``: the planner against exhaustive scoring) when --array is a GPU
    cluster (True); refuse its options otherwise. On a cluster, the accelerator-array options
    (``NOT_ON_CLUSTER`` and the command's own ``array_only``) are refused."""
    from ..frontends import is_cluster

    if not is_cluster(array):
        if given & set(LLM_OPTIONS):
            from ..frontends import load_array

            check_not_empty(array=array)
            load_array(array)  # an unknown array or a bad file: that first (not the LLM option)
            refuse_given(given, LLM_OPTIONS, "needs a GPU cluster --array (dgx-a100, dgx-h100 or a YAML with kind: "
                                             f"gpu-cluster); {array} is an accelerator array")
        return False
    refuse_given(given, NOT_ON_CLUSTER + array_only, f"not with a GPU cluster --array ({array}): the LLM planner takes "
                 "--model, --batch, --seq, --gpus, --layout, --degrees, --micro-batch, --recompute, --zero, --memory, "
                 "--time-limit, --format, --output")
    from .llm_options import parse_request
    from .llm_report import llm_json, no_plan_reason, render_llm
    from .llm_run import run_llm

    check_files(model, array, output)
    req = parse_request(model, array, gpus, batch, ctx.meta.get("seq"), layout, degrees, micro_batch, recompute, zero,
                        time_limit, ctx.params.get("memory_GiB"))
    if check:
        from .llm_check import llm_check_json, render_llm_check
        from .llm_run import run_llm_check

        with StepProgress() as say:
            result = run_llm_check(req, progress=say, started=_limit_origin())  # (the process's start)
        say_approximations(result.approximations)
        emit_report(result, fmt, output, render_llm_check, llm_check_json)
        _finish_run(0 if result.agree else 1)
    with StepProgress() as say:
        report = run_llm(req, progress=say, started=_limit_origin())  # (the process's start)
    say_approximations(report.approximations)
    emit_report(report, fmt, output, render_llm, llm_json)
    if not report.ok:
        click.echo(f"explore: {report.result.status.value}: {no_plan_reason(report)}", err=True)
    _finish_run(0 if report.ok else 1)


def say_approximations(notes) -> None:
    """``explore: approximation: ...`` on stderr, one line a note (accelerator arrays and GPU clusters alike)."""
    for note in notes:
        click.echo(f"explore: approximation: {note}", err=True)


def why_not_ok(result) -> str:
    """One line on stderr: why ``explore`` exits 1."""
    why = result.explanation
    from .results import conflict_line

    if why is not None and why.conflict:
        return conflict_line(why.conflict, why.suggestion)
    if result.figures is not None:
        text = f"the {result.solver} plan breaks " + "; ".join(v.constraint for v in result.figures.violations)
        return text + " (--solver exact or cpsat enforces caps and memory)"
    if result.reason:
        return result.reason
    if result.status is Status.INFEASIBLE:  # proven, its conflict not named (the explanation ran out of time)
        return (f"{result.solver} proved that no plan satisfies the constraints; a larger "
                "--time-limit lets the explanation name the conflicting ones")
    return f"{result.solver} found no plan"


def check_uneven_cmd(model, array, space, batch, fmt, output, names, grid: int, free: str, time_limit,
                     grid_only: bool = False, side: dict | None = None) -> None:
    """The CLI's ``check --uneven`` (exit 0 when the solvers agree, 1 otherwise, 2 on bad input)."""
    from .. import api
    from .check_uneven import UNEVEN_CHECK_NAMES, UNEVEN_CHECK_SOLVERS, render_check_uneven

    if click.get_current_context().get_parameter_source("solver_list").name == "DEFAULT":
        names = UNEVEN_CHECK_SOLVERS
    unknown = [n for n in names if n not in UNEVEN_CHECK_NAMES]
    if unknown or not names:
        which = f"unknown solver {', '.join(unknown)}" if unknown else "no solvers given"
        raise InputError(f"--solvers: {which} with --uneven / --split optimal (uneven splits; choose from "
                         f"{', '.join(UNEVEN_CHECK_NAMES)})")
    limit = SPLIT_TIME_LIMIT if time_limit is None else time_limit  # (the check's, as request.check_split takes it)
    with Ticker(limit, _limit_origin(), "check"):  # its time bar on a terminal
        report = api.check.with_option_names(model, array, space=space, batch=batch, seq=click.get_current_context().meta.get("seq"),
                           solvers=names, time_limit=time_limit, split="optimal", alpha_grid=grid, free=free,
                           grid_only=grid_only, started=_limit_origin(), **(side or {}))  # (the process's start)
    emit_report(report, fmt, output, render_check_uneven)
    _finish_run(0 if report.agree else 1)


# options of ``explore check`` that ``check --uneven`` does not take (it would ignore them)
NOT_WITH_UNEVEN = ("--workers", "--seed", "--dump-model")


def refuse_given(given: set[str], options, why: str) -> None:
    """Bad input naming the first of ``options`` written on the command line: '<option>: <why>'."""
    first = next((o for o in options if o in given), None)
    if first is not None:
        raise InputError(f"{first}: {why}")


def _given_options(ctx: click.Context) -> set[str]:
    """The options written on the command line (not left at their defaults), by their flag."""
    return {p.opts[0] for p in ctx.command.params
            if p.name and ctx.get_parameter_source(p.name) is click.core.ParameterSource.COMMANDLINE}


@cli.command("check")
@problem_options
@constraint_options
@solver_options
@click.option("--solvers", "solver_list", default="exact,cpsat,brute", help="Comma-separated joint solvers to run and compare (default: exact,cpsat,brute, with pruned after exact where exact refuses a graph without --cap; with --uneven: all eight of --uneven; pruned on request).")
@click.option("--uneven", is_flag=True, help="Uneven splits on an array of kinds: compare brute, exact, cpsat, joint, accpar, dp (the level DP, as --split optimal --solver dp), search and the proportional split (explorer/app/check_uneven.py) on the step time, or under --objective traffic on the traffic (ties to the least step time; joint and accpar refuse it), under --cap, --pin, --forbid, --constraints and --memory where given.")
@click.option("--split", "split", default=None, metavar="optimal|equal", help="--split optimal: the same as --uneven (the solvers that prove the optimal split, compared); --split equal: the even split (alpha 1/2), the plain check on the step time unless --objective says otherwise; the other splits are heuristics, not checked.")
@click.option("--alpha-grid", "grid", type=ALPHA_GRID, default=DEFAULT_ALPHA_GRID, show_default=True, help="With --uneven: alphas are multiples of 1/N.")
@click.option("--free", "free", type=FREE, default=FreeAlphas.UNLIKE.value, show_default=True, help="With --uneven: which classes of groups choose alpha.")
@click.option("--grid-only", is_flag=True, help="With --uneven: free classes choose from the grid alone (without their proportional ratio).")
@llm_options
@fail_on_bad_input
def check_cmd(model, array, space, objective, batch, levels, fmt, output, caps, memory_GiB, weight_copies, pins, forbids,
              constraints_file, time_limit, workers, seed, dump_model, solver_list, uneven, split, grid, free, grid_only,
              gpus, layout, degrees, micro_batch, recompute, zero):
    """Cross-check: is the DP level-optimal, what is the proven joint optimum, and the DP's gap.

    Runs the DP, then the exact joint solver (its plan hints CP-SAT), CP-SAT and brute force (each where it applies).
    Exit status 0 when everything agrees with the model (refusals are reported, not counted
    as disagreement), 1 when two exact solvers disagree or the DP is not level-optimal, 2 on
    bad input, 130 on Ctrl-C.
    """
    from .. import api
    from .check import solvers_limit
    from .render import render_check

    named = [x.strip() for x in solver_list.split(",") if x.strip()]
    names = tuple(dict.fromkeys(named))  # each solver once, and a note says so
    if len(names) < len(named):
        twice = ", ".join(n for n in names if named.count(n) > 1)
        click.echo(f"explore: note: --solvers: {twice} named more than once; each solver runs once", err=True)
    given = _given_options(click.get_current_context())
    if llm_dispatch(click.get_current_context(), given, model, array, batch, fmt, output, time_limit, gpus, layout,
                    degrees, micro_batch, recompute, zero, check=True, array_only=("--uneven", "--solvers")):
        return
    if split == "equal":  # the even split (alpha 1/2): the plain check, on explore --split's objective (time unless given)
        split, objective = None, objective if "--objective" in given else "time"
    if split is not None and split != "optimal":
        raise InputError(f"--split: check takes --split optimal (the proving solvers, compared) or equal (the even "
                         f"split's check), not {split!r}")
    if uneven or split:
        flag = "--uneven" if uneven else "--split optimal"
        refuse_given(given, NOT_WITH_UNEVEN, f"not with {flag} (it compares the uneven-split solvers' plans, "
                                             "not CP-SAT's model of the even split)")
        check_files(model, array, output, constraints_file)
        check_uneven_cmd(model, array, space, batch, fmt, output, names, grid, free, time_limit, grid_only,
                         dict(levels=levels, caps=caps, memory_GiB=memory_GiB, weight_copies=weight_copies, pins=pins,
                              forbids=forbids, constraints=constraints_file,
                              objective=objective if "--objective" in given else "time"))
        return
    refuse_given(given, ALPHA_OPTIONS, "only with --uneven or --split optimal (uneven splits); plain check splits "
                                       "every level equally")
    unknown = [n for n in names if n not in CHECK_SOLVERS]
    if unknown or not names:
        which = f"unknown solver {', '.join(unknown)}" if unknown else "no solvers given"
        raise InputError(f"--solvers: {which} (choose from {', '.join(CHECK_SOLVERS)})")
    check_files(model, array, output, constraints_file, dump_model, names)
    # the check's limit, as explore's bar: every array has memory_GiB, which couples the layers
    with Ticker(solvers_limit(names, time_limit, True), _limit_origin(), "check") as tick, HeldProgress(tick.echo) as say:
        report = api.check.with_option_names(model, array, space=space, objective=objective, solvers=names, batch=batch, levels=levels,
                           seq=click.get_current_context().meta.get("seq"), caps=caps, memory_GiB=memory_GiB,
                           weight_copies=weight_copies, pins=pins, forbids=forbids,
                           constraints=constraints_file, time_limit=time_limit, workers=workers, seed=seed,
                           dump_model=dump_model, progress=say, started=_limit_origin())  # (the process's start)
    say_approximations(report.inputs.approximations)
    emit_report(report, fmt, output, render_check)
    _finish_run(0 if report.agree else 1)


@cli.command("list")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@fail_on_bad_input
def list_cmd(fmt):
    """List the network zoo, the shipped arrays and the GPU clusters."""
    from .listing import list_text

    click.echo(list_text(fmt), nl=False)

@cli.command("split")
@MODEL_OPTION
@click.option("--array", "array", default="tpu-mix-16", show_default=True, help="Shipped array name or path to an array YAML (accelerators of kinds).")
@click.option("--space", type=click.Choice([s.value for s in Space]), default="accpar", show_default=True, help="Partition types of the plan.")
@click.option("--split", "split", type=click.Choice(SPLITS), default="search", show_default=True, help=SPLIT_HELP)
@click.option("--alpha-grid", "grid", type=ALPHA_GRID, default=DEFAULT_ALPHA_GRID, show_default=True, help="Alphas searched: multiples of 1/N, and each free class's proportional ratio.")
@click.option("--grid-only", is_flag=True, help="Free classes choose from the multiples of 1/N alone (without their proportional ratio).")
@click.option("--free", "free", type=FREE, default=FreeAlphas.UNLIKE.value, show_default=True, help="Which classes of groups choose alpha: unlike (two different subgroups; the others split 1/2) or all.")
@click.option("--time-limit", "split_limit", type=float, default=SPLIT_TIME_LIMIT, metavar="SECONDS", callback=_check_time_limit, help=f"Wall-clock limit in seconds (default: {SPLIT_TIME_LIMIT:g} s), a finite number >= 0.1, of the whole run from the process's start: each step (the search, the split's solver) gets what the steps before it left; --split optimal then reports its best plan, a proven bound and the gap.")
@objective_levels_options(split=True)
@solver_option(split=True)
@constraint_options
@BATCH_OPTION
@click.option("--seq", type=int, default=None, help="Sequence length (tokens a sample): fills an ONNX model's symbolic sequence axis, overrides a YAML spec's sequence (the zoo's transformers too) and a Hugging Face config.json's context length (default: the model's own).")
@FORMAT_OPTION
@click.option("--output", type=str, default=None, metavar="FILE", help="Write the report to FILE instead of stdout (the default).")
@click.pass_context
@fail_on_bad_input
def split_cmd(ctx, model, array, space, split, grid, free, grid_only, split_limit, objective, levels, solver, caps, memory_GiB,
              weight_copies, pins, forbids, constraints_file, batch, seq, fmt, output):
    """Uneven splits on an array of accelerator kinds (AccPar): the step time of the slowest
    accelerator, alpha per level, the two top groups' times, each kind's memory, and speedups
    over data parallelism, the trick and HyPar's plan, each with an equal split. The same run as
    'explore --split' with this command's defaults (tpu-mix-16, accpar, search), and the same
    rule options (--objective: time unless given; --cap, --memory, --pin, --forbid, --constraints,
    --levels; --solver). Exit status: 0; 1 when the plan breaks a kind's memory or a rule (or no
    plan keeps to them); 2 on bad input; 130 on Ctrl-C."""
    given = _given_options(ctx)
    run_split(model, array, space, split, grid, free, grid_only, split_limit, memory_GiB, weight_copies, batch, seq, fmt,
              output, solver if "--solver" in given else None,
              SplitConstraints(objective if "--objective" in given else "time", levels, caps, pins, forbids,
                               constraints_file))


class SplitConstraints(NamedTuple):
    """The rule options of a split run besides the split's own (``explore --split`` and ``explore split``)."""

    objective: str = "time"
    levels: int | None = None
    caps: tuple[str, ...] = ()
    pins: tuple[str, ...] = ()
    forbids: tuple[str, ...] = ()
    constraints_file: str | None = None


def run_split(model, array, space, split, grid, free, grid_only, time_limit, memory_GiB, weight_copies, batch, seq, fmt,
              output, solver: str | None = None, more: SplitConstraints = SplitConstraints()) -> None:
    """``explore --split`` and ``explore split``: one split run, its report, its exit status."""
    from .. import api
    from ..core.units import memory_text
    from .request import split_problem
    from .split import Split, check_split_solver, keepers, render_split

    check_files(model, array, output, more.constraints_file)
    check_split_solver(Split(split), solver)  # before any loading
    problem = api.build_problem.with_option_names(model, array, space=space, objective=more.objective, batch=batch, seq=seq,
                                levels=more.levels, caps=more.caps, memory_GiB=memory_GiB, weight_copies=weight_copies,
                                pins=more.pins, forbids=more.forbids, constraints=more.constraints_file)
    with Ticker(time_limit, _limit_origin(), "split") as tick, StepProgress(tick) as say:  # the even runs' time bar
        report = split_problem(problem, split, alpha_grid=grid, free=free, grid_only=grid_only, time_limit=time_limit,
                               solver=solver, progress=say, started=_limit_origin())  # (the process's start)
    emit_report(report, fmt, output, render_split)
    if report.status is Status.INTERRUPTED:  # Ctrl-C during CP-SAT: its plan so far was reported
        click.echo(f"explore: interrupted after {report.wall_s:.1f} s: {report.note}", err=True)
        sys.exit(EXIT_INTERRUPTED)
    if report.plan is None:
        why = report.note if report.status is Status.UNKNOWN else f"no plan satisfies the constraints: {report.note}"
        suggestion = report.explanation.suggestion if report.explanation is not None else None
        why += f" ({suggestion})" if suggestion else ""
        click.echo(f"explore: {why}", err=True)
        _finish_run(1)
    broken = []  # every limit the plan breaks, each named: the memory, then caps, pins and forbids
    if not report.memory_ok:
        broken.append("does not fit in memory: " + "; ".join(
            f"{m.kind} needs {memory_text(m.memory_bytes)} per accelerator, has {memory_text(m.limit_bytes)}"
            for m in report.memory if not m.ok))
    if report.violations:
        broken.append("breaks " + "; ".join(v.constraint for v in report.violations)
                      + f" ({keepers(report.split)} keeps to caps and pins)")
    if broken:
        click.echo(f"explore: the {_whose(report.split, solver)} plan " + ", and ".join(broken), err=True)
    _finish_run(1 if broken else 0)


def _whose(split, solver: str | None) -> str:
    """Whose plan a split run's last line names: the split's ("search"), or the solver's ("dp (--split optimal)")."""
    return str(split) if solver is None else f"{solver} (--split {split})"


class StepProgress:
    """Progress of a long command on stderr: each step is remembered (a Ctrl-C names it) and,
    when stderr is a terminal (the sweeps' convention), a tqdm bar appears once the run has
    taken 2 s, with the step and, while the search runs, its evaluations; nothing is drawn
    into a file or a pipe. With ``tick`` (a split run's): no bar of its own, the step and its
    evaluations name ``tick``'s time bar (``Ticker.relabel``), redrawn every half second."""

    DELAY_S = 2.0
    MININTERVAL_S = 0.5  # between redraws

    def __init__(self, tick: Ticker | None = None):
        self.bar = None
        self.tick = tick

    def __enter__(self):
        return self

    def __call__(self, step: str, done: int | None = None, total: int | None = None) -> None:
        _last_step[:] = [step]
        if self.tick is not None:
            evals = "" if done is None else f" ({done}{'' if total is None else f' of {total}'} evals)"
            self.tick.relabel(step + evals)
            return
        if self.bar is None:
            if not sys.stderr.isatty():
                return
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=step, file=sys.stderr, delay=self.DELAY_S, mininterval=self.MININTERVAL_S,
                            leave=False, unit="eval", **bar_width(sys.stderr))
        self.bar.set_description_str(step, refresh=False)
        if total is not None and self.bar.total != total:
            self.bar.total = total
        self.bar.update((done - self.bar.n) if done is not None else 0)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            bar, self.bar = self.bar, None
            try:
                bar.close()
            except Exception:  # noqa: BLE001 - a Ctrl-C while tqdm draws: the report line matters, not the bar
                pass


from .cli_sweep import attach  # noqa: E402 - the sweep and plot commands (explore sweep, explore plot)

attach(cli)
from .reproduce.cli import attach as attach_reproduce  # noqa: E402 - explore reproduce (HyPar's figures)

attach_reproduce(cli)


# "own": ``main`` runs the process's own command line (not a caller's ``argv``); "done": a single
# run's report is written (``_finish_run``)
_PROCESS = {"own": False, "done": False}


def _limit_origin() -> float | None:
    """Where a single run's ``--time-limit`` counts from: the process's start when ``main`` runs
    the process's own command line (a caller passing ``argv``, e.g. a test, counts from the solve)."""
    return time.perf_counter() - since_start() if _PROCESS["own"] else None


def _finish_run(code: int) -> None:
    """A single run's exit, its report written: in the process's own ``main`` the interpreter's
    teardown is skipped (``os._exit`` after the streams are flushed; freeing OR-Tools' model and
    modules took 0.2-0.5 s after a CP-SAT run, past ``--time-limit``, which counts the process)."""
    _PROCESS["done"] = True
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """Entry point: click usage errors become one line on stderr with exit status 2."""
    _PROCESS.update(own=argv is None, done=False)
    if argv is not None:
        return _main(argv)
    try:
        _main(None)
    except SystemExit as done:
        if not _PROCESS["done"] or not isinstance(done.code, (int, type(None))):
            raise
        code = done.code or 0
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe: as the interpreter's own exit reports it
                code = code or 1
        os._exit(code)


def _main(argv: list[str] | None) -> None:
    gc.set_threshold(*GC_THRESHOLDS)
    if argv is None:  # the process's own command line: what the imports built lives until exit
        gc.freeze()  # (the collector no longer rescans it; a caller passing argv keeps its own heap)
    try:
        rv = cli.main(args=argv, prog_name="explore", standalone_mode=False)
    except click.exceptions.UsageError as err:
        hint = f" (see '{err.ctx.command_path} --help')" if err.ctx else ""
        click.echo(f"explore: error: {err.format_message()}{hint}", err=True)
        sys.exit(2)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except click.exceptions.Abort as err:
        if isinstance(err.__cause__, KeyboardInterrupt):  # Ctrl-C while click parsed the options
            click.echo("explore: interrupted (Ctrl-C); no report written", err=True)
            sys.exit(EXIT_INTERRUPTED)
        click.echo("explore: aborted", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        click.echo("explore: interrupted (Ctrl-C); no report written", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        sys.exit(1)
    except EvaluatorMismatch as err:  # a solver's claim the evaluator contradicts: a bug, one line, no traceback
        click.echo(f"explore: internal error, the evaluator contradicts the solver: {err}; please report it", err=True)
        sys.exit(1)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
