"""verifier/ is a tree of stage packages in a declared order, and its imports form a DAG.

Stages (STAGES, earliest first; docs/design.md shows the same list): a module imports only from its own stage
and earlier ones, so the flow spec -> inputs -> launch -> judge -> battery -> isolation -> report reads top-down
from the tree. The few top-level modules belong to a stage too (TOP).

No module reaches itself through its imports either.

The graph is built from the source with ``ast``: an import anywhere in a module (module level or inside a
function) is an edge, so a function-local import cannot hide a cycle. ``from verifier.x import y`` is an edge
to ``verifier.x.y`` when that is a module, else to ``verifier.x``. The implicit import of a parent package
(``verifier.a.b`` runs ``verifier/a/__init__.py``) is not an edge: a package's ``__init__`` re-exporting its
own submodules is not a cycle. Only verifier modules are nodes: third-party imports are free.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "verifier"


def module_names(package: Path = PACKAGE) -> dict:
    """{dotted module name: file} of every module of the package."""
    mods = {}
    for f in sorted(package.rglob("*.py")):
        parts = list(f.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = f
    return mods


def _resolve(name: str, mods: dict) -> str | None:
    """The longest known module that ``name`` names or lies in (None: not a verifier module)."""
    while name:
        if name in mods:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph(package: Path = PACKAGE) -> dict:
    """{module: {imported verifier module: first line number}}, every import statement counted."""
    mods = module_names(package)
    graph: dict = {m: {} for m in mods}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: from the module's package
                    base = mod.split(".")
                    base = base[: len(base) - node.level + (1 if is_pkg else 0)]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in mods else stem for a in node.names]
            for t in targets:
                r = _resolve(t, mods)
                if r is not None and r != mod:
                    graph[mod].setdefault(r, node.lineno)
    return graph


def find_cycle(graph: dict) -> list | None:
    """One cycle as [a, b, ..., a], or None (iterative depth-first search, deterministic order)."""
    state: dict = {}
    for start in sorted(graph):
        if start in state:
            continue
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        state[start] = "open"
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = "done"
                stack.pop()
                path.pop()
            elif state.get(child) == "open":
                return path[path.index(child):] + [child]
            elif child not in state:
                state[child] = "open"
                stack.append((child, iter(sorted(graph[child]))))
                path.append(child)
    return None


def describe(cycle: list, graph: dict) -> str:
    mods = module_names()
    return " -> ".join(cycle) + "\n" + "\n".join(
        f"  {a} imports {b} at {mods[a].relative_to(ROOT)}:{graph[a][b]}" for a, b in zip(cycle, cycle[1:]))


STAGES = ("base", "numerics", "ops", "results", "gpu", "declare", "inputs", "toolchain", "launch", "judge", "lint",
          "sanitizer", "battery", "isolation", "report", "bench", "cli", "plugin")
TOP = {"verifier": "base", "verifier.errors": "base", "verifier.constants": "base", "verifier.dtypes": "base",
       "verifier.spec": "declare", "verifier.pytest_plugin": "plugin"}


def stage_of(module: str) -> str:
    """The stage a module belongs to: its top-level package under verifier/, or TOP's entry."""
    if module in TOP:
        return TOP[module]
    stage = module.split(".")[1]
    assert stage in STAGES, f"{module}: verifier/{stage}/ is not a declared stage (add it to STAGES and docs/design.md)"
    return stage


def later_stage_imports(graph: dict) -> list:
    """'a (stage) imports b (later stage) at line' for every import against the declared order."""
    bad = []
    for a, deps in sorted(graph.items()):
        for b, line in sorted(deps.items()):
            if STAGES.index(stage_of(b)) > STAGES.index(stage_of(a)):
                bad.append(f"{a} ({stage_of(a)}) imports {b} ({stage_of(b)}) at line {line}")
    return bad


def test_no_module_imports_from_a_later_stage():
    bad = later_stage_imports(import_graph())
    assert not bad, "imports against the stage order (docs/design.md):\n" + "\n".join(bad)


def test_the_stage_check_catches_a_later_stage_import(tmp_path):
    """A launch module reaching into battery/ is named, with its line."""
    pkg = tmp_path / "verifier"
    for sub in ("launch", "battery"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "launch" / "run.py").write_text("import os\n\ndef f():\n    from verifier.battery import steps\n")
    (pkg / "battery" / "steps.py").write_text("from verifier.launch import run\n")
    graph = import_graph(pkg)
    assert later_stage_imports(graph) == [
        "verifier.launch.run (launch) imports verifier.battery.steps (battery) at line 4"]


def test_top_level_holds_a_handful_of_modules():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 6, f"verifier/ holds {top} at the top: put each module in the stage package it belongs to"
    assert {f"verifier.{p[:-3]}" for p in top} - {"verifier.__init__"} <= set(TOP)


def test_design_doc_lists_the_stages_in_order():
    text = (ROOT / "docs" / "design.md").read_text()
    found = [s for s in STAGES if f"`{s}/`" in text or (s == "base" and "`base`" in text)]
    assert found == list(STAGES), "docs/design.md must show every stage of STAGES"
    positions = [text.index(f"`{s}/`") if s != "base" else text.index("`base`") for s in STAGES]
    assert positions == sorted(positions), "docs/design.md lists the stages out of order"


def test_design_doc_says_what_every_module_holds():
    """docs/design.md's module list has a bullet per stage naming each of its modules (one sentence each), so the
    map stays the territory: a module added, moved or renamed without its sentence fails here."""
    import re

    text = (ROOT / "docs" / "design.md").read_text()
    section = text[text.index("### Modules, stage by stage"):].split("\n## ", 1)[0]
    bullets = {}
    for bullet in re.split(r"\n- ", section)[1:]:
        head = bullet.split(":", 1)[0].strip()
        bullets[head.strip("`").rstrip("/")] = bullet
    missing = []
    for mod, path in module_names().items():
        rel = path.relative_to(PACKAGE)
        stage = stage_of(mod)
        where = bullets.get(stage, "")
        if f"`{rel.name}`" not in where:
            if rel.name == "__init__.py" and len(rel.parts) > 1 and ast.get_docstring(ast.parse(path.read_text())) \
                    and not any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) for n in ast.parse(path.read_text()).body):
                continue  # a package __init__ that only says what its stage holds
            missing.append(f"{rel} (stage {stage})")
    assert not missing, f"docs/design.md's module list does not say what these hold: {missing}"


def test_verifier_imports_form_a_dag():
    graph = import_graph()
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle in verifier/:\n" + describe(cycle, graph)


def test_the_graph_sees_function_local_imports(tmp_path):
    """A cycle hidden behind an import inside a function is still found, and named."""
    pkg = tmp_path / "verifier"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from verifier.sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("import os\n\ndef f():\n    from verifier.c import g\n    return g\n")
    (pkg / "c.py").write_text("def g():\n    from .a import x\n")
    graph = import_graph(pkg)
    assert graph["verifier.sub.b"] == {"verifier.c": 4}
    assert find_cycle(graph) == ["verifier.a", "verifier.sub.b", "verifier.c", "verifier.a"]
    (pkg / "c.py").write_text("def g():\n    import numpy\n")
    assert find_cycle(import_graph(pkg)) is None


@pytest.mark.parametrize("module", sorted(module_names()))
def test_no_module_over_500_lines(module):
    """Small modules with names that say what they hold: a module past 500 lines holds two things."""
    n = len(module_names()[module].read_text().splitlines())
    assert n <= 500, f"{module} has {n} lines; split it by what its parts own"


def test_public_api_is_narrow_lazy_and_complete():
    """``import verifier`` loads no submodule; every name of ``__all__`` resolves to the object its module
    defines; a name outside it is an AttributeError."""
    import subprocess
    import sys

    code = ("import sys, verifier\n"
            "print(sorted(m for m in sys.modules if m.startswith('verifier.')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"
    import importlib

    import verifier

    assert 10 <= len(verifier.__all__) <= 20
    for name in verifier.__all__:
        assert getattr(verifier, name) is getattr(importlib.import_module(verifier._WHERE[name]), name)
    with pytest.raises(AttributeError):
        verifier.battery_internals  # noqa: B018


def test_no_private_name_is_imported_across_modules():
    """``from verifier.x import _name`` makes x's private name a contract nobody declared: make it public."""
    found = []
    for mod, path in module_names().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("verifier"):
                found += [f"{path.relative_to(ROOT)}:{node.lineno} imports {node.module}.{a.name}"
                          for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    assert not found, "\n".join(found)
