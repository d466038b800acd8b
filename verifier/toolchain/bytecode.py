"""Bytecode for processes that start often: with PYTHONDONTWRITEBYTECODE set (container images often set it) and no
pycache prefix, Python compiles every module it imports from source, at every start. On the H200 machine that was
torch's thousands of modules, 2-3 s a verdict; on a CI machine whose venv has its bytecode, it is still verifier's
own modules and the tests' (pytest's assertion rewriting writes no bytecode either) in every worker and child."""
from __future__ import annotations

import os
import shutil
import sys
import sysconfig

PYCACHE_ENV = "VERIFIER_PYCACHE"


def keep_bytecode() -> str | None:
    """Keep that bytecode in a cache of its own (sys.pycache_prefix / PYTHONPYCACHEPREFIX: never beside the sources,
    which the setting guards), in this process and the children it starts: $VERIFIER_PYCACHE, else
    $XDG_CACHE_HOME/kernel-verifier/pycache (~/.cache without it). It belongs to the Python installation, as
    site-packages' own __pycache__ would, so it sits apart from the build cache ($VERIFIER_CACHE_DIR).
    VERIFIER_PYCACHE=0 leaves the setting as it is, as does a prefix already set or bytecode already written.
    A new cache starts with the bytecode the installation already has (seed_from_installation).
    Returns the prefix now in use for this reason, else None."""
    where = os.environ.get(PYCACHE_ENV, "")
    if not sys.dont_write_bytecode or sys.pycache_prefix or where == "0":
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    prefix = where or os.path.join(base, "kernel-verifier", "pycache")
    try:
        os.makedirs(prefix, exist_ok=True)
    except OSError:  # no writable cache: leave it as set
        return None
    seed_from_installation(prefix)
    sys.pycache_prefix, sys.dont_write_bytecode = prefix, False
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    return prefix


_NOT_WALKED = frozenset({"site-packages", "dist-packages", "test", "tests", "idlelib", "tkinter", "turtledemo"})


def _installation_dirs() -> list:
    """The standard library and site-packages of this interpreter (a venv's included), each once."""
    paths = sysconfig.get_paths()
    seen, out = set(), []
    for key in ("purelib", "platlib", "stdlib", "platstdlib"):
        d = paths.get(key)
        if d and os.path.isdir(d) and os.path.realpath(d) not in seen:
            seen.add(os.path.realpath(d))
            out.append(d)
    return out


def seed_from_installation(prefix: str) -> int:
    """Link (else copy) into ``prefix`` the bytecode the installation keeps beside its sources, once a prefix and
    interpreter. With a prefix set, Python reads bytecode only there: without this, every module of the standard
    library, torch and the rest would be compiled again on the first start, although pip (and the interpreter's
    installer) compiled them at install (`import torch, triton, hypothesis, mpmath, numpy` on a 2-core machine: 6.2 s
    of CPU into an empty prefix, 2.0 s into a seeded one). Python checks each file against its source (mtime and
    size) as it would beside it, so a seeded file whose source has changed since is compiled again; it then
    replaces the file (a new one, atomically), so a link never changes the installation's own. Returns the files
    added."""
    tag = sys.implementation.cache_tag
    if not tag:
        return 0
    marker = os.path.join(prefix, f".seeded-{tag}")
    if os.path.exists(marker):
        return 0
    added = 0
    for top in _installation_dirs():
        for root, dirs, files in os.walk(top):
            if os.path.basename(root) != "__pycache__":
                # site-packages are walked as their own tops (a venv's sit inside its stdlib path); test suites
                # are not imported at run time
                dirs[:] = [d for d in dirs if d not in _NOT_WALKED]
                continue
            dirs[:] = []
            dest = os.path.join(prefix, os.path.dirname(os.path.abspath(root)).lstrip(os.sep))
            names = [f for f in files if f.endswith(".pyc") and f".{tag}." in f]
            if not names:
                continue
            try:
                os.makedirs(dest, exist_ok=True)
            except OSError:
                return added
            for f in names:
                src, dst = os.path.join(root, f), os.path.join(dest, f)
                if os.path.exists(dst):
                    continue
                try:
                    os.link(src, dst)
                except FileExistsError:  # another process seeding at the same time
                    continue
                except OSError:  # another file system, or links not allowed: a copy
                    try:
                        _copy(src, dst)
                    except OSError:
                        continue
                added += 1
    try:
        with open(marker, "w") as fh:
            fh.write(f"{added}\n")
    except OSError:
        pass
    return added


def _copy(src: str, dst: str) -> None:
    tmp = f"{dst}.{os.getpid()}.tmp"
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)  # a reader never sees half a file
