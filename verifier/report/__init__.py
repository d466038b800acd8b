"""Report formats, one module each behind one interface: ``render(result, fmt) -> str``.

``result`` is a :class:`verifier.results.run.Result`: kernel reports from a live run, or rebuilt from a
saved JSON result by :func:`verifier.results.run.from_dict` (``tools/pr_report.py`` does that).
"""
from __future__ import annotations

import importlib

from verifier.errors import UsageError

FORMATS = ("text", "json", "markdown", "sarif", "junit")


def render(result, fmt: str) -> str:
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}", fix=f"use one of {', '.join(FORMATS)}")
    # 'json' is a module name shared with the standard library, hence the full import path.
    return importlib.import_module(f"verifier.report.{fmt}").render(result)


def write(text: str, path=None) -> None:
    """The report to ``path`` (a usage error if it cannot be written), or to stdout."""
    import errno
    import os
    import sys

    if not path:
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:  # `verifier check | head`: the reader left; the verdict's exit code stands
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        except OSError as e:  # stdout on a full disk (or /dev/full): the environment's problem, said as such
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            why = "the disk is full" if e.errno == errno.ENOSPC else e.strerror or str(e)
            raise UsageError(f"cannot write the report to stdout: {why}",
                             fix="free space where stdout goes, or pass --output FILE on another file system") from None
        return
    try:
        with open(path, "w") as fh:
            fh.write(text)
    except OSError as e:
        if e.errno == errno.ENOSPC:
            raise UsageError(f"cannot write --output {path}: the disk is full",
                             fix="free space on its file system, or choose a path on another one") from None
        raise UsageError(f"cannot write --output {path}: {e.strerror}", fix="choose a writable path") from None
