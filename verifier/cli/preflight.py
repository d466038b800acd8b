"""What a command needs from its environment, checked before its run starts: the paths it will write (``--output``,
``--plot``, ``--keep-xml``), the build cache and Triton's kernel cache. A problem there is a usage error naming the path or the variable
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


def _writable_dir(path) -> None:
    """Make ``path`` a directory if it is none, and write a file into it; an OSError says why not."""
    os.makedirs(path, exist_ok=True)
    fd, probe = tempfile.mkstemp(dir=path, prefix=".writable-")
    os.close(fd)
    os.unlink(probe)


def output_dir(path, option: str) -> None:
    """``path`` is, or can be made, a directory files can be written into."""
    if not path:
        return
    try:
        _writable_dir(path)
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot write files into it: {_why(e)}",
                         fix="choose a writable directory") from None


def build_cache(specs) -> None:
    """The build cache, when a selected kernel is a CUDA source (its builds and PTX land there): a read-only,
    full or invalid ``VERIFIER_CACHE_DIR`` (or ``~/.cache`` under a read-only ``HOME``) is a usage error now."""
    if any(getattr(s, "builds_source", False) for s in specs):
        from verifier.toolchain.nvcc import usable_cache_dir

        usable_cache_dir()


def triton_cache(specs, device: str) -> None:
    """Triton compiled for a GPU writes its kernels to ``$TRITON_CACHE_DIR``, else ``$TRITON_HOME/.triton/cache``,
    else ``~/.triton/cache`` (Triton's own rule): under a read-only ``HOME`` every Triton kernel would fail inside
    Triton, so it is said now, with the variable to set. The interpreter (no GPU) writes nothing there."""
    if device != "cuda" or not any(getattr(s, "uses_triton", False) for s in specs):
        return
    if os.environ.get("TRITON_CACHE_DIR"):
        path, setting = os.environ["TRITON_CACHE_DIR"], "$TRITON_CACHE_DIR"
    elif os.environ.get("TRITON_HOME"):
        path, setting = os.path.join(os.environ["TRITON_HOME"], ".triton", "cache"), "$TRITON_HOME/.triton/cache"
    else:
        path, setting = os.path.join(os.path.expanduser("~"), ".triton", "cache"), "~/.triton/cache under $HOME"
    try:
        _writable_dir(path)
    except OSError as e:
        why = "it is not a directory" if os.path.exists(path) and not os.path.isdir(path) else _why(e)
        raise UsageError(f"cannot write to Triton's kernel cache {path} ({setting}): {why}",
                         fix="set TRITON_CACHE_DIR to a writable directory, e.g. export "
                             "TRITON_CACHE_DIR=/tmp/triton-cache") from None
