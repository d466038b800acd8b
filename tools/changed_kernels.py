#!/usr/bin/env python3
"""Which kernels a change touches, as arguments for `verifier check`.

    python tools/changed_kernels.py --since origin/main            # -> kernels/cuda/softmax_spec.py --kernel cuda_softmax ...
    verifier check $(python tools/changed_kernels.py --since origin/main) --format json --output result.json

A kernel is selected when any file it is built from changed in ``git diff --name-only REF...HEAD`` or is
modified, staged or untracked in the working tree: its spec file; for CUDA its source and every header
reached through ``#include "..."``; for Triton its module; sibling modules the spec or Triton module
imports; for a Python
callable the file defining the function, when it lies in the repository. A change under ``verifier/`` or
``references/`` (the checker itself) selects every kernel, unless --ignore-framework.
Prints nothing when no kernel is selected. Exit codes: 0 done, 2 usage error (bad ref, not a git checkout).
"""
from __future__ import annotations

import argparse
import ast
import inspect
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

from verifier.errors import UsageError

FRAMEWORK_DIRS = ("verifier/", "references/")
_INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def _git(args: list, root: Path) -> list[str]:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, cwd=root, timeout=60)
    except FileNotFoundError:
        raise UsageError("git is not installed", fix="install git; changed-kernel selection reads git diff") from None
    if out.returncode != 0:
        raise UsageError(f"`git {' '.join(args)}` failed in {root}: {out.stderr.strip()}",
                         fix="pass a ref that exists here (in CI fetch the base branch, e.g. actions/checkout with "
                             "fetch-depth: 0)")
    return [line for line in out.stdout.splitlines() if line]


def repo_root(start: Path = Path(".")) -> Path:
    lines = _git(["rev-parse", "--show-toplevel"], start.resolve())
    return Path(lines[0]).resolve()


def changed_files(since: str, root: Path) -> set[str]:
    """Repo-relative paths changed on this branch since its merge base with ``since``, plus uncommitted changes."""
    committed = _git(["diff", "--name-only", f"{since}...HEAD", "--"], root)
    uncommitted = _git(["diff", "--name-only", "HEAD", "--"], root)  # staged and unstaged
    untracked = _git(["ls-files", "--others", "--exclude-standard"], root)
    return set(committed) | set(uncommitted) | set(untracked)


def cuda_files(source: Path) -> set[Path]:
    """``source`` and every header it reaches through ``#include "..."`` (looked up beside the including file)."""
    seen: set[Path] = set()
    todo = [source.resolve()]
    while todo:
        f = todo.pop()
        if f in seen or not f.is_file():
            continue
        seen.add(f)
        for name in _INCLUDE_RE.findall(f.read_text(errors="replace")):
            todo.append((f.parent / name).resolve())
    return seen


def python_files(module: Path) -> set[Path]:
    """``module`` and the sibling modules it imports (``import x`` / ``from x import`` / ``from .x import``)."""
    seen: set[Path] = set()
    todo = [module.resolve()]
    while todo:
        f = todo.pop()
        if f in seen or not f.is_file():
            continue
        seen.add(f)
        try:
            tree = ast.parse(f.read_text(errors="replace"))
        except SyntaxError:
            continue  # the kernel's own checks will report it; the file itself is already selected
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level <= 1 else []
            for name in names:
                todo.append((f.parent / (name.split(".")[0] + ".py")).resolve())
    return seen


def kernel_files(spec) -> set[Path]:
    """Absolute paths of every file the kernel's verdict depends on (besides the verifier itself)."""
    files = python_files(Path(spec.origin)) if spec.origin else set()  # the spec and helpers it imports
    if spec.kind == "cuda":
        files |= cuda_files(spec.source_path())
    elif spec.kind == "triton":
        files |= python_files(spec.module_path())
    elif spec.kind == "callable":
        try:
            src = inspect.getsourcefile(spec.fn)
        except TypeError:  # a builtin: nothing of ours to watch
            src = None
        if src:
            files.add(Path(src).resolve())
    return files


def _rel(p: Path, root: Path):
    try:
        return p.relative_to(root).as_posix()
    except ValueError:
        return None  # outside the repository (an installed library): no diff can touch it


def select(specs, changed: set[str], root: Path, ignore_framework: bool = False) -> list[tuple]:
    """(spec, sorted changed files that select it) for every selected kernel, in spec order."""
    framework = sorted(f for f in changed if f.startswith(FRAMEWORK_DIRS)) if not ignore_framework else []
    out = []
    for spec in specs:
        deps = {r for r in (_rel(p, root) for p in kernel_files(spec)) if r}
        why = sorted(deps & changed) or framework
        if why:
            out.append((spec, why))
    return out


def check_args(selected, root: Path) -> list[str]:
    """Arguments for `verifier check`: the spec files, then one --kernel per selected kernel."""
    specs = list(dict.fromkeys(_rel(Path(s.origin).resolve(), root) or s.origin for s, _ in selected))
    return specs + [a for s, _ in selected for a in ("--kernel", s.name)]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="changed_kernels.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--since", required=True, metavar="REF", help="base ref, e.g. origin/main (diffed as REF...HEAD)")
    p.add_argument("--paths", nargs="+", default=["kernels"], metavar="PATH",
                   help="spec files or directories to choose from, relative to the repository root (default kernels)")
    p.add_argument("--print", dest="fmt", choices=("args", "json"), default="args",
                   help="args: one shell line for `verifier check` (default); json: kernels, specs and why")
    p.add_argument("--ignore-framework", action="store_true",
                   help="do not select every kernel when verifier/ or references/ changed")
    return p


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # argparse already printed the usage line
        return 2 if e.code else 0
    from verifier.declare import registry

    try:
        root = repo_root()
        changed = changed_files(args.since, root)
        specs = registry.load([str(root / p) for p in args.paths])
        selected = select(specs, changed, root, args.ignore_framework)
    except UsageError as e:
        sys.stderr.write(f"changed_kernels: error: {e}\n")
        return 2
    if args.fmt == "json":
        print(json.dumps({"since": args.since, "changed_files": sorted(changed), "args": check_args(selected, root),
                          "kernels": [{"name": s.name, "spec": _rel(Path(s.origin).resolve(), root), "because": why}
                                      for s, why in selected]}, indent=2))
    elif selected:
        print(" ".join(shlex.quote(a) for a in check_args(selected, root)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
