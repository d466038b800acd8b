"""Run one kernel's battery in a child process.

An illegal address poisons the whole CUDA context, and a hung kernel never returns: so on a GPU each
kernel is checked by ``python -m verifier.isolation.child REQUEST.json``. The parent turns a child that dies into a
**crash** finding (with the CUDA error and the tail of the child's stderr) and one that outlives the timeout
into a **timeout** finding, and goes on with the next kernel. Both findings name the step the child was in
(dtype and input), taken from the progress lines it writes to stderr.

The child writes its report as JSON; a UsageError in the child (a malformed spec met while running it) is
sent back and raised again in the parent, so it is exit 2 there as in-process.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

from verifier.isolation import phases
from verifier.errors import UsageError
from verifier.results.findings import Finding
from verifier.results.kernel import RUN_CHECKS, KernelReport, skipped
from verifier.results.options import repro_line
from verifier.results.serialize import read_kernel

DEFAULT_TIMEOUT_S = 600.0
STARTUP_GRACE_S = 120.0  # the child's own start-up (Python, torch, the spec file), not counted in the timeout
TIMEOUT_ENV = "VERIFIER_KERNEL_TIMEOUT"
SANITIZER_ALLOWANCE_S = 300.0  # per sanitizer tool, added when the battery also sanitizes
STEP_PREFIX = "verifier-step: "  # prefix of the child's progress lines on stderr
_STEP_RE = re.compile(r"^(?P<kernel>\S+)(?: \[(?P<tag>[^\]]+)\])?: (?P<step>.+)$")
_CUDA_ERR = re.compile(r"(CUDA_ERROR_\w+|cudaError\w+|an illegal [\w ]+|unspecified launch failure|"
                       r"misaligned address|out of memory|device-side assert[\w ]*)", re.I)


def environment_timeout(default: float = DEFAULT_TIMEOUT_S) -> float:
    """$VERIFIER_KERNEL_TIMEOUT in seconds (``default`` when unset); a bad value is a UsageError naming it."""
    raw = os.environ.get(TIMEOUT_ENV)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise UsageError(f"{TIMEOUT_ENV}={raw!r} is not a positive number of seconds",
                         fix=f"set {TIMEOUT_ENV}=600 (seconds per kernel in its child process) or unset it")
    return value


def kernel_timeout(opts) -> float:
    """Seconds a kernel's battery may take in the child: ``opts.timeout``, else $VERIFIER_KERNEL_TIMEOUT, else 600."""
    if opts.timeout is not None:
        value, source = opts.timeout, "timeout"
    else:
        value, source = os.environ.get(TIMEOUT_ENV, DEFAULT_TIMEOUT_S), TIMEOUT_ENV
    try:
        value = float(value)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise UsageError(f"{source} {value!r} is not a positive number of seconds", fix=f"e.g. {TIMEOUT_ENV}=600")
    if getattr(opts, "sanitize", False):
        # Four instrumented tools per dtype run inside the same child: allow for each tool's own timeout.
        value += 4 * SANITIZER_ALLOWANCE_S
    return value


def read_report(spec, device, data: dict) -> KernelReport:
    """The KernelReport a child wrote (verifier.report.json.kernel_entry), for ``spec`` on ``device``."""
    return read_kernel(data, f"report of the child checking {spec.name}", spec=spec, device=device)

def _last_step(stderr: str, spec) -> dict:
    """dtype / input of the last progress line the child wrote (what it was doing when it died)."""
    steps = [ln[len(STEP_PREFIX):] for ln in stderr.splitlines() if ln.startswith(STEP_PREFIX)]
    m = _STEP_RE.match(steps[-1]) if steps else None
    if not m or m["kernel"] != spec.name:
        return {}
    ctx = {"dtype": m["tag"] or ""}
    step = m["step"]
    if m["tag"] and step not in ("values", "build", "resources"):
        ctx["input"] = step  # a catalogue case, hypothesis:MxN:rngS, refusal or determinism: all --case values
    return ctx


def dead_child_report(check: str, what: str, detail: str, spec, opts, stderr: str):
    """The report of a child that died or was killed: one crash / timeout finding, every other check of
    the kernel marked skipped (its results died with the child)."""
    ctx = _last_step(stderr, spec)
    where = ", ".join(f"{k} {v}" for k, v in ctx.items())
    r = KernelReport(spec=spec, device=opts.device)
    for dt in spec.dtypes:
        if opts.dtype in (None, dt.tag):
            for c in ("build", "resources") + RUN_CHECKS:
                r.mark(dt.tag, c, skipped(f"no result: the child process {'timed out' if check == 'timeout' else 'died'}"))
    r.add(Finding(check, what + (f" while checking {where}" if where else "") + detail, kernel=spec.name,
                  seed=opts.seed, repro=repro_line(spec, opts, ctx.get("dtype", ""), ctx.get("input", "")), **ctx))
    return r


def check_in_child(spec, opts, progress=None, timeout: float | None = None) -> KernelReport:
    """The battery of ``spec`` in ``python -m verifier.isolation.child``; a child that dies or hangs is a finding."""
    timeout = timeout if timeout is not None else kernel_timeout(opts)
    with tempfile.TemporaryDirectory(prefix="verifier-child-") as tmp:
        req = os.path.join(tmp, "request.json")
        out = os.path.join(tmp, "result.json")
        with open(req, "w") as fh:
            json.dump({"origin": spec.origin, "kernel": spec.name, "options": dataclasses.asdict(opts), "out": out}, fh)
        # Own session: a timeout kills the child and anything it started (compilers, sanitizer).
        phases.mark("spawn")
        proc = subprocess.Popen([sys.executable, "-m", "verifier.isolation.child", req], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        timed_out, stderr = _wait(proc, timeout)
        phases.mark("reaped")
        if timed_out:
            return dead_child_report(
                "timeout", f"the kernel's checks did not finish within {timeout:g} s and were killed",
                f" (a hung kernel? set {TIMEOUT_ENV} or --kernel-timeout to allow longer)", spec, opts, stderr or "")
        stderr = stderr or ""
        if os.path.exists(out):
            with open(out) as fh:
                data = json.load(fh)
            if "usage_error" in data:
                raise UsageError(data["usage_error"], fix=data.get("fix"))
            if "internal_error" in data:
                r = KernelReport(spec=spec, device=opts.device)
                r.error = f"internal error in the child process: {data['internal_error']}"
                return r
            return read_report(spec, opts.device, data)
        m = _CUDA_ERR.search(stderr)
        what = m.group(1) if m else exit_status(proc.returncode)
        tail = [ln for ln in stderr.strip().splitlines() if not ln.startswith(STEP_PREFIX)][-8:]
        return dead_child_report("crash", f"the child process checking this kernel died ({what})",
                                  "; last stderr lines:\n" + ("\n".join(tail) or "(nothing on stderr)"),
                                  spec, opts, stderr)


def _wait(proc, timeout: float) -> tuple:
    """Wait for the child; kill it (and its process group) once its checks have run ``timeout`` s.
    The clock starts at the child's first progress line, so interpreter and torch start-up on a loaded
    machine do not count against the kernel (they get STARTUP_GRACE_S of their own)."""
    lines: list = []
    started = threading.Event()

    def read():
        for ln in proc.stderr:
            lines.append(ln)
            if ln.startswith(STEP_PREFIX):
                started.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    t0 = time.monotonic()
    while not started.wait(0.05) and proc.poll() is None and time.monotonic() - t0 < STARTUP_GRACE_S:
        pass
    deadline = time.monotonic() + timeout if started.is_set() else t0 + STARTUP_GRACE_S
    timed_out = False
    try:
        proc.wait(timeout=max(deadline - time.monotonic(), 0.01))
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    reader.join(5)
    return timed_out, "".join(lines)


def exit_status(code: int) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def write_json(path: str, data: dict) -> None:
    with open(path + ".tmp", "w") as fh:
        json.dump(data, fh)
    os.replace(path + ".tmp", path)  # the parent never reads a partial report
