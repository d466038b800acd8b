"""What production-kernel validation (issue #37, round prod-a: LightLLM, torchao, TensorRT-LLM, attorch, DeepSpeed,
Liger, the Triton tutorial) needed: OCP MX's floor-mode power-of-two scales (ue8m0='floor', torchao's default MX
recipe), E8M0's smallest exponent for zero groups, F.layer_norm / F.rms_norm in a user op's reference, and the
interpreter's int <-> bfloat16 conversions recorded as the gap they are (torchao's Triton FLOOR kernel keeps its
exponent in bfloat16). Each kernel here is written from scratch (tests/data/prod_norm_quant/)."""
from pathlib import Path

import pytest

from verifier.battery import check_kernel
from verifier.declare.registry import load_spec_file
from verifier.errors import SpecError
from verifier.results.options import Options

DATA = Path(__file__).parent / "data" / "prod_norm_quant"


def _verdicts(spec, level="quick"):
    return {k.name: check_kernel(k, Options(level=level, device="cpu")) for k in load_spec_file(str(DATA / spec))}


def test_ocp_mx_floor_scales():
    """ue8m0='floor': 2^(floor(log2 amax) - 8) for e4m3, the group's largest values saturating at 448. A floor
    quantizer passes; the same kernel declared ue8m0=True (the only rounding the op had) fails on groups whose amax
    mantissa is past 1.75 (its scale is half the ceil one); a floor quantizer whose cast does not saturate (NaN past
    448, PyTorch's eager e4m3 cast before 2.13) fails. A zero group (floor 0) passes with E8M0's 2^-127 and with a
    float32 0."""
    got = _verdicts("mx_floor_spec.py")
    for name in ("mx-floor", "mx-ceil-e8m0", "mx-ceil-zero-scale"):
        assert got[name].verdict == "pass", (name, [f.message for f in got[name].findings][:3])
    assert any(f.check == "nan-inf" for f in got["mx-floor-unsaturated"].findings)
    assert any("scale" in f.message and f.check == "value" for f in got["mx-floor-declared-ceil"].findings)


def test_ue8m0_takes_true_ceil_or_floor():
    from verifier.ops.group_quant import ue8m0_mode

    assert [ue8m0_mode({"ue8m0": v}) for v in (False, True, "ceil", "floor")] == [None, "ceil", "ceil", "floor"]
    with pytest.raises(SpecError, match="ue8m0"):
        ue8m0_mode({"ue8m0": "round"})


def test_ue8m0_reference_clamps_at_e8m0s_smallest_exponent():
    import torch

    from verifier.ops import OPS

    op = OPS["per_token_group_quant"]
    x = torch.zeros(1, 64, dtype=torch.float64)
    x[0, 32] = 2.0 ** -140  # a group far below 2^-127 · 448
    for mode in (True, "floor"):
        s = op.reference({"x": x}, {**op.params, "group_size": 32, "floor": 0.0, "qmax": 448.0, "ue8m0": mode})["scale"]
        assert s.tolist() == [[2.0 ** -127, 2.0 ** -127]], (mode, s)


def test_layer_norm_and_rms_norm_in_a_users_reference():
    """F.layer_norm (weight, no bias) and F.rms_norm (a gated norm, as docs/specs.md suggests) get derived budgets:
    the correct kernels pass, a dropped weight and a gate moved before the norm fail."""
    got = _verdicts("norm_ref_spec.py")
    for name in ("ln-weight-only", "rms-gated"):
        assert got[name].verdict == "pass" and got[name].error is None, (name, got[name].error,
                                                                       [f.message for f in got[name].findings][:3])
    for name in ("ln-weight-only-dropped", "rms-gated-before"):
        assert got[name].verdict == "fail" and any(f.check == "value" for f in got[name].findings), name


INT_BF16_MODULE = '''
import triton
import triton.language as tl


@triton.jit
def _scale(x_ptr, y_ptr, N, BLOCK: tl.constexpr, VIA_BF16: tl.constexpr):
    row = tl.program_id(0)
    o = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + o, mask=o < N, other=0.0).to(tl.float32)
    if VIA_BF16 == 1:  # a small int exponent through bfloat16 (exact in compiled Triton), as OCP MX floor kernels keep it
        k = tl.full([BLOCK], 1, tl.int32).to(tl.bfloat16).to(tl.float32)
    elif VIA_BF16 == 2:  # int 0 through bfloat16: its bits are +0.0 in the interpreter too (a load's other=0)
        k = tl.full([BLOCK], 0, tl.int32).to(tl.bfloat16).to(tl.float32) + 1.0
    else:
        k = tl.full([BLOCK], 1, tl.int32).to(tl.float32)
    tl.store(y_ptr + row * N + o, x * k, mask=o < N)


def _launch(via):
    def launch(inputs, outputs, params, dt):
        x = inputs["x"]
        M, N = x.shape
        _scale[(M,)](x, outputs["y"], N, BLOCK=triton.next_power_of_2(N), VIA_BF16=via)
    return launch


plain, via_bf16, zero_via_bf16 = _launch(0), _launch(1), _launch(2)
'''


@pytest.mark.interpreter
@pytest.mark.parametrize("launcher", ["plain", "via_bf16", "zero_via_bf16"])
def test_int_to_bf16_conversion_is_an_interpreter_gap(tmp_path, launcher):
    """The interpreter turns int32 1 into the bfloat16 bit pattern 1 (9e-41): the kernel's values say nothing, so the
    case is a caveat, never a finding; the same kernel converting through float32, or converting 0 (right in the
    interpreter: Liger's bf16 loads with other=0 stay judged), is judged and passes."""
    import os

    from verifier.launch.triton import triton_mode
    from verifier.spec import Contracts, Op, TritonKernel, dtypes

    if os.environ.get("VERIFIER_TRITON_MODE", "") == "compiled" or triton_mode() != "interpreter":
        pytest.skip("this process runs Triton compiled; the gap concerns the interpreter")
    path = tmp_path / "int_bf16.py"
    path.write_text(INT_BF16_MODULE)
    copy = Op("copy_f32", inputs={"x": "MxN"}, outputs={"y": "MxN"}, reference=lambda i, p: {"y": i["x"] * 1.0})
    k = TritonKernel(name=f"int-bf16-{launcher}", op=copy, module=str(path), launcher=launcher, dtypes=[dtypes("f32")],
                     contracts=Contracts(layout="contiguous"),
                     supports=lambda M, N, d: None if N <= 4096 else "N > 4096")
    report = check_kernel(k, Options(level="quick", device="cpu"))
    assert report.findings == [] and report.error is None, (report.findings, report.error)
    value = report.cells[("f32", "value")]
    if launcher != "via_bf16":
        assert report.verdict == "pass" and not value.skipped
    else:
        assert value.skipped and "int32->bf16 conversion" in value.reason, value


def test_a_bound_that_holds_zero_everywhere_is_not_a_pass():
    """float16 accumulation over 1024 values near 1000: every bound E >= |y| (N·u ~ 1), so zeros would pass; the
    case's note says its values were not judged, and the value cell is not a pass when no input was judged (a note,
    not a warning: a correct kernel's ill-conditioned case is no finding). On N(0, 1) rows of 128 the bound is tight
    and zeros fail."""
    (k,) = load_spec_file(str(DATA / "f16_acc_spec.py"))
    big = check_kernel(k, Options(level="quick", device="cpu", case="mean_gg_std_1000"))
    assert not big.findings, big.findings
    (note,) = [n for n in big.notes if "value not judged" in n]
    assert "case mean_gg_std_1000" in note and "none of its 4096 values was really judged" in note
    assert big.cells[("f16-f16acc", "value")].skipped and "no value was judged" in big.cells[("f16-f16acc", "value")].reason
    small = check_kernel(k, Options(level="quick", device="cpu", case="normal_small"))
    assert small.verdict == "fail" and any(f.check == "value" and f.severity == "error" for f in small.findings)
