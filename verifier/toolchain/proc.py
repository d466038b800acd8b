"""Child processes that can be killed whole: each runs in its own session, so a timeout kills its tree.

Own sessions also keep a terminal's Ctrl-C from reaching the children, so an interrupted caller must kill
them itself: ``run_killable`` does for its own child, and ``kill_all`` does for every child still running
in other threads (``verifier sanitize --jobs``), which would otherwise run on to their timeouts.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading

_LIVE: set = set()
_LOCK = threading.Lock()


def _kill(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # already gone
        pass


def run_killable(cmd, timeout: float, env=None, cwd=None) -> tuple:
    """(exit code, or None on timeout; combined stdout + stderr)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    with _LOCK:
        _LIVE.add(proc)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out or ""
    except subprocess.TimeoutExpired:
        _kill(proc)
        out, _ = proc.communicate()
        return None, out or ""
    except BaseException:  # KeyboardInterrupt in this thread: the child is in its own session, kill it here
        _kill(proc)
        proc.wait()
        raise
    finally:
        with _LOCK:
            _LIVE.discard(proc)


def kill_all() -> int:
    """Kill every child started by run_killable that is still running; returns how many were."""
    with _LOCK:
        live = list(_LIVE)
    for proc in live:
        _kill(proc)
    return len(live)
