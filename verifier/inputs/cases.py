"""Which inputs a kernel is checked on: the catalogue cases of its op and run level, the boundary case (its
longest supported probe row), the large-index case at the longest row of LARGE_N it supports, Hypothesis-drawn shapes named ``hypothesis:MxN:rngS``, and the random inputs of
any shape (refusal probes, determinism, Hypothesis examples, sanitizer launches).

Every input is a fresh draw from a seed derived from (base seed, kernel, dtype, case)
(verifier.results.options.derived_seed), so a case name and a seed re-create it exactly.
"""
from __future__ import annotations

import re
from typing import Optional

import numpy as np

from verifier.declare.kernels import KernelSpec
from verifier.errors import UsageError
from verifier.inputs import catalogue as _inputs
from verifier.inputs import large_family as _large
from verifier.inputs import layouts as _lay
from verifier.results.levels import TABLE as LEVELS
from verifier.results.options import PSEUDO_CASES, Options, derived_seed

# Row lengths probed by the refusal check: edges of warps, vectors, register classes and vocab rows.
PROBE_N = (1, 2, 3, 5, 7, 31, 32, 33, 1000, 1023, 1024, 1025, 2048, 2049, 4096, 4097, 8192, 8193,
           16384, 16385, 65536, 65537, 152064, 262144)


_HYPOTHESIS_CASE = re.compile(r"^hypothesis:(\d+)x(\d+):rng(\d+)$")


# Row lengths probed only where supports() takes none of PROBE_N: a kernel limited to head dims or model widths
# (FlashInfer's merge state: 64..512; exllamav2's head norm: 64 or 128 per head) would otherwise be neither built
# nor analysed. Only then: what other kernels reach stays as it was.
FALLBACK_N = (16, 64, 96, 128, 192, 256, 384, 512, 576, 768, 1536, 3072, 4608, 5120, 7168)
_FALLBACK_M = (1, 2, 4, 8, 16, 64, 256, 1024)  # and 1, 2, 4 rows per column: square blocks of N by N


def probe_lengths(spec, dt) -> list:
    """Row lengths that reach every entry a kernel launches: PROBE_N and one row per declared size class (a class
    no probe length reaches would be neither built nor analysed); FALLBACK_N where it accepts none of those."""
    lengths = set(PROBE_N) | set(spec.class_lengths(dt))

    def takes(n):
        return any(spec.check_supported(m, n, dt) is None for m in _FALLBACK_M + (n, 2 * n, 4 * n))

    if not any(takes(n) for n in lengths):
        lengths |= set(FALLBACK_N)
    return sorted(lengths)


class DrawTooLarge(Exception):
    """A large case whose inputs would take more host memory than DRAW_SHARE of the machine's (``reason``): not
    run, with why, where the draw would otherwise end the process (the kernel's OOM kill)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


DRAW_SHARE = 0.5  # of the host's physical memory, at most, for drawing a large case's inputs


def draw(spec, dt, case, seed: int) -> dict:
    """The inputs of ``case`` for this kernel and dtype: a fresh draw from the seed derived from (seed, kernel,
    dtype, case), so a case name and a seed re-create them exactly (``verifier check --case``, the suites). A large
    case draws only data rows sparsely; an op's own maker may draw an input whole or compute over the (M, N) x (a
    mask, a static scale calibrated on x: 17 GB at 2^31 elements), so its draw is capped at DRAW_SHARE of the
    host's memory (an address-space limit while it runs): past it, DrawTooLarge."""
    rng = np.random.default_rng(derived_seed(seed, spec.name, dt.tag, case.name))
    if not getattr(case.layout, "large", False):
        return case.make(rng, dt, spec.op, spec.op_params())
    with _capped() as cap:
        try:
            return case.make(rng, dt, spec.op, spec.op_params())
        except MemoryError:
            raise DrawTooLarge(f"drawing its inputs takes more than {cap / 1e9:.1f} GB of host memory (half of "
                               f"this machine's): op {spec.op}'s own maker draws an input whole or computes over "
                               "the whole (M, N) x") from None


def _capped():
    """A context capping the address space at what is mapped now plus DRAW_SHARE of physical memory (yields the
    share in bytes; no cap where the platform has none)."""
    import contextlib
    import os

    @contextlib.contextmanager
    def cap():
        try:
            import resource

            share = int(DRAW_SHARE * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
            with open("/proc/self/statm") as f:
                mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            before = resource.getrlimit(resource.RLIMIT_AS)
        except (ImportError, OSError, ValueError, AttributeError):
            yield float("inf")
            return
        hard = before[1]
        limit = mapped + share if hard == resource.RLIM_INFINITY else min(mapped + share, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        try:
            yield share
        finally:
            resource.setrlimit(resource.RLIMIT_AS, before)

    return cap()


def random_inputs(spec: KernelSpec, dt, M: int, N: int, rng: np.random.Generator) -> dict:
    """Random inputs of an M x N row problem of the spec's op (see random_maker), drawn from ``rng``."""
    return random_maker(M, N)(rng, dt, spec.op, spec.op_params())


def random_maker(M, N):
    """Inputs of any op: normal values (full range for ints), weights around 1."""
    return _inputs.maker(M, N, _inputs.rand_normal)


def _boundary_case(spec, dt):
    """The longest supported probe row: where 'silently not processed' defects live."""
    supported = [n for n in PROBE_N if spec.check_supported(2, n, dt) is None]
    if not supported:
        return None
    n = max(supported)
    return _inputs.Case(name=f"boundary_n{n}", exposes="longest supported row: silently skipped tails",
                        M=2, N=n, make=random_maker(2, n))


def large_case(spec, dt, wrap: int = _lay.WRAP, name: str = _large.LARGE_CASE, level: str = "thorough"):
    """The large-index case at the longest row of LARGE_N (at ``ci``: LARGE_N_CI) that supports() accepts with M·N
    past the wrap (a norm for hidden sizes up to 8192 is checked at 262208 x 8192); when it accepts none, at the
    first, which the gate then reports refused."""
    lengths = _lay.LARGE_N_CI if level == "ci" else _lay.LARGE_N
    for n in lengths:
        if spec.check_supported(_lay.large_rows(n, wrap), n, dt) is None:
            return _large.large_case(n, wrap, name)
    return _large.large_case(lengths[0], wrap, name)


def rows_case(spec, dt):
    """More than 65,535 rows at the shortest row of ROWS_N that supports() accepts (else the first: refused)."""
    M = _lay.GRID_Y + 1 + _lay.TAIL_ROWS
    n = next((n for n in _large.ROWS_N if spec.check_supported(M, n, dt) is None), _large.ROWS_N[0])
    return _large.rows_case(n)


def stride_case(spec, dt):
    """Rows 2^31 + 64 elements apart at the shortest row of ROWS_N that supports() accepts (else the first)."""
    n = next((n for n in _large.ROWS_N if spec.check_supported(_large.STRIDE_ROWS, n, dt) is None),
             _large.ROWS_N[0])
    return _large.stride_case(n)


def _large_for(spec, dt, name: str, level: str):
    if name == _large.ROWS_PAST_GRID_Y:
        return rows_case(spec, dt)
    if name == _large.ROW_STRIDE_2POW31:
        return stride_case(spec, dt)
    return large_case(spec, dt, 2 ** 32 if name == _large.LARGE_2POW32 else _lay.WRAP, name, level)


def cases_for(spec, dt, level) -> list:
    """The cases of ``level`` for this kernel and dtype: the catalogue's ordinary cases, the boundary row, then the
    layout cases (strided, unaligned, large: a CUDA fault there ends the kernel's battery, so they come last)."""
    cases = list(_inputs.catalogue(spec.op, dtypes=dt, level=level))
    if LEVELS[level].large_index and large_left_out(spec) is None:  # last: a fault there ends the battery
        cases += [_large_for(spec, dt, name, level) for name in _large.LARGE_CASES]
    b = _boundary_case(spec, dt)
    if b is not None and all(c.name != b.name for c in cases):
        last = [i for i, c in enumerate(cases) if c.layout == _lay.DEFAULT]
        cases.insert(last[-1] + 1 if last else 0, b)
    return cases


def large_left_out(spec) -> Optional[str]:
    """Why the large-index family is not among this kernel's cases (None: it is). Those cases judge some rows
    only, which says nothing of an output that is the whole batch's one value (cross_entropy_reduced's loss[1])."""
    op = _inputs.get_op(spec.op)
    if not op.reduces_rows:
        from verifier.inputs.row_place import row_place_reason

        why = row_place_reason(spec)
        return f"{', '.join(_large.LARGE_CASES)}: {why}" if why else None
    whole = ", ".join(t for t in op.outputs if op.dims_of(t) == (1,))
    return (f"{', '.join(_large.LARGE_CASES)}: not run: op {spec.op}'s output {whole} depends on every row, and "
            f"these cases judge only the rows around the 32-bit wrap; check the per-row op's kernel at this size "
            f"(e.g. the unreduced op) for 32-bit offsets")


def hypothesis_case(name: str) -> Optional[_inputs.Case]:
    """The input a Hypothesis example named ``hypothesis:MxN:rngS`` ran on (its repro), or None."""
    m = _HYPOTHESIS_CASE.match(name)
    if not m:
        return None
    M, N, data_seed = map(int, m.groups())
    make = random_maker(M, N)
    return _inputs.Case(name=name, exposes="a Hypothesis-drawn shape", M=M, N=N,
                        make=lambda rng, dt, op, params: make(np.random.default_rng(data_seed), dt, op, params))


def find_case(spec, dt, name: str, level: str) -> Optional[_inputs.Case]:
    """The input named ``name`` for this kernel and dtype: a Hypothesis example (``hypothesis:MxN:rngS``), else a
    catalogue case of ``level`` first (a case's shape depends on the level: repro lines carry --level), then of
    any other level, so a repro line written without --level still finds its case. None: no such input."""
    drawn = hypothesis_case(name)
    if drawn is not None:
        return drawn
    for lv in [level] + [other for other in LEVELS if other != level]:
        for c in cases_for(spec, dt, lv):
            if c.name == name:
                return c
    return None


def selected_cases(spec, dt, opts: Options) -> list:
    """The cases ``opts.case`` selects (all of the level's when None); an unknown name is a UsageError."""
    if opts.case is None:
        return cases_for(spec, dt, opts.level)
    case = find_case(spec, dt, opts.case, opts.level)
    if case is None and opts.case in _large.LARGE_CASES and large_left_out(spec) is not None:
        raise UsageError(f"case {opts.case!r} is not run for kernel {spec.name}: {large_left_out(spec)}",
                         fix="leave out --case, or check a kernel of a per-row op with it")
    if case is None:
        raise UsageError(f"no catalogue case {opts.case!r} for op {spec.op} (kernel {spec.name})",
                         fix=f"take the case name from the finding's repro line or `verifier cases {spec.op}`; "
                             f"or use {', '.join(PSEUDO_CASES)} or hypothesis:MxN:rngS")
    return [case]
