"""The one serialization of a kernel report: :func:`kernel_entry` writes it, :func:`read_kernel` reads it back
(as a KernelReport). ``--format json`` (verifier.report.json), saved results and the isolation children all go
through the two.

Schema (stable; bump ``schema`` on any incompatible change; docs/json-schema.md):

    {"schema": 2,
     "kernels": [{"name", "op", "kind", "dtypes": [tag...], "verdict": "pass|unchecked|fail|error|skipped", "source",
                  "line" (of source, where the kernel was constructed; null when not known),
                  "checks": {tag: {check: "pass|FAIL|warn|skipped(reason)"}}, "seconds", "error",
                  "error_kind": "internal|user" (user: the spec's own code raised; exit 1, not 3),
                  "notes": [str]  (resources per entry, catalogue cases not run and why),
                  "note_kinds": [kind of each note: contract | case-not-run | info] (verifier.results.notes; optional),
                  "findings": [{"check", "severity", "input", "shape", "dtype", "message", "seed", "repro",
                                "file", "line", "score"}]}],
     "summary": {"kernels", "pass", "unchecked", "fail", "error", "skipped", "findings", "warnings"},
     "environment": {"gpu", "driver", "cuda", "torch", "triton", "cupy", "nvcc", "commit"},
     "options": {...}}

Schema 2 (from schema 1): verdict ``unchecked`` (no error finding, values never checked: a CUDA kernel without a
GPU), which schema 1 counted as ``pass`` with ``summary.pass_without_values``; that key is gone, ``summary.unchecked``
counts them. Schema 1 files are still read (a verdict is recomputed from the cells, so they read as schema 2).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from verifier.errors import UsageError
from verifier.results.cells import Cell
from verifier.results.findings import Finding
from verifier.results.kernel import VERDICTS, KernelReport
from verifier.results.notes import KINDS, Note, kind
from verifier.results.run import Result, sorted_findings

SCHEMA = 2
READABLE_SCHEMAS = (1, 2)  # schema 1: before the 'unchecked' verdict; its verdicts are recomputed from the cells
# 'score' (larger is worse) lets a saved result be re-sorted exactly as the live one.
_FINDING_KEYS = ("check", "severity", "input", "shape", "dtype", "message", "seed", "repro", "file", "line", "score")
_FIX = "pass the file written by `verifier check --format json` (schema in docs/json-schema.md)"


@dataclass(frozen=True)
class SavedDtype:
    tag: str


@dataclass(frozen=True)
class SavedSpec:
    """The spec attributes reporters read of a report read back: name, op, kind, dtypes (with ``.tag``), origin."""

    name: str
    op: str
    kind: str
    dtypes: tuple
    origin: Optional[str] = None
    line: Optional[int] = None  # the line of origin declaring it


# --- writing ------------------------------------------------------------------------------------------
def kernel_entry(r) -> dict:
    """One kernel report as its entry of ``kernels``."""
    checks: dict = {}
    for (tag, check), v in sorted(r.cells.items(), key=lambda kv: kv[0]):
        checks.setdefault(tag, {})[check] = str(v)
    notes = list(r.notes)
    return {
        "name": r.spec.name,
        "op": r.spec.op,
        "kind": r.spec.kind,
        "dtypes": [d.tag for d in r.spec.dtypes],
        "verdict": r.verdict,
        "source": r.spec.origin,
        "line": getattr(r.spec, "line", None),
        "checks": checks,
        "seconds": round(r.seconds, 3),
        "error": r.error,
        "error_kind": r.error_kind if r.error else None,
        "notes": [str(n) for n in notes],
        "note_kinds": [kind(n) for n in notes],
        "findings": [{k: f.to_dict()[k] for k in _FINDING_KEYS} for f in sorted_findings(r.findings)],
    }


def to_dict(result: Result) -> dict:
    return {"schema": SCHEMA, "kernels": [kernel_entry(r) for r in result.reports], "summary": result.summary(),
            "environment": result.environment, "options": result.options}


# --- reading ------------------------------------------------------------------------------------------
def _need(d: dict, key: str, typ, where: str):
    if not isinstance(d, dict) or key not in d:
        raise UsageError(f"{where}: missing key {key!r}", fix=_FIX)
    if not isinstance(d[key], typ):
        raise UsageError(f"{where}.{key}: expected {getattr(typ, '__name__', typ)}, got {type(d[key]).__name__}",
                         fix=_FIX)
    return d[key]


def _finding(d: dict, kernel: str, where: str, rank: int) -> Finding:
    for key in ("check", "message"):
        _need(d, key, str, where)
    shape, line = d.get("shape"), d.get("line")
    if line is not None and (not isinstance(line, int) or isinstance(line, bool)):
        raise UsageError(f"{where}.line: expected a line number, got {line!r}", fix=_FIX)
    try:
        return Finding(
            check=d["check"], message=d["message"], severity=d.get("severity") or "error", kernel=kernel,
            dtype=d.get("dtype") or "", input=d.get("input") or "",
            shape=tuple(shape) if shape is not None else None, seed=d.get("seed"), repro=d.get("repro") or "",
            file=d.get("file"), line=line,
            # Results written before 'score' was saved: keep their (already worst-first) order.
            score=float(d["score"]) if d.get("score") is not None else float(rank),
        )
    except ValueError as e:  # unknown check class or severity
        raise UsageError(f"{where}: {e}", fix="render it with the kernel-verifier version that wrote it") from None


def _notes(k: dict) -> list:
    """The entry's notes with their kinds (results written before ``note_kinds``: every note ``info``)."""
    notes = [str(n) for n in (k.get("notes") or [])]
    kinds = k.get("note_kinds")
    if not isinstance(kinds, list) or len(kinds) != len(notes):
        kinds = ["info"] * len(notes)
    return [Note(n, kind if kind in KINDS else "info") for n, kind in zip(notes, kinds)]


def _cells(k: dict, where: str) -> dict:
    cells = {}
    for tag, checks in (k.get("checks") or {}).items():
        for check, v in checks.items():
            try:
                cells[(tag, check)] = Cell.parse(v)
            except ValueError as e:
                raise UsageError(f"{where}.checks.{tag}.{check}: {e}", fix=_FIX) from None
    return cells


def read_kernel(k: dict, where: str, spec=None, device: str = "") -> KernelReport:
    """One ``kernels`` entry read back; a malformed one is a UsageError. ``spec``: the live spec it belongs to (an
    isolation child's report), else a SavedSpec built from the entry."""
    name = _need(k, "name", str, where)
    verdict = _need(k, "verdict", str, where)
    if verdict not in VERDICTS:
        raise UsageError(f"{where}.verdict: {verdict!r} is not one of {', '.join(VERDICTS)}", fix=_FIX)
    if spec is None:
        line = k.get("line")
        spec = SavedSpec(name=name, op=k.get("op", ""), kind=k.get("kind", ""),
                         dtypes=tuple(SavedDtype(str(t)) for t in k.get("dtypes", [])), origin=k.get("source"),
                         line=line if isinstance(line, int) and not isinstance(line, bool) and line >= 1 else None)
    raw = k.get("findings") or []
    findings = [_finding(f, name, f"{where}.findings[{j}]", len(raw) - j) for j, f in enumerate(raw)]
    return KernelReport(spec=spec, device=device, findings=findings, cells=_cells(k, where), notes=_notes(k),
                        seconds=float(k.get("seconds") or 0.0), error=k.get("error"),
                        error_kind=str(k.get("error_kind") or "internal"))


def from_dict(data) -> Result:
    """A Result from the dict of ``verifier check --format json``; a malformed dict is a UsageError naming the key."""
    if not isinstance(data, dict):
        raise UsageError(f"result: expected a JSON object, got {type(data).__name__}", fix=_FIX)
    schema = data.get("schema")
    if schema not in READABLE_SCHEMAS:
        raise UsageError(f"result schema {schema!r} is not supported (this version reads schemas "
                         f"{', '.join(map(str, READABLE_SCHEMAS))})", fix=_FIX)
    options = dict(data.get("options") or {})
    reports = []
    for i, k in enumerate(_need(data, "kernels", list, "result")):
        try:
            reports.append(read_kernel(k, f"kernels[{i}]", device=str(options.get("device") or "")))
        except (TypeError, ValueError, AttributeError) as e:  # a value of the wrong type somewhere inside
            raise UsageError(f"kernels[{i}] is malformed: {type(e).__name__}: {e}", fix=_FIX) from None
    return Result(reports=reports, environment=dict(data.get("environment") or {}), options=options)
