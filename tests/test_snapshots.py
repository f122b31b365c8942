"""The documentation's examples, pinned: each ``$ explore ...`` block is stored under
tests/snapshots/ (wall times masked), the real CLI's output must equal it, and the README or a
page of docs/ must show it (tests/test_docs.py runs the other examples marked runnable).

A snapshot is the documentation's block: the command line, then what the terminal shows. Lines that
start with ``[explore] `` or ``explore: `` are stderr and must appear in the CLI's stderr in
that order (CP-SAT's progress lines may come between); every other line is stdout, compared
exactly. To refresh after an intended change: ``SNAPSHOT_UPDATE=1 python -m pytest
tests/test_snapshots.py``, then copy the new text into the page that shows it.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from explorer.app.cli import cli

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
README = ROOT / "README.md"
DOCS = ROOT / "docs"
API_PAGE = DOCS / "api.md"  # the Python API example

EXAMPLES = {  # snapshot file -> the example it pins (README.md or docs/*.md)
    "worked": "explore",
    "check-alexnet": "explore check --model alexnet --space accpar",
    "cap-dp": "explore --cap 3=55MB",
    "cap-cpsat": "explore --cap 3=55MB --solver cpsat --workers 1",
    "cap-conflict": "explore --cap 3=50MB --cap 0=80MB --solver cpsat",
    "check-resnet18": "explore check --model resnet18 --space accpar",
    "hypar-paper": "explore --model vgg-a --array hypar-paper",
}
NOT_PINNED: dict[str, str] = {}  # examples too slow for the suite are marked <!-- not-runnable: ... -->
STDERR = ("[explore] ", "explore: ")


def mask(text: str) -> str:
    """Wall times vary from run to run: 'wall 971 us' in explore's header, the check table's column."""
    text = re.sub(r"wall \d+(?:\.\d+)? (?:us|ms|s)$", "wall <wall>", text, flags=re.M)
    return re.sub(r" +\d+\.\d{3}s$", "  <wall>", text, flags=re.M)


def doc_pages() -> list[Path]:
    """The README and the site's pages (drafts under docs/_incoming/ are not pages)."""
    return [README, *sorted(p for p in DOCS.rglob("*.md") if "_incoming" not in p.parts)]


def readme_examples() -> dict[str, str]:
    """'$ explore ...' code blocks of the README and docs/: command -> the block's text (masked)."""
    text = "\n".join(p.read_text() for p in doc_pages())
    # a block marked <!-- runnable --> or <!-- not-runnable: ... --> is tests/test_docs.py's
    blocks = re.findall(r"(?<!-->\n)^```\n(\$ explore.*?)^```$", text, flags=re.S | re.M)
    return {b.splitlines()[0][2:]: mask(b) for b in blocks}


def invoke(command: str) -> tuple[int, str, str]:
    args = shlex.split(command)[1:]
    try:
        runner = CliRunner(mix_stderr=False)  # click 8.1
    except TypeError:
        runner = CliRunner()  # click >= 8.2 keeps stderr apart
    result = runner.invoke(cli, args, prog_name="explore")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def split_streams(block: str) -> tuple[str, list[str]]:
    lines = block.splitlines()[1:]
    out = [x for x in lines if not x.startswith(STDERR)]
    err = [x for x in lines if x.startswith(STDERR)]
    return "\n".join(out) + "\n", err


def is_subsequence(wanted: list[str], lines: list[str]) -> bool:
    it = iter(lines)
    return all(any(w == x for x in it) for w in wanted)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_cli_output_matches_snapshot(name):
    command = EXAMPLES[name]
    path = SNAPSHOTS / f"{name}.txt"
    code, out, err = invoke(command)
    if os.environ.get("SNAPSHOT_UPDATE"):
        shown = [x for x in mask(err).splitlines() if x.startswith(STDERR) and "cpsat: plan at" not in x
                 and (x.startswith("explore: ") or "solving" in x)]
        head = [x for x in shown if x.startswith("[explore] ")]
        tail = [x for x in shown if x.startswith("explore: ")]
        path.write_text("\n".join([f"$ {command}", *head, *mask(out).splitlines(), *tail]) + "\n")
    snapshot = path.read_text()
    assert snapshot.splitlines()[0] == f"$ {command}"
    want_out, want_err = split_streams(snapshot)
    assert mask(out) == want_out
    assert is_subsequence(want_err, mask(err).splitlines()), err
    assert code == (1 if name in ("cap-dp", "cap-conflict") else 0)


def test_readme_shows_every_snapshot():
    examples = readme_examples()
    for name, command in EXAMPLES.items():
        assert command in examples, f"no page shows the example '$ {command}'"
        assert examples[command] == (SNAPSHOTS / f"{name}.txt").read_text(), f"README example '{command}' != {name}.txt"
    unpinned = set(examples) - set(EXAMPLES.values())
    assert unpinned == set(NOT_PINNED), "an example without a snapshot: add it to EXAMPLES"


def test_masking_keeps_everything_but_wall_times():
    assert mask("solver dp: level-optimal (objective traffic), wall 971 us\n") == \
        "solver dp: level-optimal (objective traffic), wall <wall>\n"
    row = "  cpsat   optimal                   105,384,416           105,384,416      0.196s"
    assert mask(row) == "  cpsat   optimal                   105,384,416           105,384,416  <wall>"
    assert mask("fc6  fc7  fc8  c_h (elements)\n") == "fc6  fc7  fc8  c_h (elements)\n"


def python_api_example() -> tuple[str, str]:
    """The Python API page's first python block and the output block after it."""
    section = API_PAGE.read_text()
    section = section[: section.index("\n## ", 1)]
    code, output = re.findall(r"^```(?:python)?\n(.*?)^```$", section, flags=re.S | re.M)[:2]
    return code, output


def test_readme_python_api_example():
    code, expected = python_api_example()
    assert (SNAPSHOTS / "python-api.txt").read_text() == expected
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, "docs/api.md (Python API)", "exec"), {})
    assert buf.getvalue() == expected
