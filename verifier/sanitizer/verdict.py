"""Judging one compute-sanitizer run's XML: the one path shared by ``verifier sanitize`` / ``check --sanitize``
(verifier.sanitizer.runs) and the pytest plugin's ``--verifier-sanitize`` re-runs.

The records become findings (verifier.sanitizer.xmlparse). A run whose exit code says "errors found" but whose
XML yields no record we can read (empty, cut short before the first record, not XML) is itself an error of
the tool's class: the errors exist, we only cannot show them, so the cell must fail and the message says
where the raw log is.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Optional

from verifier.results.findings import Finding
from verifier.sanitizer import suppressions as _supp
from verifier.sanitizer.suppressions import default_suppressions
from verifier.sanitizer.xmlparse import Parsed, SourceMap, finding_kind, parse, to_findings

ERROR_EXITCODE = 86  # --error-exitcode passed on every run (verifier.sanitizer.runs)
UNREADABLE = "UnreadableXML"  # first word of the finding's message (the suppression 'kind' it would have)


def sources(spec) -> list:
    return spec.sources()


def unreadable_finding(tool: str, code: Optional[int], parsed: Parsed, findings: list, xml_path, log_path,
                       **ctx) -> Optional[Finding]:
    """The error finding of a run that reported errors (exit ``ERROR_EXITCODE``) with none readable, else None."""
    if code != ERROR_EXITCODE or any(f.severity == "error" for f in findings):
        return None
    if parsed.complete and parsed.records:
        return None  # readable records, none of them errors: the exit code is then the tool's business
    why = parsed.error if not parsed.complete else "it holds no records"
    log = f"the raw log is {log_path}" if log_path and Path(log_path).is_file() else \
        f"no raw log was kept ({log_path or 'none'}); re-run with --keep-xml DIR"
    return Finding(tool, f"{UNREADABLE}: compute-sanitizer exited {code} (errors found) but its XML is unreadable: "
                   f"{why} (XML {xml_path}); {log}", severity="error", **ctx)


TORCH_KERNELS = ("_ZN2at6native", "at::native::")  # torch's own kernels, mangled or as the XML names them


def judge_xml(spec, tool: str, code: Optional[int], xml_path, log_path, launched_ok: bool = True, **ctx) -> tuple:
    """(Parsed, findings) of one run's XML: a finding per record, plus the unreadable-XML error when due.
    ``launched_ok`` False: the watched process itself failed, which explains an 'errors found' exit on its
    own (--check-exit-code), so no unreadable-XML error is added (the caller reports that failure). A record in
    torch's own kernels (instrumented by initcheck only, so that their writes count) is a warning saying whose."""
    parsed = parse(str(xml_path), tool)
    root = repo_root(spec)
    paths = SourceMap(root, sources(spec))
    torch_own = [r for r in parsed.records if any(s in (r.kernel or "") for s in TORCH_KERNELS)]
    own = [r for r in parsed.records if not any(r is t for t in torch_own)]
    findings = _host_side(spec, to_findings(own, paths, **ctx))
    findings += [replace(f, severity="warning", message=f.message + "\n  in torch's own kernel, which the launcher "
                         "ran on a buffer: not the kernel's device code")
                 for f in to_findings(torch_own, paths, **ctx)]
    bad = unreadable_finding(tool, code, parsed, findings, xml_path, log_path, **ctx) if launched_ok else None
    return parsed, findings + ([bad] if bad else [])


HOST_API = "InitcheckApiError"  # initcheck: a host API call (a copy) read device memory no kernel or copy wrote


def _host_side(spec, findings: list) -> list:
    """A Triton kernel or callable runs behind Python host code (its launcher, the library it wraps, torch): an
    initcheck record of a host API call, beside no record in device code, is that host code's, not the kernel's.
    It stays in the report as a warning saying so (seen on an H200 with Liger-Kernel 0.8.5's cross entropy,
    whose wrapper copies scalars to the host with .item()); in a CUDA spec the host code is the harness's, whose
    copies read only buffers it wrote, so there it stays an error."""
    if spec.builds_source or any(f.severity == "error" and finding_kind(f).rstrip(":") != HOST_API for f in findings):
        return findings
    out = []
    for f in findings:
        if finding_kind(f).rstrip(":") == HOST_API and f.severity == "error":
            f = replace(f, severity="warning", message=f.message + "\n  in host code (the launcher, the library it "
                        "calls or torch), not in the kernel's device code, which has no record; to see where, run "
                        "the launcher under compute-sanitizer --tool initcheck --show-backtrace yes")
        out.append(f)
    return out


def suppressed(spec, findings: list, entries: Optional[list] = None) -> list:
    """``findings`` with the spec's sanitizer-suppressions.toml (or ``entries``) applied. An unreadable XML
    is never suppressed: an entry excuses a known record, and this run's records are unknown."""
    entries = default_suppressions(spec) if entries is None else entries
    return [f if f.message.startswith(UNREADABLE) else _supp.apply(entries, [f])[0] for f in findings]


def repo_root(spec) -> Path:
    """The git repository holding the spec file, else the current directory."""
    start = Path(spec.origin).resolve().parent if spec.origin else Path.cwd()
    for d in [start] + list(start.parents):
        if (d / ".git").exists():
            return d
    return Path.cwd()


def judge_rerun(spec, dt, case, tool: str, code, xml, log, repro: str, launched_ok: bool = True) -> list:
    """The findings of a re-run's XML, judged as ``verifier sanitize`` judges them (verifier.sanitizer.verdict):
    the records, an unreadable XML after 'errors found' as an error, sanitizer-suppressions.toml applied.
    ``launched_ok``: the child test passed or skipped (a failed one explains the exit code itself)."""
    _, findings = judge_xml(spec, tool, code, xml, log, launched_ok, kernel=spec.name, dtype=dt.tag,
                            input=case.name if case else "", repro=repro)
    return suppressed(spec, findings)
