"""Imports flow one way: core <- frontends, core <- solvers, then the application, the API
(``explorer.api``) and the CLI (``explorer.app.cli*``) on top, and no module imports itself
back through any chain of imports.

Every import in every module (function-level ones too) is parsed and resolved to the layer
it names; an edge that runs against the layering fails the test, and so does any import cycle
(a strongly connected component of the module graph), even within one layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# folder -> the package it installs as
PACKAGES = {ROOT / "explorer": "explorer", ROOT / "solvers": "explorer.solvers"}
ALLOWED = {
    "core": {"core"},
    "frontends": {"core", "frontends"},
    "solvers": {"core", "solvers"},
    "app": {"core", "frontends", "solvers", "app", "top"},
    "api": {"core", "frontends", "solvers", "app", "api", "top"},
    "cli": {"core", "frontends", "solvers", "app", "api", "cli", "top"},
    "top": set(),
}
# modules at the top of the package that belong to a layer (explorer/__init__.py stays "top")
TOP_LEVEL_MODULES = {"api": "api"}
# the command line: above the API (it parses options, prints, picks the exit status)
CLI_MODULES = ("explorer.app.cli", "explorer.app.cli_common", "explorer.app.cli_sweep", "explorer.app.cli_ticker",
               "explorer.app.reproduce.cli")


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "explorer":
        return None  # the standard library or a third-party package
    if len(parts) == 1:
        return "top"
    if any(module == m or module.startswith(m + ".") for m in CLI_MODULES):
        return "cli"
    if parts[1] in TOP_LEVEL_MODULES:
        return TOP_LEVEL_MODULES[parts[1]]
    return parts[1] if parts[1] in ALLOWED else "top"


def modules():
    for folder, package in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([package, *parts])
            yield name, path, path.name == "__init__.py"


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """The nodes under ``if TYPE_CHECKING:`` (annotations only: no import at run time)."""
    out = set()
    for node in ast.walk(tree):
        test = getattr(node, "test", None) if isinstance(node, ast.If) else None
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
                (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            out |= {id(x) for stmt in node.body for x in ast.walk(stmt)}
    return out


def imported(name: str, path: Path, is_package: bool, typing: bool = True) -> set[str]:
    """The modules (and names) a module imports; ``typing=False`` leaves out ``if TYPE_CHECKING:`` imports."""
    out = set()
    tree = ast.parse(path.read_text(), str(path))
    skip = set() if typing else _type_checking_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            out.add(target)
            # "from . import x" / "from ..solvers import cpsat": the names may be modules too
            out.update(f"{target}.{alias.name}" for alias in node.names)
    return out


MODULES = list(modules())


def test_every_module_has_a_layer():
    assert len(MODULES) > 30
    for name, path, _ in MODULES:
        assert layer_of(name) in ALLOWED, name


@pytest.mark.parametrize("name,path,is_package", MODULES, ids=[m[0] for m in MODULES])
def test_imports_flow_one_way(name, path, is_package):
    mine = layer_of(name)
    for target in imported(name, path, is_package):
        theirs = layer_of(target)
        if theirs is None or target == "explorer":
            continue
        assert theirs in ALLOWED[mine] or theirs == mine, f"{name} ({mine}) imports {target} ({theirs})"


def test_the_checker_sees_a_backward_edge(tmp_path):
    """The test would fail: a core module importing a solver is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("from ..solvers import dp\nimport explorer.app.run\nimport explorer.app.cli\n")
    targets = imported("explorer.core.bad", bad, False)
    assert {layer_of(t) for t in targets} >= {"solvers", "app", "cli"}


def test_api_is_above_the_application_and_the_package_imports_nothing():
    """explorer.api may use app, solvers, frontends and core; explorer/__init__.py imports nothing."""
    assert layer_of("explorer.api") == "api" and layer_of("explorer.api.solve") == "api"
    assert "api" not in ALLOWED["app"] and "cli" not in ALLOWED["api"]
    assert layer_of("explorer.app.cli") == layer_of("explorer.app.cli_sweep.attach") == "cli"
    assert layer_of("explorer") == "top" and layer_of("explorer.__version__") == "top"
    api = next((name, path, pkg) for name, path, pkg in MODULES if name == "explorer.api")
    request = next((name, path, pkg) for name, path, pkg in MODULES if name == "explorer.app.request")
    assert {layer_of(t) for t in imported(*api)} >= {"app", "core"}  # build_problem and solve: app.request
    assert {layer_of(t) for t in imported(*request)} >= {"core", "frontends", "solvers"}
    init = ROOT / "explorer" / "__init__.py"
    assert imported("explorer", init, True) == set()
    # a core module importing the API is caught like any backward edge
    assert layer_of("explorer.api") not in ALLOWED["core"]


def graph(mods) -> dict[str, set[str]]:
    """module -> the modules it imports at run time (each import resolved to the longest module name
    it starts with; imports under ``if TYPE_CHECKING:`` never run, so they make no cycle)."""
    names = {name for name, _, _ in mods}
    out = {}
    for name, path, is_package in mods:
        edges = set()
        for target in imported(name, path, is_package, typing=False):
            while target and target not in names:
                target = target.rpartition(".")[0]
            if target and target != name:
                edges.add(target)
        out[name] = edges
    return out


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_no_import_cycles():
    """No chain of imports (function-level ones count) leads from a module back to itself."""
    assert cycles(graph(MODULES)) == []


def test_the_checker_sees_a_cycle(tmp_path):
    """The test would fail: a cycle within one layer, through a function-level import, is caught."""
    a, b, c = tmp_path / "a.py", tmp_path / "b.py", tmp_path / "c.py"
    a.write_text("from . import b\n")
    b.write_text("def f():\n    from .c import g\n")
    c.write_text("from .a import x\n")
    mods = [("explorer.app.a", a, False), ("explorer.app.b", b, False), ("explorer.app.c", c, False)]
    assert cycles(graph(mods)) == [["explorer.app.a", "explorer.app.b", "explorer.app.c"]]
    c.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import x\n")
    assert cycles(graph(mods)) == []


def test_no_generic_top_level_packages_installed(tmp_path):
    """pyproject installs everything under explorer; outside the checkout no generic package imports."""
    import subprocess
    import sys
    import tomllib

    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert all(p == "explorer" or p.startswith("explorer.") for p in setup["packages"])
    code = "import importlib.util as u; print([n for n in ('models', 'spaces', 'solvers') if u.find_spec(n)])"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    code = "from explorer.frontends import zoo; print(len(zoo.zoo_files()), len(zoo.array_files()))"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    n_models, n_arrays = map(int, out.stdout.split())
    assert n_models >= 14 and n_arrays >= 3


def test_version_matches_pyproject():
    import tomllib

    import explorer

    assert explorer.__version__ == tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_reproduce_points_do_not_depend_on_the_sweep():
    """``explore reproduce``'s point cache keys on ``app.code_stamp`` as the sweep cache does: its
    solving modules import nothing of app.sweep (points.py did, for ``code_stamp`` alone; the
    figures' drawing, draw.py, shares the sweep plots' pyplot and layout)."""
    g = graph(MODULES)
    for name in ("explorer.app.reproduce.points", "explorer.app.reproduce.hypar", "explorer.app.reproduce.paper"):
        assert not [t for t in g[name] if t.startswith("explorer.app.sweep")], name
    assert "explorer.app.code_stamp" in g["explorer.app.reproduce.points"] and \
        "explorer.app.code_stamp" in g["explorer.app.sweep.cache"]
