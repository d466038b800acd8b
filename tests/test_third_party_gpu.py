"""Issue #23 on a GPU: a Triton kernel behind a library function that returns its outputs has its compiled
kernels found (and its resources checked); a Triton compile that runs out of shared memory on long rows is a
refusal quoting the compiler; a launcher that launches no Triton kernel is that kernel's error; a templated CUDA
kernel named by its C++ name, writing y over x, launches and is judged. Each through `verifier check`, whose exit
code must be 1 (findings), never 2 or 3."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpu_requirements import gpu_and_nvcc_reason

ROOT = Path(__file__).resolve().parent.parent


_gpu_reason = gpu_and_nvcc_reason  # tests/gpu_requirements.py


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_gpu_reason() is not None, reason=_gpu_reason() or "")]

TRITON_MODULE = '''
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_rows(y_ptr, x_ptr, M, N, BLOCK: tl.constexpr, STAGES: tl.constexpr):
    # the Triton tutorial's fused softmax: programs stride over rows, row loads pipelined STAGES deep
    start, step = tl.program_id(0), tl.num_programs(0)
    cols = tl.arange(0, BLOCK)
    for row in tl.range(start, M, step, num_stages=STAGES):
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, 0))
        tl.store(y_ptr + row * N + cols, (e / tl.sum(e, 0)).to(y_ptr.dtype.element_ty), mask=cols < N)


def library_softmax(x, stages=1):
    """A library's function: allocates and returns its output, not the compiled kernel."""
    y = torch.empty_like(x)
    M, N = x.shape
    _softmax_rows[(min(M, 4),)](y, x, M, N, BLOCK=triton.next_power_of_2(N), STAGES=stages)
    return y


def wrapped(inputs, outputs, params, dt):
    outputs["y"].copy_(library_softmax(inputs["x"]))


def pipelined(inputs, outputs, params, dt):  # 4 stages of a whole row: past the shared memory on long rows
    outputs["y"].copy_(library_softmax(inputs["x"], stages=4))


def torch_only(inputs, outputs, params, dt):  # launches no Triton kernel
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))
'''

CUDA_SOURCE = r'''
namespace ns {
template <typename T, int BLOCK, bool SKIP_LAST>
__global__ void rms_inplace(T* x, const T* w, int M, int n, float eps) {  // y is written over x
  __shared__ float s[BLOCK];
  if (SKIP_LAST && blockIdx.x == M - 1) return;
  float acc = 0.f;
  for (int i = threadIdx.x; i < n; i += BLOCK) { float v = (float)x[(long long)blockIdx.x * n + i]; acc += v * v; }
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int k = BLOCK / 2; k > 0; k /= 2) { if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k]; __syncthreads(); }
  float r = 1.0f / sqrtf(s[0] / n + eps);
  for (int i = threadIdx.x; i < n; i += BLOCK) x[(long long)blockIdx.x * n + i] = (T)((float)x[(long long)blockIdx.x * n + i] * r * (float)w[i]);
}
template __global__ void rms_inplace<float, 256, false>(float*, const float*, int, int, float);
template __global__ void rms_inplace<float, 256, true>(float*, const float*, int, int, float);
}
'''

SPEC = '''
from verifier.spec import CudaKernel, Launch, TritonKernel, dtypes, max_row

def inplace(skip):
    return lambda M, N, dt, p: [Launch(f"ns::rms_inplace<float, 256, {skip}>", (M,), (256,), ("y", "w", "M", "N", "eps"))]

F32 = [dtypes("f32")]
KERNELS = [
    TritonKernel(name="wrapped", op="softmax", module="lib.py", launcher="wrapped", dtypes=F32,
                 math_mode="triton_approx", supports=max_row(8192)),
    TritonKernel(name="pipelined", op="softmax", module="lib.py", launcher="pipelined", dtypes=F32,
                 math_mode="triton_approx", supports=max_row(65536)),
    TritonKernel(name="torch-only", op="softmax", module="lib.py", launcher="torch_only", dtypes=F32),
    CudaKernel(name="cpp-inplace", op="rmsnorm", source="k.cu", dtypes=F32, launches=inplace("false"),
               outputs_alias={"y": "x"}),
    CudaKernel(name="cpp-inplace-skips-a-row", op="rmsnorm", source="k.cu", dtypes=F32, launches=inplace("true"),
               outputs_alias={"y": "x"}),
]
'''


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("tp_gpu")
    (d / "lib.py").write_text(textwrap.dedent(TRITON_MODULE))
    (d / "k.cu").write_text(CUDA_SOURCE)
    (d / "gpu_spec.py").write_text(textwrap.dedent(SPEC))
    out = d / "r.json"
    # compiled Triton whatever an earlier test of this worker left in its environment (a CPU check sets
    # TRITON_INTERPRET=1 before it imports triton: the child would inherit it)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-m", "verifier.cli", "check", str(d / "gpu_spec.py"), "--device", "cuda",
                           "--level", "quick", "--verbose", "--format", "json", "--output", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**env, "VERIFIER_TRITON_MODE": "compiled"})
    assert proc.returncode == 1, proc.stderr[-4000:]  # findings; never a usage error (2) or a bug (3)
    return {k["name"]: k for k in json.loads(out.read_text())["kernels"]}


def test_a_library_wrapped_triton_kernel_has_its_resources_checked(run):
    r = run["wrapped"]
    assert r["verdict"] == "pass" and not r["findings"], r
    assert r["checks"]["f32"]["resources"] == "pass"
    assert any("_softmax_rows" in n and "registers" in n for n in r["notes"]), r["notes"]


def test_a_shared_memory_limit_on_long_rows_is_a_refusal_quoting_the_compiler(run):
    r = run["pipelined"]
    refusals = [f for f in r["findings"] if f["check"] == "refusal"]
    assert refusals, r
    assert all("OutOfResources: out of resource: shared memory" in f["message"]
               and "declare the limit in supports()" in f["message"] for f in refusals), refusals
    assert not [f for f in r["findings"] if f["check"] == "crash"] and not r.get("error")
    assert r["checks"]["f32"]["value"] == "pass"  # the shorter rows still ran


def test_a_launcher_that_launches_no_triton_kernel_is_that_kernels_error(run):
    r = run["torch-only"]
    assert r["verdict"] == "error" and "launched no Triton kernel" in r["error"], r


def test_a_templated_kernel_by_cpp_name_writes_y_over_x(run):
    ok = run["cpp-inplace"]
    assert ok["verdict"] == "pass" and not ok["findings"], [f["message"] for f in ok["findings"]] or ok
    bad = run["cpp-inplace-skips-a-row"]
    assert {"unwritten", "value"} <= {f["check"] for f in bad["findings"]}, bad
