"""Child processes: one way to start, watch, time out and kill them, and one envelope for what they hand back.

Every child runs in its own session, so a timeout kills its whole tree (compilers, compute-sanitizer, the
kernel's own threads). Own sessions also keep a terminal's Ctrl-C from reaching the children, so every child
started here is tracked until it ends: an interrupted caller kills them all (``kill_all``) instead of leaving
them to run on to their timeouts.

A child that has something to say writes one JSON *answer* (``write_answer``) to a path its parent chose, atomically:
``{"kind": K, ...}`` with K one of ANSWER_KINDS — ``report`` (a kernel report, verifier.results.serialize),
``usage_error`` (``message``, ``fix``: the parent raises it again), ``internal_error`` (``message``: a bug in
kernel-verifier), ``launched`` (the sanitizer's child: ``status``, ``launched`` shapes, ``error``). No answer means
the child died; the parent says so with the tail of its output.
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Callable, Optional

ANSWER_KINDS = ("report", "usage_error", "internal_error", "launched")
PARENT_ENV = "VERIFIER_PARENT_PID"  # set in every child's environment: the verifier process it must die with
_PR_SET_PDEATHSIG = 1

_LIVE: set = set()
_LOCK = threading.Lock()


def _kill(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # already gone
        pass


def run(cmd, timeout: float, *, env=None, cwd=None, started: Optional[Callable[[str], bool]] = None,
        grace: float = 0.0) -> tuple:
    """Run ``cmd`` to its end or its timeout: (exit code, or None when it was killed at the timeout; stdout and
    stderr together). With ``started`` (a test on each output line), the ``timeout`` counts from the first line
    it accepts, and the child gets ``grace`` seconds to print it (its start-up: Python, imports, a spec file)."""
    env = dict(os.environ if env is None else env, **{PARENT_ENV: str(os.getpid())})
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    with _LOCK:
        _LIVE.add(proc)
    lines: list = []
    began = threading.Event()

    def read():
        for line in proc.stdout:
            lines.append(line)
            if started is not None and not began.is_set() and started(line):
                began.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        t0 = time.monotonic()
        if started is not None:
            while not began.wait(0.05) and proc.poll() is None and time.monotonic() - t0 < grace:
                pass
            deadline = time.monotonic() + timeout if began.is_set() else t0 + grace
        else:
            deadline = t0 + timeout
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0.01))
            code = proc.returncode
        except subprocess.TimeoutExpired:
            _kill(proc)
            proc.wait()
            code = None
    except BaseException:  # KeyboardInterrupt in this thread: the child is in its own session, kill it here
        _kill(proc)
        proc.wait()
        raise
    finally:
        with _LOCK:
            _LIVE.discard(proc)
    reader.join(5)
    return code, "".join(lines)


def run_killable(cmd, timeout: float, env=None, cwd=None) -> tuple:
    """``run`` without a start marker: (exit code or None on timeout, combined output)."""
    return run(cmd, timeout, env=env, cwd=cwd)


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived (``terminate_as_interrupt``): unwound as Ctrl-C is, so every child is killed and every
    temporary folder removed on the way out."""


def terminate_as_interrupt() -> None:
    """From here on, SIGTERM to this process raises Terminated in its main thread (a KeyboardInterrupt: the
    paths that clean up after Ctrl-C clean up after it too). Children reset it (``die_with_parent``)."""
    def _handler(signum, frame):
        raise Terminated()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _handler)


def kill_all() -> int:
    """Kill every child started here that is still running; returns how many were."""
    with _LOCK:
        live = list(_LIVE)
    for proc in live:
        _kill(proc)
    return len(live)


def load_prctl():
    """libc's prctl, looked up once (in the parent, before any fork: a forked child calls it without loading)."""
    global _PRCTL
    if _PRCTL is None:
        try:
            _PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else False
        except (OSError, AttributeError):
            _PRCTL = False
    return _PRCTL


_PRCTL = None
LIFELINE_S = 0.5  # how often a child whose verifier is not its parent checks that the verifier still runs


def die_with_parent(parent_pid: Optional[int]) -> None:
    """In a child process of ``parent_pid`` (a verifier process): end when it ends, even when it is SIGKILLed (a CI
    job's timeout), so a hung kernel's checker never outlives the run; and take SIGTERM's default (end) whatever
    the parent had installed. Linux: PR_SET_PDEATHSIG (SIGKILL) when the parent is the direct parent, then a
    re-check of getppid() for a parent that died before; a child with a process between (compute-sanitizer)
    gets a daemon thread that ends it once ``parent_pid`` is gone. None: nothing to watch."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if parent_pid is None:
        return
    if os.getppid() == parent_pid:
        prctl = load_prctl()
        if prctl:
            prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent_pid:  # it died between the fork and the prctl: nobody is waiting for us
            os._exit(1)
        if prctl:
            return

    def lifeline():
        while True:
            time.sleep(LIFELINE_S)
            if not _alive(parent_pid):
                os._exit(1)

    threading.Thread(target=lifeline, name="verifier-lifeline", daemon=True).start()


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, killed but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def parent_from_environment() -> Optional[int]:
    """The verifier process that started this child (``PARENT_ENV``), or None."""
    try:
        return int(os.environ[PARENT_ENV])
    except (KeyError, ValueError):
        return None


def exit_status(code) -> str:
    """'exit status N', or 'killed by SIGNAME' for a negative code."""
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def write_answer(path, kind: str, **fields) -> None:
    """The child's one answer, written atomically: the parent never reads a partial one."""
    if kind not in ANSWER_KINDS:
        raise ValueError(f"unknown answer kind {kind!r}; one of {', '.join(ANSWER_KINDS)}")
    path = str(path)
    with open(path + ".tmp", "w") as fh:
        json.dump({"kind": kind, **fields}, fh)
    os.replace(path + ".tmp", path)


def read_answer(path) -> Optional[dict]:
    """The answer at ``path``, or None when the child wrote none (it died first)."""
    try:
        with open(path) as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return None
    if not isinstance(data, dict) or data.get("kind") not in ANSWER_KINDS:
        raise ValueError(f"{path}: not a child's answer (kind {data.get('kind') if isinstance(data, dict) else '?'})")
    return data
