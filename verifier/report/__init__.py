"""Report formats, one module each behind one interface: ``render(result) -> str``.

``result`` is a :class:`verifier.report.model.Result` (kernel reports + environment).
"""
from __future__ import annotations

from verifier.errors import UsageError

FORMATS = ("text", "json", "markdown")


def render(result, fmt: str) -> str:
    if fmt == "text":
        from verifier.report import text as mod
    elif fmt == "json":
        from verifier.report import json as mod
    elif fmt == "markdown":
        from verifier.report import markdown as mod
    else:
        raise UsageError(f"unknown format {fmt!r}", fix=f"use one of {', '.join(FORMATS)}")
    return mod.render(result)
