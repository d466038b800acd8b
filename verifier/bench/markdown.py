"""Markdown table of a BenchResult, for docs/benchmarks.md and PR comments."""
from __future__ import annotations

from verifier.bench.plan import BenchResult
from verifier.bench.text import header


def render(result: BenchResult) -> str:
    out = [header(result).lstrip("# "), "",
           "| kernel | op | dtype | M x N | median µs | spread | GB/s | × copy |",
           "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in result.rows:
        name = f"**{r.kernel}**" if r.role == "kernel" else r.kernel
        if r.status != "ok":
            out.append(f"| {name} | {r.op} | {r.dtype} | {r.M}×{r.N} | {r.status}: {r.note} | | | |")
            continue
        ratio = f"{r.ratio:.3f}" if r.ratio is not None else "-"
        out.append(f"| {name} | {r.op} | {r.dtype} | {r.M}×{r.N} | {r.stats.median_ms * 1e3:.1f} | "
                   f"{r.stats.spread * 100:.1f}% | {r.gbs:.0f} | {ratio} |")
    if result.warnings:
        out.append("")
        out.extend(f"- {M}×{N} {tag}: {why}" for M, N, tag, why in result.warnings)
    return "\n".join(out) + "\n"
