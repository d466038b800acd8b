"""Text report: a verdict table (one row per kernel and dtype, one column per check class), then findings."""
from __future__ import annotations

from verifier.declare.contracts import NOTE_PREFIX
from verifier.results.notes import kind
from verifier.results.run import cell, columns, rows, sorted_findings, verdict_counts

_SHORT = {"out-of-range-write": "oob-write", "out-of-range-read": "oob-read", "input-clobbered": "clobber",
          "determinism": "determ", "resources": "resource"}
MAX_FINDINGS_PER_KERNEL = 8


def _fmt_cell(v, reasons: list) -> str:
    if v is None:
        return "-"
    if v.skipped:
        reason = v.reason
        if reason not in reasons:
            reasons.append(reason)
        return f"skip[{reasons.index(reason) + 1}]"
    return str(v)


def _shown(path: str) -> str:
    """A source path relative to the working directory when it lies under it."""
    import os

    if not os.path.isabs(path):
        return path
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def format_finding(f, with_kernel: bool = True) -> list[str]:
    """One finding as text lines: ``- [check] kernel, dtype, input, shape at file:line``, the message
    indented, then its repro line. ``with_kernel=False`` leaves the kernel name out (under a kernel's heading)."""
    where = ", ".join(x for x in (f.kernel if with_kernel else "", f.dtype, f.input,
                                  f"shape {tuple(f.shape)}" if f.shape else "") if x)
    loc = f" at {_shown(f.file)}:{f.line}" if f.file else ""
    sev = f" {f.severity}" if f.severity != "error" else ""
    lines = [" ".join(x for x in (f"- [{f.check}{sev}]", where) if x) + loc] + [f"    {m}" for m in f.message.splitlines()]
    if f.repro:
        lines.append(f"    repro: {f.repro}")
    return lines


def render(result) -> str:
    cols = columns(result.reports)
    reasons: list = []
    table = [["kernel", "dtype"] + [_SHORT.get(c, c) for c in cols] + ["verdict"]]
    for r in result.reports:
        for tag in rows(r):
            table.append([r.spec.name, tag] + [_fmt_cell(cell(r, tag, c), reasons) for c in cols] + [r.verdict])
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for i, reason in enumerate(reasons, 1):
        lines.append(f"  skip[{i}]: {reason}")
    s = result.summary()
    lines.append("")
    warned = f" ({s['warnings']} of them warnings)" if s.get("warnings") else ""
    lines.append(f"{s['kernels']} kernels: {verdict_counts(result)}; {s['findings']} findings{warned}")
    env = result.environment
    lines.append("environment: " + ", ".join(f"{k}={v}" for k, v in env.items() if v))
    for r in result.reports:
        if r.error:
            what = "error in the spec's own code" if getattr(r, "error_kind", "internal") == "user" \
                else "internal error"
            lines += ["", f"== {r.spec.name}: {what}"] + [f"  {ln}" for ln in r.error.splitlines()]
        fs = sorted_findings(r.findings)
        if not fs:
            continue
        lines += ["", f"== {r.spec.name} ({r.spec.kind}, {r.spec.op}): {len(fs)} finding(s), worst first"]
        for f in fs[:MAX_FINDINGS_PER_KERNEL]:
            lines += format_finding(f, with_kernel=False)  # the section header names the kernel
        if len(fs) > MAX_FINDINGS_PER_KERNEL:
            lines.append(f"  ... {len(fs) - MAX_FINDINGS_PER_KERNEL} more (use --format json for all)")
    lines += _notes(result)
    return "\n".join(lines) + "\n"


def _notes(result) -> list:
    """Catalogue cases that did not run are always counted (nothing is skipped silently); with --verbose
    every note is listed: those cases and why, and the resources of each compiled entry."""
    verbose = bool(result.options.get("verbose"))
    out = []
    for r in result.reports:
        notes = list(getattr(r, "notes", []))
        out += [f"note: {r.spec.name}: {n.removeprefix(NOTE_PREFIX)}" for n in notes
                if kind(n) == "contract" and not verbose]  # declared / inferred contracts, always shown
        shown = notes if verbose else [n for n in notes if kind(n) == "case-not-run"]
        if not shown:
            continue
        if verbose:
            out += ["", f"-- {r.spec.name}: notes"] + [f"  {n}" for n in shown]
        else:
            out.append(f"note: {r.spec.name}: {len(shown)} catalogue case(s) not run (refused by its supports(), "
                       "not representable here, or left out by a declared contract) or whose values no bound could "
                       "judge; --verbose lists them")
    if out and not verbose:
        out.insert(0, "")
    return out
