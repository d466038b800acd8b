"""Check one kernel in a forked copy of this process, so a kernel that kills its process (a segfault in a
callable's C extension, ``os._exit``, an abort) costs only its own report.

On the CPU the battery runs callables and Triton kernels (interpreted) in this process by default; forking
costs milliseconds (nothing is imported or loaded again), where ``--isolate`` (verifier.isolation.children) starts a
fresh interpreter per kernel, seconds each. So every such kernel is checked in a fork: the child runs the
battery and hands its report back as JSON; if it dies instead, the parent reports a **crash** naming the
step the child was in (dtype and input, from its progress lines) and goes on with the next kernel.

Never used with a GPU (a CUDA context does not survive fork; there verifier.isolation.children is the default) nor
where ``os.fork`` does not exist.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile

from verifier.errors import UsageError
from verifier.isolation.children import STEP_PREFIX, dead_child_report, exit_status, read_report, write_json
from verifier.results.serialize import kernel_entry

ISOLATE_HINT = ("the run went on with the other kernels; `verifier check --isolate` checks each kernel in a "
                "fresh process with a timeout (--kernel-timeout), for hangs too")


def available(device: str) -> bool:
    return device == "cpu" and hasattr(os, "fork")


def check_forked(spec, opts, check, progress=None):
    """``check(spec, opts, progress)`` (the battery's check_kernel, passed in: the battery calls this module) in a
    fork; a child that dies gives a crash report."""

    with tempfile.TemporaryDirectory(prefix="verifier-fork-") as tmp:
        out, steps = os.path.join(tmp, "report.json"), os.path.join(tmp, "steps")
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # the child must not write the parent's buffered text a second time
        pid = os.fork()
        if pid == 0:  # the child: never returns
            _child(check, spec, opts, progress, out, steps)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if os.path.exists(out):
            with open(out) as fh:
                data = json.load(fh)
            if "usage_error" in data:
                raise UsageError(data["usage_error"], fix=data.get("fix"))
            if "exception" in data:  # a bug in the verifier: raised here as it was there, as in-process
                raise _unpickled(data)
            return read_report(spec, opts.device, data)
        lines = open(steps).read() if os.path.exists(steps) else ""
        return dead_child_report("crash", f"the process checking this kernel died ({exit_status(code)})",
                                  f"; {ISOLATE_HINT}", spec, opts,
                                  "".join(STEP_PREFIX + ln + "\n" for ln in lines.splitlines()))


def _child(check, spec, opts, progress, out, steps):
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

        report = check(spec, opts, say)
        write_json(out, kernel_entry(report))
    except UsageError as e:
        write_json(out, {"usage_error": e.message, "fix": e.fix})
    except BaseException as e:  # noqa: BLE001 - handed to the parent, which raises it
        import traceback

        last = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
        where = f" (at {last.filename}:{last.lineno})" if last else ""
        try:
            write_json(out, {"exception": f"{type(e).__name__}: {e}{where}", "pickled": _pickled(e)})
        except BaseException:
            code = 3
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(code)  # no atexit handlers, no pytest teardown: they belong to the parent


def _pickled(e: BaseException):
    import base64
    import pickle

    try:
        return base64.b64encode(pickle.dumps(e)).decode()
    except Exception:  # an exception that does not pickle: its text is sent instead
        return None


def _unpickled(data: dict) -> BaseException:
    import base64
    import pickle

    if data.get("pickled"):
        try:
            return pickle.loads(base64.b64decode(data["pickled"]))
        except Exception:
            pass
    return RuntimeError(data["exception"])
