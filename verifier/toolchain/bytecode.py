"""Bytecode for processes that start often: with PYTHONDONTWRITEBYTECODE set (container images often set it) and no
pycache prefix, Python compiles every module it imports from source, at every start. On the H200 machine that was
torch's thousands of modules, 2-3 s a verdict; on a CI machine whose venv has its bytecode, it is still verifier's
own modules and the tests' (pytest's assertion rewriting writes no bytecode either) in every worker and child."""
from __future__ import annotations

import importlib.util
import os
import sys

PYCACHE_ENV = "VERIFIER_PYCACHE"
# The heavy imports whose bytecode decides it: the first of them installed here.
HEAVY = ("torch", "triton", "numpy")


def installed_bytecode(names=None) -> bool:
    """Whether the first of ``names`` installed here has bytecode beside its source (pip compiles it at install,
    whatever PYTHONDONTWRITEBYTECODE says). A prefix would make Python ignore that bytecode and compile the
    whole package again into the prefix: torch's thousands of modules, about 6 s of CPU in each of the first
    processes to import it on a fresh machine (about 20 s of CPU in a cold `pytest -n auto` on a 2-core machine)."""
    for name in names or HEAVY:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.has_location or not str(spec.origin).endswith(".py"):
            continue
        return os.path.exists(importlib.util.cache_from_source(spec.origin))
    return False


def keep_bytecode() -> str | None:
    """Keep that bytecode in a cache of its own (sys.pycache_prefix / PYTHONPYCACHEPREFIX: never beside the sources,
    which the setting guards), in this process and the children it starts: $VERIFIER_PYCACHE, else
    $XDG_CACHE_HOME/kernel-verifier/pycache (~/.cache without it). It belongs to the Python installation, as
    site-packages' own __pycache__ would, so it sits apart from the build cache ($VERIFIER_CACHE_DIR).
    VERIFIER_PYCACHE=0 leaves the setting as it is, as does a prefix already set or bytecode already written, and
    so does an installation whose packages carry their own bytecode (installed_bytecode): there only verifier's
    modules compile at each start, a tenth of a second. Returns the prefix now in use for this reason, else None."""
    where = os.environ.get(PYCACHE_ENV, "")
    if not sys.dont_write_bytecode or sys.pycache_prefix or where == "0" or installed_bytecode():
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    prefix = where or os.path.join(base, "kernel-verifier", "pycache")
    try:
        os.makedirs(prefix, exist_ok=True)
    except OSError:  # no writable cache: leave it as set
        return None
    sys.pycache_prefix, sys.dont_write_bytecode = prefix, False
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    return prefix
