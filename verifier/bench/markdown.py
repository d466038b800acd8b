"""Markdown table of a BenchResult, for docs/benchmarks.md and PR comments."""
from __future__ import annotations

from verifier.bench.plan import BenchResult
from verifier.bench.text import footnotes, header


def render(result: BenchResult) -> str:
    out = [header(result).lstrip("# "), "",
           "| kernel | op | dtype | M x N | median µs | spread | GB/s | × copy | host µs | via |",
           "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in result.rows:
        name = f"**{r.kernel}**" if r.role == "kernel" else r.kernel
        if r.status != "ok":
            out.append(f"| {name} | {r.op} | {r.dtype} | {r.M}×{r.N} | {r.status}: {r.note} | | | | | |")
            continue
        ratio = f"{r.ratio:.3f}" if r.ratio is not None else "-"
        host = f"{r.host_ms * 1e3:.1f}" if r.host_ms is not None else "-"
        via = (r.method or "-") + (" **host-bound**" if r.host_bound else "")
        out.append(f"| {name} | {r.op} | {r.dtype} | {r.M}×{r.N} | {r.stats.median_ms * 1e3:.1f} | "
                   f"{r.stats.spread * 100:.1f}% | {r.gbs:.0f} | {ratio} | {host} | {via} |")
    notes = [f"{M}×{N} {tag}: {why}" for M, N, tag, why in result.warnings] + footnotes(result)
    if notes:
        out.append("")
        out.extend(f"- {n}" for n in notes)
    return "\n".join(out) + "\n"
