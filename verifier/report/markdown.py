"""Markdown report (pull-request comments): summary table, one collapsible section per failing kernel."""
from __future__ import annotations

from verifier.report.model import cell, columns, rows, sorted_findings

_ICON = {"pass": "pass", "FAIL": "**FAIL**"}


def _md_cell(v: str) -> str:
    if v.startswith("skipped("):
        return "skipped"
    return _ICON.get(v, v)


def render(result) -> str:
    cols = columns(result.reports)
    s = result.summary()
    out = [f"### kernel-verifier: {s['pass']} pass, {s['fail']} fail, {s['error']} error, {s['skipped']} skipped", ""]
    out.append("| kernel | dtype | " + " | ".join(cols) + " | verdict |")
    out.append("|" + "---|" * (len(cols) + 3))
    for r in result.reports:
        for tag in rows(r):
            out.append(f"| `{r.spec.name}` | {tag} | " + " | ".join(_md_cell(cell(r, tag, c)) for c in cols)
                       + f" | {r.verdict} |")
    skips = sorted({v[len('skipped('):-1] for r in result.reports for v in r.cells.values() if v.startswith("skipped(")})
    if skips:
        out += ["", "Skipped because: " + "; ".join(skips)]
    for r in result.reports:
        fs = sorted_findings(r.findings)
        if not fs and not r.error:
            continue
        out += ["", f"<details><summary><code>{r.spec.name}</code>: {r.verdict}, {len(fs)} finding(s)</summary>", ""]
        if r.error:
            out += [f"Internal error: `{r.error}`", ""]
        for f in fs[:20]:
            where = ", ".join(x for x in (f.dtype, f.input, f"shape {tuple(f.shape)}" if f.shape else "") if x)
            loc = f" at `{f.file}:{f.line}`" if f.file else ""
            out += [f"**{f.check}** ({where}){loc}", "", "```", f.message, "```"]
            if f.repro:
                out += ["", f"Reproduce: `{f.repro}`"]
            out.append("")
        out.append("</details>")
    env = result.environment
    out += ["", "<sub>" + ", ".join(f"{k} {v}" for k, v in env.items() if v) + "</sub>", ""]
    return "\n".join(out)
