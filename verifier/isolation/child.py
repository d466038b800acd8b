"""The child of verifier.isolation.children: ``python -m verifier.isolation.child REQUEST.json``.

Loads the kernel from its spec file, runs its battery with the request's options, writing progress lines
(``verifier-step: ...``) to stderr, each after keeping the report so far at the request's ``partial`` path
(verifier.isolation.journal: a child that dies keeps what it completed), and answers once (verifier.toolchain.proc.write_answer) at the request's
``out`` path: its report, a UsageError (exit 2 in the parent too) or a bug in the verifier (an internal error). A
CUDA fault kills the child, and the parent reports a crash.
"""
from __future__ import annotations

import json
import os
import sys

from verifier.isolation import phases

phases.mark("child-start")  # before the imports below (the battery's): benchmarks/verdict_time.py

from verifier.battery import check_kernel  # noqa: E402
from verifier.declare.registry import load_spec_file  # noqa: E402
from verifier.errors import UsageError  # noqa: E402
from verifier.isolation.children import STEP_PREFIX  # noqa: E402
from verifier.isolation.journal import Journal  # noqa: E402
from verifier.launch.harness import is_cuda_fault  # noqa: E402
from verifier.results.kernel import KernelReport  # noqa: E402
from verifier.results.options import Options  # noqa: E402
from verifier.results.serialize import kernel_entry  # noqa: E402
from verifier.toolchain.proc import die_with_parent, parent_from_environment, write_answer  # noqa: E402


def main(argv) -> int:
    die_with_parent(parent_from_environment())  # killed with the verifier process that started it
    with open(argv[0]) as fh:
        req = json.load(fh)
    phases.mark("child-imported")

    opts = Options(**req["options"])
    kept = None  # the report so far, kept at each step (verifier.isolation.journal): a crash keeps what completed

    def progress(msg: str):
        if kept is not None:
            kept.step()
        sys.stderr.write(STEP_PREFIX + msg + "\n")
        sys.stderr.flush()

    # The parent's choice of Triton mode (verifier.isolation.check_all), made before the spec file loads: a spec may
    # import a @triton.jit helper beside it, and a GPU machine would otherwise pick compiled mode for --device cpu.
    # Only the variable: a CUDA kernel's child imports no triton (verifier.launch.triton.MODE_ENV).
    os.environ.setdefault("VERIFIER_TRITON_MODE", opts.triton_mode or ("compiled" if opts.device == "cuda"
                                                                       else "interpreter"))
    try:
        spec = next(k for k in load_spec_file(req["origin"]) if k.name == req["kernel"])
        phases.mark("spec-loaded")
        report = KernelReport(spec=spec, device=opts.device)
        if req.get("partial"):
            kept = Journal(req["partial"], report)
        report = phases.profiled(check_kernel, spec, opts, progress, report)
        phases.mark("battery-done")
    except UsageError as e:
        write_answer(req["out"], "usage_error", message=e.message, fix=e.fix)
        return 2
    except Exception as e:
        if is_cuda_fault(e):
            raise  # the kernel broke the CUDA context: die, the parent reports a crash with this error
        import traceback

        # A bug in the verifier, not the kernel: an internal error in the parent (exit 3), not a crash.
        last = traceback.extract_tb(e.__traceback__)[-1]
        write_answer(req["out"], "internal_error", message=f"{type(e).__name__}: {e} (at {last.filename}:{last.lineno})")
        return 3
    write_answer(req["out"], "report", report=kernel_entry(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
