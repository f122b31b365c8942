"""The documentation stays true: its shell examples run, and the site builds.

A shell example is a fenced block whose first line starts with ``$ ``: the command, then what
the terminal shows, then maybe more commands. Each one in the README or docs/ (drafts under
docs/_incoming/ aside) is one of:

- pinned: the block is a snapshot of tests/snapshots/ (tests/test_snapshots.py runs it and
  compares it exactly);
- runnable: an HTML comment ``<!-- runnable -->`` on the line before the block. This test runs
  each command with bash in a scratch folder (``models/`` and ``spaces/`` linked in, the
  explorer on PATH), one folder per block so a later command sees an earlier one's files, and
  compares the output's shape: after masking wall times (``wall 1.2 ms``, the check tables'
  wall column, a sweep's ``in 0.7 s``) and squeezing runs of spaces, every line shown must be
  the line printed, in order; a line ``...`` stands for any number of lines. Lines starting
  with ``[explore] `` or ``explore: `` are stderr (matched in order among stderr's lines),
  the others stdout. Options after a colon: ``exit=N`` (the last command's exit status; the
  others must exit 0), ``merged`` (the shown output is stdout then stderr, for commands whose stderr has no
  prefix, such as a sweep's summary line);
- not runnable: ``<!-- not-runnable: why -->`` before the block (too slow for the suite, or
  it needs a cluster).

Keep runnable examples fast: this whole module has a budget of 30 s.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
STDERR = ("[explore] ", "explore: ")
MARKER = re.compile(r"^<!-- (runnable|not-runnable)(?::\s*(.*?))?\s*-->$")
FENCE = re.compile(r"^```")


@dataclass(frozen=True)
class Example:
    page: str  # path relative to the repository, e.g. docs/commands.md
    line: int  # 1-based line of the block's first command
    marker: str | None  # "runnable", "not-runnable" or None
    options: str  # what follows the marker's colon
    body: str  # the block's text, without its fences


@dataclass(frozen=True)
class Step:
    command: str  # as bash reads it (continuation lines joined)
    shown: list[str]  # what the page shows after it


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(p for p in DOCS.rglob("*.md") if "_incoming" not in p.parts)]


def shell_examples() -> list[Example]:
    """Every fenced block of the README and docs/ whose first line starts with '$ '."""
    found = []
    for page in pages():
        lines = page.read_text().splitlines()
        i = 0
        while i < len(lines):
            if not FENCE.match(lines[i]):
                i += 1
                continue
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines))
            body = lines[i + 1:end]
            if body and body[0].startswith("$ "):
                m = MARKER.match(lines[i - 1]) if i > 0 else None
                found.append(Example(str(page.relative_to(ROOT)), i + 2, m and m.group(1),
                                     (m and m.group(2)) or "", "\n".join(body) + "\n"))
            i = end + 1
    return found


def steps(body: str) -> list[Step]:
    """A block's commands ('$ ' lines; a trailing backslash continues one, a here-document
    (<<'EOF') runs to its end line) and what the page shows after each."""
    out: list[Step] = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        command = lines[i][2:]
        while command.endswith("\\") and i + 1 < len(lines):
            i += 1
            command = command[:-1] + " " + lines[i].strip()
        i += 1
        heredoc = re.search(r"<<-?\s*'?\"?(\w+)", command)
        if heredoc:
            while i < len(lines):
                command += "\n" + lines[i]
                i += 1
                if lines[i - 1] == heredoc.group(1):
                    break
        shown = []
        while i < len(lines) and not lines[i].startswith("$ "):
            shown.append(lines[i])
            i += 1
        out.append(Step(command, shown))
    return out


def mask(text: str) -> str:
    """Wall times vary from run to run; everything else is compared."""
    text = re.sub(r"wall \d+(?:\.\d+)? (?:us|ms|s)\b", "wall <wall>", text)
    text = re.sub(r"\(search \d+\.\d+ s\)", "(search <wall>)", text)  # the LLM planner's own part of its wall
    text = re.sub(r" +\d+\.\d{3}s$", "  <wall>", text, flags=re.M)  # explore check's wall column
    text = re.sub(r" in \d+(?:\.\d+)? s\b", " in <wall> s", text)  # a sweep's summary line
    return _mask_wall_column(text)


def _mask_wall_column(text: str) -> str:
    """A table whose header has a 'solve s' column (check --uneven): its numbers end under the header's."""
    lines = text.splitlines()
    end = None
    for k, line in enumerate(lines):
        if "solve s" in line:
            end = line.index("solve s") + len("solve s")
        elif not line.strip():
            end = None
        elif end is not None:
            cell = next((m for m in re.finditer(r"\d+\.\d+", line) if m.end() == end), None)
            if cell:
                lines[k] = line[:cell.start()] + "<wall>" + line[cell.end():]
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def squeeze(line: str) -> str:
    return re.sub(r" +", " ", line.rstrip())


def matches(shown: list[str], printed: list[str]) -> bool:
    """Every shown line equals the printed one in order; '...' stands for any number of lines."""
    shown = [squeeze(x) for x in mask("\n".join(shown)).splitlines()]
    printed = [squeeze(x) for x in mask("\n".join(printed)).splitlines()]

    def match(s: int, p: int) -> bool:
        if s == len(shown):
            return p == len(printed)
        if shown[s] == "...":
            return any(match(s + 1, q) for q in range(p, len(printed) + 1))
        return p < len(printed) and shown[s] == printed[p] and match(s + 1, p + 1)

    return match(0, 0)


def is_subsequence(wanted: list[str], lines: list[str]) -> bool:
    it = iter(lines)
    return all(any(w == x for x in it) for w in wanted)


def pinned(example: Example) -> bool:
    masked = re.sub(r"wall \d+(?:\.\d+)? (?:us|ms|s)$", "wall <wall>", example.body, flags=re.M)
    masked = re.sub(r" +\d+\.\d{3}s$", "  <wall>", masked, flags=re.M)
    return any(masked == p.read_text() for p in SNAPSHOTS.glob("*.txt"))


EXAMPLES = shell_examples()
RUNNABLE = [e for e in EXAMPLES if e.marker == "runnable"]


def test_every_shell_example_is_pinned_runnable_or_says_why_not():
    loose = [f"{e.page}:{e.line}" for e in EXAMPLES if e.marker is None and not pinned(e)]
    assert not loose, f"shell examples neither pinned, marked runnable nor not-runnable: {loose}"
    assert all(e.options for e in EXAMPLES if e.marker == "not-runnable"), "not-runnable needs a reason"
    assert len(RUNNABLE) >= 5


def scratch(tmp_path: Path) -> dict[str, str]:
    for name in ("models", "spaces"):
        (tmp_path / name).symlink_to(ROOT / name)
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["COLUMNS"] = "200"
    return env


@pytest.mark.parametrize("example", RUNNABLE, ids=[f"{e.page}:{e.line}" for e in RUNNABLE])
def test_runnable_example_prints_what_the_page_shows(example, tmp_path):
    options = dict(o.partition("=")[::2] for o in example.options.split())
    env = scratch(tmp_path)
    block = steps(example.body)
    for k, step in enumerate(block):
        r = subprocess.run(["bash", "-c", step.command], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=60)
        where = f"{example.page}:{example.line}: $ {step.command}"
        status = int(options.get("exit", 0)) if k == len(block) - 1 else 0
        assert r.returncode == status, f"{where}: exit {r.returncode}\n{r.stderr}"
        if "merged" in options:
            assert matches(step.shown, (r.stdout + r.stderr).splitlines()), f"{where}\n{r.stdout}{r.stderr}"
            continue
        want_err = [x for x in step.shown if x.startswith(STDERR)]
        want_out = [x for x in step.shown if not x.startswith(STDERR)]
        assert matches(want_out, r.stdout.splitlines()), f"{where}: stdout differs:\n{r.stdout}"
        got_err = mask(r.stderr).splitlines()
        assert is_subsequence([mask(x).rstrip("\n") for x in want_err], got_err), f"{where}: stderr:\n{r.stderr}"


def test_shape_check_masks_walls_and_nothing_else():
    assert matches(["solver dp: level-optimal (objective traffic), wall 971 us"],
                   ["solver dp: level-optimal (objective traffic), wall 1.25 ms"])
    assert not matches(["solver dp: level-optimal (objective traffic), wall 971 us"],
                       ["solver dp: optimal (objective traffic), wall 971 us"])
    header = "solver       status       step time        bound      gap  solve s  note"
    row = "joint        optimal     23.3741 us   23.3741 us   0.000%{:>9}"
    assert matches([header, row.format("1.441")], [header, row.format("12.710")])
    assert not matches([header, row.format("1.441")], [header, row.replace("23.3741 us ", "23.3742 us ").format("1.441")])
    assert not matches(["gap 0.000%"], ["gap 0.001%"])
    llm = "status: optimal over the layouts (...), wall {} (search {}); its tensor-level block types: proven"
    assert matches([llm.format("1.13 s", "0.52 s")], [llm.format("0.57 s", "0.05 s")])  # the LLM planner's two walls
    assert not matches([llm.format("1.13 s", "0.52 s")], [llm.replace("proven", "not proven").format("1.13 s", "0.52 s")])
    assert matches(["a", "...", "z"], ["a", "b", "c", "z"]) and matches(["a", "...", "z"], ["a", "z"])
    assert not matches(["a", "z"], ["a", "b", "z"]) and not matches(["a", "...", "z"], ["a", "b"])
    assert matches(["sweep s: 4 points in 0.7 s; wrote x"], ["sweep s: 4 points in 12.3 s; wrote x"])


def test_a_block_reads_continuations_and_here_documents():
    body = "$ cat > a.yaml <<'EOF'\nversion: 1\n$ not a command\nEOF\n$ explore --model a.yaml \\\n    --levels 2\nout\n"
    got = steps(body)
    assert [s.command for s in got] == ["cat > a.yaml <<'EOF'\nversion: 1\n$ not a command\nEOF",
                                        "explore --model a.yaml  --levels 2"]
    assert [s.shown for s in got] == [[], ["out"]]


def test_the_site_builds_strictly(tmp_path):
    """``mkdocs build --strict``: every page, link, anchor, API page and the CLI reference."""
    pytest.importorskip("mkdocs", reason="MkDocs is not installed (pip install -e '.[test]' or '.[docs]')")
    # The test extra has MkDocs without the Material theme: then MkDocs' own theme, same checks.
    theme = [] if importlib.util.find_spec("material") else ["--theme", "mkdocs"]
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", *theme, "--site-dir", str(tmp_path / "site")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "WARNING" not in r.stderr, r.stderr[-3000:]
    built = tmp_path / "site"
    for page in ("index.html", "model/index.html", "cli-reference/index.html", "api/index.html"):
        assert (built / page).exists(), page
    assert "explore check" in (built / "cli-reference/index.html").read_text()
    api = (built / "api/index.html").read_text()
    assert "RunResult" in api and "CheckReport" in api  # the docstrings were rendered
    assert not (built / "_incoming").exists()
