"""Each row's argmax on a GPU: our CUDA kernels (kernels/cuda/argmax_spec.py) and the compiled Triton ones
(kernels/triton/argmax_spec.py) pass their whole battery at the 'ci' level (exact, tie-aware index, the value output,
NaN the maximum, determinism); the CUDA defect twins (kernels/defects/cuda/argmax_defects.cu) are caught on the case
the detection matrix names, and the raw outputs agree with torch.argmax on ties and the one-ULP rows."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpu_requirements import gpu_and_nvcc_reason

ROOT = Path(__file__).resolve().parent.parent
_REASON = gpu_and_nvcc_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]

CUDA = ROOT / "kernels" / "cuda" / "argmax_spec.py"
TRITON = ROOT / "kernels" / "triton" / "argmax_spec.py"
DEFECTS = ROOT / "kernels" / "defects" / "cuda" / "defects.py"


def _specs(path):
    from verifier.declare.registry import load_spec_file

    return {k.name: k for k in load_spec_file(path)}


def _check(spec, **kw):
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    return check_kernel(spec, Options(level="ci", device="cuda", **kw))


@pytest.mark.parametrize("path,name", [(CUDA, "cuda-row-argmax"), (CUDA, "cuda-row-argmax-int32-value"),
                                       (TRITON, "triton-row-argmax"), (TRITON, "triton-row-argmax-int32-value")])
def test_row_argmax_kernel_passes_its_battery(path, name):
    report = _check(_specs(path)[name])
    assert report.verdict == "pass", "\n".join(f"{f.check} {f.dtype} {f.input}: {f.message}" for f in report.findings)


@pytest.mark.parametrize("name,case", [("defect-cuda-argmax-lane-drops-index", "normal_small"),
                                       ("defect-cuda-argmax-half-compare", "argmax_one_ulp")])
def test_cuda_argmax_defect_is_caught(name, case):
    report = _check(_specs(DEFECTS)[name], case=case)
    assert report.verdict == "fail" and any(f.check == "value" and "argmax wrong" in f.message
                                            for f in report.findings), [f.message for f in report.findings]


def test_cuda_argmax_raw_outputs_are_torch_argmax_on_ties_and_one_ulp_rows():
    import torch

    from verifier.launch.cuda import run_cuda
    from verifier.launch.harness import execute
    from verifier.spec import dtypes

    spec = _specs(CUDA)["cuda-row-argmax"]
    rng = np.random.default_rng(0)
    tied = rng.integers(0, 4, size=(16, 3000)).astype(np.float32)  # many ties of the maximum, past 256 threads
    ulp = np.full((4, 777), 0.5, np.float32)
    ulp[:, 3], ulp[:, 700] = np.nextafter(np.float32(1.5), np.float32(0)), np.float32(1.5)
    for x in (tied, ulp):
        out = execute(run_cuda, spec, {"x": x}, dtypes("f32"), spec.op_params(), "cuda").outputs["index"]
        np.testing.assert_array_equal(out, torch.as_tensor(x).argmax(-1).numpy())
