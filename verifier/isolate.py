"""Run one kernel's battery in a child process.

An illegal address poisons the whole CUDA context, and a hung kernel never returns: so on a GPU each
kernel is checked by ``python -m verifier.isolate REQUEST.json``. The parent turns a child that dies into a
**crash** finding (with the CUDA error from its stderr) and one that outlives the timeout into a
**timeout** finding, and goes on with the next kernel.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

from verifier.findings import Finding

DEFAULT_TIMEOUT_S = float(os.environ.get("VERIFIER_KERNEL_TIMEOUT", "600"))
_CUDA_ERR = re.compile(r"(CUDA_ERROR_\w+|cudaError\w+|an illegal [\w ]+|unspecified launch failure|"
                       r"misaligned address|out of memory|device-side assert[\w ]*)", re.I)


def report_to_json(report) -> dict:
    return {
        "findings": [f.to_dict() for f in report.findings],
        "cells": [[k[0], k[1], v] for k, v in report.cells.items()],
        "notes": report.notes,
        "seconds": report.seconds,
        "error": report.error,
    }


def report_from_json(spec, device, data: dict):
    from verifier.battery import KernelReport

    r = KernelReport(spec=spec, device=device)
    for f in data["findings"]:
        f = dict(f)
        f["shape"] = tuple(f["shape"]) if f.get("shape") is not None else None
        r.findings.append(Finding(**f))
    r.cells = {(a, b): v for a, b, v in data["cells"]}
    r.notes = data["notes"]
    r.seconds = data["seconds"]
    r.error = data["error"]
    return r


def check_in_child(spec, opts, progress=None, timeout: float | None = None):
    from verifier.battery import KernelReport, _repro

    timeout = timeout or DEFAULT_TIMEOUT_S
    with tempfile.TemporaryDirectory(prefix="verifier-child-") as tmp:
        req = os.path.join(tmp, "request.json")
        out = os.path.join(tmp, "result.json")
        with open(req, "w") as fh:
            json.dump({"origin": spec.origin, "kernel": spec.name, "options": dataclasses.asdict(opts), "out": out}, fh)
        proc = subprocess.Popen([sys.executable, "-m", "verifier.isolate", req], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            r = KernelReport(spec=spec, device=opts.device)
            r.add(Finding("timeout", f"the kernel's checks did not finish within {timeout:.0f} s and were killed "
                          "(a hung kernel? set VERIFIER_KERNEL_TIMEOUT to allow longer)", kernel=spec.name,
                          repro=_repro(spec, opts)))
            return r
        if os.path.exists(out):
            with open(out) as fh:
                return report_from_json(spec, opts.device, json.load(fh))
        r = KernelReport(spec=spec, device=opts.device)
        m = _CUDA_ERR.search(stderr or "")
        tail = "\n".join((stderr or "").strip().splitlines()[-6:])
        what = m.group(1) if m else f"exit status {proc.returncode}"
        r.add(Finding("crash", f"the child process checking this kernel died ({what}); last stderr lines:\n{tail}",
                      kernel=spec.name, repro=_repro(spec, opts)))
        return r


def _main(argv) -> int:
    from verifier.battery import Options, check_kernel
    from verifier.registry import load_spec_file

    with open(argv[0]) as fh:
        req = json.load(fh)
    spec = next(k for k in load_spec_file(req["origin"]) if k.name == req["kernel"])
    opts = Options(**req["options"])
    report = check_kernel(spec, opts)
    with open(req["out"] + ".tmp", "w") as fh:
        json.dump(report_to_json(report), fh)
    os.replace(req["out"] + ".tmp", req["out"])
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
