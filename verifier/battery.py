"""The check battery: the one place that decides whether a kernel is right.

For each kernel, in order (a kernel's battery stops only where continuing is meaningless: a build
failure, or a CUDA fault that leaves the context unusable):
build → resources → static (verifier.lint, CUDA sources) → refusal → value / invariant / nan-inf / unwritten /
out-of-range-write (every catalogue case and Hypothesis-drawn shapes) → determinism → sanitizer
(verifier.sanitizer, when present).

Every input is a fresh random draw from a seed derived from (base seed, kernel, dtype, case); a finding
records the base seed and case name, and its repro line re-runs exactly that case: ``--case NAME`` takes a
catalogue case, ``hypothesis:MxN:rngS`` (a Hypothesis-drawn shape and its value seed), ``refusal`` or
``determinism``.

A Python exception raised by the kernel (callable, launcher) on a shape supports() accepts is a **refusal**
finding for that input (with the fix: declare it in supports()) and the battery goes on; raised on every
input, or a TypeError / NameError, it is the kernel's error; a CUDA fault is a **crash** (verifier.usercode).
An exception in the spec's own supports / launches / defines is that kernel's error (verdict 'error', exit 1),
and the run goes on with the other kernels; a UsageError (a malformed spec or option) propagates: exit 2.
Undeclared resource use (spills, stack) is a **resources** warning; declared contracts
(verifier.contracts) leave out inputs and let flushed subnormals pass.

The single steps (check_build, check_refusal, run_case, check_determinism, with random_inputs,
hypothesis_shapes, repro_line and crash_finding) are public for callers that run one check at a time, as
the pytest plugin does: a suite test and ``verifier check`` then judge the same input the same way.
"""
from __future__ import annotations

import re
import shlex
import time
import zlib
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from verifier import forked as _forked
from verifier import inputs as _inputs
from verifier.errors import BuildError, ToolMissing, Unsupported, UsageError, VerifierError
from verifier.findings import CHECK_CLASSES, Finding
from verifier.harness import KernelFault, execute
from verifier.spec import CudaKernel, KernelSpec
from verifier.usercode import UserCodeError

BUDGETS = {
    # hypothesis examples per dtype, determinism repeats
    "quick": {"hypothesis": 0, "repeats": 2},
    "ci": {"hypothesis": 12, "repeats": 3},
    "thorough": {"hypothesis": 60, "repeats": 5},
}
# Row lengths probed by the refusal check: edges of warps, vectors, register classes and vocab rows.
PROBE_N = (1, 2, 3, 5, 7, 31, 32, 33, 1000, 1023, 1024, 1025, 2048, 2049, 4096, 4097, 8192, 8193,
           16384, 16385, 65536, 65537, 152064, 262144)
CPU_BUILD_ARCHES = ("sm_80", "sm_90")
PASS, FAIL, WARN = "pass", "FAIL", "warn"
RUN_CHECKS = ("refusal", "value", "invariant", "nan-inf", "unwritten", "out-of-range-write", "determinism")
PSEUDO_CASES = ("refusal", "determinism")  # --case values that run one check instead of one input
_HYPOTHESIS_CASE = re.compile(r"^hypothesis:(\d+)x(\d+):rng(\d+)$")


def skipped(reason: str) -> str:
    return f"skipped({reason})"


@dataclass
class KernelReport:
    spec: KernelSpec
    device: str
    findings: list = field(default_factory=list)
    # cells[(dtype_tag, check)] = 'pass' | 'FAIL' | 'skipped(reason)'
    cells: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)  # info lines: refused cases, resources, timings
    seconds: float = 0.0
    error: Optional[str] = None  # internal error while checking (verdict 'error')
    judged: dict = field(default_factory=dict)  # dtype tag -> inputs that ran through the value checks
    error_kind: str = "internal"  # 'user': the error is in the spec's own code (verifier.usercode), exit 1
    inputs: dict = field(default_factory=lambda: {"ran": 0, "raised": 0})  # inputs judged / raising

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def verdict(self) -> str:
        if self.error:
            return "error"
        if any(f.severity == "error" for f in self.findings):
            return "fail"
        if self.cells and all(v.startswith("skipped") for v in self.cells.values()):
            return "skipped"
        return "pass"

    def mark(self, tag: str, check: str, value: str):
        old = self.cells.get((tag, check))
        if old == FAIL or (old == WARN and value != FAIL):
            return
        if value in (FAIL, WARN) or old is None or (old.startswith("skipped") and value != PASS):
            self.cells[(tag, check)] = value

    def add(self, finding: Finding):
        self.findings.append(finding)
        self.mark(finding.dtype or "*", finding.check, FAIL if finding.severity == "error" else WARN)


@dataclass(frozen=True)
class Options:
    budget: str = "ci"
    seed: int = 0
    device: str = "cpu"  # resolved: 'cpu' or 'cuda'
    case: Optional[str] = None  # only this catalogue case (repro)
    dtype: Optional[str] = None  # only this dtype tag (repro)
    sanitize: bool = False
    triton_mode: Optional[str] = None
    timeout: Optional[float] = None  # seconds per kernel in a child process (None: $VERIFIER_KERNEL_TIMEOUT or 600)


def resolve_device(device: str) -> str:
    if device not in ("cpu", "cuda", "auto"):
        raise UsageError(f"unknown device {device!r}", fix="use cpu, cuda or auto")
    if device == "cpu":
        return "cpu"
    try:
        from verifier.cuda_probe import cuda_available  # without importing torch (seconds)

        has_gpu = cuda_available()
    except Exception:
        has_gpu = False
    if device == "cuda" and not has_gpu:
        raise UsageError("--device cuda asked for, but torch sees no CUDA GPU",
                         fix="use --device auto or cpu, or install a CUDA build of torch")
    return "cuda" if has_gpu else "cpu"


def derived_seed(seed: int, *parts) -> int:
    return zlib.crc32(":".join(map(str, (seed,) + parts)).encode()) & 0x7FFFFFFF


def _runner(spec: KernelSpec) -> Callable:
    if spec.kind == "cuda":
        from verifier.runners.cuda import run_cuda

        return run_cuda
    if spec.kind == "triton":
        from verifier.runners.triton import run_triton

        return run_triton
    from verifier.runners.callable import run_callable

    return run_callable


def repro_line(spec: KernelSpec, opts: Options, tag: str = "", case: str = "") -> str:
    """The ``verifier check`` command line that re-runs this kernel (narrowed to dtype ``tag`` and
    case ``case`` when given) with the same budget (a case's shape depends on it), seed and device."""
    parts = ["verifier", "check", spec.origin or "<spec.py>", "--kernel", spec.name]
    if tag:
        parts += ["--dtype", tag]
    if case:
        parts += ["--case", case]
    parts += ["--budget", opts.budget, "--seed", str(opts.seed), "--device", opts.device]
    return " ".join(shlex.quote(p) for p in parts)


_repro = repro_line  # older name, still imported by verifier/isolate.py


def runnable_reason(spec: KernelSpec, device: str) -> Optional[str]:
    """Why this kernel's launches cannot run on ``device`` (None if they can)."""
    if spec.kind == "cuda" and device != "cuda":
        return "no CUDA GPU: CUDA kernels are built and resource-checked only"
    if spec.kind == "callable" and spec.device not in ("any", device):
        return f"callable declared for {spec.device}, device is {device}"
    if spec.kind == "triton":
        import importlib.util

        # find_spec, not import: importing triton fixes compiled vs interpreted mode for the process.
        if importlib.util.find_spec("triton") is None:
            return "triton is not installed (pip install 'kernel-verifier[triton]')"
    return None


# ---------------------------------------------------------------------------------------------
def _wants(opts: Options, step: str) -> bool:
    """Whether this run includes ``step`` ('refusal', 'values', 'determinism'): all of them, unless
    ``--case`` narrows the run to one input (values) or one pseudo-case."""
    if opts.case is None:
        return True
    if opts.case in PSEUDO_CASES:
        return step == opts.case
    return step == "values"


def crash_finding(spec: KernelSpec, opts: Options, e: KernelFault, **ctx) -> Finding:
    """The **crash** finding of a kernel that raised ``e``; ``ctx`` adds Finding fields (dtype, input, shape,
    repro: by default the repro line of ctx's dtype and input)."""
    what = "a CUDA fault (the context is unusable; the rest of this kernel's battery was not run)" if e.cuda \
        else "an exception"
    ctx.setdefault("repro", repro_line(spec, opts, ctx.get("dtype", ""), ctx.get("input", "")))
    return Finding("crash", f"the kernel raised {what}: {e}", kernel=spec.name, seed=opts.seed, **ctx)


def check_kernel(spec: KernelSpec, opts: Options, progress: Optional[Callable[[str], None]] = None) -> KernelReport:
    """The battery for one kernel. Progress messages are ``NAME [TAG]: STEP`` (STEP a check or a case name)."""
    report = KernelReport(spec=spec, device=opts.device)
    t0 = time.monotonic()
    tags = [d for d in spec.dtypes if opts.dtype in (None, d.tag)]
    if not tags:
        raise UsageError(
            f"kernel {spec.name} declares no dtype {opts.dtype!r}",
            fix=f"declared: {', '.join(d.tag for d in spec.dtypes)}",
        )
    say = progress or (lambda s: None)
    from verifier import contracts as _contracts
    from verifier import usercode

    report.notes += _contracts.declared_notes(spec)
    try:
        say(f"{spec.name}: build")
        if not _build_and_resources(spec, opts, report, tags):
            return report
        if spec.kind == "cuda" and opts.case is None:  # static checks on the PTX (verifier.lint); no GPU needed
            from verifier.lint.driver import battery_hook as static_hook

            say(f"{spec.name}: static")
            static_hook(spec, opts, report, tags)
        why = runnable_reason(spec, opts.device)
        if why:
            for dt in tags:
                for check in RUN_CHECKS:
                    report.mark(dt.tag, check, skipped(why))
            report.notes.append(f"not run: {why}")
            if opts.sanitize:  # marks skipped(<reason>) cells; never launches anything on CPU
                from verifier.sanitizer import battery_hook

                battery_hook(spec, opts, report, tags)
            return report
        if spec.kind == "triton" and opts.device == "cuda":
            say(f"{spec.name}: resources")
            _triton_resources(spec, opts, report, tags)
        run = _runner(spec)
        for dt in tags:
            if _wants(opts, "refusal"):
                say(f"{spec.name} [{dt.tag}]: refusal")
                check_refusal(spec, dt, opts, report, run=run)
            if _wants(opts, "values"):
                say(f"{spec.name} [{dt.tag}]: values")
                _check_values(spec, run, dt, opts, report, say)
            if _wants(opts, "determinism"):
                say(f"{spec.name} [{dt.tag}]: determinism")
                check_determinism(spec, dt, opts, report, run=run)
        if opts.sanitize:
            from verifier.sanitizer import battery_hook

            battery_hook(spec, opts, report, tags)
        everywhere = usercode.raised_everywhere(spec, report.inputs) if opts.case is None else None
        if everywhere is not None:
            usercode.blame_everywhere(report, everywhere, RUN_CHECKS)
    except UserCodeError as e:  # the spec's own code raised: this kernel's error, the run goes on
        usercode.blame(report, e)
    except UsageError:
        raise  # a malformed spec (or option) found while running it: exit 2, fix the spec
    except KernelFault as e:
        # Raised outside a per-input check (determinism, Triton resources), or a CUDA fault after which
        # the context is unusable: record it (once) and stop this kernel's battery.
        if not getattr(e, "reported", False):
            report.add(crash_finding(spec, opts, e))
    except VerifierError as e:
        report.error = f"{type(e).__name__}: {e}"
    finally:
        report.seconds = time.monotonic() - t0
    return report


# --- build and resources ---------------------------------------------------------------------
def _entries(spec: CudaKernel, dts) -> set:
    from verifier.runners.cuda import launches_for

    entries = set()
    for dt in dts:
        for N in PROBE_N:
            if spec.check_supported(4, N, dt) is None:
                entries.update(l.entry for l in launches_for(spec, 4, N, dt, spec.op_params()))
    return entries


def build_arches(opts) -> tuple:
    """The architectures the build check compiles for: the GPU's, else CPU_BUILD_ARCHES."""
    if opts.device == "cuda":
        from verifier.runners.cuda import device_arch

        return (device_arch(),)
    return CPU_BUILD_ARCHES


def _build_and_resources(spec, opts, report, dts) -> bool:
    if spec.kind != "cuda":
        for dt in dts:
            report.mark(dt.tag, "build", skipped("not a CUDA source"))
            if not (spec.kind == "triton" and opts.device == "cuda"):
                report.mark(dt.tag, "resources", skipped("compiled-kernel facts need a GPU" if spec.kind == "triton" else "Python callable"))
        return True
    from verifier import usercode
    from verifier.build import compile_cubin

    arches = build_arches(opts)
    # One build per distinct set of -D macros (spec.defines(dtypes)); most specs have one.
    groups: dict = {}
    for dt in dts:
        defines = usercode.call(spec, "defines", spec.defines, dt)
        groups.setdefault(tuple(sorted(defines.items())), []).append(dt)
    ok = True
    for defines, group in groups.items():
        entries = _entries(spec, group)
        for arch in arches:
            try:
                res = compile_cubin(spec.source_path(), arch=arch, defines=dict(defines), flags=tuple(spec.extra_flags))
            except ToolMissing as e:
                why = f"{e.message}; fix: {e.fix}" if e.fix else e.message  # name the tool and the fix
                for dt in dts:
                    report.mark(dt.tag, "build", skipped(why))
                report.notes.append(f"build skipped: {why}")
                return False
            except BuildError as e:
                report.add(Finding("build", f"[{arch}] {e}", kernel=spec.name, repro=repro_line(spec, opts)))
                return False
            missing = sorted(e for e in entries if e not in res.resources)
            for e in missing:
                report.add(Finding("build", f"[{arch}] entry {e} used by the spec's launches is not in the cubin",
                                   kernel=spec.name, repro=repro_line(spec, opts)))
            ok = ok and not missing
            _check_resources(spec, opts, report, group, arch,
                             {e: res.resources[e] for e in entries if e in res.resources})
    for dt in dts:
        report.mark(dt.tag, "build", PASS)
    return ok


def check_build(spec: KernelSpec, opts: Options, dts, report: Optional[KernelReport] = None) -> KernelReport:
    """The build and resources step on its own: a CUDA source is built with nvcc for the device's arch
    (sm_80 and sm_90 without a GPU), every entry the launches use must be in the cubin and ptxas resources
    within the spec's expectations; a Triton kernel on a GPU has its compiled kernels' resources checked.
    Other kernels get skipped cells. Findings and cells go to ``report`` (a new one if None), returned.
    A KernelFault (Triton compiling on a GPU) propagates."""
    report = report if report is not None else KernelReport(spec=spec, device=opts.device)
    dts = list(dts)
    _build_and_resources(spec, opts, report, dts)
    if spec.kind == "triton" and opts.device == "cuda" and runnable_reason(spec, opts.device) is None:
        _triton_resources(spec, opts, report, dts)
    return report


def _check_resources(spec, opts, report, dts, arch, resources: dict):
    from verifier.ptxas import check_expectations, entry_line, undeclared_usage

    for entry, r in sorted(resources.items()):
        problems = check_expectations(r, spec.expectations)
        report.notes.append(f"[{arch}] {entry}: {r.registers} registers, {r.spill_bytes} spill bytes, "
                            f"{r.stack_bytes} stack bytes, {r.smem_bytes} smem bytes")
        where = dict(zip(("file", "line"), entry_line(spec.source_path(), r.demangled) or (None, None)))
        for p in problems:
            report.add(Finding("resources", f"[{arch}] {entry}: {p}", kernel=spec.name, repro=repro_line(spec, opts),
                               score=1.0, **where))
        for p in undeclared_usage(r, spec.expectations):  # nothing declared: the fact speaks as a warning
            report.add(Finding("resources", f"[{arch}] {entry}: {p}", severity="warning", kernel=spec.name,
                               repro=repro_line(spec, opts), score=0.5, **where))
    for dt in dts:
        report.mark(dt.tag, "resources", PASS)


def _triton_resources(spec, opts, report, dts):
    """Compiled Triton kernels: registers, local memory and shared memory from the compiled kernel
    object, for each dtype at a few row lengths. Triton reports local memory as one figure (spills and
    stack together), so it is checked against both max_spill_bytes and max_stack_bytes."""
    from verifier.ptxas import KernelResources, check_expectations
    from verifier.runners.triton import compiled_resources

    for dt in dts:
        sizes = [n for n in (1024, 4096, 8192, 65536, 152064) if spec.check_supported(4, n, dt) is None]
        for n in sizes[-3:]:
            try:
                res = compiled_resources(spec, 4, n, dt, spec.op_params(), device="cuda")
            except UsageError:
                raise  # a malformed spec: the user must fix it, not read a skipped cell
            except VerifierError as e:
                report.mark(dt.tag, "resources", skipped(e.message))  # mark() keeps it over the PASS below
                break
            for k in res["kernels"]:
                r = KernelResources(name=k["name"], demangled=k["name"], demangled_with="not-mangled", arch=None,
                                    is_entry=True, registers=k["registers"], smem_bytes=k["shared_bytes"],
                                    spill_store_bytes=k["local_bytes"], stack_frame_bytes=k["local_bytes"])
                report.notes.append(f"[{dt.tag} N={n}] {k['name']}: {k['registers']} registers, "
                                    f"{k['local_bytes']} local bytes, {k['shared_bytes']} smem bytes")
                for p in check_expectations(r, spec.expectations):
                    report.add(Finding("resources", f"[N={n}] {k['name']}: {p} (Triton local memory = spills + stack)",
                                       kernel=spec.name, dtype=dt.tag, repro=repro_line(spec, opts, dt.tag)))
                if spec.expectations.max_spill_bytes is None and spec.expectations.max_stack_bytes is None \
                        and k["local_bytes"] > 0:  # undeclared local memory speaks as a warning
                    report.add(Finding(
                        "resources", f"[N={n}] {k['name']}: uses {k['local_bytes']} bytes of local memory (Triton: "
                        "spills + stack) and the spec declares no limit for it; declare Expectations(max_spill_bytes="
                        "..., max_stack_bytes=...) to accept it, or register_resident() to forbid it",
                        severity="warning", kernel=spec.name, dtype=dt.tag, repro=repro_line(spec, opts, dt.tag),
                        score=0.5))
        report.mark(dt.tag, "resources", PASS)


# --- refusal ---------------------------------------------------------------------------------
def random_inputs(spec: KernelSpec, dt, M: int, N: int, rng: np.random.Generator) -> dict:
    """Random inputs of an M x N row problem of the spec's op (see random_maker), drawn from ``rng``."""
    return random_maker(M, N)(rng, dt, spec.op, spec.op_params())


_random_inputs = random_inputs  # older name, still used by tests/test_battery.py


def random_maker(M, N):
    """Inputs of any op: normal values (full range for ints), weights around 1."""
    return _inputs.maker(M, N, _inputs.rand_normal)


def check_refusal(spec: KernelSpec, dt, opts: Options, report: Optional[KernelReport] = None, *,
                  run: Optional[Callable] = None) -> KernelReport:
    """The refusal check of one dtype: every probe shape outside supports() (and M=0) must be refused with
    verifier.errors.Unsupported before anything launches. Findings and the cell go to ``report`` (a new one
    if None), returned. ``run``: the launcher (default: the spec kind's runner). After a CUDA fault the
    crash is recorded and the KernelFault re-raised, marked ``reported``."""
    report = report if report is not None else KernelReport(spec=spec, device=opts.device)
    run = run or _runner(spec)
    op_params = spec.op_params()
    probes = [(0, 32)] + [(1, n) for n in PROBE_N]
    for M, N in probes:
        reason = spec.check_supported(M, N, dt)
        if reason is None:
            continue  # supported shapes are exercised by the value checks (boundary case included)
        rng = np.random.default_rng(derived_seed(opts.seed, spec.name, dt.tag, "refusal", N))
        xs = random_inputs(spec, dt, max(M, 1), N, rng)
        if M == 0:
            xs = {k: (v[:0] if v.ndim == 2 else v) for k, v in xs.items()}
        ctx = dict(kernel=spec.name, dtype=dt.tag, input="refusal", shape=(M, N), seed=opts.seed,
                   repro=repro_line(spec, opts, dt.tag, "refusal"))
        try:
            execute(run, spec, xs, dt, op_params, opts.device, check_poison=False)
        except Unsupported:
            continue
        except (KernelFault, VerifierError) as e:
            if isinstance(e, UsageError):
                raise
            report.add(Finding("refusal", f"M={M}, N={N} is outside supports ({reason}) but the kernel raised "
                               f"{e} instead of a clear refusal (verifier.errors.Unsupported)", **ctx))
            if getattr(e, "cuda", False):
                e.reported = True
                raise
            continue
        report.add(Finding("refusal", f"M={M}, N={N} is outside supports ({reason}) but the kernel ran without "
                           "refusing", **ctx))
    report.mark(dt.tag, "refusal", PASS)
    return report


def _check_refusal(spec, run, dt, opts, report):  # older signature, still used by tests/test_battery.py
    check_refusal(spec, dt, opts, report, run=run)


# --- values, invariants, poison, guards -------------------------------------------------------
def _boundary_case(spec, dt):
    """The longest supported probe row: where 'silently not processed' defects live."""
    supported = [n for n in PROBE_N if spec.check_supported(2, n, dt) is None]
    if not supported:
        return None
    n = max(supported)
    return _inputs.Case(name=f"boundary_n{n}", exposes="longest supported row: silently skipped tails",
                        M=2, N=n, make=random_maker(2, n))


def cases_for(spec, dt, budget) -> list:
    cases = list(_inputs.catalogue(spec.op, dtypes=dt, budget=budget))
    b = _boundary_case(spec, dt)
    if b is not None and all(c.name != b.name for c in cases):
        cases.append(b)
    return cases


def hypothesis_case(name: str) -> Optional[_inputs.Case]:
    """The input a Hypothesis example named ``hypothesis:MxN:rngS`` ran on (its repro), or None."""
    m = _HYPOTHESIS_CASE.match(name)
    if not m:
        return None
    M, N, data_seed = map(int, m.groups())
    make = random_maker(M, N)
    return _inputs.Case(name=name, exposes="a Hypothesis-drawn shape", M=M, N=N,
                        make=lambda rng, dt, op, params: make(np.random.default_rng(data_seed), dt, op, params))


def _selected_cases(spec, dt, opts) -> list:
    if opts.case is None:
        return cases_for(spec, dt, opts.budget)
    drawn = hypothesis_case(opts.case)
    if drawn is not None:
        return [drawn]
    # The run's budget first (a case's shape depends on the budget: repro lines carry --budget), then any
    # other budget, so a repro line written without --budget still finds its case.
    order = [opts.budget] + [b for b in BUDGETS if b != opts.budget]
    cases = [c for b in order for c in cases_for(spec, dt, b) if c.name == opts.case][:1]
    if not cases:
        raise UsageError(f"no catalogue case {opts.case!r} for op {spec.op} (kernel {spec.name})",
                         fix=f"take the case name from the finding's repro line or `verifier cases {spec.op}`; "
                             f"or use {', '.join(PSEUDO_CASES)} or hypothesis:MxN:rngS")
    return cases


def _check_values(spec, run, dt, opts, report, say):
    from verifier import contracts as _contracts

    cases = _selected_cases(spec, dt, opts)
    ran, left_out, judged_before = 0, None, report.judged.get(dt.tag, 0)
    for case in cases:
        say(f"{spec.name} [{dt.tag}]: {case.name}")
        reason = spec.check_supported(case.M, case.N, dt)
        if reason is not None:
            report.notes.append(f"[{dt.tag}] case {case.name} ({case.M}x{case.N}) refused by design: {reason}")
            continue
        rng = np.random.default_rng(derived_seed(opts.seed, spec.name, dt.tag, case.name))
        xs = case.make(rng, dt, spec.op, spec.op_params())
        caveat = interpreter_caveat(spec, dt, xs, opts.device)
        if caveat:
            report.notes.append(f"[{dt.tag}] case {case.name} not run: {caveat}")
            continue
        contract = _contracts.excluded(spec, xs)
        if contract:
            report.notes.append(f"[{dt.tag}] case {case.name} {contract}")
            left_out = contract
            continue
        run_case(spec, dt, case.name, xs, opts, report, run=run)
        ran += 1
    if opts.case is None and BUDGETS[opts.budget]["hypothesis"]:
        ran += _hypothesis_values(spec, run, dt, opts, report)
    checks = ("value", "invariant", "nan-inf", "unwritten", "out-of-range-write")
    # A check passes only if some input ran through it: a kernel that raised on every input checked nothing.
    judged = report.judged.get(dt.tag, 0) - judged_before
    why = (left_out or "every case refused by supports") if not ran else \
        "no input ran through this check: the kernel raised on every input it was given (see its crash findings)"
    for check in checks:
        report.mark(dt.tag, check, PASS if judged else skipped(why))


def interpreter_caveat(spec, dt, xs, device) -> Optional[str]:
    """Inputs the Triton interpreter cannot represent faithfully (so a mismatch would be the
    interpreter's, not the kernel's). tests/test_interpreter_caveats.py pins each fact, so a Triton
    release that fixes it fails that test and the caveat can go."""
    if spec.kind != "triton" or device != "cpu" or dt.input != "bfloat16":
        return None
    import ml_dtypes

    tiny = float(ml_dtypes.finfo(ml_dtypes.bfloat16).smallest_normal)
    for name, v in xs.items():
        a = np.abs(v.astype(np.float64))
        if np.any((a > 0) & (a < tiny)):
            return (f"input {name!r} holds bf16 subnormals, which the Triton interpreter decodes wrongly "
                    "(6.5e-39 loads as 1.3e-39); run compiled on a GPU to check them")
    return None


def evaluate(spec, run, dt, opts, xs) -> tuple:
    """Run once and judge: returns (outcome, comparison, violations)."""
    from references import reference
    from verifier import contracts as _contracts
    from verifier import invariants as _inv
    from verifier import tolerance as _tol
    from verifier.compare import compare

    params = spec.op_params()
    outcome = execute(run, spec, xs, dt, params, opts.device)
    ref = reference(spec.op, xs, params, dt.output)
    budget = _tol.budget(spec.op, dt, spec.math_mode, xs, ref, params, overrides=spec.tolerance)
    comparison = compare(outcome.outputs, ref, budget, dt.output)
    violations = _inv.check(spec.op, xs, outcome.outputs, dt, params, math_mode=spec.math_mode,
                            online=bool(spec.tolerance.get("online", False)))
    if (not comparison.ok or violations) and _contracts.flushes(spec):
        # Declared (or inferred) subnormals='flush': the output may be that of flushed inputs and outputs.
        flushed = _contracts.judge_flushed(spec, dt, xs, outcome.outputs, params)
        if flushed is not None and flushed[0].ok and not flushed[1]:
            comparison, violations = flushed
    return outcome, comparison, violations


def run_case(spec: KernelSpec, dt, case_name: str, inputs: dict, opts: Options,
             report: Optional[KernelReport] = None, *, run: Optional[Callable] = None,
             repro: Optional[str] = None) -> KernelReport:
    """One input through the value, invariant, nan-inf, unwritten and out-of-range-write checks (a refusal
    inside supports() is a **refusal** finding, an exception a **crash**). Findings go to ``report`` (a new
    one if None), returned; cells are not marked: a check passes over all of its inputs, not one.
    ``case_name`` names the input in findings; ``repro`` defaults to the repro line of that case; ``run``
    to the spec kind's runner. After a CUDA fault the crash is recorded and the KernelFault re-raised,
    marked ``reported``."""
    from verifier import usercode
    from verifier.invariants import violations_to_findings

    report = report if report is not None else KernelReport(spec=spec, device=opts.device)
    run, xs = run or _runner(spec), inputs
    if repro is None:
        repro = repro_line(spec, opts, dt.tag, case_name)
    shape = tuple(xs["x"].shape)
    ctx = dict(kernel=spec.name, dtype=dt.tag, input=case_name, shape=shape, seed=opts.seed, repro=repro)
    try:
        outcome, comparison, violations = evaluate(spec, run, dt, opts, xs)
    except Unsupported as e:
        report.add(Finding("refusal", f"refused a shape its supports() accepts: {e}", **ctx))
        return report
    except KernelFault as e:
        if usercode.classify(spec, e) == "refusal":  # a Python exception, not a CUDA fault (TypeError: raises)
            report.inputs["raised"] += 1
            report.inputs.setdefault("first", usercode.describe(e.original))
            report.add(Finding("refusal", usercode.refusal_message(e), **ctx))
            return report
        report.add(crash_finding(spec, opts, e, **{k: v for k, v in ctx.items() if k not in ("kernel", "seed")}))
        if e.cuda:
            e.reported = True
            raise
        return report
    report.judged[dt.tag] = report.judged.get(dt.tag, 0) + 1
    report.inputs["ran"] += 1
    for name, mask in outcome.unwritten.items():
        idx = np.argwhere(mask)
        report.add(Finding("unwritten", f"output {name!r}: {len(idx)} of {mask.size} elements left unwritten "
                           f"(still poisoned), first at index {tuple(int(i) for i in idx[0])}", score=1e9 + len(idx), **ctx))
    for name, hits in outcome.guard_hits.items():
        desc = ", ".join(f"{d} bytes {side} the end" if side == "after" else f"{d} bytes before the start"
                         for side, d in hits[:4])
        report.add(Finding("out-of-range-write", f"output {name!r}: guard bytes changed ({desc})", score=2e9, **ctx))
    for f in comparison.findings(**ctx):
        report.add(f)
    for f in violations_to_findings(violations, **ctx):
        report.add(f)
    return report


def _one_run(spec, run, dt, opts, report, xs, case_name, repro) -> bool:
    """run_case under its older signature (still used by tests/test_battery.py): True if no finding."""
    before = len(report.findings)
    run_case(spec, dt, case_name, xs, opts, report, run=run, repro=repro)
    return len(report.findings) == before


def hypothesis_max_cols(device: str) -> int:
    """The longest Hypothesis-drawn row: shorter on CPU, where launches are emulated and slow."""
    return 8192 if device == "cpu" else 16384


def hypothesis_shapes(max_cols: int):
    """The Hypothesis strategy of (M, N) shapes: M in 1..16, N in 1..max_cols, edge sizes included.
    Plain integers are the first alternative: Hypothesis shrinks a one_of toward its first branch, so a
    failure shrinks to the smallest failing size, not just the smallest failing edge size (127 for 101)."""
    from hypothesis import strategies as st

    rows = st.one_of(st.integers(1, 16), _inputs.rows(16))
    cols = st.one_of(st.integers(1, max_cols), _inputs.cols(max_cols))
    return st.tuples(rows, cols)


def _hypothesis_values(spec, run, dt, opts, report) -> int:
    """Hypothesis-drawn shapes with random values; a failure is shrunk to the smallest shape first."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    from verifier import contracts as _contracts
    from verifier.flaky import Flaky, flaky_finding

    n = BUDGETS[opts.budget]["hypothesis"]
    failing: list = []
    ran, judged = [0], [0]

    @hseed(derived_seed(opts.seed, spec.name, dt.tag, "hypothesis"))
    @settings(max_examples=n, database=None, deadline=None, derandomize=False, print_blob=False,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.shrink],
              report_multiple_bugs=False)
    @given(shape=hypothesis_shapes(hypothesis_max_cols(opts.device)), data_seed=st.integers(0, 2**31 - 1))
    def prop(shape, data_seed):
        M, N = shape
        if spec.check_supported(M, N, dt) is not None:
            return
        rng = np.random.default_rng(data_seed)
        xs = random_inputs(spec, dt, M, N, rng)
        contract = _contracts.excluded(spec, xs)
        if contract:  # random normal values never hold NaN or inf; kept so that the rule has no exception
            report.notes.append(f"[{dt.tag}] hypothesis:{M}x{N}:rng{data_seed} {contract}")
            return
        ran[0] += 1
        probe = KernelReport(spec=spec, device=opts.device)
        case = f"hypothesis:{M}x{N}:rng{data_seed}"  # hypothesis_case() parses it back for the repro
        try:
            run_case(spec, dt, case, xs, opts, probe, run=run)
        except KernelFault:  # a CUDA fault: recorded in probe, nothing more can run
            failing[:] = [probe.findings]
            raise
        finally:
            for k, v in probe.inputs.items():  # inputs judged / raising, for the raised-on-every-input rule
                report.inputs[k] = report.inputs.get(k, 0) + v if k != "first" else report.inputs.get(k, v)
        judged[0] += probe.judged.get(dt.tag, 0)
        if probe.findings:  # any finding, warnings included, is a failure to shrink
            failing[:] = [probe.findings]  # the last failure Hypothesis replays is the shrunk one
            raise AssertionError(case)

    try:
        prop()
    except AssertionError:
        for f in failing[0]:
            report.add(f)
    except KernelFault:
        for f in failing[0] if failing else []:
            report.add(f)
        raise
    except Flaky as e:  # an example failed, then passed when replayed: the kernel is flaky, a finding
        report.add(flaky_finding(spec, dt, opts, failing[0] if failing else [], e))
    finally:
        report.judged[dt.tag] = report.judged.get(dt.tag, 0) + judged[0]
    return ran[0]


# --- determinism ---------------------------------------------------------------------------------
def check_determinism(spec: KernelSpec, dt, opts: Options, report: Optional[KernelReport] = None, *,
                      run: Optional[Callable] = None) -> KernelReport:
    """The determinism check of one dtype: repeated runs on one input must be bitwise equal if the spec
    declares the kernel deterministic, else each within tolerance. Findings and the cell go to ``report``
    (a new one if None), returned. ``run``: the launcher (default: the spec kind's runner). After a CUDA
    fault the crash is recorded and the KernelFault re-raised, marked ``reported``."""
    report = report if report is not None else KernelReport(spec=spec, device=opts.device)
    run = run or _runner(spec)
    shape = next(((M, N) for M, N in ((64, 4096), (16, 1000), (8, 256), (4, 32))
                  if spec.check_supported(M, N, dt) is None), None)
    if shape is None:
        report.mark(dt.tag, "determinism", skipped("no probe shape supported"))
        return report
    M, N = shape
    rng = np.random.default_rng(derived_seed(opts.seed, spec.name, dt.tag, "determinism"))
    xs = random_inputs(spec, dt, M, N, rng)
    params = spec.op_params()
    ctx = dict(kernel=spec.name, dtype=dt.tag, input="determinism", shape=shape, seed=opts.seed,
               repro=repro_line(spec, opts, dt.tag, "determinism"))
    try:
        runs = [execute(run, spec, xs, dt, params, opts.device, check_poison=False).outputs
                for _ in range(max(BUDGETS[opts.budget]["repeats"], 2))]
    except Unsupported as e:
        report.add(Finding("refusal", f"refused a shape its supports() accepts: {e}", **ctx))
        return report
    except KernelFault as e:
        from verifier import usercode

        if usercode.classify(spec, e) == "refusal":  # a Python exception, not a CUDA fault (TypeError: raises)
            report.inputs["raised"] += 1
            report.inputs.setdefault("first", usercode.describe(e.original))
            report.add(Finding("refusal", usercode.refusal_message(e), **ctx))
            report.mark(dt.tag, "determinism", skipped("the kernel raised on the probe shape"))
            return report
        report.add(crash_finding(spec, opts, e, **{k: v for k, v in ctx.items() if k not in ("kernel", "seed")}))
        report.mark(dt.tag, "determinism", skipped("the kernel raised on the probe shape"))
        if e.cuda:
            e.reported = True
            raise
        return report
    for name in runs[0]:
        first = runs[0][name]
        for i, later in enumerate(runs[1:], start=2):
            other = later[name]
            if np.array_equal(first.reshape(-1).view(np.uint8), other.reshape(-1).view(np.uint8)):
                continue
            if spec.expectations.deterministic:
                diff = int((first.reshape(-1).view(np.uint8) != other.reshape(-1).view(np.uint8)).sum())
                report.add(Finding("determinism", f"output {name!r}: run {i} differs bitwise from run 1 in {diff} "
                                   "bytes, but the kernel is declared deterministic", **ctx))
                break
            # Declared nondeterministic: each run must still be within tolerance (checked by value runs).
            from references import reference
            from verifier import tolerance as _tol
            from verifier.compare import compare

            ref = reference(spec.op, xs, params, dt.output)
            budget = _tol.budget(spec.op, dt, spec.math_mode, xs, ref, params, overrides=spec.tolerance)
            cmp = compare({name: other}, ref, {name: budget[name]}, dt.output)
            for f in cmp.findings(**ctx):
                report.add(Finding("determinism", f"run {i} (declared nondeterministic) out of tolerance: {f.message}", **ctx))
    report.mark(dt.tag, "determinism", PASS)
    return report


def _not_selected(spec, opts) -> Optional[str]:
    """Why --dtype / --case leave nothing of this kernel to check (None: something is left)."""
    if opts.dtype is not None and all(d.tag != opts.dtype for d in spec.dtypes):
        return f"declares no dtype {opts.dtype}"
    if opts.case is None or opts.case in PSEUDO_CASES or hypothesis_case(opts.case) is not None:
        return None
    if not any(c.name == opts.case for dt in spec.dtypes for b in BUDGETS for c in cases_for(spec, dt, b)):
        return f"op {spec.op} has no case {opts.case}"
    return None


def _selection(spec, opts) -> Optional[str]:
    """_not_selected, with a spec whose supports() raises counted as selected: its battery reports the error."""
    try:
        return _not_selected(spec, opts)
    except UserCodeError:
        return None


def _use_child(spec, opts, isolate: Optional[bool]) -> bool:
    if isolate is not None:
        return isolate
    # Automatic: on a GPU, everything that may launch device code; CPU-only callables stay in-process.
    return opts.device == "cuda" and not (spec.kind == "callable" and spec.device == "cpu")


def check_all(specs, opts: Options, progress=None, isolate: Optional[bool] = None) -> list[KernelReport]:
    """Run the battery on every kernel and go on after each, whatever it did.

    ``isolate``: run each kernel in a child process (verifier.isolate), so a fault is a **crash** finding
    and a hang a **timeout** finding (after ``opts.timeout`` s); None means: on a GPU, yes; on the CPU,
    callables and Triton kernels are checked in a fork of this process (verifier.forked: a kernel that kills
    its process is a crash finding); False: everything in this process.
    --dtype / --case select what exists: kernels without it are reported skipped; if no kernel has it,
    that is a usage error."""
    unselected = {s.name: _selection(s, opts) for s in specs}
    if specs and all(unselected.values()):
        what = f"dtype {opts.dtype}" if opts.dtype and all("dtype" in r for r in unselected.values()) \
            else f"case {opts.case}"
        raise UsageError(f"no selected kernel has {what}",
                         fix="take --dtype / --case from a finding's repro line, or see `verifier list` / "
                             "`verifier cases OP`")
    in_process = [s for s in specs if not unselected[s.name] and not _use_child(s, opts, isolate)]
    triton = next((s for s in in_process if s.kind == "triton"), None)
    if triton is not None and runnable_reason(triton, opts.device) is None:
        from verifier.runners.triton import activate

        activate(opts.triton_mode or ("compiled" if opts.device == "cuda" else "interpreter"))
    reports = []
    for i, spec in enumerate(specs):
        if progress:
            progress(f"[{i + 1}/{len(specs)}] {spec.name}")
        if unselected[spec.name]:
            r = KernelReport(spec=spec, device=opts.device)
            for check in ("build", "resources") + RUN_CHECKS:
                r.mark("*", check, skipped(f"not selected: {unselected[spec.name]}"))
            reports.append(r)
        elif _use_child(spec, opts, isolate):
            from verifier.isolate import check_in_child

            reports.append(check_in_child(spec, opts, progress))
        elif isolate is None and spec.kind in ("callable", "triton") and _forked.available(opts.device):
            # A kernel that kills its process (segfault, os._exit) costs only its own report.
            reports.append(_forked.check_forked(spec, opts, progress))
        else:
            reports.append(check_kernel(spec, opts, progress))
    return reports


__all__ = ["Options", "KernelReport", "check_kernel", "check_all", "cases_for", "evaluate", "resolve_device",
           "derived_seed", "hypothesis_case", "BUDGETS", "CHECK_CLASSES",
           # single steps, for callers that run one check at a time (the pytest plugin)
           "run_case", "check_refusal", "check_determinism", "check_build", "repro_line", "random_inputs",
           "crash_finding", "hypothesis_shapes", "hypothesis_max_cols"]
