"""Kernels that live in another project's package: ``requires=`` (which Python packages a spec needs) and
``package_path`` (a folder inside an installed package, e.g. the CUDA headers a JIT wheel ships).

A package is found without being imported (``importlib.util.find_spec`` of its top-level module): importing a
library can be slow, need a GPU, or fail on a machine that only builds its headers. A kernel whose package is
missing is skipped with the reason and the pip command, never an error: a CI machine that cannot install one
package still checks the rest.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Optional

from verifier.errors import SpecError


def _top(module: str) -> str:
    return module.split(".")[0]


def located(module: str) -> Optional[Path]:
    """The folder (or file) of an installed top-level ``module``, found without importing it; None if absent."""
    try:
        spec = importlib.util.find_spec(_top(module))
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    return Path(spec.origin) if spec.origin else None


def package_path(module: str, *parts: str) -> str:
    """``<the installed package's folder>/parts...`` (``package_path("flashinfer", "data", "include")``); a path
    naming the missing package when it is not installed (the kernel's ``requires=`` then skips it)."""
    root = located(module)
    base = root if root is not None and root.is_dir() else Path(f"<{_top(module)} is not installed>")
    return str(base.joinpath(*parts))


def check_requires(kernel: str, requires) -> dict:
    """``requires`` as {module: pip requirement}; a list of module names means the pip name is the module's."""
    if requires is None:
        return {}
    if isinstance(requires, (list, tuple)):
        requires = {m: m for m in requires}
    if not isinstance(requires, dict) or not all(isinstance(k, str) and isinstance(v, str) and k and v
                                                 for k, v in requires.items()):
        raise SpecError(f"kernel {kernel!r}: field 'requires' must map module names to pip requirements",
                        fix="e.g. requires={'liger_kernel': 'liger-kernel==0.8.5'}")
    return dict(requires)


def missing(requires: dict) -> Optional[str]:
    """Why the kernel cannot be checked here (a required package is not installed), or None."""
    absent = [(m, r) for m, r in requires.items() if located(m) is None]
    if not absent:
        return None
    names = ", ".join(f"{r} (module {m})" for m, r in absent)
    return f"needs {names}, which is not installed here: pip install {' '.join(r for _, r in absent)}"
