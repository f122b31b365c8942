"""The names the manual gives exist: files, modules, functions, constants, options.

The README and docs/ (drafts under docs/_incoming/ aside) name code in these ways, each checked
against the tree:

- a path such as ``solvers/pruned.py`` or ``models/mixtral-*.yaml`` (a glob): it exists;
- a dotted name in backticks: ``explorer.core.llm_memory`` or ``explorer.core.uneven.spec_of`` (a
  module of the tree, then a name it defines or imports), or ``costs.chain_sizes`` (a module's
  file stem, then a name one of the modules of that stem defines or imports);
- ``Class.name`` in backticks: a class of explorer/ or solvers/ that defines the name (or a base does);
- a bare name in backticks that looks like code (``snake_case`` with an underscore,
  ``CamelCase``, ``UPPER_CASE``): the word occurs somewhere in the code or the shipped data;
- ``python bench/X.py --option``: the script exists and mentions the option;
- ``explore [COMMAND] ... --option`` (a code span or a shell line): the command takes the option
  (click's own lists).

The README's links to files of the repository exist. A name that is not the project's (another
library's module, a maths symbol written as code) or that a dated log in docs/benchmarks.md
names as it was then goes in ``NOT_CHECKED`` with the reason.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE_DIRS = ("explorer", "solvers", "bench", "tests")
DATA_DIRS = ("models", "spaces")

NOT_CHECKED = {
    "onnx.inliner": "the onnx package's module (specs.md), not explorer/frontends/onnx.py",
    "onnx.reference": "the onnx package's module (specs.md)",
    "tau_s": "a symbol of the bound's derivation (derivations.md)",
    "LinearExpr.weighted_sum": "OR-Tools' class (benchmarks.md)",
    "QuantFormat.QDQ": "onnxruntime's enum (specs.md)",
    # docs/benchmarks.md's dated logs name what the code had then:
    "dp._eliminate": "benchmarks.md: before the graph DP moved to solvers/dp_graph.py",
    "costs.ROWS_IN_PYTHON_BELOW": "benchmarks.md: before thresholds.NUMPY_FROM_LAYERS",
    "ROWS_IN_PYTHON_BELOW": "benchmarks.md: before thresholds.NUMPY_FROM_LAYERS",
    "dp.VECTORISE_FROM": "benchmarks.md: before thresholds.NUMPY_FROM_LAYERS",
    "evaluate.VECTORISE_FROM": "benchmarks.md: before thresholds.NUMPY_FROM_LAYERS",
    "evaluate_uneven": "benchmarks.md: before the evaluators merged into evaluate_split",
    "solvers/uneven_lagrangian.py": "benchmarks.md: the path it says is gone",
    "docs/_incoming": "architecture.md: the drafts' folder, absent when there are none",
}

PATH = re.compile(r"(?<![\w/.-])((?:explorer|solvers|bench|tests|models|spaces|docs)/[\w./*-]*[\w*])")
CODE_SPAN = re.compile(r"`+([^`\n]+?)`+")
DOTTED = re.compile(r"[a-z_][a-z0-9_]*(?:\.[A-Za-z_]\w*)+")
CLASS_ATTR = re.compile(r"([A-Z]\w*)\.([A-Za-z_]\w*)")
BARE = re.compile(r"[a-z][a-z0-9]*_[a-z0-9_]*[a-z0-9]|[A-Z][a-z]+[A-Z]\w*|[A-Z][A-Z0-9]*_[A-Z0-9_]+")
FILE_SUFFIXES = {"py", "csv", "md", "yaml", "yml", "json", "jsonl", "onnx", "png", "svg", "txt", "pb", "pbtxt", "toml"}
BENCH = re.compile(r"python3? bench/(\w+)\.py((?:[ \n]+(?!python)[^\s`]+)*)")
LINK = re.compile(r"\]\(((?!https?:)[^)#\s]+)(?:#[^)]*)?\)")


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "_incoming" not in p.parts)]


@functools.cache
def modules() -> dict[str, list[Path]]:
    """File stem -> the tree's Python files of that stem."""
    found: dict[str, list[Path]] = {}
    for d in CODE_DIRS:
        for f in (ROOT / d).rglob("*.py"):
            if ".venv" not in f.parts:
                found.setdefault(f.stem, []).append(f)
    return found


@functools.cache
def defined(f: Path) -> frozenset[str]:
    """Names a module defines at any depth (functions, classes, assignments) or imports."""
    names = set()
    for n in ast.walk(ast.parse(f.read_text())):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, (ast.Assign, ast.AnnAssign)):
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                names.update(x.id for x in ast.walk(t) if isinstance(x, ast.Name))
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in n.names)
    return frozenset(names)


@functools.cache
def words() -> frozenset[str]:
    """Every word of the code and the shipped data."""
    text = []
    for d in CODE_DIRS + DATA_DIRS:
        for f in (ROOT / d).rglob("*"):
            if f.is_file() and f.suffix in (".py", ".yaml", ".yml", ".json", ".toml", ".txt", ".csv") \
                    and f.resolve() != Path(__file__).resolve():  # this file names what is not there
                text.append(f.read_text(errors="replace"))
    text.append((ROOT / "pyproject.toml").read_text())
    return frozenset(re.findall(r"\w+", "\n".join(text)))


@functools.cache
def classes() -> dict[str, frozenset[str]]:
    """Class name -> the names its body defines, its bases' included (by name, within the tree)."""
    own: dict[str, set[str]] = {}
    bases: dict[str, set[str]] = {}
    for d in ("explorer", "solvers"):
        for f in (ROOT / d).rglob("*.py"):
            for n in ast.walk(ast.parse(f.read_text())):
                if isinstance(n, ast.ClassDef):
                    names = own.setdefault(n.name, set())
                    bases.setdefault(n.name, set()).update(b.id for b in n.bases if isinstance(b, ast.Name))
                    for b in ast.walk(n):
                        if isinstance(b, (ast.FunctionDef, ast.ClassDef)):
                            names.add(b.name)
                        elif isinstance(b, (ast.Assign, ast.AnnAssign)):
                            for t in (b.targets if isinstance(b, ast.Assign) else [b.target]):
                                names.update(x.id for x in ast.walk(t) if isinstance(x, ast.Name))
                                names.update(x.attr for x in ast.walk(t) if isinstance(x, ast.Attribute))

    def closure(c: str, seen: frozenset = frozenset()) -> set[str]:
        out = set(own.get(c, ()))
        for b in bases.get(c, set()) - seen - {c}:
            out |= closure(b, seen | {c})
        return out
    return {c: frozenset(closure(c)) for c in own}


def module_file(parts: list[str]) -> tuple[Path, list[str]] | None:
    """The longest prefix of a dotted explorer.* name that is a module or package, and the rest.
    ``explorer.solvers`` is the top-level solvers/ folder (installed under that name)."""
    if parts[:2] == ["explorer", "solvers"]:
        parts = parts[1:]
    for k in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:k])
        for f in (base.with_suffix(".py"), base / "__init__.py"):
            if f.exists():
                return f, parts[k:]
    return None


def dotted_ok(name: str) -> bool:
    head, _, attr = name.rpartition(".")
    if attr in FILE_SUFFIXES:  # a file named by stem and suffix: `llm_run.py`
        return attr != "py" or head.rsplit(".", 1)[-1] in modules() or (ROOT / name).exists()
    parts = name.split(".")
    if parts[0] in ("core", "app", "frontends") and len(parts) > 2:  # `core.uneven.spec_of`
        parts = ["explorer", *parts]
    if parts[0] == "solvers" and len(parts) > 2:  # `solvers.dp.graph_level`
        parts = ["explorer", *parts]
    if parts[0] == "explorer":
        found = module_file(parts)
        return found is not None and (not found[1] or found[1][0] in defined(found[0]))
    if len(parts) == 2 and parts[0] in modules():
        return any(parts[1] in defined(f) for f in modules()[parts[0]])
    return True  # not a module of the tree (a field, an attribute of an object): not checked


def path_ok(path: str) -> bool:
    path = path.rstrip(".")
    return any(ROOT.glob(path)) if "*" in path else (ROOT / path).exists()


def problems_of(page: Path) -> list[str]:
    rel = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page.name
    text = page.read_text()
    found = []
    for i, line in enumerate(text.splitlines(), 1):
        for m in PATH.finditer(line):
            if m.group(1).rstrip(".") not in NOT_CHECKED and not path_ok(m.group(1)):
                found.append(f"{rel}:{i}: no file {m.group(1)}")
        for m in CODE_SPAN.finditer(line):
            s = re.sub(r"\(.*\)$", "", m.group(1).strip())
            if s in NOT_CHECKED:
                continue
            m2 = CLASS_ATTR.fullmatch(s)
            if m2 and m2.group(2) not in classes().get(m2.group(1), ()):
                found.append(f"{rel}:{i}: no class {m2.group(1)} with {m2.group(2)}")
            elif DOTTED.fullmatch(s) and not dotted_ok(s):
                found.append(f"{rel}:{i}: no such name {s}")
            elif BARE.fullmatch(s) and s not in words():
                found.append(f"{rel}:{i}: {s} occurs nowhere in the code or data")
    for m in BENCH.finditer(text):
        script = ROOT / "bench" / f"{m.group(1)}.py"
        line = text.count("\n", 0, m.start()) + 1
        if not script.exists():
            found.append(f"{rel}:{line}: no script {script.relative_to(ROOT)}")
            continue
        source = script.read_text()
        found += [f"{rel}:{line}: {script.name} has no option {o}"
                  for o in re.findall(r"(?<![\w-])--[a-z][\w-]*", m.group(2)) if o not in source]
    return found


def test_the_manuals_names_exist():
    problems = [p for page in pages() for p in problems_of(page)]
    assert not problems, "\n".join(problems)


def test_the_readmes_links_to_files_exist():
    readme = ROOT / "README.md"
    missing = [m.group(1) for m in LINK.finditer(readme.read_text()) if not (ROOT / m.group(1)).exists()]
    assert not missing, missing


def test_the_check_catches_stale_names(tmp_path):
    """Each kind of reference is caught when it names nothing (so the test above can fail)."""
    page = tmp_path / "stale.md"
    stale = ["solvers/no_such_module.py", "`explorer.core.llm_memory.no_such_function`", "`solvers.dp.no_such_level`",
             "`explorer.core.no_such_module`", "`no_such_helper_anywhere`", "`python bench/bench_dp.py --no-such-option`",
             "`python bench/bench_no_such_script.py`", "`costs.no_such_table`",
             "`SplitCosts.no_such_method`"]
    fine = ["solvers/pruned.py", "`explorer.core.llm_memory.stage_memory`", "`costs.chain_sizes`", "`core.uneven.spec_of`",
            "`SplitCosts.edges_into`", "`Status.OPTIMAL`",
            "`explorer.solvers.dp`", "models/mixtral-*.yaml", "`llm_run.py`", "`python bench/bench_dp.py --quick`"]
    page.write_text("\n".join(stale + fine) + "\n")
    found = problems_of(page)
    assert sorted({int(p.split(":")[1]) for p in found}) == list(range(1, len(stale) + 1)), found


EXPLORE = re.compile(r"(?:^|`|\$ )(explore(?: [^`]*)?)(?:`|$)")


def cli_options(command, path: str = "explore") -> dict[str, set[str]]:
    """Command path ('explore', 'explore check', ...) -> the options it takes."""
    import click

    found = {path: {o for p in command.params for o in p.opts + p.secondary_opts if o.startswith("--")}}
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            found.update(cli_options(sub, f"{path} {name}"))
            if sub.hidden:  # the group's default command (explore sweep FILE is explore sweep run FILE)
                found[path] |= found[f"{path} {name}"]
    return found


def options_problems(page: Path, known: dict[str, set[str]]) -> list[str]:
    """An ``explore ...`` command line (a code span or a shell line) whose options its command
    does not take; the command is the longest known prefix of its words."""
    found = []
    for i, line in enumerate(page.read_text().splitlines(), 1):
        for m in EXPLORE.finditer(line):
            words = m.group(1).split()
            path = "explore"
            for w in words[1:]:
                if f"{path} {w}" not in known:
                    break
                path = f"{path} {w}"
            found += [f"{page.name}:{i}: `{path}` takes no {o}" for o in re.findall(r"(?<![\w-])--[a-z][\w-]*", m.group(1))
                      if o not in known[path] and o != "--help"]
    return found


def test_the_manuals_explore_options_exist():
    from explorer.app.cli import cli

    known = cli_options(cli)
    problems = [p for page in pages() for p in options_problems(page, known)]
    assert not problems, "\n".join(problems)


def test_the_options_check_catches_a_wrong_option(tmp_path):
    from explorer.app.cli import cli

    page = tmp_path / "options.md"
    page.write_text("`explore split --model alexnet --gpus 8`\n$ explore sweep s.yaml --out d --no-such\n"
                    "`explore --model vgg-a --gpus 8`\n$ explore sweep s.yaml --out d --shard 0/2\n"
                    "`explore check --uneven --alpha-grid 4`\n`explore check --solver exact`\n")
    found = options_problems(page, cli_options(cli))
    assert found == ["options.md:1: `explore split` takes no --gpus", "options.md:2: `explore sweep` takes no --no-such",
                     "options.md:6: `explore check` takes no --solver"]
