"""Run one kernel's battery in a child process, and read what any isolation child hands back.

An illegal address poisons the whole CUDA context, and a hung kernel never returns: so on a GPU each kernel is
checked by ``python -m verifier.isolation.child REQUEST.json`` (started, timed and killed by
verifier.toolchain.proc, which tracks every child). The parent turns a child that dies into a **crash** finding
(with the CUDA error and the tail of the child's output) and one that outlives the timeout into a **timeout**
finding, and goes on with the next kernel. Both findings name the step the child was in (dtype and input), taken
from the progress lines it writes; the report keeps what the child completed before that step
(verifier.isolation.journal) and says what it never ran (verifier.battery.unfinished).

A child answers once (verifier.toolchain.proc.write_answer): its report; a UsageError (a malformed spec met
while running it), raised again here so it is exit 2 as in-process; or an internal error (a bug in
kernel-verifier), the kernel's report with that error (exit 3). The forked child (verifier.isolation.forked)
answers the same way.
"""
from __future__ import annotations

import json
import os
import re
import sys
import tempfile

from verifier.constants import KERNEL_TIMEOUT_ENV
from verifier.errors import UsageError
from verifier.battery.plan import CONFIG_STEP
from verifier.isolation import journal, phases
from verifier.battery.unfinished import mark_unfinished
from verifier.results.findings import Finding
from verifier.results.kernel import RUN_CHECKS, KernelReport
from verifier.results.options import repro_line
from verifier.results.serialize import read_kernel
from verifier.toolchain import proc

STARTUP_GRACE_S = 120.0  # the child's own start-up (Python, torch, the spec file), not counted in the timeout
STEP_PREFIX = "verifier-step: "  # prefix of the child's progress lines
_STEP_RE = re.compile(r"^(?P<kernel>\S+)(?: \[(?P<tag>[^\]]+)\])?: (?P<step>.+)$")
CUDA_ERROR = re.compile(r"(CUDA_ERROR_\w+|cudaError\w+|an illegal [\w ]+|unspecified launch failure|"
                       r"misaligned address|out of memory|device-side assert[\w ]*)", re.I)


def report_from_answer(spec, opts, answer: dict) -> KernelReport:
    """The KernelReport a child's answer holds (a UsageError answer is raised)."""
    if answer["kind"] == "usage_error":
        raise UsageError(answer["message"], fix=answer.get("fix"))
    if answer["kind"] == "internal_error":
        r = KernelReport(spec=spec, device=opts.device)
        r.error = f"internal error in the child process: {answer['message']}"
        return r
    return read_kernel(answer["report"], f"report of the child checking {spec.name}", spec=spec, device=opts.device)


def _steps(output: str) -> list:
    return [ln[len(STEP_PREFIX):] for ln in output.splitlines() if ln.startswith(STEP_PREFIX)]


def _last_step(output: str, spec) -> dict:
    """dtype / input of the last progress line the child wrote (what it was doing when it died)."""
    steps = _steps(output)
    m = _STEP_RE.match(steps[-1]) if steps else None
    if not m or m["kernel"] != spec.name:
        return {}
    ctx = {"dtype": m["tag"] or ""}
    step = m["step"]
    if m["tag"] and step not in ("values", "build", "resources") and not step.startswith(CONFIG_STEP):
        ctx["input"] = step  # a catalogue case, hypothesis:MxN:rngS, refusal or determinism: all --case values
    return ctx


def _last_config(output: str, spec) -> str:
    """The autotune config ('autotune config 2 of 9 (...)') the values step was under when the child stopped, or ''
    (not an autotuned kernel, or another step: refusal and determinism run under the first config)."""
    for line in reversed(_steps(output)):
        m = _STEP_RE.match(line)
        if not m or m["kernel"] != spec.name or not m["tag"]:
            return ""
        if m["step"].startswith(CONFIG_STEP):
            return m["step"][len(CONFIG_STEP):]
        if m["step"] in ("values", "refusal", "determinism"):
            return ""
    return ""


def _announced(output: str, spec) -> list:
    """[(dtype tag or '', step)] of every step line of ``spec`` the child wrote, in order."""
    ms = [_STEP_RE.match(line) for line in _steps(output)]
    return [(m["tag"] or "", m["step"]) for m in ms if m and m["kernel"] == spec.name]


def dead_child_report(check: str, what: str, detail: str, spec, opts, output: str,
                      partial: KernelReport | None = None) -> KernelReport:
    """The report of a child that died or was killed: what it completed (``partial``, verifier.isolation.journal:
    the findings, cells and notes of the steps before the one it died in), one crash / timeout finding naming
    that step, a note per dtype of what never ran (verifier.battery.unfinished), and every check cell nothing
    completed marked skipped."""
    ctx = _last_step(output, spec)
    config = _last_config(output, spec)
    where = ", ".join(f"{k} {v}" for k, v in ctx.items()) + (f" under {config}" if config else "")
    r = partial if partial is not None else KernelReport(spec=spec, device=opts.device)
    died = "timed out" if check == "timeout" else "died"
    left = mark_unfinished(r, spec, opts, _announced(output, spec), died)
    why = f"no result: the child process {died}" + (f" while checking {where}" if where else "")
    r.skip_all([dt.tag for dt in spec.dtypes if opts.dtype in (None, dt.tag)], ("build", "resources") + RUN_CHECKS, why)
    r.add(Finding(check, what + (f" while checking {where}" if where else "") + detail + left, kernel=spec.name,
                  seed=opts.seed, repro=repro_line(spec, opts, ctx.get("dtype", ""), ctx.get("input", "")), **ctx))
    return r


def check_in_child(spec, opts, progress=None, timeout: float | None = None, env=None) -> KernelReport:
    """The battery of ``spec`` in ``python -m verifier.isolation.child``; a child that dies or hangs is a finding.
    ``env``: the child's environment (None: this process's; verifier.isolation.parallel pins a GPU in it)."""
    timeout = timeout if timeout is not None else opts.kernel_timeout
    with tempfile.TemporaryDirectory(prefix="verifier-child-") as tmp:
        req, out = os.path.join(tmp, "request.json"), os.path.join(tmp, "answer.json")
        kept = os.path.join(tmp, journal.FILE)
        with open(req, "w") as fh:
            json.dump({"origin": spec.origin, "kernel": spec.name, "options": opts.to_dict(), "out": out,
                       "partial": kept}, fh)
        phases.mark("spawn")
        code, output = proc.run([sys.executable, "-m", "verifier.isolation.child", req], timeout,
                                started=lambda line: line.startswith(STEP_PREFIX), grace=STARTUP_GRACE_S, env=env)
        phases.mark("reaped")
        if code is None:
            return dead_child_report(
                "timeout", f"the kernel's checks did not finish within {timeout:g} s and were killed",
                f" (a hung kernel? set {KERNEL_TIMEOUT_ENV} or --kernel-timeout to allow longer)", spec, opts, output,
                journal.read_partial(kept, spec, opts.device))
        answer = proc.read_answer(out)
        if answer is not None:
            return report_from_answer(spec, opts, answer)
        m = CUDA_ERROR.search(output)
        what = m.group(1) if m else proc.exit_status(code)
        tail = [ln for ln in output.strip().splitlines() if not ln.startswith(STEP_PREFIX)][-8:]
        return dead_child_report("crash", f"the child process checking this kernel died ({what})",
                                 "; last output lines:\n" + ("\n".join(tail) or "(nothing)"), spec, opts, output,
                                 journal.read_partial(kept, spec, opts.device))
