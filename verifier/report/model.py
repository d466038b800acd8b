"""What reporters read: the kernel reports of one run and where it ran.

A live run gives :class:`verifier.kernel_report.KernelReport` objects; :func:`from_dict` rebuilds the same
attributes from a saved ``--format json`` result, so every renderer serves both.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from verifier.errors import UsageError
from verifier.coverage import NOTHING_CHECKED, nothing_checked
from verifier.findings import CHECK_CLASSES, Finding
from verifier.notes import KINDS, Note
from verifier.usercode import is_internal

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass
class Result:
    reports: list  # verifier.kernel_report.KernelReport
    environment: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    source_root: Optional[str] = None  # where repo-relative finding files live (default: the git checkout of cwd)

    def summary(self) -> dict:
        verdicts = [r.verdict for r in self.reports]
        return {
            "kernels": len(verdicts),
            "pass": verdicts.count("pass"),
            "fail": verdicts.count("fail"),
            "error": verdicts.count("error"),
            "skipped": verdicts.count("skipped"),
            "findings": sum(len(r.findings) for r in self.reports),
            "warnings": sum(1 for r in self.reports for f in r.findings if f.severity == "warning"),
            # passing kernels whose values were never checked (e.g. CUDA kernels on a CPU machine)
            "pass_without_values": sum(1 for r in self.reports if r.verdict == "pass" and _values_skipped(r)),
        }

    def exit_code(self, strict: bool = False) -> int:
        """3 for a bug in kernel-verifier, 4 when nothing was checked, 1 for findings (an error in a spec's own
        code included; warnings only with ``strict``), else 0."""
        s = self.summary()
        if any(is_internal(r) for r in self.reports):
            return 3
        if nothing_checked(self):
            return NOTHING_CHECKED  # every kernel skipped: never reads as 'every kernel passed'
        return 1 if s["fail"] or s["error"] or (strict and s["warnings"]) else 0


def sorted_findings(findings):
    """Worst first: errors before warnings, then by score (ULP excess, counts), then check class order."""
    return sorted(findings, key=lambda f: (SEVERITY_ORDER[f.severity], -f.score, CHECK_CLASSES.index(f.check)))


def columns(reports) -> list[str]:
    """Check classes shown as columns: every class that any report has a cell or finding for, in canonical order."""
    used = {c for r in reports for (_, c) in r.cells} | {f.check for r in reports for f in r.findings}
    return [c for c in CHECK_CLASSES if c in used]


def rows(report) -> list[str]:
    tags = [d.tag for d in report.spec.dtypes if any(k[0] == d.tag for k in report.cells)]
    return tags or ["*"]


def cell(report, tag: str, check: str) -> str:
    if any(f.check == check and f.severity == "error" and f.dtype in (tag, "") for f in report.findings):
        return "FAIL"
    v = report.cells.get((tag, check)) or report.cells.get(("*", check))
    if v in ("pass", "FAIL") and any(f.check == check and f.severity == "warning" and f.dtype in (tag, "")
                                     for f in report.findings):
        return "warn"  # passed, but something undeclared speaks (a spill with no limit declared)
    return v or "-"


# --- saved results ---------------------------------------------------------------------------
@dataclass(frozen=True)
class SavedDtype:
    tag: str


@dataclass(frozen=True)
class SavedSpec:
    """The spec attributes reporters read: name, op, kind, dtypes (with ``.tag``), origin."""

    name: str
    op: str
    kind: str
    dtypes: tuple
    origin: Optional[str] = None


@dataclass
class SavedReport:
    """A kernel report read back from JSON; same attributes as a live KernelReport."""

    spec: SavedSpec
    verdict: str
    cells: dict
    findings: list
    seconds: float = 0.0
    error: Optional[str] = None
    notes: list = field(default_factory=list)
    error_kind: str = "internal"  # 'user': an error in the spec's own code (verifier.usercode)

    @property
    def name(self) -> str:
        return self.spec.name


_VERDICTS = ("pass", "fail", "error", "skipped")
_FIX = "pass the file written by `verifier check --format json` (schema in verifier/report/json.py)"


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


def read_kernel(k: dict, where: str) -> SavedReport:
    """One ``kernels`` entry (verifier.report.json.kernel_entry) read back; a malformed one is a UsageError."""
    name = _need(k, "name", str, where)
    verdict = _need(k, "verdict", str, where)
    if verdict not in _VERDICTS:
        raise UsageError(f"{where}.verdict: {verdict!r} is not one of {', '.join(_VERDICTS)}", fix=_FIX)
    spec = SavedSpec(name=name, op=k.get("op", ""), kind=k.get("kind", ""),
                     dtypes=tuple(SavedDtype(str(t)) for t in k.get("dtypes", [])), origin=k.get("source"))
    cells = {(tag, check): str(v) for tag, checks in (k.get("checks") or {}).items() for check, v in checks.items()}
    raw = k.get("findings") or []
    findings = [_finding(f, name, f"{where}.findings[{j}]", len(raw) - j) for j, f in enumerate(raw)]
    return SavedReport(spec=spec, verdict=verdict, cells=cells, findings=findings,
                       seconds=float(k.get("seconds") or 0.0), error=k.get("error"),
                       notes=_notes(k),
                       error_kind=str(k.get("error_kind") or "internal"))


def from_dict(data) -> Result:
    """A Result from the dict of ``verifier check --format json``; a malformed dict is a UsageError naming the key."""
    if not isinstance(data, dict):
        raise UsageError(f"result: expected a JSON object, got {type(data).__name__}", fix=_FIX)
    schema = data.get("schema")
    if schema != 1:
        raise UsageError(f"result schema {schema!r} is not supported (this version reads schema 1)", fix=_FIX)
    reports = []
    for i, k in enumerate(_need(data, "kernels", list, "result")):
        try:
            reports.append(read_kernel(k, f"kernels[{i}]"))
        except (TypeError, ValueError, AttributeError) as e:  # a value of the wrong type somewhere inside
            raise UsageError(f"kernels[{i}] is malformed: {type(e).__name__}: {e}", fix=_FIX) from None
    return Result(reports=reports, environment=dict(data.get("environment") or {}),
                  options=dict(data.get("options") or {}))


def _notes(k: dict) -> list:
    """The entry's notes with their kinds (results written before ``note_kinds``: every note ``info``)."""
    notes = [str(n) for n in (k.get("notes") or [])]
    kinds = k.get("note_kinds")
    if not isinstance(kinds, list) or len(kinds) != len(notes):
        kinds = ["info"] * len(notes)
    return [Note(n, kind if kind in KINDS else "info") for n, kind in zip(notes, kinds)]


_VERDICT_RANK = {"skipped": 0, "pass": 1, "fail": 2, "error": 3}


def _cell_rank(v: str) -> int:
    return 2 if v == "FAIL" else 0 if v.startswith("skipped") else 1


def _merged_cell(old, new):
    return new if old is None or _cell_rank(new) > _cell_rank(old) else old


def merge(results) -> Result:
    """One Result from several (e.g. `verifier check` and `verifier sanitize` of one change): a kernel in
    more than one keeps all its distinct findings, its cells (FAIL over pass over skipped) and its worst verdict."""
    results = list(results)
    by_name: dict = {}
    for res in results:
        for r in res.reports:
            have = by_name.get(r.spec.name)
            if have is None:
                by_name[r.spec.name] = SavedReport(spec=r.spec, verdict=r.verdict, cells=dict(r.cells),
                                                   findings=list(r.findings), seconds=r.seconds, error=r.error,
                                                   error_kind=getattr(r, "error_kind", "internal"))
                continue
            for key, v in r.cells.items():
                have.cells[key] = _merged_cell(have.cells.get(key), v)
            have.findings += [f for f in r.findings if f not in have.findings]  # the same file given twice
            have.seconds += r.seconds
            if r.error:  # an internal error anywhere keeps the merged one internal
                kinds = {getattr(r, "error_kind", "internal")} | ({have.error_kind} if have.error else set())
                have.error_kind = "internal" if "internal" in kinds else "user"
            have.error = "\n".join(e for e in (have.error, r.error) if e) or None
            have.verdict = max(have.verdict, r.verdict, key=_VERDICT_RANK.__getitem__)
    env = next((res.environment for res in results if res.environment), {})
    opts = next((res.options for res in results if res.options), {})
    root = next((res.source_root for res in results if res.source_root), None)
    return Result(reports=list(by_name.values()), environment=dict(env), options=dict(opts), source_root=root)


def _values_skipped(report) -> bool:
    cells = [v for (tag, check), v in report.cells.items() if check == "value"]
    return bool(cells) and all(v.startswith("skipped") for v in cells)
