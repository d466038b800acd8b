"""JSON report. Schema (stable; bump ``schema`` on any incompatible change):

    {"schema": 1,
     "kernels": [{"name", "op", "kind", "dtypes": [tag...], "verdict": "pass|fail|error|skipped", "source",
                  "checks": {tag: {check: "pass|FAIL|warn|skipped(reason)"}}, "seconds", "error",
                  "error_kind": "internal|user" (user: the spec's own code raised; exit 1, not 3),
                  "notes": [str]  (resources per entry, catalogue cases not run and why),
                  "note_kinds": [kind of each note: contract | case-not-run | info] (verifier.notes; optional),
                  "findings": [{"check", "severity", "input", "shape", "dtype", "message", "seed", "repro",
                                "file", "line", "score"}]}],
     "summary": {"kernels", "pass", "fail", "error", "skipped", "findings", "warnings", "pass_without_values"},
     "environment": {"gpu", "driver", "cuda", "torch", "triton", "cupy", "nvcc", "commit"},
     "options": {...}}

One serialization of a kernel report: :func:`kernel_entry` writes it, :func:`verifier.report.model.read_kernel`
reads it back; ``--format json``, saved results and the isolate / forked children all go through the two.
"""
from __future__ import annotations

import json as _json

from verifier.notes import kind
from verifier.report.model import sorted_findings

# 'score' (larger is worse) lets a saved result be re-sorted exactly as the live one (verifier.report.model.from_dict).
_FINDING_KEYS = ("check", "severity", "input", "shape", "dtype", "message", "seed", "repro", "file", "line", "score")


def kernel_entry(r) -> dict:
    """One kernel report (live or saved) as its entry of ``kernels``."""
    checks: dict = {}
    for (tag, check), v in sorted(r.cells.items()):
        checks.setdefault(tag, {})[check] = v
    notes = list(getattr(r, "notes", []))
    return {
        "name": r.spec.name,
        "op": r.spec.op,
        "kind": r.spec.kind,
        "dtypes": [d.tag for d in r.spec.dtypes],
        "verdict": r.verdict,
        "source": r.spec.origin,
        "checks": checks,
        "seconds": round(r.seconds, 3),
        "error": r.error,
        "error_kind": getattr(r, "error_kind", "internal") if r.error else None,
        "notes": [str(n) for n in notes],
        "note_kinds": [kind(n) for n in notes],
        "findings": [{k: f.to_dict()[k] for k in _FINDING_KEYS} for f in sorted_findings(r.findings)],
    }


def to_dict(result) -> dict:
    kernels = [kernel_entry(r) for r in result.reports]
    return {"schema": 1, "kernels": kernels, "summary": result.summary(), "environment": result.environment,
            "options": result.options}


def render(result) -> str:
    return _json.dumps(to_dict(result), indent=2, default=str) + "\n"
