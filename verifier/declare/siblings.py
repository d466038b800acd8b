"""Modules beside a user's file: ``import my_helpers`` in a spec file or a Triton kernel module finds the
``my_helpers.py`` (or package) beside it, as ``python my_spec.py`` would, in every process that loads the file: the
CLI, its forks, ``--isolate`` children, compute-sanitizer children and pytest sessions all load spec files through
verifier.declare.registry and Triton modules through verifier.launch.triton, which load them inside ``importable``.

While the file runs, its folder is first on ``sys.path``; afterwards the folder stays on ``sys.path``, last, so that
a function of the file importing a sibling when it is called finds it too, without shadowing anything installed.

A process holds one module per name. Two folders of user files with a same-named sibling (``a/my_helpers.py`` and
``b/my_helpers.py``) would silently give the second file the first one's module; instead, while the second file
loads the first one's module is set aside, so each file binds its own at load time, and then put back. The clash is
said (a ``SiblingClash`` warning naming both files), since an import run later, inside a function, gets the module
the process holds: give the helpers distinct names to be safe.
"""
from __future__ import annotations

import contextlib
import re
import sys
import warnings
from pathlib import Path

_FOLDER_OF: dict = {}  # top-level module name -> the folder of user files it was imported from


class SiblingClash(UserWarning):
    """Two folders of user files hold a module of the same name (see this module's docstring)."""


def _provides(folder: Path, name: str) -> bool:
    return (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file()


def _within(path, folder: Path) -> bool:
    try:
        return Path(path).resolve().is_relative_to(folder)
    except (OSError, ValueError, TypeError):
        return False


@contextlib.contextmanager
def importable(path):
    """Run the body (loading the user file ``path``) with its folder importable, first; see the module docstring."""
    folder = Path(path).resolve().parent
    entry = str(folder)
    aside = {}
    for name, other in list(_FOLDER_OF.items()):
        if other != folder and _provides(folder, name):
            for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
                aside[key] = sys.modules.pop(key)
    before = set(sys.modules)
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(entry)  # the first occurrence: ours, at the front
        if entry not in sys.path:
            sys.path.append(entry)
        for name in set(sys.modules) - before:
            if "." not in name and _within(getattr(sys.modules[name], "__file__", None) or "", folder):
                _FOLDER_OF.setdefault(name, folder)
        clashes = sorted({k.split(".")[0] for k in aside if k in sys.modules})
        for key, mod in aside.items():  # the module the process held before stays the process's
            sys.modules[key] = mod
        for name in clashes:
            mine = _source(folder, name)
            theirs = getattr(aside.get(name), "__file__", None) or str(_FOLDER_OF.get(name, "?"))
            warnings.warn_explicit(SiblingClash(  # shown at the user's import line, not ours
                f"{path} and an earlier user file both import a module named {name!r} from beside them ({mine} and "
                f"{theirs}); each got its own at load time, but an import of {name!r} run later inside a function "
                f"gets {theirs}. Fix: give one of them another name"), SiblingClash, str(path), _import_line(path, name))


def _import_line(path, name: str) -> int:
    rx = re.compile(rf"^\s*(?:import\s+(?:[\w.]+\s*,\s*)*{re.escape(name)}\b|from\s+{re.escape(name)}\b)")
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return 1
    return next((i + 1 for i, ln in enumerate(lines) if rx.match(ln)), 1)


def _source(folder: Path, name: str) -> str:
    f = folder / f"{name}.py"
    return str(f if f.is_file() else folder / name)
