"""The quantizing CUDA kernels (kernels/cuda/quant.cu) on a GPU: every variant passes the ci battery (values in the
quantized domain, the dynamic scale, NaN rows, saturation, exact int8 ties), the compiled Triton quantizers agree
(their fp8 codes assembled by hand match cvt.rn.satfinite), and the hardware's fp8 conversion matches the formats of
verifier/numerics/quantized.py bit for bit over every float32 near the formats' boundaries."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpu_requirements import gpu_and_nvcc_reason

ROOT = Path(__file__).resolve().parent.parent
_REASON = gpu_and_nvcc_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]


def _check(spec: str, tmp_path, level: str = "ci") -> dict:
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "verifier.cli", "check", spec, "--level", level, "--format", "json",
                        "--output", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert out.exists(), r.stderr
    return json.loads(out.read_text())


@pytest.mark.parametrize("spec", ["kernels/cuda/quant_spec.py", "kernels/triton/quant_spec.py"])
def test_quantizers_pass_ci_on_the_gpu(spec, tmp_path):
    doc = _check(spec, tmp_path)
    verdicts = {k["name"]: k["verdict"] for k in doc["kernels"]}
    bad = {k["name"]: [f["message"] for f in k["findings"]][:3] for k in doc["kernels"] if k["verdict"] != "pass"}
    assert verdicts and not bad, bad


def test_hardware_fp8_conversion_is_the_format_model():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA build of torch")
    from verifier.numerics.quantized import fmt

    for name in ("float8_e4m3fn", "float8_e5m2"):
        f = fmt(name)
        mids = (f.grid[1:] + f.grid[:-1]) / 2
        t = np.concatenate([f.grid, mids, np.nextafter(mids.astype(np.float32), np.float32(np.inf)),
                            np.nextafter(mids.astype(np.float32), np.float32(-np.inf))]).astype(np.float32)
        t = t[np.abs(t) <= f.qmax]  # torch's cast does not saturate: the kernels clamp or use satfinite
        got = torch.from_numpy(t).cuda().to(getattr(torch, name)).float().cpu().numpy().astype(np.float64)
        assert np.array_equal(got, f.quantize(t.astype(np.float64))), name
