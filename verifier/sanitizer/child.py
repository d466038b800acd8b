"""The process compute-sanitizer watches: ``python -m verifier.sanitizer.child REQUEST.json``.

Loads one kernel from its spec file and launches it, for one dtype, once per requested shape, on
poisoned outputs (verifier.launch.harness.execute), then synchronizes. It judges no values: the sanitizer's
records are the result. It answers once (verifier.toolchain.proc.write_answer, kind ``launched``:
``status`` "ok" | "error", ``launched`` [[M, N], ...], ``error``) at the request's ``result`` path and exits 0
(1 on error), so verifier.sanitizer.runs can tell a harness failure from a sanitizer finding.

No allocator pools: a pooled allocation hides out-of-bounds accesses into its neighbours from memcheck and
stale data from initcheck. A CUDA kernel's buffers and workspaces are driver allocations of their own
(verifier.launch.harness, verifier.launch.cuda: no torch in this process); torch's caching is off for Triton
kernels and callables (PYTORCH_NO_CUDA_MEMORY_CACHING=1 from the driver).
"""
from __future__ import annotations

import gc
import json
import sys
import traceback

import numpy as np

from verifier.declare import registry
from verifier.inputs.cases import random_maker
from verifier.launch import runner_for
from verifier.launch.harness import execute
from verifier.launch.triton import activate
from verifier.results.options import derived_seed
from verifier.toolchain.proc import die_with_parent, parent_from_environment, write_answer


def run(req: dict, launched: list) -> None:
    """Launch every requested shape; ``launched`` collects the shapes done (kept on failure)."""
    device = req.get("device", "cuda")
    spec = next((k for k in registry.load_spec_file(req["origin"]) if k.name == req["kernel"]), None)
    if spec is None:
        raise LookupError(f"kernel {req['kernel']!r} is not in {req['origin']}")
    dt = next((d for d in spec.dtypes if d.tag == req["dtype"]), None)
    if dt is None:
        raise LookupError(f"kernel {spec.name} declares no dtype {req['dtype']!r}")
    if device == "cuda" and spec.uses_triton:
        activate("compiled")
    run_fn = runner_for(spec)
    params = spec.op_params()
    for M, N in req["shapes"]:
        rng = np.random.default_rng(derived_seed(req.get("seed", 0), spec.name, dt.tag, "sanitize", M, N))
        xs = random_maker(M, N)(rng, dt, spec.op, params)
        execute(run_fn, spec, xs, dt, params, device, check_poison=False, input_guard=False)  # memcheck's reads
        launched.append([M, N])
    if device == "cuda":
        _synchronize(spec)


def _synchronize(spec) -> None:
    """Wait for the device before reporting: through the driver for a CUDA kernel (no torch import), torch's
    otherwise."""
    if not spec.imports_torch:
        from verifier.gpu import libcuda

        libcuda.context()  # current on this thread (the launches made it so; cheap to say again)
        libcuda.synchronize()
    else:
        import torch

        torch.cuda.synchronize()


def main(argv) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m verifier.sanitizer.child REQUEST.json\n")
        return 2
    die_with_parent(parent_from_environment())  # compute-sanitizer's child: ends once the verifier process has
    with open(argv[0]) as fh:
        req = json.load(fh)
    launched: list = []
    try:
        run(req, launched)
        result, code = {"status": "ok", "launched": launched, "error": ""}, 0
    except BaseException as e:  # report everything: the driver decides what it means
        result = {"status": "error", "launched": launched, "error": f"{type(e).__name__}: {e}",
                  "traceback": traceback.format_exc(limit=8)}
        code = 1
    gc.collect()  # release the launches' buffers before exit, so leak records mean something
    write_answer(req["result"], "launched", **result)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
