"""What a command needs from its environment, checked before its run starts: the paths it will write (``--output``,
``--plot``, ``--keep-xml``) and the build cache. A problem there is a usage error naming the path or the variable
and the fix (exit 2), found in a second instead of after the whole run, and never an internal error."""
from __future__ import annotations

import errno
import os
import tempfile

from verifier.errors import UsageError

_FIX = "choose a writable file path whose directory exists"


def _why(e: OSError) -> str:
    return "the disk is full" if e.errno == errno.ENOSPC else (e.strerror or str(e))


def output_file(path, option: str = "--output") -> None:
    """``path`` can be written as a file: its directory exists, it is not a directory, and opening it for writing
    works (tried without changing it: an existing file is opened to append nothing, a new one is created and
    removed). ``option`` names where the path came from (``--output``, ``VERIFIER_OUTPUT``)."""
    if not path:
        return
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent) or os.path.isdir(path):
        raise UsageError(f"{option} {path}: not a file in an existing directory", fix=_FIX)
    existed = os.path.exists(path)
    try:
        with open(path, "a" if existed else "x"):
            pass
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot write it: {_why(e)}", fix=_FIX) from None
    if not existed:
        try:
            os.unlink(path)
        except OSError:
            pass


def output_dir(path, option: str) -> None:
    """``path`` is, or can be made, a directory files can be written into."""
    if not path:
        return
    try:
        os.makedirs(path, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".writable-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot write files into it: {_why(e)}",
                         fix="choose a writable directory") from None


def build_cache(specs) -> None:
    """The build cache, when a selected kernel is a CUDA source (its builds and PTX land there): a read-only,
    full or invalid ``VERIFIER_CACHE_DIR`` (or ``~/.cache`` under a read-only ``HOME``) is a usage error now."""
    if any(getattr(s, "kind", None) == "cuda" for s in specs):
        from verifier.toolchain.nvcc import usable_cache_dir

        usable_cache_dir()
