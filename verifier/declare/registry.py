"""Find and load spec files.

A spec file is any ``spec.py`` or ``*_spec.py`` under the given paths; it defines ``KERNELS``.
Loading a spec file that fails to import is a usage error (exit 2) naming the file and line.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import importlib.util
import sys
import traceback
from pathlib import Path

from verifier.declare.kernels import KernelSpec
from verifier.declare.siblings import importable
from verifier.declare.source_lines import where
from verifier.errors import SpecError, UsageError

SPEC_GLOBS = ("spec.py", "*_spec.py")


def find_spec_files(paths) -> list[Path]:
    files: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise UsageError(f"path {raw} does not exist", fix="pass a spec file or a directory holding spec files")
        if p.is_file():
            if p.suffix != ".py":
                raise UsageError(f"{raw} is not a Python spec file", fix="pass a spec.py / *_spec.py file or a directory")
            files.append(p.resolve())
            continue
        found = sorted(
            {f.resolve() for g in SPEC_GLOBS for f in p.rglob(g) if "__pycache__" not in f.parts}
        )
        if not found:
            raise UsageError(f"no spec files under {raw}", fix="spec files are named spec.py or *_spec.py and define KERNELS")
        files.extend(found)
    # keep order, drop duplicates
    return list(dict.fromkeys(files))


def _module_name(path: Path) -> str:
    return "verifier_spec_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]


def load_spec_file(path) -> list[KernelSpec]:
    path = Path(path).resolve()
    name = _module_name(path)
    if name in sys.modules:
        mod = sys.modules[name]
    else:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            with importable(path):  # `import my_helpers` finds my_helpers.py beside the spec file
                spec.loader.exec_module(mod)
        except SpecError as e:
            del sys.modules[name]
            raise SpecError(f"{path}: {e.message}", fix=e.fix) from None
        except Exception as e:  # a user's spec file: report where it broke, not our traceback
            del sys.modules[name]
            tb = traceback.extract_tb(e.__traceback__)
            here = [f for f in tb if Path(f.filename).resolve() == path]
            loc = f"{path}:{here[-1].lineno}" if here else str(path)
            raise UsageError(
                f"spec file {loc} failed to import: {type(e).__name__}: {e}",
                fix="fix the spec file (run `python " + str(path) + "` to see the full traceback)",
            ) from None
    kernels = getattr(mod, "KERNELS", None)
    if kernels is None:
        raise SpecError(f"spec file {path} defines no KERNELS", fix="add KERNELS = [CudaKernel(...), ...]")
    if not isinstance(kernels, (list, tuple)) or not all(isinstance(k, KernelSpec) for k in kernels):
        raise SpecError(
            f"spec file {path}: KERNELS must be a list of CudaKernel / TritonKernel / CallableKernel",
            fix="build each entry with the constructors from verifier.spec",
        )
    return [dataclasses.replace(k, origin=str(path)) if k.origin != str(path) else k for k in kernels]


def load(paths, kernel_globs=None) -> list[KernelSpec]:
    """All kernels from the spec files under ``paths``, filtered by name globs; duplicate names are an error."""
    kernels: list[KernelSpec] = []
    seen: dict[str, str] = {}
    for f in find_spec_files(paths):
        for k in load_spec_file(f):
            if k.name in seen:
                second = where(f, k.name, 1 if seen[k.name] == str(f) else 0)
                raise SpecError(
                    f"kernel name {k.name!r} is declared twice ({where(seen[k.name], k.name, 0)} and {second})",
                    fix="give every kernel a unique name",
                )
            seen[k.name] = str(f)
            kernels.append(k)
    if not kernels:
        raise UsageError(f"the spec files under {', '.join(map(str, paths))} declare no kernels (KERNELS is empty)",
                         fix="add CudaKernel / TritonKernel / CallableKernel entries to KERNELS")
    if kernel_globs:
        globs = [kernel_globs] if isinstance(kernel_globs, str) else list(kernel_globs)
        kernels = [k for k in kernels if any(fnmatch.fnmatchcase(k.name, g) for g in globs)]
        if not kernels:
            raise UsageError(
                f"no kernel matches {', '.join(globs)}",
                fix="list the kernels with `verifier list PATH` and pass a matching --kernel glob",
            )
    return kernels
