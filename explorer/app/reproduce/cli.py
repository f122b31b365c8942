"""``explore reproduce hypar``: HyPar's Figs. 5-13, each a PNG and rows ``series, x, ours, paper,
unit, error`` (printing only; the work is in ``hypar.py`` and ``draw.py``)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ...core.kinds import Accounting
from ...core.errors import SpecError
from ..cli_common import InputError, fail_on_bad_input

if TYPE_CHECKING:
    from .hypar import Figure

# HyPar's figures this command regenerates (``paper.FIGURES``, tested equal): named here so that
# building the command line does not import the reproduction (``hypar``, ``points``, ``paper``)
FIGURES = tuple(range(5, 14))

DEFAULT_OUT = "runs/hypar-figures"


def _out_dir(out: str) -> Path:
    """The output folder, made if missing; one line (exit 2) when it cannot be written."""
    from ..output import OutputError, check_folder_writable

    path = Path(out)
    try:
        check_folder_writable(out, "--out")
    except OutputError as err:
        raise InputError(str(err)) from None
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"--out: cannot write {out}: {err.strerror or err}") from None
    if not path.is_dir() or not os.access(path, os.W_OK | os.X_OK):
        raise InputError(f"--out: cannot write {out}: not a writable folder")
    return path


def _cell(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _error(r) -> str:
    if r.error is None:
        return "-"
    if isinstance(r.error, float):
        return f"{r.error:+.1%}"
    return f"{r.error} differ" if "plan" in r.unit else str(r.error)


def table(fig: Figure, png: Path) -> str:
    head = ("series", "x", "ours", "paper", "unit", "error")
    body = [(r.series, r.x, _cell(r.ours), _cell(r.paper), r.unit, _error(r)) for r in fig.rows]
    widths = [max(len(str(row[i])) for row in [head, *body]) for i in range(len(head))]
    lines = [f"Fig. {fig.number}: {fig.title}  ({png})"]
    for row in [head, *body]:
        lines.append("  ".join(str(c).ljust(w) if i < 2 or i == 4 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip())
    return "\n".join(lines + list(fig.notes))


@click.group("reproduce")
def reproduce_group():
    """Regenerate a paper's figures: our numbers beside the paper's (explore reproduce hypar --figure 6).

    HyPar (HPCA 2019) is the one paper with a command. AccPar's TPU-v2/v3 mixes are a sweep:
    explore sweep spaces/accpar-mix.yaml --out runs/accpar-mix (about 200 s; then explore plot
    runs/accpar-mix ...; docs: "Reproducing HyPar and AccPar"); its partitions are checked against
    AccPar's reference program by the tests.
    """


@reproduce_group.command("accpar", hidden=True, context_settings={"ignore_unknown_options": True,
                                                                   "allow_extra_args": True})
@fail_on_bad_input
def reproduce_accpar():
    """AccPar has no command of its own: say where its reproduction is (exit 2)."""
    raise SpecError("explore reproduce accpar", "AccPar's figures are a sweep, not a reproduce command: explore sweep "
                    "spaces/accpar-mix.yaml --out runs/accpar-mix (docs: Reproducing HyPar and AccPar, "
                    "'Mixes of TPU-v2 and TPU-v3')")


@reproduce_group.command("hypar", short_help="HyPar (HPCA 2019) Figs. 5-13, ours beside the paper's.")
@click.option("--figure", "numbers", type=click.Choice([str(n) for n in FIGURES]), multiple=True, metavar="N",
              help=f"HyPar figure to regenerate ({', '.join(map(str, FIGURES))}). Repeatable; this or --all is needed.")
@click.option("--all", "every", is_flag=True, help="Every figure, 5 to 13.")
@click.option("--out", "out", default=DEFAULT_OUT, show_default=True, metavar="DIR",
              help="Folder for the PNGs (hypar-figN.png) and the point cache (DIR/.cache; its entries of "
                   "other code, and the .tmp files a stopped run left there or beside the PNGs, are removed).")
@click.option("--accounting", type=click.Choice([a.value for a in Accounting]), default="model", show_default=True,
              help="model: model.md (the default everywhere); hypar-figures: type II exchanges after pooling and "
                   "re-layouts out of II are free, the accounting HyPar's Figs. 5 and 8 imply.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="Readable tables or one JSON object.")
@click.option("--force", is_flag=True, help="Replace files named hypar-figN.png in DIR that explore reproduce did "
                                            "not write (refused without it).")
@fail_on_bad_input
def hypar_cmd(numbers, every, out, accounting, fmt, force):
    """HyPar (HPCA 2019) Figs. 5-13 on the calibrated paper array: one PNG per figure (the paper's
    axes, units and normalisation; ours solid, the paper's hatched) and rows series, x, ours,
    paper, unit, error (ours / paper - 1; plans: cells that differ)."""
    started = time.time()  # (leftover .tmp files older than this are an earlier run's)
    if not numbers and not every:
        raise InputError("give --figure N (5..13) or --all")
    wanted = list(FIGURES) if every else sorted({int(n) for n in numbers})
    folder = _out_dir(out)
    from ..sweep.lock import folder_lock, took_over_line
    from .files import check_paths, prune_temps

    pngs = {n: folder / f"hypar-fig{n}.png" for n in wanted}
    check_paths(folder / ".cache", list(pngs.values()), force)  # before any point is solved
    with folder_lock(folder) as dead:  # one run writes into DIR at a time (a sweep's lock): its temp files are its own
        if dead is not None:
            click.echo(took_over_line("reproduce hypar", folder, dead), err=True)
        check_paths(folder / ".cache", list(pngs.values()), force)  # (as found once the folder is held)
        temps = prune_temps(folder, started)
        if temps:
            click.echo(f"[explore] removed {temps} leftover figure .tmp {'file' if temps == 1 else 'files'} of a "
                       f"stopped run (.hypar-figN.png.*.tmp in {folder})", err=True)
        _run(folder, pngs, Accounting(accounting), fmt, started)


def _run(folder: Path, pngs: dict, acc: Accounting, fmt: str, started: float) -> None:
    """Reproduce, draw and write the figures, then print the JSON object or the cache's line."""
    from .hypar import Context
    from .points import prune, prune_leftovers

    ctx = Context(acc, folder / ".cache")
    results = _figures(ctx, pngs, acc, fmt)
    if ctx.ledger.rejected:  # entries edited or damaged (their seal), solved again and rewritten
        from ..cli_sweep import rejected_line

        click.echo(rejected_line(tuple(sorted(ctx.ledger.rejected)), "explore reproduce hypar"), err=True)
    cache = {"folder": str(ctx.cache), "reused": len(ctx.ledger.reused), "solved": len(ctx.ledger.solved),
             "removed": prune(ctx.cache), "leftovers": prune_leftovers(ctx.cache, started)}
    if fmt == "json":
        click.echo(json.dumps({"accounting": acc.value, "figures": [
            {"figure": f.number, "title": f.title, "png": str(p), "rows": [r.to_json() for r in f.rows],
             "notes": [x.strip() for x in f.notes]}
            for f, p in results], "cache": cache}, indent=1))
    else:
        click.echo(cache_line(cache), err=True)


def _figures(ctx, pngs: dict, acc: Accounting, fmt: str) -> list:
    """Reproduce and draw each figure (its table printed as it is done), each into a temp file; once
    all are drawn, rename them into place together, Ctrl-C held meanwhile (``files.commit``). A
    Ctrl-C before then writes no figure (exit 130, one line saying so); [(figure, png)]."""
    from ..sweep.engine import held_ctrl_c
    from .draw import draw
    from .files import commit, discard, temp_beside
    from .hypar import reproduce

    results, drawn, written = [], {}, []
    try:
        for n, png in pngs.items():
            fig = reproduce(n, ctx)
            tmp = drawn[png] = _writing(lambda: temp_beside(png), written)
            _writing(lambda: draw(fig, tmp, acc.value), written)
            results.append((fig, png))
            if fmt == "table":
                click.echo(table(fig, png) + "\n")
        with held_ctrl_c():
            _writing(lambda: commit(drawn, written), written)
    except KeyboardInterrupt:
        discard(drawn)
        names = ", ".join(p.name for p in written)
        done = (f"wrote {names} (every figure)" if len(written) == len(pngs) else f"wrote only {names}" if written
                else "no figure written")
        click.echo(f"explore: interrupted (Ctrl-C); {done} (the figures drawn are written together, at the end); "
                   f"the points solved so far are cached in {ctx.cache}: rerun the same command to resume", err=True)
        sys.exit(130)
    finally:
        discard(drawn)
    return results


def _writing(step, written: list):
    """``step()``; a figure that cannot be written (a full disk, a folder made read-only meanwhile)
    is one line naming the file and what was written (exit 2)."""
    try:
        return step()
    except OSError as err:
        done = f"; wrote only {', '.join(p.name for p in written)}" if written else "; no figure written"
        raise InputError(f"--out: cannot write {err.filename or 'a figure'}: {err.strerror or err}{done}") from None


def cache_line(cache: dict) -> str:
    """The point cache's line: how many of the run's points came from it, how many were solved,
    how many entries of other code and leftover .tmp files of a stopped run were removed."""
    n = cache["reused"] + cache["solved"]
    gone = f"; removed {cache['removed']} {'entry' if cache['removed'] == 1 else 'entries'} of other code" \
        if cache["removed"] else ""
    left = cache["leftovers"]
    gone += f"; removed {left} leftover .tmp {'file' if left == 1 else 'files'} of a stopped run" if left else ""
    return (f"[explore] {n} {'point' if n == 1 else 'points'}: {cache['reused']} from the cache "
            f"({cache['folder']}), {cache['solved']} solved{gone}")


def attach(group: click.Group) -> None:
    """Add ``explore reproduce`` to the ``explore`` group."""
    group.add_command(reproduce_group)

