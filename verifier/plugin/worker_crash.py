"""pytest-xdist: a kernel that kills its worker process (segfault, ``os._exit``, abort) costs one test.

xdist reports the test a dead worker was running as "worker 'gwN' crashed", restarts the worker, and stops
the whole session after ``--max-worker-restart`` crashes (default 4 per worker). So:

- before a kernel test runs, the worker notes it (node id, kernel, ``verifier check`` repro line) in a file
  of the session's crash directory (``$VERIFIER_CRASH_DIR``, made by the controller, inherited by workers);
- when xdist reports a crashed item, the controller reads the dead worker's note: the failure then names the
  kernel and carries both repro lines, the kernel joins the crashed list, and the crash is not counted
  against ``--max-worker-restart`` (only crashes that are not a kernel's stop the session);
- every worker runs the remaining tests of a listed kernel each in a child ``pytest NODEID`` process
  (as after a CUDA fault), so the kernel can kill children, never another worker.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

CRASH_DIR_ENV = "VERIFIER_CRASH_DIR"
_CRASHED = "crashed-kernels"


def _dir():
    d = os.environ.get(CRASH_DIR_ENV)
    return Path(d) if d and Path(d).is_dir() else None


def _worker():
    return os.environ.get("PYTEST_XDIST_WORKER")


def note_running(nodeid: str, kernel: str, repro: str, pytest_repro: str) -> None:
    """In an xdist worker: record the kernel test about to run (read by the controller if this worker dies)."""
    d, worker = _dir(), _worker()
    if d is None or not worker:
        return
    tmp = d / f".running-{worker}.tmp"
    tmp.write_text(json.dumps({"nodeid": nodeid, "kernel": kernel, "repro": repro, "pytest_repro": pytest_repro}))
    os.replace(tmp, d / f"running-{worker}.json")


def crashed(kernel: str) -> bool:
    """Whether ``kernel`` has killed a worker of this session."""
    d = _dir()
    if d is None or not (d / _CRASHED).is_file():
        return False
    return kernel in (d / _CRASHED).read_text().splitlines()


CHILD_REASON = ("child process (this kernel killed an xdist worker earlier in the session; its tests run in "
                "children so that it can kill only them)")


class Controller:
    """Hooks of the xdist controller (the process that starts the workers)."""

    def __init__(self, config):
        self.config = config
        self.dir = tempfile.mkdtemp(prefix="verifier-crashes-")
        self.saved = os.environ.get(CRASH_DIR_ENV)
        os.environ[CRASH_DIR_ENV] = self.dir  # workers start after configure and inherit it

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem, report, sched):
        node = getattr(report, "node", None)
        worker = getattr(getattr(node, "gateway", None), "id", None)
        note = Path(self.dir) / f"running-{worker}.json"
        try:
            info = json.loads(note.read_text())
        except (OSError, ValueError):
            return
        if info.get("nodeid") != crashitem:
            return  # the worker died outside a kernel test: xdist's own report and accounting stand
        with open(Path(self.dir) / _CRASHED, "a") as fh:
            fh.write(info["kernel"] + "\n")
        report.longrepr = (f"{report.longrepr}\nkernel {info['kernel']} killed its worker process while this test "
                           f"ran it (a segfault, os._exit or abort in the kernel)\n"
                           f"repro: {info['repro']}\npytest repro: {info['pytest_repro']}\n"
                           f"the kernel's remaining tests run each in a child process, so a crash costs one test")
        dsession = self.config.pluginmanager.getplugin("dsession")
        if dsession is not None and isinstance(getattr(dsession, "_failed_nodes_count", None), int):
            dsession._failed_nodes_count -= 1  # xdist adds it back next: a kernel's crash is not counted

    def pytest_unconfigure(self, config):
        if self.saved is None:
            os.environ.pop(CRASH_DIR_ENV, None)
        else:
            os.environ[CRASH_DIR_ENV] = self.saved
        shutil.rmtree(self.dir, ignore_errors=True)


def configure(config) -> None:
    """Register the controller's hooks when this process may start xdist workers."""
    if _worker() or not getattr(config.option, "numprocesses", None):
        return
    config.pluginmanager.register(Controller(config), "verifier-worker-crash")
