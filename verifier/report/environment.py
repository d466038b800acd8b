"""Facts about where a check ran: GPU, driver, CUDA, library versions, git commit."""
from __future__ import annotations

import os
import subprocess
from functools import lru_cache
from pathlib import Path


def _version(dist: str):
    # Read package metadata instead of importing: importing triton would fix its interpreter mode.
    from importlib import metadata

    for name in (dist, f"{dist}-cuda13x", f"{dist}-cuda12x"):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


COMMIT_ENV = "VERIFIER_COMMIT"


def _git_commit(cwd=None):
    """$VERIFIER_COMMIT if set (a copy of the tree whose .git is missing or stale, as on a rented GPU machine:
    pass the commit the copy was made from), else git's HEAD, '-dirty' when tracked files differ."""
    if os.environ.get(COMMIT_ENV):
        return os.environ[COMMIT_ENV]
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                             cwd=cwd or Path.cwd(), timeout=5)
        if out.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, cwd=cwd or Path.cwd(), timeout=5).stdout.strip()
        return out.stdout.strip() + ("-dirty" if dirty else "")
    except Exception:
        return None


def _torch_cuda_version():
    """torch.version.cuda, read from torch/version.py without importing torch."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.submodule_search_locations:
            return None
        return cuda_from_version_file((Path(list(spec.submodule_search_locations)[0]) / "version.py").read_text())
    except Exception:
        return None


def cuda_from_version_file(text: str):
    """The ``cuda = '13.0'`` (or ``cuda: Optional[str] = '13.0'``) of torch/version.py; None for a CPU build."""
    import re

    m = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
    return m.group(1) if m else None


@lru_cache(maxsize=1)
def environment() -> dict:
    env = {"gpu": None, "driver": None, "cuda": None, "torch": _version("torch"), "triton": _version("triton"),
           "cupy": _version("cupy"), "nvcc": None, "commit": _git_commit()}
    try:
        # torch is imported only if someone already did (its import takes seconds); else its version file
        # is read and the GPU named by nvidia-smi.
        from verifier.gpu.probe import cuda_available

        env["cuda"] = _torch_cuda_version()
        if cuda_available():
            out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=10)
            if out.returncode == 0 and out.stdout.strip():
                name, _, driver = out.stdout.strip().splitlines()[0].rpartition(",")
                env["gpu"], env["driver"] = name.strip() or None, driver.strip() or None
            import sys

            torch = sys.modules.get("torch")  # cuda_available() asked it, if it is imported
            if torch is not None:
                env["gpu"] = torch.cuda.get_device_name(0)
    except Exception:
        pass
    try:
        from verifier.toolchain.nvcc import nvcc_version

        env["nvcc"] = nvcc_version()
    except Exception:
        pass
    return env
