"""The ``explore`` command. The only module that prints."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from functools import wraps
from pathlib import Path

import click

from ..solvers import REGISTRY

from ..core.errors import Refused, SpecError
from ..core.objective import Objective
from ..core.partition import Space
from ..frontends import zoo

DEFAULT_MODEL = "vgg-a"
DEFAULT_ARRAY = "hypar-16"


class InputError(click.ClickException):
    """Bad input: one line on stderr, exit status 2."""

    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"explore: error: {self.format_message()}", err=True)


def fail_on_bad_input(fn):
    @wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (SpecError, Refused) as err:
            raise InputError(str(err)) from None

    return wrapper


def problem_options(fn):
    """Options shared by every command that builds a problem."""
    decorators = [
        click.option("--model", "model", default=DEFAULT_MODEL, show_default=True, help="Zoo name, or a path to a network YAML or an ONNX model."),
        click.option("--array", "array", default=DEFAULT_ARRAY, show_default=True, help="Shipped array name or path to an array YAML."),
        click.option("--space", type=click.Choice([s.value for s in Space]), default="hypar", show_default=True, help="Partition types: " + ", ".join(f"{s} = {{{', '.join(map(str, s.types))}}}" for s in Space) + "."),
        click.option("--objective", type=click.Choice([o.value for o in Objective]), default="traffic", show_default=True, help="traffic: sum_h 2^h c_h; time: sum_h c_h*dtype/bw_h."),
        click.option("--batch", type=int, default=None, help="Override the network's batch size."),
        click.option("--levels", type=int, default=None, help="Override the array's number of levels H (2^H accelerators)."),
        click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True, help="Readable table or one JSON object."),
        click.option("--output", type=click.Path(dir_okay=False, writable=True), default=None, help="Write the report to FILE instead of stdout."),
    ]
    for d in reversed(decorators):
        fn = d(fn)
    return fn


def constraint_options(fn):
    """Side constraints: caps, memory, pins, forbids (also from a constraints file)."""
    decorators = [
        click.option("--cap", "caps", multiple=True, metavar="LEVEL=AMOUNT", help="Cap the bytes one link carries per direction per step at LEVEL (e.g. 0=2GB, 1=512MiB, or a time budget 2=5ms). Repeatable; adds to or tightens the array's caps."),
        click.option("--memory", "memory_GiB", type=float, default=None, metavar="GiB", help="Per-accelerator memory limit (overrides the array's memory_GiB)."),
        click.option("--weight-copies", "weight_copies", type=int, default=None, help="Extra weight-sized buffers per layer for optimizer state (momentum 1, Adam 2; default 0)."),
        click.option("--pin", "pins", multiple=True, metavar="LAYER@LEVEL=TYPE", help="Fix a layer's type at a level (LEVEL may be *). Repeatable."),
        click.option("--forbid", "forbids", multiple=True, metavar="LAYER=TYPE", help="Never give a layer this type. Repeatable."),
        click.option("--constraints", "constraints_file", type=str, default=None, metavar="FILE", help="YAML file of caps, memory_GiB, weight_copies, pins, forbids."),
    ]
    for d in reversed(decorators):
        fn = d(fn)
    return fn


def solver_options(fn):
    """Options for solvers that search (CP-SAT) or may refuse (exact, brute)."""
    decorators = [
        click.option("--time-limit", "time_limit", type=click.FloatRange(min=0, min_open=True), default=None, help="CP-SAT wall-clock limit in seconds (default: none)."),
        click.option("--workers", type=click.IntRange(min=1), default=None, help="CP-SAT worker threads (default: one per core)."),
        click.option("--seed", type=int, default=0, show_default=True, help="CP-SAT random seed (deterministic with --workers 1)."),
        click.option("--dump-model", "dump_model", type=click.Path(dir_okay=False), default=None, help="Write the CP-SAT model to FILE (.pb or .txt)."),
    ]
    for d in reversed(decorators):
        fn = d(fn)
    return fn


def emit(text: str, output: str | None) -> None:
    """Print, or write FILE atomically (a temp file renamed into place: never half-written)."""
    if output is None:
        click.echo(text, nl=False)
        return
    target = Path(output)
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".", prefix=f".{target.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)
    except OSError as err:
        raise InputError(f"--output: cannot write {output}: {err.strerror or err}") from None
    click.echo(f"wrote {output}", err=True)


def progress(msg: str) -> None:
    click.echo(f"[explore] {msg}", err=True)


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@problem_options
@click.option("--solver", type=click.Choice(list(REGISTRY)), default="dp", show_default=True, help="dp: HyPar's hierarchical DP; cpsat: proven joint optimum; exact: joint DP over type vectors (chains); brute: enumeration (tiny nets).")
@constraint_options
@solver_options
@click.version_option(package_name="hypar-explorer")
@click.pass_context
@fail_on_bad_input
def cli(ctx, model, array, space, objective, batch, levels, fmt, output, solver, caps, memory_GiB, weight_copies, pins,
        forbids, constraints_file, time_limit, workers, seed, dump_model):
    """Find how every layer of a network should be split at every level of an accelerator array.

    With no command: solve MODEL on ARRAY (default: VGG-A on HyPar's 16-accelerator H-tree,
    HyPar space, hierarchical DP) and compare with data parallelism (all-I), model
    parallelism (all-II) and the "one weird trick" (conv I, fc II).

    Exit status: 0 with a plan that satisfies every constraint; 1 when there is none (no plan
    exists, or the chosen solver's plan breaks a cap or the memory limit); 2 on bad input.
    """
    if ctx.invoked_subcommand is not None:
        return
    from .. import api
    from .render import render_table

    result = api.solve(model, array, space=space, objective=objective, solver=solver, batch=batch, levels=levels,
                       caps=caps, memory_GiB=memory_GiB, weight_copies=weight_copies, pins=pins, forbids=forbids,
                       constraints=constraints_file, time_limit=time_limit, workers=workers, seed=seed,
                       dump_model=dump_model, progress=progress if solver != "dp" else None)
    text = json.dumps(result.to_json(), indent=2) + "\n" if fmt == "json" else render_table(result)
    emit(text, output)
    if not result.ok:
        click.echo(f"explore: {why_not_ok(result)}", err=True)
    sys.exit(0 if result.ok else 1)


def why_not_ok(result) -> str:
    """One line on stderr: why ``explore`` exits 1."""
    why = result.explanation
    if why is not None and why.conflict:
        text = "no plan satisfies the constraints; these conflict: " + "; ".join(why.conflict)
        return text + (f" ({why.suggestion})" if why.suggestion else "")
    if result.figures is not None:
        text = f"the {result.solver} plan breaks " + "; ".join(v.constraint for v in result.figures.violations)
        return text + " (--solver cpsat enforces caps and memory)"
    return result.reason or f"{result.solver} found no plan"


@cli.command("check")
@problem_options
@constraint_options
@solver_options
@click.option("--solvers", "solver_list", default="cpsat,exact,brute", show_default=True, help="Comma-separated joint solvers to run and compare.")
@fail_on_bad_input
def check_cmd(model, array, space, objective, batch, levels, fmt, output, caps, memory_GiB, weight_copies, pins, forbids,
              constraints_file, time_limit, workers, seed, dump_model, solver_list):
    """Cross-check: is the DP level-optimal, what is the proven joint optimum, and the DP's gap.

    Runs the DP, then CP-SAT, the exact joint solver and brute force (each where it applies).
    Exit status 0 when everything agrees with the model, 1 when two exact solvers disagree or
    the DP is not level-optimal, 2 on bad input.
    """
    from .. import api
    from .check import JOINT_SOLVERS
    from .render import render_check

    names = tuple(x.strip() for x in solver_list.split(",") if x.strip())
    unknown = [n for n in names if n not in JOINT_SOLVERS]
    if unknown or not names:
        raise InputError(f"--solvers: unknown solver {', '.join(unknown) or '(none)'} (choose from {', '.join(JOINT_SOLVERS)})")
    report = api.check(model, array, space=space, objective=objective, solvers=names, batch=batch, levels=levels,
                       caps=caps, memory_GiB=memory_GiB, weight_copies=weight_copies, pins=pins, forbids=forbids,
                       constraints=constraints_file, time_limit=time_limit, workers=workers, seed=seed,
                       dump_model=dump_model, progress=progress)
    text = json.dumps(report.to_json(), indent=2) + "\n" if fmt == "json" else render_check(report)
    emit(text, output)
    sys.exit(0 if report.agree else 1)


@cli.command("list")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@fail_on_bad_input
def list_cmd(fmt):
    """List the network zoo and the shipped arrays."""
    from ..frontends.network_yaml import load_network_file
    from ..frontends.array_yaml import load_array_file

    nets = [load_network_file(p) for p in zoo.zoo_files().values()]
    arrs = [load_array_file(p) for p in zoo.array_files().values()]
    if fmt == "json":
        out = {
            "models": [{"name": n.name, "nodes": len(n.layers), "weighted_layers": sum(not L.is_join for L in n.layers),
                        "graph": not n.is_chain, "batch": n.batch, "file": n.source} for n in nets],
            "aliases": dict(zoo.ALIASES),
            "arrays": [
                {"name": a.name, "levels": a.levels, "accelerators": a.accelerators, "file": a.source} for a in arrs
            ],
        }
        click.echo(json.dumps(out, indent=2))
        return
    click.echo("models (weighted layers, joins, default batch):")
    for n in nets:
        joins = sum(L.is_join for L in n.layers)
        shape = f"{joins:>3} joins" if joins else "  chain  "
        click.echo(f"  {n.name:<10} {len(n.layers) - joins:>3} layers {shape}  batch {n.batch}")
    click.echo("  aliases: " + ", ".join(f"{k} = {v}" for k, v in zoo.ALIASES.items()))
    click.echo("arrays:")
    for a in arrs:
        bw = "/".join(f"{float(b):g}" for b in a.bandwidth_GBps)
        click.echo(f"  {a.name:<12} H={a.levels:<2} {a.accelerators:>5} accelerators  links {bw} GB/s")


def main(argv: list[str] | None = None) -> None:
    """Entry point: click usage errors become one line on stderr with exit status 2."""
    try:
        rv = cli.main(args=argv, prog_name="explore", standalone_mode=False)
    except click.exceptions.UsageError as err:
        hint = f" (see '{err.ctx.command_path} --help')" if err.ctx else ""
        click.echo(f"explore: error: {err.format_message()}{hint}", err=True)
        sys.exit(2)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except click.exceptions.Abort:
        click.echo("explore: aborted", err=True)
        sys.exit(1)
    except BrokenPipeError:
        sys.exit(1)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
