"""The CUDA cross entropy variants on a GPU (kernels/cuda/cross_entropy_variants.cu): every kernel of its spec passes
`verifier check --level ci` (label smoothing, z_loss + softcap, the batch's mean and sum, every dtype and case), and
the same source launched with the mean's flag off (a sum where a mean is declared) and with label smoothing read as
0 (the plain loss where smoothing is declared) is caught by the value check. Exit code 1 (findings) for those,
never 2 or 3."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpu_requirements import gpu_and_nvcc_reason

ROOT = Path(__file__).resolve().parent.parent
_REASON = gpu_and_nvcc_reason()  # tests/gpu_requirements.py
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]

BROKEN = '''
from verifier.spec import CudaKernel, Launch, Scalar, Stride, Workspace, dtypes

SOURCE = {source!r}
ROWS = Workspace("rows", lambda M, N: M)


def _rows(M, N, dt, p, out, eps):
    return Launch(f"ce_var_rows_{{dt.tag}}_i64", grid=(M,), block=(256,),
                  args=("x", "labels", out, "M", "N", Scalar("int64", p["ignore_index"]), Stride("x", "int64"),
                        Scalar("float32", eps), Scalar("float32", 0.0), Scalar("float32", 0.0)))


def sum_as_mean(M, N, dt, p):  # the batch launch's mean flag off: a sum where the mean is declared
    return [_rows(M, N, dt, p, ROWS, p["label_smoothing"]),
            Launch("ce_var_batch_i64", grid=(1,), block=(256,),
                   args=(ROWS, "labels", "loss", "M", Scalar("int64", p["ignore_index"]), Scalar("int32", 0)))]


def no_smoothing(M, N, dt, p):  # label smoothing declared, 0 passed
    return [_rows(M, N, dt, p, "loss", 0.0)]


KERNELS = [
    CudaKernel(name="bug-ce-sum-as-mean", op="cross_entropy_reduced", source=SOURCE, launches=sum_as_mean,
               dtypes=[dtypes("f32")], params={{"reduction": "mean", "label_smoothing": 0.1}}, online=True),
    CudaKernel(name="bug-ce-smoothing-dropped", op="cross_entropy", source=SOURCE, launches=no_smoothing,
               dtypes=[dtypes("bf16", "f32")], params={{"label_smoothing": 0.1}}, online=True),
]
'''


def _check(spec, level, out, expect_rc):
    proc = subprocess.run([sys.executable, "-m", "verifier.cli", "check", str(spec), "--device", "cuda", "--level",
                           level, "--format", "json", "--output", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == expect_rc, proc.stderr[-4000:]
    return {k["name"]: k for k in json.loads(out.read_text())["kernels"]}


def test_the_cuda_variants_pass_ci(tmp_path):
    got = _check(ROOT / "kernels" / "cuda" / "cross_entropy_variants_spec.py", "ci", tmp_path / "r.json", 0)
    assert set(got) == {"cuda-ce-smoothing", "cuda-ce-zloss-softcap", "cuda-ce-mean", "cuda-ce-sum"}
    for name, r in got.items():
        assert r["verdict"] == "pass" and not r["findings"], (name, [f["message"] for f in r["findings"]][:5])


def test_the_same_source_misdeclared_is_caught(tmp_path):
    spec = tmp_path / "broken_spec.py"
    spec.write_text(textwrap.dedent(BROKEN.format(source=str(ROOT / "kernels" / "cuda" / "cross_entropy_variants.cu"))))
    got = _check(spec, "quick", tmp_path / "r.json", 1)
    for name in ("bug-ce-sum-as-mean", "bug-ce-smoothing-dropped"):
        assert got[name]["verdict"] == "fail" and "value" in {f["check"] for f in got[name]["findings"]}, got[name]
