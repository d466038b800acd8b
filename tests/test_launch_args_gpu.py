"""Every C-ABI launch argument kind round-trips through a real CUDA entry on the GPU: ``echo`` (tests/data/cabi/args.cu)
receives a struct (pointers, one at an element offset and one null, a nested uint3 fast-divmod pack and an int8, a
double, a uint16, a uint64, aligned to 16), every scalar kind (bool, int8 .. uint64, float32, float64), an offset
pointer and a null pointer, and writes what it received into y, 32-bit word by word; the words are compared with
the values the spec declared."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from verifier.gpu.probe import driver_device_count

DATA = Path(__file__).resolve().parent / "data" / "cabi"


def _gpu_reason():
    if driver_device_count() == 0:
        return "needs an NVIDIA GPU and its driver (libcuda sees no device)"
    if shutil.which("nvcc") is None:
        return "needs nvcc to build tests/data/cabi/args.cu"
    return None


_REASON = _gpu_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def test_every_argument_kind_reaches_the_kernel_as_declared():
    from verifier.declare.registry import load_spec_file
    from verifier.launch.cuda import run_cuda
    from verifier.launch.harness import execute

    (spec,) = [k for k in load_spec_file(str(DATA / "args_spec.py")) if k.name == "cabi-echo"]
    dt = spec.dtypes[0]
    M, N = 2, 40
    x = np.arange(M * N, dtype=np.float32).reshape(M, N) + np.float32(0.5)
    out = execute(run_cuda, spec, {"x": x}, dt, spec.op_params(), "cuda", check_poison=False)
    got = [int(w) for w in np.ascontiguousarray(out.outputs["y"]).reshape(-1).view(np.uint32)[:29]]
    sys.path.insert(0, str(DATA))
    try:
        from args_spec import echo_words
    finally:
        sys.path.remove(str(DATA))
    want = echo_words(x, N)
    assert got == [int(w) for w in want], [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]


def test_the_issue_struct_launch_runs():
    """struct P { const float* x; float* y; unsigned n; float eps; }: y = x + eps, row by row."""
    from verifier.declare.registry import load_spec_file
    from verifier.launch.cuda import run_cuda
    from verifier.launch.harness import execute

    (spec,) = [k for k in load_spec_file(str(DATA / "args_spec.py")) if k.name == "cabi-struct-p"]
    dt = spec.dtypes[0]
    xs = {"x": np.random.default_rng(0).standard_normal((3, 300)).astype(np.float32),
          "w": np.ones(300, dtype=np.float32)}
    out = execute(run_cuda, spec, xs, dt, spec.op_params(), "cuda")
    assert not out.unwritten and not out.guard_hits
    np.testing.assert_array_equal(out.outputs["y"], xs["x"] + np.float32(spec.op_params()["eps"]))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
