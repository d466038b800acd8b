"""Markdown report for pull-request comments: a verdict table (kernel × dtype × check class), then one
collapsible section per kernel with findings: check class, dtype, input case, shape, message, the source
lines a sanitizer finding points at, and the command that reproduces it."""
from __future__ import annotations

import re

from verifier.results.paths import excerpt, language, relative, shown_repro, source_root
from verifier.results.run import cell, columns, rows, sorted_findings, unchecked_reasons, verdict_counts

# First line of every comment: lets CI find and update its previous comment instead of adding another.
MARKER = "<!-- kernel-verifier-report -->"
# GitHub rejects comments over 65536 characters; findings per kernel are cut until the comment fits.
MAX_CHARS = 60000
_FINDING_CAPS = (10, 5, 2, 1, 0)
_ICON = {"pass": "pass", "FAIL": "**FAIL**", "warn": "⚠️ warn"}


def _md_cell(v) -> str:
    if v is None:
        return "-"
    if v.skipped:
        return "skipped"
    return _ICON[v.status]


def _fenced(text: str, lang: str = "") -> list[str]:
    """A code block whose fence is longer than any backtick run inside, so no message can break out of it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + lang, text, fence]


def _source(root, file: str, line: int) -> list[str]:
    lines = excerpt(root, file, line)
    if not lines:
        return [f"_(source line {file}:{line} not readable from this checkout)_"]
    width = len(str(lines[-1][0]))
    body = "\n".join(f"{'>' if n == line else ' '}{n:>{width}}  {t}" for n, t in lines)
    return _fenced(body, language(file))


def _finding(f, root) -> list[str]:
    facts = [f"**{f.check}**"]
    if f.severity != "error":
        facts.append(f"⚠️ **{f.severity}**" if f.severity == "warning" else f.severity)
    facts += [f"dtype `{f.dtype}`" if f.dtype else "", f"case `{f.input}`" if f.input else "",
              f"shape `{tuple(f.shape)}`" if f.shape else ""]
    file = relative(f.file, root)
    if file:
        facts.append(f"at `{file}:{f.line}`" if f.line else f"in `{file}`")
    out = ["- " + " · ".join(x for x in facts if x), ""]
    out += _fenced(f.message)
    if file and f.line:
        out += [""] + _source(root, file, f.line)
    if f.repro:
        out += ["", "Reproduce:", ""] + _fenced(shown_repro(f.repro, root), "sh")
    out.append("")
    return out


def _render(result, cap: int) -> str:
    root = source_root(result)
    cols = columns(result.reports)
    s = result.summary()
    out = [MARKER, f"### kernel-verifier: {s['kernels']} kernels, {verdict_counts(result)}; {s['findings']} findings"
                   + (f" ({s['warnings']} warnings)" if s.get("warnings") else ""), ""]
    if s["unchecked"]:  # never let a green-looking comment hide that values were not checked
        out += [f"⚠️ **Values not checked** for {s['unchecked']} kernel(s) ("
                f"{'; '.join(unchecked_reasons(result.reports))}): only their build, resources and static checks "
                "ran; their verdict is `unchecked`, not `pass`.", ""]
    if result.reports:
        out.append("| kernel | dtype | " + " | ".join(cols) + " | verdict |")
        out.append("|" + "---|" * (len(cols) + 3))
        for r in result.reports:
            verdict = f"**{r.verdict}**" if r.verdict in ("fail", "error", "unchecked") else r.verdict
            for tag in rows(r):
                out.append(f"| `{r.spec.name}` | {tag} | " + " | ".join(_md_cell(cell(r, tag, c)) for c in cols)
                           + f" | {verdict} |")
    else:
        out.append("No kernels were checked.")
    skips = sorted({v.reason for r in result.reports for v in r.cells.values() if v.skipped})
    if skips:
        out += ["", "Skipped because: " + "; ".join(skips)]
    for r in result.reports:
        fs = sorted_findings(r.findings)
        if not fs and not r.error:
            continue
        spec_file = relative(r.spec.origin, root)
        out += ["", f"<details><summary><code>{r.spec.name}</code> ({r.spec.kind}, {r.spec.op}): {r.verdict}, "
                    f"{len(fs)} finding(s)</summary>", ""]
        if spec_file:
            out += [f"Spec: `{spec_file}`", ""]
        if r.error:
            head = "Error in the spec's own code:" if getattr(r, "error_kind", "internal") == "user" else "Internal error:"
            out += [head, ""] + _fenced(r.error) + [""]
        for f in fs[:cap]:
            out += _finding(f, root)
        if len(fs) > cap:
            out += [f"{len(fs) - cap} more finding(s) not shown; run `verifier check` with `--format json` for all.", ""]
        out.append("</details>")
    env = ", ".join(f"{k} {v}" for k, v in result.environment.items() if v)
    if env:
        out += ["", f"<sub>{env}</sub>"]
    return "\n".join(out + [""])


def render(result) -> str:
    for cap in _FINDING_CAPS:
        text = _render(result, cap)
        if len(text) <= MAX_CHARS:
            return text
    return text
