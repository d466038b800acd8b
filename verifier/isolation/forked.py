"""Check one kernel in a forked copy of this process, so a kernel that kills its process (a segfault in a
callable's C extension, ``os._exit``, an abort) costs only its own report.

On the CPU the battery runs callables and Triton kernels (interpreted) in a fork by default: forking costs
milliseconds (nothing is imported or loaded again), where ``--isolate`` (verifier.isolation.children) starts a
fresh interpreter per kernel, seconds each. The child runs the battery and answers as a spawned child does
(verifier.toolchain.proc.write_answer, read back by verifier.isolation.children.report_from_answer); if it dies
instead, the parent reports a **crash** naming the step the child was in (dtype and input, from its progress
lines) and goes on with the next kernel.

Never used with a GPU (a CUDA context does not survive fork; there verifier.isolation.children is the default)
nor where ``os.fork`` does not exist.
"""
from __future__ import annotations

import os
import sys
import tempfile

from verifier.battery import check_kernel
from verifier.errors import UsageError
from verifier.isolation.children import STEP_PREFIX, dead_child_report, report_from_answer
from verifier.results.serialize import kernel_entry
from verifier.toolchain.proc import exit_status, read_answer, write_answer

ISOLATE_HINT = ("the run went on with the other kernels; `verifier check --isolate` checks each kernel in a "
                "fresh process with a timeout (--kernel-timeout), for hangs too")


def available(device: str) -> bool:
    return device == "cpu" and hasattr(os, "fork")


def check_forked(spec, opts, progress=None):
    """The battery of ``spec`` in a fork; a child that dies gives a crash report."""
    job = start_forked(spec, opts, progress)
    _, status = os.waitpid(job.pid, 0)
    return finish_forked(job, status)


class ForkJob:
    """A forked child checking one kernel: its pid and the folder of its answer and step lines."""

    def __init__(self, spec, opts, pid: int, tmp):
        self.spec, self.opts, self.pid, self.tmp = spec, opts, pid, tmp

    def poll(self):
        """The child's wait status once it has ended (reaped), else None."""
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        return status if pid else None

    def kill(self) -> None:
        try:
            os.kill(self.pid, 9)
        except ProcessLookupError:
            pass


def start_forked(spec, opts, progress=None) -> ForkJob:
    """Fork a child running the battery of ``spec`` (``progress`` is called in the child); the caller reaps it
    (``os.waitpid``) and hands the status to ``finish_forked``. Call it from a process with one thread."""
    tmp = tempfile.TemporaryDirectory(prefix="verifier-fork-")
    out, steps = os.path.join(tmp.name, "answer.json"), os.path.join(tmp.name, "steps")
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # the child must not write the parent's buffered text a second time
    pid = os.fork()
    if pid == 0:  # the child: never returns
        _child(spec, opts, progress, out, steps)
    return ForkJob(spec, opts, pid, tmp)


def finish_forked(job: ForkJob, status: int):
    """The report of a reaped forked child: its answer, or a crash report naming the step it died in."""
    spec, opts = job.spec, job.opts
    try:
        out, steps = os.path.join(job.tmp.name, "answer.json"), os.path.join(job.tmp.name, "steps")
        answer = read_answer(out)
        if answer is not None:
            return report_from_answer(spec, opts, answer)
        lines = open(steps).read() if os.path.exists(steps) else ""
        return dead_child_report("crash", f"the process checking this kernel died "
                                          f"({exit_status(os.waitstatus_to_exitcode(status))})",
                                 f"; {ISOLATE_HINT}", spec, opts,
                                 "".join(STEP_PREFIX + ln + "\n" for ln in lines.splitlines()))
    finally:
        job.tmp.cleanup()


def _child(spec, opts, progress, out, steps):
    code = 0
    try:
        if "torch" in sys.modules:
            # The parent's OpenMP team did not survive the fork: a parallel region here would wait for its
            # threads forever. One thread runs torch's CPU ops inline, never entering OpenMP.
            sys.modules["torch"].set_num_threads(1)
        log = open(steps, "w", buffering=1)

        def say(msg: str):
            log.write(msg + "\n")
            log.flush()
            if progress:
                progress(msg)

        report = check_kernel(spec, opts, say)
        write_answer(out, "report", report=kernel_entry(report))
    except UsageError as e:
        write_answer(out, "usage_error", message=e.message, fix=e.fix)
    except BaseException as e:  # noqa: BLE001 - a bug in the verifier: the parent reports an internal error
        import traceback

        last = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
        where = f" (at {last.filename}:{last.lineno})" if last else ""
        try:
            write_answer(out, "internal_error", message=f"{type(e).__name__}: {e}{where}")
        except BaseException:
            code = 3
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(code)  # no atexit handlers, no pytest teardown: they belong to the parent
