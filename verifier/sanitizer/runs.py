"""Run compute-sanitizer (racecheck, memcheck, synccheck, initcheck) on one kernel.

The watched process is ``python -m verifier.sanitizer.child REQUEST.json``: it launches the kernel at a
few small shapes that exercise tails (instrumented runs are slow) and judges nothing. The verdict comes
from the XML records only (``--xml --save``); the exit code is checked against them for consistency,
and the text output (kept in a log file) is for people.

Every run passes ``--print-limit 0`` (the limit also drops XML records), ``--error-exitcode 86``
(the default 0 hides errors) and ``--check-exit-code yes``, and filters to the kernel's own entries
(CUDA entries by exact name; torch's kernels always excluded). memcheck adds ``--padding 32`` (without it an off-by-one into a neighbouring
allocation is missed) and ``--leak-check full``; racecheck adds ``--racecheck-report all``: the analysis
records carry the level (warp-synchronous races are warnings) and per-site hazard counts, the hazard
records the WAR/WAW/RAW type and block/thread coordinates. Options that vary between releases are
probed from the installed binary's ``--help`` and passed only when present.
"""
from __future__ import annotations

import fnmatch
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from verifier.constants import SANITIZER_TOOLS
from verifier.errors import SpecError, ToolMissing, Unsupported, UsageError, VerifierError
from verifier.launch.cuda import launches_for
from verifier.results.findings import Finding
from verifier.results.kernel import FAIL, PASS, USER_ERROR, skipped
from verifier.sanitizer import suppressions as _supp
from verifier.sanitizer.shapes import FALLBACK_N, MAX_SHAPES, TAIL_SHAPES, tail_shapes  # noqa: F401 (public here too)
from verifier.sanitizer.suppressions import default_suppressions
from verifier.sanitizer.verdict import TORCH_KERNELS, UNREADABLE, judge_xml, suppressed
from verifier.toolchain.proc import read_answer, run_killable

TOOLS = SANITIZER_TOOLS
ERROR_EXITCODE = 86
DEFAULT_TIMEOUT_S = 300.0
TOOL_ENV = "VERIFIER_COMPUTE_SANITIZER"
_GPU_TURN = itertools.count()  # round robin over GPUs across every kernel submitted in this process
# Always excluded: torch's own kernels (the harness's fills and copies), which a substring filter on a
# short Triton kernel name could otherwise match.
EXCLUDE_SUBSTRINGS = TORCH_KERNELS[:1]  # torch's own kernels (mangled names): left out of racecheck, memcheck, synccheck
REQUIRED = ("tool", "xml", "save", "print-limit", "error-exitcode")
_INSTALL_FIX = (f"install the CUDA toolkit (compute-sanitizer ships in its bin/, e.g. /usr/local/cuda/bin) and put "
                f"it on PATH, or set ${TOOL_ENV} to the compute-sanitizer binary")


class SanitizerFailed(VerifierError):
    """compute-sanitizer itself did not run (bad option, no XML written): not a finding about the kernel."""


@dataclass
class SanitizerRun:
    tool: str
    exit_code: Optional[int]  # None when killed at the timeout
    xml_path: Optional[str]  # None unless keep_dir was given (the temporary file is gone)
    findings: list
    seconds: float
    command: list
    shapes: list = field(default_factory=list)  # (M, N) the child launched
    notes: list = field(default_factory=list)


# --- the binary and its options -------------------------------------------------------------------
@dataclass(frozen=True)
class ToolInfo:
    path: str
    version: str
    options: frozenset  # long option names without the leading '--'


_PROBED: dict = {}
_OPTION_RE = re.compile(r"^\s{2}(?:-\w \[ )?--([a-z][\w-]*)", re.M)
_VERSION_RE = re.compile(r"^Version (\S+)", re.M)


DEFAULT_CUDA_HOME = "/usr/local/cuda"  # the toolkit's usual home, looked in last


def find_tool() -> str:
    """``$VERIFIER_COMPUTE_SANITIZER``, else compute-sanitizer on PATH, else in $CUDA_HOME/bin or /usr/local/cuda/bin."""
    env = os.environ.get(TOOL_ENV)
    if env:
        found = shutil.which(env)
        if not found:
            raise ToolMissing(f"${TOOL_ENV} is {env!r}, which is not an executable", fix=_INSTALL_FIX)
        return found
    found = shutil.which("compute-sanitizer")
    for base in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), DEFAULT_CUDA_HOME):
        if not found and base:
            found = shutil.which(str(Path(base) / "bin" / "compute-sanitizer"))
    if not found:
        raise ToolMissing("compute-sanitizer was not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)", fix=_INSTALL_FIX)
    return found


def parse_help(text: str) -> frozenset:
    return frozenset(_OPTION_RE.findall(text))


def probe(path: str) -> ToolInfo:
    """Version and options of the binary, from ``--help`` (cached per path and modification time)."""
    key = (path, os.stat(path).st_mtime_ns)
    if key not in _PROBED:
        try:
            out = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ToolMissing(f"{path} --help failed: {e}", fix=_INSTALL_FIX) from None
        text = out.stdout + out.stderr
        info = ToolInfo(path=path, version=(_VERSION_RE.search(text) or [None, "unknown"])[1], options=parse_help(text))
        missing = [o for o in REQUIRED if o not in info.options]
        if missing:
            raise ToolMissing(f"{path} (version {info.version}) lacks --{', --'.join(missing)}; it is not a "
                              "compute-sanitizer this driver can use", fix=_INSTALL_FIX)
        _PROBED[key] = info
    return _PROBED[key]


def build_command(info: ToolInfo, tool: str, xml_path: str, log_path: str, kernels: list, child: list) -> list:
    """The compute-sanitizer command line for one tool run of ``child`` (argv)."""
    if tool not in TOOLS:
        raise UsageError(f"unknown sanitizer tool {tool!r}", fix=f"use one of {', '.join(TOOLS)}")
    has = info.options.__contains__
    esc = lambda p: str(p).replace("%", "%%")  # --save / --log-file expand %p, %q{}
    cmd = [info.path, "--tool", tool, "--xml", "--save", esc(xml_path), "--print-limit", "0",
           "--error-exitcode", str(ERROR_EXITCODE)]
    if has("check-exit-code"):
        cmd += ["--check-exit-code", "yes"]
    if has("log-file"):
        cmd += ["--log-file", esc(log_path)]
    if has("show-backtrace"):
        cmd += ["--show-backtrace", "no"]  # host stacks of a Python process: large and of no use here
    include = "kernel-name" if has("kernel-name") else ("kernel-regex" if has("kernel-regex") else None)
    if include:  # 2025.x: --kernel-name; older releases: --kernel-regex, same key=value syntax
        for k in kernels:
            cmd += [f"--{include}", ("kne=" if k.exact else "kns=") + k.name]
        # Not for initcheck: it tracks writes only in the kernels it instruments, so leaving torch's out hides the
        # fill kernel of torch.zeros, and a kernel reading a zeroed counter reads "uninitialized" memory (measured on
        # an H200: benchmarks/initcheck_atomic_probe.py clean outside the harness, the same kernel under
        # `verifier sanitize` flagged until this; docs/gpu-runs/2026-12-04-issues-34-35-36.md). torch's own records
        # are told apart when judged (verifier.sanitizer.verdict.judge_xml).
        if has(include + "-exclude") and tool != "initcheck":
            for s in EXCLUDE_SUBSTRINGS:
                cmd += [f"--{include}-exclude", f"kns={s}"]
    if tool == "memcheck":
        if has("padding"):
            cmd += ["--padding", "32"]
        if has("leak-check"):
            cmd += ["--leak-check", "full"]
    if tool == "racecheck" and has("racecheck-report"):
        cmd += ["--racecheck-report", "all"]
    return cmd + list(child)


# --- what to launch --------------------------------------------------------------------------------
@dataclass(frozen=True)
class KernelFilter:
    name: str
    exact: bool  # kne= full mangled name (CUDA entries), else kns= substring


def kernel_filters(spec, dt, shapes) -> list:
    if spec.builds_source:
        entries = {l.entry for M, N in shapes for l in launches_for(spec, M, N, dt, spec.op_params())}
        return [KernelFilter(e, True) for e in sorted(_symbols(spec, dt, entries))]
    # Triton: no include filter. A name filter that missed the launched kernel (one imported from another
    # module, a renamed specialization) would report a clean run of nothing; the only other kernels in the
    # child are torch's, which EXCLUDE_SUBSTRINGS drops.
    return []


def _symbols(spec, dt, entries) -> set:
    """The mangled symbols of ``entries`` (kne= matches mangled names; an entry may be a C++ name): resolved
    against the cubin built for this GPU, each entry kept as it is where that cannot be done."""
    from verifier.launch.cuda import build
    from verifier.launch.symbols import cubin_entries, resolve_launch_entries

    from verifier.errors import BuildError
    from verifier.gpu.probe import device_arch

    try:
        res = build(spec, device_arch(), dt)
    except (ToolMissing, BuildError):  # no nvcc / a broken source: the child's run reports it
        return set(entries)
    found, missing = resolve_launch_entries(entries, cubin_entries(res), spec.source)
    if missing:  # a filter naming no kernel would report a clean run of nothing
        raise next(iter(missing.values()))
    return set(found.values())


def _child_env(device: str, visible: Optional[str] = None) -> dict:
    env = dict(os.environ)
    if visible is not None:  # one GPU of several, chosen by the caller (parallel runs spread over GPUs)
        env["CUDA_VISIBLE_DEVICES"] = visible
    env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"  # every tensor its own cudaMalloc: padding and leaks work
    if device == "cuda":
        env["VERIFIER_TRITON_MODE"] = "compiled"
        env.pop("TRITON_INTERPRET", None)
    here = str(Path(__file__).resolve().parents[2])  # the directory holding the verifier package
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _require_gpu():
    from verifier.gpu.probe import cuda_available

    try:
        ok = cuda_available()
    except Exception:
        ok = False
    if not ok:
        raise ToolMissing("no CUDA GPU: compute-sanitizer checks kernels running on one", fix="run on a GPU machine")


# --- one run ---------------------------------------------------------------------------------------
def sanitize(spec, dtypes, tool: str, *, shapes=None, timeout: float = DEFAULT_TIMEOUT_S, keep_dir=None,
             device: str = "cuda", visible: Optional[str] = None) -> SanitizerRun:
    """Run ``tool`` on ``spec`` for one dtype variant (a Dtypes or its tag) and return its findings.

    Raises ToolMissing (no compute-sanitizer, no GPU), Unsupported (no small shape supported) and
    SanitizerFailed (the sanitizer wrote no XML). ``keep_dir`` keeps ``<kernel>.<dtype>.<tool>.xml``
    and ``.log`` there. ``device='cpu'`` runs the child on the CPU: only for exercising the driver
    under a stand-in compute-sanitizer in tests; production runs are on 'cuda'. ``visible`` sets the
    child's CUDA_VISIBLE_DEVICES (one device of several, for runs spread over GPUs).
    """
    dt = _dtype(spec, dtypes)
    if tool not in TOOLS:
        raise UsageError(f"unknown sanitizer tool {tool!r}", fix=f"use one of {', '.join(TOOLS)}")
    info = probe(find_tool())
    if device == "cuda":
        _require_gpu()
    shapes = [tuple(s) for s in shapes] if shapes is not None else tail_shapes(spec, dt)
    refused = [(s, spec.check_supported(*s, dt)) for s in shapes]
    shapes = [s for s, why in refused if why is None]
    if not shapes:
        raise Unsupported(f"{spec.name} [{dt.tag}] supports none of the small sanitizer shapes "
                          f"{list(TAIL_SHAPES)}, (3, N) for N in {list(FALLBACK_N)} or its own quick cases" if not refused else
                          f"{spec.name} [{dt.tag}] refuses every requested shape: " +
                          "; ".join(f"{s}: {w}" for s, w in refused))
    filters = kernel_filters(spec, dt, shapes)
    stem = f"{spec.name}.{dt.tag}.{tool}"
    with tempfile.TemporaryDirectory(prefix="verifier-sanitize-") as tmp:
        # Without keep_dir the XML and log live in a directory of their own, kept only when a finding
        # points at them (an unreadable XML: the raw log is all there is).
        out_dir = Path(keep_dir) if keep_dir else Path(tempfile.mkdtemp(prefix="verifier-sanitize-run-"))
        out_dir.mkdir(parents=True, exist_ok=True)
        xml_path, log_path = out_dir / f"{stem}.xml", out_dir / f"{stem}.log"
        for p in (xml_path, log_path):
            p.unlink(missing_ok=True)  # a stale file from an earlier run must not be read as this one's
        req, res = Path(tmp) / "request.json", Path(tmp) / "result.json"
        req.write_text(json.dumps({"origin": spec.origin, "kernel": spec.name, "dtype": dt.tag, "device": device,
                                   "shapes": [list(s) for s in shapes], "seed": 0, "result": str(res)}))
        cmd = build_command(info, tool, str(xml_path), str(log_path), filters,
                            [sys.executable, "-m", "verifier.sanitizer.child", str(req)])
        t0 = time.monotonic()
        code, output = _run(cmd, timeout, _child_env(device, visible))
        seconds = time.monotonic() - t0
        child = read_answer(res)
        findings, notes = _judge(spec, dt, tool, code, xml_path, child, output, timeout, shapes, log_path=log_path)
        if not keep_dir and not any(str(out_dir) in f.message for f in findings):
            shutil.rmtree(out_dir, ignore_errors=True)
        return SanitizerRun(tool=tool, exit_code=code, xml_path=str(xml_path) if keep_dir else None,
                            findings=findings, seconds=seconds, command=cmd,
                            shapes=[tuple(s) for s in (child or {}).get("launched", [])], notes=notes)


def _dtype(spec, dtypes):
    tag = dtypes if isinstance(dtypes, str) else dtypes.tag
    for d in spec.dtypes:
        if d.tag == tag:
            return d
    raise UsageError(f"kernel {spec.name} declares no dtype {tag!r}",
                     fix=f"declared: {', '.join(d.tag for d in spec.dtypes)}")


def _run(cmd, timeout, env) -> tuple:
    """(exit code or None on timeout, combined stdout+stderr). Own session, so a timeout kills the whole tree."""
    return run_killable(cmd, timeout, env=env)


def _tail(text: str, n: int = 8) -> str:
    return "\n".join(text.strip().splitlines()[-n:]) or "(no output)"


def _judge(spec, dt, tool, code, xml_path: Path, child, output, timeout, shapes, log_path=None) -> tuple:
    """Findings of one run: the XML records (judged by verifier.sanitizer.verdict, as the pytest plugin's
    re-runs are), plus what the exit code and the child's result say."""
    shown = ", ".join(f"{M}x{N}" for M, N in shapes)
    repro = shlex.join(["verifier", "sanitize", spec.origin or "<spec.py>", "--kernel", spec.name, "--dtype", dt.tag,
                        "--tool", tool])
    ctx = dict(kernel=spec.name, dtype=dt.tag, input=f"sanitize[{shown}]", repro=repro)
    notes = []
    if not xml_path.is_file():
        if code is None:
            return [Finding("timeout", f"{tool} did not finish within {timeout:g} s and was killed, before it wrote "
                            f"any XML; last output:\n{_tail(output)}", **ctx)], notes
        raise SanitizerFailed(f"compute-sanitizer --tool {tool} wrote no XML (exit {code}); last output:\n{_tail(output)}",
                              fix="run the command from the report's notes by hand to see why")
    child_ok = child is not None and child.get("status") == "ok"
    parsed, findings = judge_xml(spec, tool, code, xml_path, log_path, launched_ok=child_ok, **ctx)
    unreadable = any(f.message.startswith(UNREADABLE) for f in findings)
    errors = [f for f in findings if f.severity == "error"]
    if code is None:
        findings.append(Finding("timeout", f"{tool} did not finish within {timeout:g} s and was killed; the "
                                f"{len(parsed.records)} record(s) it wrote are reported", **ctx))
    elif not parsed.complete:
        findings.append(Finding(tool, f"InternalError: {parsed.error}; the {len(parsed.records)} record(s) before "
                                "that are reported", severity="warning", **ctx))
    if code is not None and not child_ok:
        why = child["error"] if child else f"it wrote no result (exit {code}); last output:\n{_tail(output)}"
        findings.append(Finding("crash", f"the launch failed under {tool}: {why}",
                                severity="warning" if errors else "error", **ctx))
    elif code == ERROR_EXITCODE and not parsed.records and not unreadable:
        findings.append(Finding(tool, f"InternalError: compute-sanitizer exited {code} (its code for 'errors "
                                "found') but its XML holds no records", severity="warning", **ctx))
    elif code == 0 and errors:
        findings.append(Finding(tool, f"InternalError: compute-sanitizer exited 0 but its XML holds {len(errors)} "
                                "error record(s)", severity="warning", **ctx))
    elif code not in (0, ERROR_EXITCODE, None):
        notes.append(f"{tool}: unexpected exit code {code}; last output:\n{_tail(output)}")
    return findings, notes


# --- a kernel's cells ------------------------------------------------------------------------------
def not_runnable(spec, device: str) -> Optional[str]:
    """Why the sanitizer cannot run this kernel here (None if it can)."""
    if not spec.own_device_code:
        return f"compute-sanitizer checks CUDA and Triton kernels; this is {spec.what}"
    if device != "cuda":
        return "no CUDA GPU: compute-sanitizer needs one"
    return None


class _Now:
    """An executor that runs each call at once (the serial case of sanitize_kernel)."""

    @staticmethod
    def submit(fn, *args, **kwargs) -> Future:
        f = Future()
        try:
            f.set_result(fn(*args, **kwargs))
        except BaseException as e:  # handed to whoever reads the result, as a real executor does
            f.set_exception(e)
        return f


@dataclass
class PendingKernel:
    """A kernel's tool runs, submitted and not yet recorded (see start_kernel / finish_kernel)."""
    spec: object
    report: object
    tools: tuple
    entries: list
    runs: list  # (dtype, tool, Future of SanitizerRun)


def start_kernel(spec, report, dts, tools=TOOLS, *, device: str, timeout: float = DEFAULT_TIMEOUT_S,
                 keep_dir=None, suppressions=None, progress=None, pool=None, gpus=None) -> Optional[PendingKernel]:
    """Submit ``tools`` x ``dts`` runs of ``spec`` to ``pool`` (a concurrent.futures executor; None runs
    them now, one after another). ``gpus``: device ids to spread the runs over, round robin. Returns None
    after marking every cell skipped when the kernel cannot run here (nothing is launched then)."""
    why = not_runnable(spec, "cuda")  # the kind first: a Python callable is never sanitized
    if why is None:  # then everything missing here: the GPU, and the tool named with its fix
        missing = [not_runnable(spec, device)]
        try:
            find_tool()
        except ToolMissing as e:
            missing.append(f"{e.message}; fix: {e.fix}" if e.fix else e.message)
        why = "; ".join(m for m in missing if m) or None
    if why:
        for dt in dts:
            for tool in tools:
                report.mark(dt.tag, tool, skipped(why))
        report.notes.append(f"sanitizer not run: {why}")
        return None
    entries = default_suppressions(spec) if suppressions is None else suppressions
    pool = pool or _Now()

    def one(dt, tool, visible):
        run = sanitize(spec, dt, tool, timeout=timeout, keep_dir=keep_dir, device=device, visible=visible)
        if progress:
            errors = sum(1 for f in run.findings if f.severity == "error")
            progress(f"{spec.name} [{dt.tag}]: {tool} {run.seconds:.1f} s, {errors} error record(s)"
                     + (f" (GPU {visible})" if visible is not None else ""))
        return run

    runs = []
    for dt in dts:
        for tool in tools:
            visible = gpus[next(_GPU_TURN) % len(gpus)] if gpus else None
            runs.append((dt, tool, pool.submit(one, dt, tool, visible)))
    return PendingKernel(spec, report, tuple(tools), entries, runs)


def finish_kernel(pending: Optional[PendingKernel]) -> float:
    """Wait for a kernel's runs and record its cells, findings and notes, in dtype x tool order.
    Returns the seconds its tool runs took (summed)."""
    if pending is None:
        return 0.0
    report, seen, seconds = pending.report, [], 0.0
    for dt, tool, fut in pending.runs:
        try:
            run = fut.result()
        except (Unsupported, ToolMissing) as e:
            report.mark(dt.tag, tool, skipped(e.message))
            continue
        except SanitizerFailed as e:
            report.error = (report.error + "\n" if report.error else "") + f"[{dt.tag}] {tool}: {e}"
            continue
        except SpecError as e:  # the spec is malformed (an entry no function of the cubin matches): its error
            report.error = (report.error + "\n" if report.error else "") + f"[{dt.tag}] {tool}: {e}"
            report.error_kind = USER_ERROR
            continue
        seen += run.findings
        seconds += run.seconds
        fs = suppressed(pending.spec, run.findings, pending.entries)
        for f in fs:
            if f.severity == "error":
                report.add(f)
            else:  # warnings and suppressed findings are shown but do not fail the cell
                report.findings.append(f)
        failed = any(f.severity == "error" for f in fs)
        report.mark(dt.tag, tool, FAIL if failed else PASS)
        shapes = ", ".join(f"{M}x{N}" for M, N in run.shapes) or "none"
        report.notes.append(f"[{dt.tag}] {tool}: {run.seconds:.1f} s, exit {run.exit_code}, shapes {shapes}"
                            + (f", XML {run.xml_path}" if run.xml_path else ""))
        report.notes += [f"[{dt.tag}] {n}" for n in run.notes]
    spec = pending.spec
    mine = [s for s in pending.entries
            if s.tool in pending.tools and (s.kernel is None or fnmatch.fnmatchcase(spec.name, s.kernel))]
    for s in _supp.unused(mine, seen):
        report.notes.append(f"unused sanitizer suppression {s.describe()}")
    return seconds


def sanitize_kernel(spec, report, dts, tools=TOOLS, *, device: str, timeout: float = DEFAULT_TIMEOUT_S,
                    keep_dir=None, suppressions=None, progress=None) -> None:
    """Run ``tools`` for each of ``dts``, one after another, and record cells, findings and notes on
    ``report`` (a verifier.results.kernel.KernelReport). Never launches anything when the kernel cannot run here."""
    finish_kernel(start_kernel(spec, report, dts, tools, device=device, timeout=timeout, keep_dir=keep_dir,
                               suppressions=suppressions, progress=progress))


def battery_hook(spec, opts, report, tags) -> None:
    """Called by verifier.battery when ``opts.sanitize``: ``opts.sanitize_tools`` (default: the four) for each
    dtype (the first only when the run level says so, e.g. 'quick'). On a machine without a GPU every cell is skipped and nothing is
    launched."""
    dts = list(tags)[:1] if opts.run_level.sanitize_first_dtype_only else list(tags)
    tools = tuple(opts.sanitize_tools or TOOLS)  # validated where the Options were built
    jobs = hook_jobs(len(dts) * len(tools))
    if jobs <= 1:
        sanitize_kernel(spec, report, dts, tools, device=opts.device)
        return
    # Each tool run is a child process that spends most of its time starting (torch's import alone is
    # 4-5 s on an H200 machine): running them at once on the one GPU takes the 12 runs of a thorough check
    # from about a minute to a few waves of one run (docs/benchmarks.md, verdict speed).
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        finish_kernel(start_kernel(spec, report, dts, tools, device=opts.device, pool=pool))


def hook_jobs(runs: int) -> int:
    """Tool runs of one `verifier check --sanitize` kernel at once: $VERIFIER_SANITIZE_JOBS, else half the
    CPUs (each run is a CPU-heavy child), at most 8 and at most the number of runs."""
    env = os.environ.get("VERIFIER_SANITIZE_JOBS")
    if env:
        try:
            return max(1, min(int(env), runs))
        except ValueError:
            raise UsageError(f"VERIFIER_SANITIZE_JOBS={env!r} is not a whole number",
                             fix="set it to the number of sanitizer runs at once, e.g. 4") from None
    return max(1, min(runs, 8, (os.cpu_count() or 2) // 2))
