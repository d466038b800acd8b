"""Turns at a GPU's memory for the large cases (past 2^31 elements, over 65,535 rows, rows 2^31 apart) of the
kernels checked at once (``verifier check -j N``: one child process each, verifier.isolation).

A large case holds gigabytes: its own buffers (verifier.launch.large.required_bytes), and a torch composition's or
a launcher's intermediates on top, which nothing can count before the call. Several at once may not fit where each
alone does. So every large case runs holding a **shared** turn, as many at once as come; one that ran out of memory,
or that finds too little free at its gate, waits for an **exclusive** turn: the others' large cases end, no new one
starts, and it runs alone with the memory they gave back. A case "not run: out of memory" is then the machine's
limit, not the neighbours' doing.

Turns are ``flock`` locks on files named after the GPU, shared by every process of this user on the machine (a
process that dies lets go of its turn). A waiting exclusive turn holds a turnstile that new shared turns pass
through, so a stream of shared turns cannot starve it.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
import tempfile
from pathlib import Path
from typing import Iterator, Optional

from verifier.gpu import pinning


def _paths(env=None) -> tuple:
    """The turnstile's and the turn's lock files for the GPU this process launches on (device 0 as its
    CUDA_VISIBLE_DEVICES leaves them: a lane pinned to one GPU of several has its own)."""
    env = os.environ if env is None else env
    first = (env.get(pinning.VISIBLE) or "0").split(",")[0].strip() or "0"
    gpu = re.sub(r"[^A-Za-z0-9_.-]", "_", first)
    base = Path(tempfile.gettempdir()) / f"verifier-gpu-turns-{os.getuid()}-{gpu}"
    return Path(f"{base}.turnstile"), Path(f"{base}.lock")


@contextlib.contextmanager
def _locked(path: Path, how: int) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, how)
        yield
    finally:
        os.close(fd)  # closing lets go of the lock


@contextlib.contextmanager
def shared(env=None) -> Iterator[None]:
    """A turn beside other large cases (waits while an exclusive turn is waiting or held)."""
    turnstile, turn = _paths(env)
    fd = os.open(turn, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        with _locked(turnstile, fcntl.LOCK_EX):
            fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def exclusive(env=None) -> Iterator[None]:
    """The GPU's memory to this case alone among large cases (waits for those running to end)."""
    turnstile, turn = _paths(env)
    with _locked(turnstile, fcntl.LOCK_EX), _locked(turn, fcntl.LOCK_EX):
        yield


def held_by_others(env=None) -> Optional[bool]:
    """Whether another process holds a turn now (tests; None where it cannot be told)."""
    _, turn = _paths(env)
    fd = os.open(turn, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    finally:
        os.close(fd)
    return False
