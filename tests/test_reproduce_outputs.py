"""``explore reproduce hypar``'s outputs (trial findings 2 and 3): a path it cannot write is one
line, exit 2, before any point is solved; figures are written together at the end, so a Ctrl-C
leaves the figures of the earlier run as they were, and says which (none) were written."""

from __future__ import annotations

import os
import signal
import struct
import zlib

import pytest

from explorer.app.reproduce import files, hypar

from .conftest import run_cli

FIGS = ["--figure", "6", "--figure", "7"]  # two quick figures (about a second each)


@pytest.fixture
def no_solving(monkeypatch):
    """Fail the test if a figure is reproduced (paths are checked before any point is solved)."""
    monkeypatch.setattr(hypar, "reproduce", lambda n, ctx: pytest.fail(f"figure {n} reproduced"))


def test_a_file_where_the_cache_goes_is_one_line(tmp_path, capsys, no_solving):
    (tmp_path / ".cache").write_text("not a folder")
    code, out, err = run_cli(["reproduce", "hypar", *FIGS, "--out", str(tmp_path)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err == (f"explore: error: --out: {tmp_path / '.cache'} is not a folder (the point cache goes there): "
                   "move it away or choose another --out\n")


def test_a_folder_where_a_png_goes_is_one_line(tmp_path, capsys, no_solving):
    (tmp_path / "hypar-fig7.png").mkdir()
    code, out, err = run_cli(["reproduce", "hypar", *FIGS, "--out", str(tmp_path)], capsys)
    assert code == 2 and out == ""
    assert err == (f"explore: error: --out: cannot write {tmp_path / 'hypar-fig7.png'}: is a folder (the figure's "
                   "PNG goes there): move it away or choose another --out\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hypar-fig7.png"]  # nothing written, no cache made


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_cache_folder_is_one_line(tmp_path, capsys, no_solving):
    (tmp_path / ".cache").mkdir(mode=0o555)
    code, _, err = run_cli(["reproduce", "hypar", *FIGS, "--out", str(tmp_path)], capsys)
    assert code == 2 and "is not writable" in err and err.count("\n") == 1


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png(*texts: tuple[str, str]) -> bytes:
    """A 1x1 grey PNG holding these tEXt chunks (keyword, text)."""
    head = _chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
    body = b"".join(_chunk(b"tEXt", f"{k}\0{v}".encode("latin-1")) for k, v in texts)
    return b"\x89PNG\r\n\x1a\n" + head + body + _chunk(b"IDAT", zlib.compress(b"\0\x80")) + _chunk(b"IEND", b"")


OLD = png(files.MARK, ("Comment", "the earlier run's figure"))  # as an earlier reproduce run wrote it


def _old_figures(folder):
    for n in (6, 7):
        (folder / f"hypar-fig{n}.png").write_bytes(OLD)


def _files(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def test_ctrl_c_before_the_last_figure_writes_none(tmp_path, capsys, monkeypatch):
    """Figure 7 interrupted after figure 6 was drawn: both PNGs are the earlier run's, no temp file
    is left, exit 130 and one line saying no figure was written."""
    _old_figures(tmp_path)
    real = hypar.reproduce

    def interrupted(n, ctx):
        if n == 7:
            raise KeyboardInterrupt
        return real(n, ctx)

    monkeypatch.setattr(hypar, "reproduce", interrupted)
    code, out, err = run_cli(["reproduce", "hypar", *FIGS, "--out", str(tmp_path)], capsys)
    assert code == 130 and "Fig. 6" in out  # figure 6's table was printed as it was done
    assert err == (f"explore: interrupted (Ctrl-C); no figure written (the figures drawn are written together, at the "
                   f"end); the points solved so far are cached in {tmp_path / '.cache'}: rerun the same command to "
                   "resume\n")
    assert _files(tmp_path) == {f"hypar-fig{n}.png": OLD for n in (6, 7)}


def test_ctrl_c_while_the_figures_are_renamed_is_held_until_all_are(tmp_path, capsys, monkeypatch):
    """A real SIGINT during the first rename: held (``held_ctrl_c``) until every figure is in place,
    then the run stops, naming them."""
    _old_figures(tmp_path)
    real = os.replace
    calls = []

    def replace(a, b):
        if str(b).endswith(".png"):  # (the point cache renames its entries too)
            if not calls:
                signal.raise_signal(signal.SIGINT)
            calls.append(b)
        real(a, b)

    monkeypatch.setattr(files.os, "replace", replace)
    code, _, err = run_cli(["reproduce", "hypar", *FIGS, "--out", str(tmp_path)], capsys)
    assert code == 130 and len(calls) == 2
    assert err.startswith("explore: interrupted (Ctrl-C); wrote hypar-fig6.png, hypar-fig7.png (every figure)")
    found = _files(tmp_path)
    assert sorted(found) == ["hypar-fig6.png", "hypar-fig7.png"]  # no temp file left
    assert all(data.startswith(b"\x89PNG") for data in found.values())


def test_figures_replace_the_earlier_ones_keeping_their_mode(tmp_path, capsys):
    _old_figures(tmp_path)
    os.chmod(tmp_path / "hypar-fig6.png", 0o600)
    code, _, err = run_cli(["reproduce", "hypar", *FIGS, "--out", str(tmp_path)], capsys)
    assert code == 0, err
    found = _files(tmp_path)
    assert sorted(found) == ["hypar-fig6.png", "hypar-fig7.png"] and all(d.startswith(b"\x89PNG") for d in found.values())
    assert (tmp_path / "hypar-fig6.png").stat().st_mode & 0o777 == 0o600


def test_a_figure_that_cannot_be_written_is_one_line_and_writes_none(tmp_path, capsys, monkeypatch):
    """A full disk while figure 7 is drawn: exit 2, one line naming the file; figure 6 (drawn) is
    not written either, and no temp file is left."""
    import errno

    from explorer.app.reproduce import draw

    _old_figures(tmp_path)
    real = draw.draw

    def full(fig, path, accounting):
        if fig.number == 7:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(fig, path, accounting)

    monkeypatch.setattr(draw, "draw", full)
    code, _, err = run_cli(["reproduce", "hypar", *FIGS, "--out", str(tmp_path)], capsys)
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"explore: error: --out: cannot write {tmp_path}/.hypar-fig7.png.")
    assert err.endswith(": No space left on device; no figure written\n")
    assert _files(tmp_path) == {f"hypar-fig{n}.png": OLD for n in (6, 7)}


@pytest.mark.parametrize("theirs", [b"my notes\n", png(("Comment", "my own figure")), b""],
                         ids=["text", "another PNG", "empty"])
def test_a_file_reproduce_did_not_write_is_refused_without_force(tmp_path, capsys, no_solving, theirs):
    """A file named hypar-fig7.png that reproduce did not write (no ``files.MARK`` chunk) is
    refused, one line naming it, before any point is solved; nothing is written."""
    (tmp_path / "hypar-fig7.png").write_bytes(theirs)
    code, out, err = run_cli(["reproduce", "hypar", *FIGS, "--out", str(tmp_path)], capsys)
    assert code == 2 and out == ""
    assert err == (f"explore: error: --out: {tmp_path / 'hypar-fig7.png'} was not written by explore reproduce: "
                   "replace it with --force, or move it away or choose another --out\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hypar-fig7.png"]
    assert (tmp_path / "hypar-fig7.png").read_bytes() == theirs


def test_force_replaces_it_and_a_rerun_needs_no_force(tmp_path, capsys):
    """--force replaces a user's file; the PNG written is marked (``files.written_here``), so the
    same command again replaces it without --force."""
    (tmp_path / "hypar-fig6.png").write_text("my notes\n")
    args = ["reproduce", "hypar", "--figure", "6", "--out", str(tmp_path)]
    code, _, err = run_cli([*args, "--force"], capsys)
    assert code == 0, err
    assert files.written_here(tmp_path / "hypar-fig6.png")
    code, _, err = run_cli(args, capsys)
    assert code == 0, err
    assert not files.written_here(tmp_path / "hypar-fig7.png")  # (no such file)


def test_a_killed_runs_figure_temp_files_are_removed_and_nothing_else(tmp_path, capsys):
    """A run killed between drawing and renaming leaves ``.hypar-figN.png.XXXXXXXX.tmp`` files: the
    next run removes those (regular, older than the run) and keeps every other file."""
    import time

    old = [".hypar-fig6.png.abcd_123.tmp", ".hypar-fig13.png.zz99zz99.tmp"]
    keep = [".hypar-fig4.png.abcd1234.tmp", ".hypar-fig6.png.abc.tmp", "hypar-fig6.png.abcd1234.tmp",
            ".hypar-fig6.png.abcd1234.tmp.bak", ".hypar-fig7.png.newer123.tmp"]
    for name in old + keep:
        (tmp_path / name).write_text("x")
    past = time.time() - 3600
    for name in old + keep[:-1]:
        os.utime(tmp_path / name, (past, past))
    later = time.time() + 3600  # written after this run started (another run under way)
    os.utime(tmp_path / keep[-1], (later, later))
    (tmp_path / ".hypar-fig8.png.folder12.tmp").mkdir()
    (tmp_path / ".hypar-fig9.png.symlink1.tmp").symlink_to(tmp_path / keep[0])
    os.utime(tmp_path / ".hypar-fig9.png.symlink1.tmp", (past, past), follow_symlinks=False)
    code, _, err = run_cli(["reproduce", "hypar", "--figure", "6", "--out", str(tmp_path)], capsys)
    assert code == 0, err
    assert f"[explore] removed 2 leftover figure .tmp files of a stopped run (.hypar-figN.png.*.tmp in {tmp_path})\n" in err
    names = {p.name for p in tmp_path.iterdir()}
    assert not names & set(old)
    assert {*keep, ".hypar-fig8.png.folder12.tmp", ".hypar-fig9.png.symlink1.tmp", "hypar-fig6.png"} <= names


def test_a_folder_another_run_writes_into_is_refused(tmp_path, capsys, no_solving):
    """Reproduce holds DIR's lock (a sweep's, ``lock.folder_lock``) while it writes: another run
    writing there is the same one line (exit 2) as a second sweep, and nothing is written."""
    from explorer.app.sweep.lock import LOCK_NAME, folder_lock

    with folder_lock(tmp_path):
        code, out, err = run_cli(["reproduce", "hypar", *FIGS, "--out", str(tmp_path)], capsys)
        assert code == 2 and out == "" and err.count("\n") == 1
        assert f"--out: {tmp_path} is in use: another explore run (pid {os.getpid()})" in err
        assert sorted(p.name for p in tmp_path.iterdir()) == [LOCK_NAME]


def test_reproduce_into_a_sweeps_folder_writes_only_its_own_names(tmp_path, capsys):
    """Into a sweep's results folder, reproduce adds its figure and its .cache and changes nothing
    of the sweep's (results, plans, manifest, cache, plot); the sweep reruns there as before."""
    spec = tmp_path / "a.yaml"
    spec.write_text("version: 1\nname: a\ngrid: {model: [lenet-c], levels: [1, 2]}\n")
    out = tmp_path / "o"
    assert run_cli(["sweep", str(spec), "--out", str(out), "--workers", "1"], capsys)[0] == 0
    assert run_cli(["plot", str(out), "--x", "levels", "--y", "traffic_bytes"], capsys)[0] == 0

    def listing():
        return {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    before = listing()
    code, _, err = run_cli(["reproduce", "hypar", "--figure", "6", "--out", str(out)], capsys)
    assert code == 0, err
    after = listing()
    added = set(after) - set(before)
    assert {k: after[k] for k in before} == before
    assert "hypar-fig6.png" in added and all(n == "hypar-fig6.png" or n.startswith(".cache/") for n in added), added
    code, _, err = run_cli(["sweep", str(spec), "--out", str(out), "--workers", "1"], capsys)
    assert code == 0 and "2 reused from the cache" in err
    assert files.written_here(out / "hypar-fig6.png")
