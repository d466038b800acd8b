"""Check one kernel in a forked copy of this process, so a kernel that kills its process (a segfault in a
callable's C extension, ``os._exit``, an abort, an illegal address) costs only its own report.

Forking costs milliseconds (nothing is imported or loaded again: torch, Triton, the spec files), where a fresh
interpreter per kernel (verifier.isolation.children, ``--isolate``) costs seconds each: 4-5 s of ``import torch``
on the H200 machine for every Triton kernel and callable. The child runs the battery and answers as a spawned
child does (verifier.toolchain.proc.write_answer, read back by verifier.isolation.children.report_from_answer);
if it dies instead, the parent reports a **crash** naming the step the child was in (dtype and input, from its
progress lines), with the findings, cells and notes of the steps it completed before (verifier.isolation.journal)
and what it never ran, and goes on with the next kernel.

- On the CPU: callables and Triton kernels (interpreted) by default, killed as a **timeout** after
  ``opts.kernel_timeout`` as on a GPU.
- On a GPU: every kernel, by default, while this process has not initialised the CUDA driver (a fork of one
  that has cannot use CUDA; verifier.gpu.probe keeps the parent's questions away from cuInit). The child makes
  its own CUDA context, so an illegal address poisons only it; it runs in its own process group with its output
  captured (a crash report quotes the CUDA error) and is killed as a **timeout** after ``opts.kernel_timeout``
  (a hung kernel). Where the driver is initialised here, verifier.isolation.children spawns fresh processes.
Never used where ``os.fork`` does not exist.
"""
from __future__ import annotations

import os
import signal
import sys
import tempfile
import time

from verifier.battery import check_kernel
from verifier.constants import KERNEL_TIMEOUT_ENV
from verifier.errors import UsageError
from verifier.isolation import journal, phases
from verifier.isolation.children import CUDA_ERROR, STEP_PREFIX, dead_child_report, report_from_answer
from verifier.isolation.journal import Journal
from verifier.launch.harness import is_cuda_fault
from verifier.results.kernel import KernelReport
from verifier.results.serialize import kernel_entry
from verifier.toolchain.proc import die_with_parent, exit_status, load_prctl, read_answer, write_answer

ISOLATE_HINT = ("the run went on with the other kernels; `verifier check --isolate` checks each kernel in a "
                "fresh process instead of a fork")


_POLL_S = 0.02


def available(device: str) -> bool:
    if not hasattr(os, "fork"):
        return False
    if device == "cpu":
        return True
    from verifier.gpu.probe import driver_initialized

    return device == "cuda" and sys.platform.startswith("linux") and not driver_initialized()


def check_forked(spec, opts, progress=None, env=None, alone: bool = False):
    """The battery of ``spec`` in a fork; a child that dies gives a crash report, one that hangs a timeout.
    ``alone``: the only kernel of the run; a Triton kernel then gets compile helpers on a GPU (``_compile_helpers``)."""
    job = start_forked(spec, opts, None if opts.device == "cuda" else progress, env)
    helpers = _compile_helpers(spec, opts, env) if alone else []
    try:
        while True:
            status = job.poll()
            if status is not None:
                return finish_forked(job, status)
            if job.expired():
                return job.timed_out()
            time.sleep(_POLL_S)
    except BaseException:  # interrupted (Ctrl-C, SIGTERM): the child may be out of the terminal's reach
        job.kill()
        job.reap()
        job.tmp.cleanup()
        raise
    finally:
        for h in helpers:  # their reports are not wanted: the compiles they left in Triton's cache were
            h.kill()
            h.reap()
            h.tmp.cleanup()


def _compile_helpers(spec, opts, env) -> list:
    """Triton compiles its kernels one after another, about 0.15 s each on the H200 (MLIR, LLVM, ptxas), and a quick
    check of one Triton kernel compiles some 30 (every dtype, block size and argument specialization): most of a
    cold verdict. A Triton kernel checked alone on a GPU (the verdict a kernel engineer waits for) with CPUs to
    spare gets one helper fork per further dtype, running that dtype's battery only to fill Triton's on-disk cache
    (its writes are atomic) while the check proper works through the first dtype; the check's report is its own,
    the helpers are killed when it ends. Nothing else gets helpers (-j N already fills the CPUs)."""
    from verifier.gpu.pinning import usable_cpus
    from verifier.results.options import Options

    tags = [d.tag for d in spec.dtypes if opts.dtype in (None, d.tag)]
    if (not spec.uses_triton or opts.device != "cuda" or len(tags) < 2 or opts.case is not None or opts.sanitize
            or usable_cpus() < 2 * len(tags)):
        return []
    return [start_forked(spec, Options(**{**opts.to_dict(), "dtype": tag}), None, env) for tag in tags[1:]]


class ForkJob:
    """A forked child checking one kernel: its pid, the folder of its answer, step lines and (GPU) output, and
    its deadline (opts.kernel_timeout from the fork, on the CPU as on a GPU: a hang is a timeout finding)."""

    def __init__(self, spec, opts, pid: int, tmp, deadline=None):
        self.spec, self.opts, self.pid, self.tmp, self.deadline = spec, opts, pid, tmp, deadline
        self.group = opts.device == "cuda"  # the child leads its own process group

    def poll(self):
        """The child's wait status once it has ended (reaped), else None."""
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        return status if pid else None

    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    def kill(self) -> None:
        try:
            if self.group:
                os.killpg(self.pid, signal.SIGKILL)  # and what it started: nvcc, ptxas, the kernel's threads
            else:
                os.kill(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def reap(self) -> None:
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass

    def output(self) -> str:
        """What the child wrote to stdout and stderr (GPU; on the CPU it writes to this process's streams)."""
        try:
            with open(os.path.join(self.tmp.name, "output"), errors="replace") as fh:
                return fh.read()
        except OSError:
            return ""

    def steps(self) -> str:
        try:
            with open(os.path.join(self.tmp.name, "steps")) as fh:
                return "".join(STEP_PREFIX + ln + "\n" for ln in fh.read().splitlines())
        except OSError:
            return ""

    def partial(self):
        """What the child completed before it died (verifier.isolation.journal), or None."""
        return journal.read_partial(os.path.join(self.tmp.name, journal.FILE), self.spec, self.opts.device)

    def timed_out(self):
        """Kill the child (past its deadline) and give the timeout report naming the step it was in."""
        self.kill()
        self.reap()
        try:
            timeout = self.opts.kernel_timeout
            return dead_child_report(
                "timeout", f"the kernel's checks did not finish within {timeout:g} s and were killed",
                f" (a hung kernel? set {KERNEL_TIMEOUT_ENV} or --kernel-timeout to allow longer)", self.spec,
                self.opts, self.steps(), self.partial())
        finally:
            self.tmp.cleanup()


def start_forked(spec, opts, progress=None, env=None) -> ForkJob:
    """Fork a child running the battery of ``spec`` (``progress`` is called in the child; ``env``: variables set
    in the child before anything there initialises CUDA, e.g. its GPU); the caller polls it (``poll``, ``expired``)
    and hands the status to ``finish_forked`` or calls ``timed_out``. Call it from a process with one thread."""
    tmp = tempfile.TemporaryDirectory(prefix="verifier-fork-")
    out, steps = os.path.join(tmp.name, "answer.json"), os.path.join(tmp.name, "steps")
    gpu = opts.device == "cuda"
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # the child must not write the parent's buffered text a second time
    phases.mark("spawn")
    parent = os.getpid()
    load_prctl()  # looked up here: the child only calls it
    pid = os.fork()
    if pid == 0:  # the child: never returns
        die_with_parent(parent)  # killed with this process, even by SIGKILL; SIGTERM ends it
        if gpu:
            _own_group_and_output(os.path.join(tmp.name, "output"))
        os.environ.update(env or {})
        _child(spec, opts, progress, out, steps)
    if gpu:
        try:
            os.setpgid(pid, pid)  # also here: a kill right after the fork must reach the group
        except OSError:  # the child did it first, or has already ended
            pass
    return ForkJob(spec, opts, pid, tmp, time.monotonic() + opts.kernel_timeout)


def _own_group_and_output(path: str) -> None:
    """In a GPU child: lead a process group of its own (a timeout kills what it started too; a terminal's Ctrl-C
    reaches the parent, which kills it), and write stdout / stderr to ``path`` (the CUDA error of a crash)."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    # Python's streams too: a host (pytest's capture) may have replaced them with objects not on fds 1 and 2.
    sys.stdout = open(1, "w", buffering=1, errors="replace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, errors="replace", closefd=False)


def finish_forked(job: ForkJob, status: int):
    """The report of a reaped forked child: its answer, or a crash report naming the step it died in (and, on a
    GPU, the CUDA error and the last lines it wrote)."""
    spec, opts = job.spec, job.opts
    try:
        answer = read_answer(os.path.join(job.tmp.name, "answer.json"))
        if answer is not None:
            return report_from_answer(spec, opts, answer)
        code = os.waitstatus_to_exitcode(status)
        if not job.group:
            return dead_child_report("crash", f"the process checking this kernel died ({exit_status(code)})",
                                     f"; {ISOLATE_HINT}", spec, opts, job.steps(), job.partial())
        output = job.output()
        m = CUDA_ERROR.search(output)
        tail = [ln for ln in output.strip().splitlines() if not ln.startswith(STEP_PREFIX)][-8:]
        return dead_child_report("crash", f"the child process checking this kernel died "
                                          f"({m.group(1) if m else exit_status(code)})",
                                 "; last output lines:\n" + ("\n".join(tail) or "(nothing)"), spec, opts,
                                 job.steps(), job.partial())
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
        report = KernelReport(spec=spec, device=opts.device)
        kept = Journal(os.path.join(os.path.dirname(out), journal.FILE), report)  # a crash keeps what completed

        def say(msg: str):
            kept.step()  # what the steps before this one completed, before it is announced and run
            log.write(msg + "\n")
            log.flush()
            if progress:
                progress(msg)

        for name in ("child-start", "child-imported", "spec-loaded"):  # all inherited: benchmarks/verdict_time.py
            phases.mark(name)
        report = phases.profiled(check_kernel, spec, opts, say, report)
        phases.mark("battery-done")
        write_answer(out, "report", report=kernel_entry(report))
    except UsageError as e:
        write_answer(out, "usage_error", message=e.message, fix=e.fix)
    except BaseException as e:  # noqa: BLE001 - a bug in the verifier: the parent reports an internal error
        import traceback

        if is_cuda_fault(e):  # the kernel broke the CUDA context: die, the parent reports a crash with this error
            sys.stderr.write(f"{type(e).__name__}: {e}\n")  # the error, under the kernel's own last output
            code = 1
            return

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
