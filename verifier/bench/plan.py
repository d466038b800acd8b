"""What a benchmark measures, decided without a GPU: shapes, bytes moved per call, statistics, L2 warnings."""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import Optional

from verifier.errors import UsageError
from verifier.ops import OPS

# Hidden sizes of common models at 8192 tokens, and a 152064-column vocab row (Qwen2.5) at 32 rows.
DEFAULT_SHAPES = ((8192, 1024), (8192, 2048), (8192, 3584), (8192, 4096), (8192, 8192), (32, 152064))
MIN_RUNS = 20
_SHAPE_RE = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*$")


def parse_shape(text: str) -> tuple[int, int]:
    """'8192x4096' -> (8192, 4096): M rows of N columns."""
    m = _SHAPE_RE.match(text)
    if not m or int(m.group(1)) <= 0 or int(m.group(2)) <= 0:
        raise UsageError(f"--shape {text!r} is not MxN with positive M and N", fix="write rows x columns, e.g. --shape 8192x4096")
    return int(m.group(1)), int(m.group(2))


def element_size(dtype: str) -> int:
    from verifier.dtypes import numpy_dtype

    return numpy_dtype(dtype).itemsize


def bytes_moved(op: str, M: int, N: int, dt) -> int:
    """The fewest bytes one call must move through device memory: every input tensor read once, every output
    written once (an in-out tensor both), at the kernel's declared dtypes. Workspaces a kernel allocates for
    itself are not counted: re-reading or spilling shows as a lower bandwidth, which is the point."""
    o = OPS[op]
    if o.bytes_moved is not None:  # the op's own formula (Op(bytes_moved=...))
        return int(o.bytes_moved(M, N, dt, dict(o.params)))
    total = 0
    for name in o.inputs:
        total += _count(o, name, M, N) * element_size(o.input_dtype(name, dt))
    for name in o.outputs:
        total += _count(o, name, M, N) * element_size(o.output_dtype(name, dt))
    return total


def _count(o, name, M, N) -> int:
    n = 1
    for d in o.shape_of(name, M, N):
        n *= d
    return n


def l2_warning(working_set: int, l2_bytes: int) -> Optional[str]:
    """A warning when the tensors of one call fit in the L2: the flush before each timed launch makes the
    reads come from memory, but the writes can stay in the L2 and a short launch is dominated by its fixed
    cost, so compare such a shape's ratios only side by side, never with another GPU's figures."""
    if l2_bytes <= 0 or working_set > l2_bytes:
        return None
    return (f"working set {working_set / 2**20:.1f} MiB fits in the {l2_bytes / 2**20:.0f} MiB L2: writes can stay "
            "in the cache and launch overhead weighs in; compare this shape only side by side")


@dataclass(frozen=True)
class Stats:
    """Times of the timed runs, in milliseconds."""

    runs: int
    median_ms: float
    p10_ms: float
    p90_ms: float
    min_ms: float

    @property
    def spread(self) -> float:
        """(p90 - p10) / median: the relative width of the middle 80% of runs."""
        return (self.p90_ms - self.p10_ms) / self.median_ms if self.median_ms > 0 else float("nan")


def summarize(times_ms) -> Stats:
    xs = sorted(float(t) for t in times_ms)
    if len(xs) < 2:
        raise ValueError("need at least two timed runs")
    q = statistics.quantiles(xs, n=10, method="inclusive")
    return Stats(runs=len(xs), median_ms=statistics.median(xs), p10_ms=q[0], p90_ms=q[-1], min_ms=xs[0])


def gbs(nbytes: int, ms: float) -> float:
    return nbytes / (ms * 1e-3) / 1e9


@dataclass
class Row:
    """One kernel (or the copy) at one shape and dtype. status: 'ok', 'refused' or 'error'."""

    kernel: str
    role: str  # 'kernel', 'against' or 'copy'
    op: str
    dtype: str
    M: int
    N: int
    bytes: int
    status: str = "ok"
    stats: Optional[Stats] = None
    copy_ms: Optional[float] = None
    note: str = ""
    host_ms: Optional[float] = None  # median host time of one eager call (its launch)
    method: str = ""  # how the timed runs ran: 'graph' (a CUDA graph replay) or 'delay' (behind a GPU-side delay)

    @property
    def host_bound(self) -> bool:
        """The launch takes longer on the host than the kernel on the GPU: called eagerly, it runs at the
        speed of its launch (verifier.bench.clock)."""
        return self.stats is not None and self.host_ms is not None and self.host_ms > self.stats.median_ms

    @property
    def gbs(self) -> Optional[float]:
        return gbs(self.bytes, self.stats.median_ms) if self.stats else None

    @property
    def ratio(self) -> Optional[float]:
        """Bandwidth over the copy's at the same bytes (copy time / kernel time)."""
        if not self.stats or not self.copy_ms:
            return None
        return self.copy_ms / self.stats.median_ms


@dataclass
class BenchResult:
    rows: list = field(default_factory=list)
    warnings: list = field(default_factory=list)  # (M, N, dtype, message)
    environment: dict = field(default_factory=dict)
    gpu: str = ""
    l2_bytes: int = 0
    runs: int = 0
    warmup: int = 0
    date: str = ""

    def shapes(self):
        return list(dict.fromkeys((r.M, r.N, r.dtype) for r in self.rows))


def dtype_plan(kernels, only: Optional[list]) -> list:
    """The dtype variants to time: ``only`` (tags as in repro lines), else every variant a main kernel declares,
    in declaration order. A tag no main kernel declares is a usage error."""
    declared = list(dict.fromkeys(d for k in kernels for d in k.dtypes))
    if not only:
        return declared
    tags = {d.tag: d for d in declared}
    missing = [t for t in only if t not in tags]
    if missing:
        raise UsageError(f"--dtype {missing[0]} is declared by none of the kernels benchmarked",
                         fix=f"use one of {', '.join(tags)}")
    return [tags[t] for t in dict.fromkeys(only)]
