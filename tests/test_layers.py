"""Imports flow one way: core <- frontends, core <- solvers, and the application on top.

Every import in every module (function-level ones too) is parsed and resolved to the layer
it names; an edge that runs against the layering fails the test.
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
    "top": set(),
}
# modules at the top of the package that belong to a layer (explorer/__init__.py stays "top")
TOP_LEVEL_MODULES = {"api": "app"}


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "explorer":
        return None  # the standard library or a third-party package
    if len(parts) == 1:
        return "top"
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


def imported(name: str, path: Path, is_package: bool) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
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
    bad.write_text("from ..solvers import dp\nimport explorer.app.cli\n")
    targets = imported("explorer.core.bad", bad, False)
    assert {layer_of(t) for t in targets} >= {"solvers", "app"}


def test_api_is_application_layer_and_the_package_imports_nothing():
    """explorer.api may use app, solvers, frontends and core; explorer/__init__.py imports nothing."""
    assert layer_of("explorer.api") == "app" and layer_of("explorer.api.solve") == "app"
    assert layer_of("explorer") == "top" and layer_of("explorer.__version__") == "top"
    api = next((name, path, pkg) for name, path, pkg in MODULES if name == "explorer.api")
    assert {layer_of(t) for t in imported(*api)} >= {"app", "core", "frontends", "solvers"}
    init = ROOT / "explorer" / "__init__.py"
    assert imported("explorer", init, True) == set()
    # a core module importing the API is caught like any backward edge
    assert layer_of("explorer.api") not in ALLOWED["core"]


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
