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

import json
import os
import signal
import subprocess
import threading
import time
from typing import Callable, Optional

ANSWER_KINDS = ("report", "usage_error", "internal_error", "launched")

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


def kill_all() -> int:
    """Kill every child started here that is still running; returns how many were."""
    with _LOCK:
        live = list(_LIVE)
    for proc in live:
        _kill(proc)
    return len(live)


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
