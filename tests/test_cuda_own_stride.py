"""The strided case gives each 2-D tensor whose stride a CUDA launch names a row stride of its own
(verifier.inputs.layouts.row_pad: x's N + 64, y's N + 192 for rmsnorm's x, w, y), as it does a Triton kernel's:
a kernel writing y at the x stride its launch passes (or reading x at y's) fails there; before, every named
tensor had N + 64 and it passed. The harness's layout, the Stride(t) bound and the model layout of the build step,
lint and a five-parameter launches agree. An output written over an input (outputs_alias) is one buffer at one
stride: a kernel using that one stride for both passes. Runs over the fake libcuda (tests/fake_libcuda.py)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from fake_libcuda import install
from verifier.battery.values import run_case
from verifier.gpu import libcuda as cd
from verifier.inputs import layouts as L
from verifier.inputs.cases import random_inputs
from verifier.launch import cuda as rc
from verifier.results.options import Options
from verifier.spec import CudaKernel, Launch, Scalar, Stride, dtypes

F32, BF16 = dtypes("f32"), dtypes("bf16")
_IO = {"f32": np.float32, "bf16": ml_dtypes.bfloat16}
CUDA = Options(device="cuda")
STRIDED = L.Layout(L.STRIDED)
M, N = 6, 24


def _rmsnorm(lib, a, io, read="x", write="y"):
    """RMSNorm over (x, w, y, M, N, x stride, y stride, eps): x's rows read at the stride named ``read``, y's
    written at the one named ``write`` (the correct kernel: x's and y's)."""
    x, w, y, m, n, sx, sy, eps = a
    stride = {"x": sx, "y": sy}
    it = np.dtype(io).itemsize
    wv = lib.view(w, io, n).astype(np.float32)
    for r in range(m):
        xr = lib.view(x + r * stride[read] * it, io, n).astype(np.float32)
        with np.errstate(over="ignore"):  # a row read from the gaps holds the dtype's max
            rstd = np.float32(1) / np.sqrt((xr * xr).mean(dtype=np.float32) + np.float32(eps))
        lib.view(y + r * stride[write] * it, io, n)[:] = (xr * rstd * wv).astype(io)


def _in_place(lib, a, io):
    """RMSNorm of x written over x (outputs_alias {'y': 'x'}): (x, w, M, N, stride, eps), one stride for both."""
    x, w, m, n, s, eps = a
    _rmsnorm(lib, [x, w, x, m, n, s, s, eps], io)


def _one_stride(lib, a, io):
    """RMSNorm over (x, w, y, M, N, stride, eps): one stride for x's and y's rows (PyTorch's softmax_warp_forward
    takes one stride for its input and output)."""
    x, w, y, m, n, s, eps = a
    _rmsnorm(lib, [x, w, y, m, n, s, s, eps], io)


BODIES = {"own": _rmsnorm, "y_at_x_stride": lambda lib, a, io: _rmsnorm(lib, a, io, write="x"),
          "x_at_y_stride": lambda lib, a, io: _rmsnorm(lib, a, io, read="y"), "in_place": _in_place,
          "one_stride": _one_stride}
KERNELS = {f"{n}_{tag}": (lambda b, io: lambda lib, a: b(lib, a, io))(b, io) for n, b in BODIES.items()
           for tag, io in _IO.items()}
ROWS = ("x", "w", "y", "M", "N", Stride("x", "int64"), Stride("y", "int64"), "eps")


@pytest.fixture
def lib(monkeypatch):
    fake = install(KERNELS, monkeypatch.setattr)
    yield fake
    cd._primary.cache_clear()


def _spec(body, args=ROWS, **kw):
    return CudaKernel(name=f"emu-{body}", op="rmsnorm", source="emulated.cu", dtypes=[F32, BF16], **kw,
                      launches=lambda m, n, dt, p: [Launch(f"{body}_{dt.tag}", grid=(m,), block=(32,), args=args)])


def _case(spec, dt, case="strided_rows_pad64", layout=STRIDED):
    xs = random_inputs(spec, dt, M, N, np.random.default_rng(0))
    return run_case(spec, dt, case, xs, CUDA, layout=layout)


@pytest.mark.parametrize("dt", [F32, BF16], ids=lambda d: d.tag)
@pytest.mark.parametrize("body", ["y_at_x_stride", "x_at_y_stride"])
def test_a_cuda_kernel_taking_one_tensors_stride_for_another_fails_the_strided_case(lib, body, dt):
    spec = _spec(body)
    bad = _case(spec, dt)
    checks = {f.check for f in bad.findings}
    assert checks & {"value", "out-of-range-write", "crash"}, [f.message for f in bad.findings][:3]
    assert not _case(spec, dt, "normal_small", None).findings  # contiguous: both strides N, nothing to see


@pytest.mark.parametrize("dt", [F32, BF16], ids=lambda d: d.tag)
def test_a_cuda_kernel_indexing_each_tensor_by_its_own_stride_passes_and_gets_distinct_strides(lib, dt):
    spec = _spec("own")
    report = _case(spec, dt)
    assert not report.findings, [f.message for f in report.findings][:3]
    sx, sy = lib.launched[-1].values()[5:7]
    assert (sx, sy) == (N + L.ROW_PAD, N + 3 * L.ROW_PAD)  # x first, y third of (x, w, y): layouts.row_pad
    # the model layout (build step, lint, the gate, a five-parameter launches) places them as the harness does
    model = rc.model_tensors(spec, M, N, dt, spec.op_params(), L.STRIDED)
    assert (model["x"].stride, model["y"].stride, model["w"].stride) == (sx, sy, None)


def test_a_five_parameter_launches_reads_the_same_distinct_strides_in_the_model_and_at_the_launch(lib):
    def launches(m, n, dt, p, layout):  # the strides as the host reads them from its tensors
        return [Launch(f"own_{dt.tag}", grid=(m,), block=(32,),
                       args=("x", "w", "y", "M", "N", Scalar("int64", layout.stride("x")),
                             Scalar("int64", layout.stride("y")), "eps"))]

    spec = CudaKernel(name="emu-layout", op="rmsnorm", source="emulated.cu", dtypes=[F32], launches=launches)
    assert rc.strided_tensors(spec, M, N, F32, spec.op_params()) == {"x", "y"}  # it reads both: both strided
    report = _case(spec, F32)
    assert not report.findings, [f.message for f in report.findings][:3]
    launched = lib.launched[-1].values()[5:7]
    model = rc.model_layout(spec, M, N, F32, spec.op_params(), L.STRIDED)
    assert launched == [model.stride("x"), model.stride("y")] == [N + L.ROW_PAD, N + 3 * L.ROW_PAD]


@pytest.mark.parametrize("dt", [F32, BF16], ids=lambda d: d.tag)
def test_an_output_written_over_its_input_is_one_buffer_at_one_stride(lib, dt):
    # FlashInfer's in-place norms: y written over x, one stride passed and used for both
    spec = _spec("in_place", args=("x", "w", "M", "N", Stride("x", "int64"), "eps"), outputs_alias={"y": "x"})
    report = _case(spec, dt)
    assert not report.findings, [f.message for f in report.findings][:3]
    (stride,) = [v for v in lib.launched[-1].values()[4:5]]
    assert stride == N + 3 * L.ROW_PAD  # the buffer is y's: its stride, bound as x's
    model = rc.model_tensors(spec, M, N, dt, spec.op_params(), L.STRIDED)
    assert model["x"].stride == model["y"].stride == stride


@pytest.mark.parametrize("dt", [F32, BF16], ids=lambda d: d.tag)
def test_one_stride_declared_shared_lays_both_tensors_at_it_and_passes(lib, dt):
    # PyTorch's persistent warp softmax indexes src and dst with one stride: declared so, it is right; declared as
    # x's alone, y stays contiguous while the kernel writes it at x's stride, and that is caught
    shared = _spec("one_stride", args=("x", "w", "y", "M", "N", Stride("x", "int64", shared_with=("y",)), "eps"))
    report = _case(shared, dt)
    assert not report.findings, [f.message for f in report.findings][:3]
    assert lib.launched[-1].values()[5] == N + L.ROW_PAD
    model = rc.model_tensors(shared, M, N, dt, shared.op_params(), L.STRIDED)
    assert model["x"].stride == model["y"].stride == N + L.ROW_PAD and model["w"].stride is None
    alone = _spec("one_stride", args=("x", "w", "y", "M", "N", Stride("x", "int64"), "eps"))
    bad = _case(alone, dt)
    assert {f.check for f in bad.findings} & {"value", "out-of-range-write", "unwritten"}, bad.findings


def test_a_shared_stride_naming_no_other_tensor_or_a_1d_one_is_a_spec_error(lib):
    from verifier.errors import SpecError

    with pytest.raises(SpecError, match="shared_with"):
        Stride("x", shared_with=("x",))
    assert Stride("x", shared_with="y").shared_with == ("y",)
    spec = _spec("one_stride", args=("x", "w", "y", "M", "N", Stride("x", "int64", shared_with=("w",)), "eps"))
    with pytest.raises(SpecError, match="'w', which is not a 2-D tensor"):
        rc.model_tensors(spec, M, N, F32, spec.op_params(), L.STRIDED) and [
            rc.bind_model(spec, launch, M, N, F32, spec.op_params(),
                          rc.model_tensors(spec, M, N, F32, spec.op_params(), L.STRIDED))
            for launch in rc.launches_for(spec, M, N, F32, spec.op_params())]
