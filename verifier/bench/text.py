"""Plain-text table of a BenchResult: one block per (op, dtype, shape), the copy last."""
from __future__ import annotations

from verifier.bench.plan import BenchResult


def header(result: BenchResult) -> str:
    env = result.environment or {}
    return (f"# {result.gpu}, L2 {result.l2_bytes >> 20} MiB flushed before every timed launch; median of "
            f"{result.runs} runs after {result.warmup} warm-up; {result.date}; commit {env.get('commit') or '?'}; "
            f"torch {env.get('torch') or '?'}, triton {env.get('triton') or '?'}")


def _cell(row):
    if row.status != "ok":
        return f"{row.status}: {row.note}"
    s = row.stats
    ratio = f"{row.ratio:6.3f}" if row.ratio is not None else "     -"
    return (f"{s.median_ms * 1e3:9.1f} {s.spread * 100:6.1f}% {row.gbs:8.0f} {ratio}")


def render(result: BenchResult) -> str:
    lines = [header(result),
             f"{'kernel':28s} {'op':8s} {'dtype':5s} {'M x N':>14s} {'median us':>9s} {'spread':>7s} "
             f"{'GB/s':>8s} {'x copy':>6s}"]
    for r in result.rows:
        op = r.op if len(r.op) <= 8 else r.op[:8]
        lines.append(f"{r.kernel:28s} {op:8s} {r.dtype:5s} {f'{r.M}x{r.N}':>14s} {_cell(r)}")
    for M, N, tag, why in result.warnings:
        lines.append(f"warning: {M}x{N} {tag}: {why}")
    lines.append("spread = (p90 - p10) / median; x copy = copy time / kernel time for the same bytes moved "
                 "(inputs read once, outputs written once)")
    return "\n".join(lines) + "\n"
