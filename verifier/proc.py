"""Child processes that can be killed whole: each runs in its own session, so a timeout kills its tree."""
from __future__ import annotations

import os
import signal
import subprocess


def run_killable(cmd, timeout: float, env=None, cwd=None) -> tuple:
    """(exit code, or None on timeout; combined stdout + stderr)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out or ""
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out or ""
