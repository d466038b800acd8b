"""per_token_group_quant (verifier/ops/group_quant.py): one scale per group of group_size elements of a row, declared
through the shape 'MxN/group_size'; correct group quantizers pass, and a row scale or a shifted group index fails."""
from pathlib import Path

import numpy as np
import pytest

from verifier.errors import SpecError
from verifier.ops import OPS
from verifier.ops.model import Op, Tensor
from verifier.ops.tensors import parse_shape

SPEC = Path(__file__).parent / "data" / "group_quant" / "group_quant_spec.py"


def test_a_dim_may_be_n_over_an_int_param():
    assert parse_shape("MxN/group_size", "t") == ("M", "N/group_size")
    op = OPS["per_token_group_quant"]
    assert op.shape_of("scale", 3, 512, {"group_size": 64}) == (3, 8)
    assert op.shape_of("scale", 3, 512) == (3, 4)
    with pytest.raises(SpecError, match="N/"):
        Op("bad_groups", inputs={"x": "MxN"}, outputs={"s": Tensor("MxN/g", dtype="float32")},
           reference=lambda i, p: {"s": i["x"][:, :1]})


def test_rows_not_a_multiple_of_the_group_are_outside_the_op():
    op = OPS["per_token_group_quant"]
    assert op.supports(512, {**op.params}) is None
    assert "multiple" in op.supports(200, {**op.params})


def test_a_scale_per_group_judges_y_under_each_groups_own_scale():
    """The kernel's scale one ULP off the reference on one group: y there is judged under the kernel's scale."""
    from verifier.judge.quantized import _per_element

    ok = np.array([[True, False], [False, True]])
    got = _per_element(ok, np.zeros((2, 6)))
    assert got.tolist() == [[True] * 3 + [False] * 3, [False] * 3 + [True] * 3]
    assert _per_element(np.array([True, False]), np.zeros((2, 6))).shape == (2, 1)  # per row


def test_group_quantizers():
    from verifier.battery import check_kernel
    from verifier.declare.registry import load_spec_file
    from verifier.results.options import Options

    got = {k.name: check_kernel(k, Options(level="quick", device="cpu")) for k in load_spec_file(str(SPEC))
           if k.name != "ptgq-packed-scales"}
    for name in ("ptgq-reciprocal-colmajor", "ptgq-divide-g64-int8", "ptgq-ue8m0"):
        assert got[name].verdict == "pass", (name, [f.message for f in got[name].findings][:3])
    for name in ("ptgq-row-scale", "ptgq-shifted-scale", "ptgq-ue8m0-rounded-down"):
        assert got[name].verdict == "fail" and any("scale" in f.message or "quantized" in f.message
                                                   for f in got[name].findings), name


def test_ue8m0_scale_bound_allows_the_other_power_of_two_only_at_a_power_of_two():
    """A raw scale (amax / qmax) within its bound of a power of two may round up to either neighbour; elsewhere the
    power of two is exact (E = 0)."""
    from verifier.numerics.errmodel import INTRINSICS, Ctx
    from verifier.ops.group_quant import k_group_scale

    x = np.zeros((2, 128))
    x[0, 0] = 448.0 * 2.0 ** -3  # raw scale exactly 2^-3
    x[1, 0] = 448.0 * 0.3        # raw 0.3: ceil -> 0.5, far from a power of two
    s = np.array([[2.0 ** -3], [0.5]])
    p = {"group_size": 128, "floor": 1e-10, "qmax": 448.0, "ue8m0": True}
    c = Ctx(u=2.0 ** -24, eta=2.0 ** -149, c_in=0.0, intr=INTRINSICS[("float32", "triton_approx")], online=False, N=128)
    E = k_group_scale(x, s, p, c, {"x": x})
    assert E[0, 0] == s[0, 0] / 2 and E[1, 0] == 0.0  # s/2 reaches 2s and s/2 in the budget (see k_group_scale)


def test_scales_written_past_their_row_name_the_scale_rows_length():
    """Rows N + 64 apart (the strided case) pad the [M, N/G] scale too: a kernel writing its scales row after row
    writes into the gaps, reported against the scale's own row length (1024 / 128 = 8), not N."""
    from verifier.battery import check_kernel
    from verifier.declare.registry import load_spec_file
    from verifier.results.options import Options

    k = next(k for k in load_spec_file(str(SPEC)) if k.name == "ptgq-packed-scales")
    got = check_kernel(k, Options(level="ci", device="cpu", case="strided_rows_pad64"))
    msgs = [f.message for f in got.findings if f.check == "out-of-range-write"]
    assert msgs and "output 'scale'" in msgs[0] and "past its row's 8 elements" in msgs[0], msgs
