"""Plain-text table of a BenchResult: one block per (op, dtype, shape), the copy last."""
from __future__ import annotations

from verifier.bench.plan import BenchResult


def header(result: BenchResult) -> str:
    env = result.environment or {}
    return (f"# {result.gpu}, L2 {result.l2_bytes >> 20} MiB flushed before every timed run; median of "
            f"{result.runs} runs after {result.warmup} warm-up; {result.date}; commit {env.get('commit') or '?'}; "
            f"torch {env.get('torch') or '?'}, triton {env.get('triton') or '?'}")


def _cell(row):
    if row.status != "ok":
        return f"{row.status}: {row.note}"
    s = row.stats
    ratio = f"{row.ratio:6.3f}" if row.ratio is not None else "     -"
    host = f"{row.host_ms * 1e3:8.1f}" if row.host_ms is not None else "       -"
    flag = "  HOST-BOUND" if row.host_bound else ""
    return f"{s.median_ms * 1e3:9.1f} {s.spread * 100:6.1f}% {row.gbs:8.0f} {ratio} {host} {row.method or '-':5s}{flag}"


def footnotes(result: BenchResult) -> list:
    """Why a row was not timed as a graph replay, and what host-bound means, once per distinct note."""
    notes = [f"{r.kernel} {r.dtype} {r.M}x{r.N}: {r.note}" for r in result.rows if r.status == "ok" and r.note]
    if any(r.host_bound for r in result.rows):
        notes.append("HOST-BOUND: its launch (host us) takes longer than its kernel (median us): called eagerly it "
                     "runs at the speed of its launch; the median is the kernel alone")
    return notes


def render(result: BenchResult) -> str:
    lines = [header(result),
             f"{'kernel':28s} {'op':8s} {'dtype':5s} {'M x N':>14s} {'median us':>9s} {'spread':>7s} "
             f"{'GB/s':>8s} {'x copy':>6s} {'host us':>8s} {'via':5s}"]
    for r in result.rows:
        op = r.op if len(r.op) <= 8 else r.op[:8]
        lines.append(f"{r.kernel:28s} {op:8s} {r.dtype:5s} {f'{r.M}x{r.N}':>14s} {_cell(r)}")
    for M, N, tag, why in result.warnings:
        lines.append(f"warning: {M}x{N} {tag}: {why}")
    lines.extend(f"note: {n}" for n in footnotes(result))
    lines.append("spread = (p90 - p10) / median; x copy = copy time / kernel time for the same bytes moved "
                 "(inputs read once, outputs written once); host us = one eager call's launch on the host; via = "
                 "how the timed runs ran: graph (a CUDA graph replay) or delay (the call behind a GPU-side delay)")
    return "\n".join(lines) + "\n"
