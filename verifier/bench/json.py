"""JSON document of a BenchResult (schema 1): every row with its statistics (and, since issue #24, its host
launch time, how it was timed and whether it is host-bound: absent in older documents), warnings and environment."""
from __future__ import annotations

import json

from verifier.bench.plan import BenchResult

SCHEMA = 1


def to_dict(result: BenchResult) -> dict:
    rows = []
    for r in result.rows:
        d = {"kernel": r.kernel, "role": r.role, "op": r.op, "dtype": r.dtype, "M": r.M, "N": r.N,
             "bytes": r.bytes, "status": r.status, "note": r.note}
        if r.stats:
            d.update(runs=r.stats.runs, median_ms=r.stats.median_ms, p10_ms=r.stats.p10_ms, p90_ms=r.stats.p90_ms,
                     min_ms=r.stats.min_ms, gbs=r.gbs, copy_ms=r.copy_ms, ratio_to_copy=r.ratio,
                     host_ms=r.host_ms, method=r.method, host_bound=r.host_bound)
        rows.append(d)
    return {"schema": SCHEMA, "gpu": result.gpu, "l2_bytes": result.l2_bytes, "runs": result.runs,
            "warmup": result.warmup, "date": result.date, "environment": result.environment, "rows": rows,
            "warnings": [{"M": M, "N": N, "dtype": t, "message": w} for M, N, t, w in result.warnings]}


def from_dict(doc: dict) -> BenchResult:
    """A BenchResult back from :func:`to_dict`'s document (re-render a recorded run in another format)."""
    from verifier.bench.plan import Row, Stats

    if doc.get("schema") != SCHEMA:
        raise ValueError(f"bench JSON schema {doc.get('schema')!r}, expected {SCHEMA}")
    rows = []
    for d in doc["rows"]:
        stats = Stats(d["runs"], d["median_ms"], d["p10_ms"], d["p90_ms"], d["min_ms"]) if "runs" in d else None
        rows.append(Row(d["kernel"], d["role"], d["op"], d["dtype"], d["M"], d["N"], d["bytes"], status=d["status"],
                        stats=stats, copy_ms=d.get("copy_ms"), note=d.get("note", ""), host_ms=d.get("host_ms"),
                        method=d.get("method", "")))
    return BenchResult(rows=rows, warnings=[(w["M"], w["N"], w["dtype"], w["message"]) for w in doc["warnings"]],
                       environment=doc.get("environment") or {}, gpu=doc["gpu"], l2_bytes=doc["l2_bytes"],
                       runs=doc["runs"], warmup=doc["warmup"], date=doc["date"])


def render(result: BenchResult) -> str:
    return json.dumps(to_dict(result), indent=2) + "\n"
