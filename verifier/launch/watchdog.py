"""The in-process timeout of a kernel's checks: a kernel call that runs past its battery's deadline is
interrupted (SIGALRM in the main thread) with ``KernelHang``, which the battery records as that kernel's
**timeout** finding before going on with the next kernel.

Where the checks run in a fork or child process (verifier.isolation), the parent kills the process at the same
deadline, whatever it is doing; this is for checks that run in the calling process: ``check_all(isolate=False)``,
the pytest plugin's suite tests, a library caller of ``check_kernel``. It interrupts what Python can interrupt (a
callable's Python loop, a sleep, the Triton interpreter); a call blocked inside native code that never returns to
the interpreter (a compiled GPU kernel spinning, a C extension's loop) is reached only by the fork / child kill.
Only the main thread can take a signal: elsewhere (a thread of ``-j N``) the deadline is checked between calls.
"""
from __future__ import annotations

import contextlib
import signal
import threading
import time
from typing import Optional

_deadline: Optional[float] = None  # time.monotonic() by which the current kernel's checks must end
_seconds: float = 0.0  # the timeout that deadline came from (for the message)


class KernelHang(BaseException):
    """A kernel call ran past its checks' deadline. A BaseException, so that neither the kernel's own ``except
    Exception`` nor the harness's kernel-fault boundary takes it for the kernel raising."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        super().__init__(f"the kernel's checks did not finish within {seconds:g} s")


@contextlib.contextmanager
def deadline(seconds: Optional[float]):
    """The checks inside have ``seconds`` in all (None: no limit); nested deadlines keep the earlier one."""
    global _deadline, _seconds
    saved = (_deadline, _seconds)
    if seconds is not None:
        mine = time.monotonic() + seconds
        if _deadline is None or mine < _deadline:
            _deadline, _seconds = mine, seconds
    try:
        yield
    finally:
        _deadline, _seconds = saved


def _can_signal() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


def call(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, interrupted with KernelHang at the deadline (if any)."""
    if _deadline is None:
        return fn(*args, **kwargs)
    left = _deadline - time.monotonic()
    if left <= 0:
        raise KernelHang(_seconds)
    if not _can_signal():
        return fn(*args, **kwargs)
    seconds = _seconds

    def _alarm(signum, frame):
        raise KernelHang(seconds)

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, left)
    try:
        return fn(*args, **kwargs)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
