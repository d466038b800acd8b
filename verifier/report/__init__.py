"""Report formats, one module each behind one interface: ``render(result, fmt) -> str``.

``result`` is a :class:`verifier.report.model.Result`: kernel reports from a live run, or rebuilt from a
saved JSON result by :func:`verifier.report.model.from_dict` (``tools/pr_report.py`` does that).
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
