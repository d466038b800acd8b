"""verifier.launch.harness: poisoned outputs inside guard bands, unwritten / out-of-range detection, kernel faults."""
import numpy as np
import pytest
import torch

from verifier.launch import harness
from verifier.errors import Unsupported
from verifier.launch.harness import GUARD_BYTES, KernelFault, execute
from verifier.spec import CallableKernel, dtypes

F32, BF16 = dtypes("f32"), dtypes("bf16")


def _spec(fn, op="softmax", dt=F32):
    return CallableKernel(name="k", op=op, fn=fn, dtypes=[dt])


def _run(spec, inputs, outputs, params, dt, device):
    spec.fn(inputs, outputs, params, dt)


def _x(M=3, N=40, dtype="float32", seed=0):
    from verifier.dtypes import numpy_dtype

    return {"x": np.random.default_rng(seed).standard_normal((M, N)).astype(numpy_dtype(dtype))}


def _softmax(inputs, outputs, params, dt):
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))


def test_float_poisons_are_nans_and_int_poisons_are_distinct_sentinels():
    from verifier.dtypes import numpy_dtype

    for dtype, pair in harness._POISON.items():
        width = np.dtype(numpy_dtype(dtype)).itemsize
        values = [harness._signed(p, width) for p in pair]
        assert len(set(values)) == 2, dtype  # two patterns: a kernel writing one of them is still seen
        assert all(-(1 << (8 * width - 1)) <= v < (1 << (8 * width - 1)) for v in values), dtype
        if dtype.startswith("int"):
            continue
        bits = np.array(values, dtype=f"int{8 * width}")
        with np.errstate(invalid="ignore"):
            assert np.isnan(bits.view(numpy_dtype(dtype)).astype(np.float64)).all(), dtype  # both, not the first


@pytest.mark.parametrize("tag", ["f32", "f16", "bf16"])
def test_an_output_the_kernel_never_writes_reads_back_as_poison_and_is_unwritten(tag):
    dt = dtypes(tag)
    out = execute(_run, _spec(lambda inputs, outputs, params, dt: None, dt=dt), _x(dtype=dt.input), dt, {}, "cpu")
    with np.errstate(invalid="ignore"):  # NaN payloads cast to float64
        assert np.isnan(out.outputs["y"].astype(np.float64)).all()
    assert out.unwritten["y"].all() and out.unwritten["y"].shape == (3, 40)


def test_correct_kernel_has_no_unwritten_or_guard_hits():
    out = execute(_run, _spec(_softmax), _x(), F32, {}, "cpu")
    assert out.unwritten == {} and out.guard_hits == {}
    np.testing.assert_allclose(out.outputs["y"].sum(-1), 1.0, rtol=1e-6)


def test_unwritten_tail_is_located_exactly():
    def skips_last_column(inputs, outputs, params, dt):
        outputs["y"][:, :-1].copy_(torch.softmax(inputs["x"], -1)[:, :-1])

    out = execute(_run, _spec(skips_last_column), _x(M=3, N=40), F32, {}, "cpu")
    mask = out.unwritten["y"]
    assert mask.shape == (3, 40)
    assert mask[:, -1].all() and not mask[:, :-1].any()


def test_bf16_unwritten_detected_too():
    def first_row_only(inputs, outputs, params, dt):
        outputs["y"][0].copy_(torch.softmax(inputs["x"][0].float(), -1))

    out = execute(_run, _spec(first_row_only, dt=BF16), _x(dtype="bfloat16"), BF16, {}, "cpu")
    assert out.unwritten["y"][1:].all() and not out.unwritten["y"][0].any()


def test_writing_the_poison_value_itself_is_not_unwritten():
    # A kernel that legitimately stores the first poison's bits: the second run (other poison) clears it.
    def writes_poison_bits(inputs, outputs, params, dt):
        _softmax(inputs, outputs, params, dt)
        outputs["y"].view(torch.int32)[0, 0] = harness._signed(harness._POISON["float32"][0], 4)

    out = execute(_run, _spec(writes_poison_bits), _x(), F32, {}, "cpu")
    assert out.unwritten == {}


@pytest.mark.parametrize("side", ["after", "before"])
def test_out_of_range_write_hits_the_guard(side):
    def overruns(inputs, outputs, params, dt):
        _softmax(inputs, outputs, params, dt)
        y = outputs["y"]
        if side == "after":
            y.as_strided((y.numel() + 2,), (1,))[-1] = 1.0  # two elements past the end
        else:
            y.as_strided((1,), (1,), y.storage_offset() - 1)[0] = 1.0  # one element before the start

    out = execute(_run, _spec(overruns), _x(), F32, {}, "cpu")
    assert out.unwritten == {}
    assert out.guard_hits["y"] == ([("after", 4)] if side == "after" else [("before", 4)])
    assert GUARD_BYTES >= 4096


def test_kernel_exception_becomes_kernel_fault_but_refusals_pass_through():
    def raises(inputs, outputs, params, dt):
        raise IndexError("boom")

    with pytest.raises(KernelFault) as e:
        execute(_run, _spec(raises), _x(), F32, {}, "cpu")
    assert isinstance(e.value.original, IndexError) and not e.value.cuda and "IndexError: boom" in str(e.value)

    def refuses(inputs, outputs, params, dt):
        raise Unsupported("no")

    with pytest.raises(Unsupported):
        execute(_run, _spec(refuses), _x(), F32, {}, "cpu")


def test_cuda_errors_are_marked_as_context_breaking():
    assert KernelFault(RuntimeError("CUDA error after launch k: an illegal memory access")).cuda
    assert not KernelFault(ValueError("bad")).cuda


def test_inout_residual_is_updated_in_place_and_kept():
    from verifier.spec import dtypes as d

    def fused(inputs, outputs, params, dt):
        r = inputs["x"] + inputs["residual"]
        outputs["residual"].copy_(r)
        outputs["y"].copy_(torch.nn.functional.rms_norm(r, (r.shape[-1],), inputs["w"], eps=params["eps"]))

    rng = np.random.default_rng(1)
    xs = {"x": rng.standard_normal((2, 16)).astype(np.float32),
          "residual": rng.standard_normal((2, 16)).astype(np.float32),
          "w": rng.standard_normal(16).astype(np.float32)}
    spec = _spec(fused, op="fused_add_rmsnorm", dt=d("f32"))
    out = execute(_run, spec, xs, d("f32"), spec.op_params(), "cpu")
    assert out.unwritten == {} and out.guard_hits == {}
    np.testing.assert_array_equal(out.outputs["residual"], xs["x"] + xs["residual"])
