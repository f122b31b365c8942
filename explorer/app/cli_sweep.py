"""The ``explore sweep``, ``explore sweep merge`` and ``explore plot`` commands (printing only;
the work is in ``explorer.api.sweep`` and ``explorer.app.sweep``)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import click

from .cli_common import InputError, fail_on_bad_input, since_start
from .cli_ticker import bar_width
from ..core.units import plural
from ..solvers import MAX_WORKERS


class SweepGroup(click.Group):
    """``explore sweep FILE ...`` runs a sweep; ``explore sweep merge DIR...`` joins shards."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands:  # FILE, an option, or --help: the sweep itself
            args = ["run", *args]
        return super().parse_args(ctx, args)


def _columns(text: str | None) -> tuple[str, ...]:
    return tuple(c.strip() for c in text.split(",") if c.strip()) if text else ()


class Reporter:
    """A progress bar on stderr when it is a terminal; otherwise nothing until the summary line.
    While no point finishes, the bar is redrawn each second (its clock runs on) with the running
    point and its time in its postfix (``Progress.running``, ``sweep.alive``)."""

    def __init__(self, quiet: bool):
        self.bar = None
        self.quiet = quiet
        self.first = self.last = None

    def __call__(self, p) -> None:
        if self.last is None and p.rejected:  # (known from the first call on, before any point is solved)
            click.echo(rejected_line(p.rejected), err=True)
        self.first = self.first or p
        self.last = p
        if self.quiet or not sys.stderr.isatty():
            return
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=p.total, initial=p.done, unit="pt", file=sys.stderr, smoothing=0.1,
                            **bar_width(sys.stderr))
        figures = {"reused": p.reused, "invalid": p.invalid, "failed": p.failed}
        if p.running:
            from .sweep.alive import running_text

            figures["running"] = running_text(p.running)
        self.bar.set_postfix(figures, refresh=bool(p.running))  # (before update: a point done names none)
        if p.done != self.bar.n:
            self.bar.update(p.done - self.bar.n)

    def cached_text(self, out: str) -> str:
        """What an interrupted run leaves cached: '3 points cached this run, 34 in all in OUT's cache'
        (the points this run solved, a point that raised is not cached; and the folder's entries,
        ``Cache.count``: those of earlier runs too, which a rerun reuses)."""
        from .sweep.cache import Cache

        first, last = self.first, self.last
        new = (last.done - last.failed) - (first.done - first.failed) if first else 0
        return f"{plural(new, 'point')} cached this run, {Cache(out).count():,} in all in {out}'s cache"

    def close(self) -> None:
        """Close the bar once, whatever happens (a Ctrl-C while tqdm draws included): a bar left
        to the garbage collector may print 'Exception ignored in tqdm.__del__'."""
        bar, self.bar = self.bar, None
        if bar is None:
            return
        try:
            bar.close()
        except (Exception, KeyboardInterrupt):  # noqa: BLE001 - a bar must never raise at exit
            bar.disable = True


def rejected_line(paths: tuple[str, ...], who: str = "explore sweep") -> str:
    """The cache entries that failed their check (``sweep.cache.Cache.get``; ``explore reproduce``'s,
    ``reproduce.points``), solved again."""
    more = f" and {plural(len(paths) - 1, 'other')}" if len(paths) > 1 else ""
    return (f"{who}: {plural(len(paths), 'cache entry', 'cache entries')} failed {'its' if len(paths) == 1 else 'their'} "
            f"check (edited or damaged), solved again: {paths[0]}{more}")


@click.group("sweep", cls=SweepGroup, invoke_without_command=False)
def sweep_group():
    """Run a design-space sweep (explore sweep FILE --out DIR), or join shard outputs (explore sweep merge)."""


class _DefaultContext(click.Context):
    @property
    def command_path(self) -> str:  # 'explore sweep', not the hidden 'explore sweep run'
        return self.parent.command_path if self.parent else "explore sweep"


class _Default(click.Command):
    """The sweep itself, reached as ``explore sweep FILE``: its usage line and help hints say so."""

    context_class = _DefaultContext

    def format_usage(self, ctx, formatter) -> None:
        path = ctx.parent.command_path if ctx.parent else "explore sweep"
        formatter.write_usage(path, " ".join(self.collect_usage_pieces(ctx)))

    def format_options(self, ctx, formatter) -> None:
        """The options, then the group's other commands (``explore sweep --help`` shows this help)."""
        super().format_options(ctx, formatter)
        group = ctx.parent.command if ctx.parent else sweep_group
        rows = [(name, cmd.get_short_help_str(limit=200)) for name, cmd in group.commands.items()
                if not cmd.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@sweep_group.command("run", cls=_Default, hidden=True)
@click.argument("file")
@click.option("--out", "out", required=True, metavar="DIR", help="Folder for results.csv, plans.jsonl, sweep.json and the cache.")
@click.option("--workers", type=click.IntRange(min=1, max=MAX_WORKERS), default=None, help="Processes, 1..256 (default: one per core); with --engine dask and no scheduler, LocalCluster workers.")
@click.option("--engine", type=click.Choice(["local", "dask"]), default="local", show_default=True, help="local: a process pool; dask: a Dask distributed cluster.")
@click.option("--scheduler", default=None, metavar="tcp://HOST:PORT", help="Dask scheduler to use (default: start a local cluster).")
@click.option("--shard", default=None, metavar="I/N", help="Run only every N-th point from point I (0 <= I < N), e.g. for a job array (default: every point).")
@click.option("--pareto", default=None, metavar="COL,COL[,...]", help="Add a pareto column: the front of these numeric columns, all minimised (default: none).")
@click.option("--pareto-by", "pareto_by", default=None, metavar="KEY[,KEY...]", help="One Pareto front per combination of these sweep keys' values (e.g. model,batch) instead of one over every point.")
@click.option("--max-points", "max_points", type=click.IntRange(min=1), default=None, metavar="N",
              help="Refuse a sweep of more than N points (default 100,000); counted before any point is built.")
@click.option("--quiet", is_flag=True, help="No progress bar and no summary line.")
@click.option("--force", is_flag=True, help="Replace the outputs of another sweep found in DIR (refused without it).")
@fail_on_bad_input
def sweep_run(file, out, workers, engine, scheduler, shard, pareto, pareto_by, max_points, quiet, force):
    """Run every point of the sweep FILE and write DIR/results.csv and DIR/plans.jsonl.

    Finished points are cached in DIR: a rerun (after Ctrl-C, a crash or an edit of the sweep)
    solves only what is missing. Exit status 0 when every point has a row (infeasible, refused
    and invalid points included), 1 when a point failed (raised an unexpected error), 2 on bad
    input (the sweep file, any model or array it names, an override that does not fit its array).
    Join shard outputs with: explore sweep merge DIR... --out DIR.
    """
    from ..api import sweep
    from .sweep.runner import parse_shard
    from .sweep.spec import MAX_POINTS, load_sweep
    from .sweep.table import check_pareto_by

    parse_shard(shard)  # named --shard here (the API names its argument)
    sw = load_sweep(file, max_points or MAX_POINTS)
    check_pareto_by(_columns(pareto_by), _columns(pareto), sw.columns)  # named --pareto-by here
    found = _found(Path(out), sw.digest)
    report = Reporter(quiet)
    rows = []
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig, handler in ((signal.SIGINT, _first_interrupt), (signal.SIGTERM, _terminated)):
        if previous[sig] is not signal.SIG_IGN:  # ignored (a background job of a script): stays ignored
            signal.signal(sig, handler)
    interrupted = False
    try:
        try:
            for row in sweep.with_option_names(sw, out, workers=workers, engine=engine, scheduler=scheduler, shard=shard,
                             pareto=_columns(pareto), progress=report, force=force, pareto_by=_columns(pareto_by)):
                rows.append(row)
        finally:
            report.close()
    except KeyboardInterrupt as stop:
        interrupted = True  # later Ctrl-Cs stay ignored until the process has exited
        by = " by SIGTERM" if isinstance(stop, Terminated) else ""
        click.echo(f"explore: interrupted{by}; {report.cached_text(out)}: rerun the same command to resume", err=True)
        sys.exit(143 if by else 130)  # 128 + the signal's number, as a shell reports a process it ended
    finally:
        if not interrupted:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    failed = sum(r["status"] == "error" for r in rows)
    if not quiet:
        p = report.last
        reused = p.reused if p else 0
        invalid = sum(r["status"] == "invalid" for r in rows)
        no_plan = sum(r["status"] in ("infeasible", "unknown", "refused") for r in rows)
        click.echo(f"sweep {sw.name}{f' shard {shard}' if shard else ''}: {plural(len(rows), 'point')} ({reused} reused from the cache, "
                   f"{len(rows) - reused} computed; {no_plan} without a plan, {invalid} invalid, {failed} failed) in "
                   f"{since_start():.1f} s (start-up included); wrote {Path(out) / 'results.csv'} and {Path(out) / 'plans.jsonl'}", err=True)
        say_approximations(rows)
        say_warnings(rows)
    _say_found(Path(out), sw.name, *found, report.last.took_over if report.last else None)
    sys.exit(1 if failed else 0)


def _found(out: Path, digest: str) -> tuple[list[Path], str | None]:
    """What the run will find in ``out`` and say after it: the plots of an older grid it removes, and
    whose grid they were drawn from (with --force maybe another sweep's)."""
    from .sweep.table import held_sweep_name, stale_plots

    if not out.is_dir():
        return [], None
    stale = stale_plots(out, digest)
    return stale, held_sweep_name(out) if stale else None


def _say_found(out: Path, name: str, stale: list[Path], owner: str | None, dead: int | None) -> None:
    """The plots removed, then the killed run's lock file the sweep took over (``Progress.took_over``:
    the lock's own report, as reproduce, plot and merge say it)."""
    if stale:
        say_removed(stale, owner, name)
    if dead is not None:
        say_took_over(out, dead)


def say_took_over(out: Path, pid: int, command: str = "sweep") -> None:
    """The lock file of a run that ended without removing it (killed), taken over by this run."""
    from .sweep.lock import took_over_line

    click.echo(took_over_line(command, out, pid), err=True)


def say_removed(stale: list[Path], owner: str | None, name: str) -> None:
    """The plots a sweep removed, and whose results they were drawn from (this sweep's older grid, or
    with --force another sweep's)."""
    whose = "an older grid of this sweep" if owner in (None, name) else f"the results of sweep {owner!r} (replaced)"
    click.echo(f"explore sweep: removed {plural(len(stale), 'plot')} drawn from {whose} "
               f"({', '.join(p.name for p in stale[:5])}{', ...' if len(stale) > 5 else ''}); other files are kept", err=True)


def say_approximations(rows) -> None:
    """``explore: approximation: NOTE (N of M points; ...)`` on stderr, once a note, as ``explore`` says it for one point."""
    from .sweep.table import note_counts

    for note, n in note_counts(rows, "approximations").items():
        click.echo(f"explore: approximation: {note} ({n} of {plural(len(rows), 'point')}; see the approximations "
                   "column)", err=True)


SHOWN_WARNINGS = 5  # the distinct warnings a sweep's summary writes out; the rest are counted


def say_warnings(rows) -> None:
    """The points' ``warning:`` lines (trial finding: a sweep kept them in plans.jsonl alone): how
    many points carry one, then each distinct warning once with its count of points, the first
    SHOWN_WARNINGS, and how many more; every point's are in results.csv's warnings column."""
    from .sweep.table import note_counts

    counts = note_counts(rows, "warnings")
    if not counts:
        return
    carried = sum(bool(r.get("warnings")) for r in rows)
    click.echo(f"explore: warnings on {carried} of {plural(len(rows), 'point')} ({len(counts)} distinct; each "
               "point's are in the warnings column of results.csv):", err=True)
    for note, n in list(counts.items())[:SHOWN_WARNINGS]:
        click.echo(f"explore: warning: {note} ({n} of {plural(len(rows), 'point')})", err=True)
    if len(counts) > SHOWN_WARNINGS:
        more = len(counts) - SHOWN_WARNINGS
        click.echo(f"explore: warning: ... and {plural(more, 'more distinct warning')} (see the warnings column)", err=True)


def _first_interrupt(signum, frame):
    """The first Ctrl-C stops the sweep; later ones are ignored while the pool shuts down and the
    process exits (a second Ctrl-C there printed a traceback from the pool's exit hook)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


class Terminated(KeyboardInterrupt):
    """SIGTERM (kill's default, a batch system's time limit: Slurm's): the sweep stops as on Ctrl-C
    (its points cached, the lock released, one line), exit status 143."""


def _terminated(signum, frame):
    """SIGTERM stops the sweep as the first Ctrl-C does; later SIGTERMs and Ctrl-Cs are ignored meanwhile."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise Terminated


@sweep_group.command("merge")
@click.argument("dirs", nargs=-1, required=True)
@click.option("--out", "out", required=True, metavar="DIR", help="Folder for the merged results.csv and plans.jsonl.")
@click.option("--pareto", default=None, metavar="COL,COL[,...]", help="Pareto columns (default: those the shards were run with).")
@click.option("--pareto-by", "pareto_by", default=None, metavar="KEY[,KEY...]", help="One front per combination of these keys' values (default: as the shards were run; '' for one front).")
@click.option("--force", is_flag=True, help="Replace the outputs of another sweep found in DIR (refused without it).")
@fail_on_bad_input
def sweep_merge(dirs, out, pareto, pareto_by, force):
    """Join the outputs of shards (explore sweep FILE --shard I/N --out DIR_I) into one folder."""
    from dataclasses import replace

    from .sweep.lock import folder_lock
    from .sweep.runner import check_out
    from .sweep.merge import merge_entries
    from .sweep.table import check_destination, check_outputs, check_pareto_by, check_pareto_columns, columns, write_outputs

    check_out(out)
    merged = merge_entries([Path(d) for d in dirs])
    manifest, entries, missing = merged.manifest, merged.entries, merged.missing
    if Path(out).exists() and not Path(out).is_dir():
        raise InputError(f"--out: {out} exists and is not a folder")
    check_outputs(Path(out))
    check_destination(Path(out), manifest.name, force)
    if pareto is not None:
        cols = _columns(pareto)
        check_pareto_columns(cols, columns(manifest.params))
        manifest = replace(manifest, pareto=cols)
    if pareto_by is not None:
        manifest = replace(manifest, pareto_by=_columns(pareto_by))
    check_pareto_by(manifest.pareto_by, manifest.pareto, manifest.params)
    if missing:  # a partial merge would plot as the whole sweep: nothing is written
        shown = ", ".join(map(str, missing[:10])) + (", ..." if len(missing) > 10 else "")
        click.echo(f"explore: {plural(len(missing), 'point')} missing: {shown} ({len(entries)} of "
                   f"{plural(manifest.total, 'point')} found); nothing written: merge the folders of every shard", err=True)
        sys.exit(1)
    Path(out).mkdir(parents=True, exist_ok=True)
    with folder_lock(Path(out)) as dead:  # no sweep or merge writes there meanwhile
        check_destination(Path(out), manifest.name, force)
        rows = write_outputs(Path(out), manifest, entries)
    if dead is not None:
        say_took_over(Path(out), dead, "sweep merge")
    if merged.dropped:
        click.echo(f"note: {plural(merged.dropped, 'identical copy', 'identical copies')} of a record dropped", err=True)
    click.echo(f"merged {plural(len(dirs), 'folder')}: {len(entries)} of {plural(manifest.total, 'point')} into {Path(out) / 'results.csv'}", err=True)
    say_approximations(rows)
    say_warnings(rows)


@click.command("plot")
@click.argument("folder", metavar="DIR")
@click.option("--x", "x", default=None, metavar="COL", help="Column on the x axis.")
@click.option("--y", "y", default=None, metavar="COL", help="Column on the y axis.")
@click.option("--hue", default=None, metavar="COL[,COL]", help="One series (colour) per value of these columns.")
@click.option("--kind", type=click.Choice(["line", "bar", "scatter", "heatmap"]), default="line", show_default=True,
              help="Chart: line (--y over --x, one line per --hue value, joined along a numeric --x only), bar "
                   "(grouped bars), scatter (points), heatmap (--z in each --x, --y cell; needs --z).")
@click.option("--z", "z", default=None, metavar="COL", help="Heatmap: the value in each (x, y) cell.")
@click.option("--where", "where", multiple=True, metavar="COL=VALUE", help="Keep only rows where COL is VALUE. Repeatable.")
@click.option("--logx", is_flag=True, help="Logarithmic x axis (base 2 for powers of two); points with x <= 0 are left out, with a warning.")
@click.option("--logy", is_flag=True, help="Logarithmic y axis; points with y <= 0 are left out, with a warning.")
@click.option("--title", default=None, help="Figure title.")
@click.option("--plan", "plan", type=click.IntRange(min=0), default=None, metavar="ROW", help="Draw point ROW's plan: levels x layers coloured by type.")
@click.option("--pareto", is_flag=True, help="Scatter the points on --x, --y and mark the Pareto front (both minimised).")
@click.option("--reference", is_flag=True, help="Draw the paper's values (the sweep file's reference: series) beside ours; --x/--y default to the columns it names.")
@click.option("--out", "out", default=None, metavar="FILE", help="Image to write, .png or .svg (default: DIR/<kind>-<y>-vs-<x>[-by-<hue>][-<COL=VALUE>...][-vs-paper][-logx|-logy|-logxy].png, a heatmap's DIR/heatmap-<z>-by-<y>-vs-<x>..., --pareto's DIR/pareto-..., --plan's DIR/plan-ROW.png: distinct for each --y, --hue and --where).")
@fail_on_bad_input
def plot_cmd(folder, x, y, hue, kind, z, where, logx, logy, title, plan, pareto, reference, out):
    """Plot a finished sweep's results.csv (or one point's plan from plans.jsonl)."""
    from .sweep import plot
    from .sweep.table import record_plot

    if not Path(folder).is_dir():
        what = ("not a folder (explore plot reads a sweep output folder)" if Path(folder).exists()
                else "no such sweep output folder")
        raise InputError(f"{folder}: {what}")
    chart = plot.Chart(kind, x, y, _columns(hue), z, plot.parse_where(where), logx, logy, title, reference)
    if reference and (plan is not None or pareto):
        raise InputError("--reference: draws on a line, bar or scatter chart, not with --plan or --pareto")
    if out is not None:
        _check_out(out)
    chart = plot.with_reference_axes(folder, chart)
    target = out or _check_out(str(Path(folder) / plot.default_name(chart, pareto, plan)))
    with _held_if_inside(Path(folder), Path(target)) as dead:
        if plan is not None:
            done = plot.plot_plan(folder, plan, target)
        elif pareto:
            done = plot.plot_pareto(folder, chart, target)
        else:
            done = plot.plot_chart(folder, chart, target)
        record_plot(Path(folder), Path(done.path))  # a rerun with another grid removes it (sweep.json lists it)
    if dead is not None:
        say_took_over(Path(folder), dead, "plot")
    for note in done.notes:  # also on the figure, under its title
        click.echo(f"explore plot: warning: {note}", err=True)
    click.echo(f"wrote {done.path}", err=True)


def _held_if_inside(folder: Path, target: Path):
    """The folder's lock (``lock.folder_lock``) while an image drawn into the folder itself is written
    and listed in its sweep.json (a sweep or merge writing there meanwhile: the same one-line refusal
    as a second sweep, before anything is drawn); nothing to hold for an image written elsewhere."""
    from contextlib import nullcontext

    from .sweep.lock import folder_lock

    try:
        inside = target.absolute().parent.resolve() == folder.resolve()
    except OSError:
        inside = False
    return folder_lock(folder) if inside else nullcontext()


def _check_out(out: str) -> str:
    """``--out`` (or the default image name) refused before anything is read or drawn."""
    from .sweep import plot

    if not out.strip():
        raise InputError("--out: must not be empty")
    plot.check_target(out)
    return out


def attach(group: click.Group) -> None:
    """Add the sweep and plot commands to the ``explore`` group."""
    group.add_command(sweep_group)
    group.add_command(plot_cmd)
