"""verifier lint's offset-wrap check (issue #36): a 32-bit row offset (row x N or row x stride formed in 32 bits,
widened after the product) or a 64-bit stride narrowed to int is caught on the CPU, judged at the large shapes the
spec's supports() accepts; the 64-bit forms and products that stay small are clean (tests/data/lint/offset_cases.cu,
and the rmsnorm twins of kernels/defects/cuda)."""
from pathlib import Path

import pytest

from verifier.declare.args import Stride, Struct
from verifier.lint.step import lint_spec
from verifier.results.kernel import KernelReport
from verifier.spec import CudaKernel, Launch, Scalar, dtypes
from verifier.toolchain.nvcc import nvcc_version

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "tests" / "data" / "lint" / "offset_cases.cu"
ARCHES = ("sm_90",)
pytestmark = pytest.mark.skipif(nvcc_version() is None, reason="verifier lint compiles to PTX with nvcc, not found")
STRIDED = ("int_stride_bad", "stride_ok")
ROWS_PER_BLOCK = {"small_products_ok": 8, "warp_rows_bad": 8}
SPLIT = ("split_columns_ok", "masked_index_ok")  # grid.y blocks per row


def _spec(entry, supports=None):
    args = ("x", "y", "M", "N") + ((Stride("x", "int64"),) if entry in STRIDED else ())
    if entry == "struct_rows_bad":
        args = (Struct([("ptr", "x"), ("ptr", "y"), ("int32", "N")]),)
    grid_stride = entry.startswith("grid_stride")
    per = ROWS_PER_BLOCK.get(entry, 1)

    def launches(M, N, dt, params):
        grid = min(M, 1024) if grid_stride else -(-M // per)
        if entry == "few_rows_int_offset" and M > 16:  # many rows go to the 64-bit kernel
            return [Launch(entry="int_offset_ok", grid=(M,), block=(256,), args=args)]
        return [Launch(entry=entry, grid=(grid, 4 if entry in SPLIT else 1), block=(256,), args=args)]

    kw = {"supports": supports} if supports else {}
    return CudaKernel(name=entry.replace("_", "-"), op="reduce_sum", source=str(SRC), launches=launches,
                      dtypes=[dtypes("f32")], **kw)


def _lint(spec) -> KernelReport:
    report = KernelReport(spec=spec, device="cpu")
    lint_spec(spec, report, list(spec.dtypes), ARCHES)
    return report


def _wraps(report, severity="error") -> list:
    return [f for f in report.findings if f.message.startswith("offset-wrap:") and f.severity == severity]


@pytest.mark.parametrize("entry, product, at, wrap, case", [
    ("int_offset_bad", "`mul.lo.s32` of blockIdx.x and N", "offset_cases.cu:21", "2^31 units of 4 bytes (8 GiB)",
     "large_index_2pow31 (131136x16384"),
    ("unsigned_offset_bad", "`mul.lo.s32` of blockIdx.x and N", "offset_cases.cu:27",
     "2^32 units of 4 bytes (16 GiB)", "large_index_2pow32 (262208x16384"),
    ("grid_stride_bad", "of the loop counter", "offset_cases.cu:41", "2^31 units of 4 bytes",
     "large_index_2pow31 (131136x16384"),
    # ggml reduce_rows_f32: the column counter has no bound the check reads (once a warning); the product alone wraps
    ("unrolled_counter_bad", "`mul.lo.s32` of blockIdx.x and N", "offset_cases.cu:130",
     "2^32 units of 4 bytes (16 GiB)", "large_index_2pow32 (262208x16384"),
    # warpSize is PTX's WARP_SZ, once "a value the check does not model": a warning
    ("warp_rows_bad", "and N", "offset_cases.cu:144", "2^31 units of 4 bytes", "large_index_2pow31"),
])
def test_a_32_bit_row_offset_is_an_error(entry, product, at, wrap, case):
    r = _lint(_spec(entry))
    errors = _wraps(r)
    assert errors and r.verdict == "fail", [f.message for f in r.findings]
    head, where = errors[0].message.splitlines()[:2]
    assert product in head and f"wraps at {wrap}" in head and f"at {case}" in head, head
    assert at in where, where
    assert "(int64_t)row * stride" in head


def test_a_row_length_read_from_a_struct_argument_is_bounded_by_its_member():
    # the struct's parameter name was once read as '8' (its `.align 8`): its members had no value, a warning
    (f,) = _wraps(_lint(_spec("struct_rows_bad")))
    head = f.message.splitlines()[0]
    assert "of blockIdx.x and Struct (its member at byte 16)" in head and "at large_index_2pow32 (262208x16384" in head


def test_a_narrowed_64_bit_stride_is_an_error():
    r = _lint(_spec("int_stride_bad"))
    (f,) = _wraps(r)
    head = f.message.splitlines()[0]
    assert "`x.stride`" in head and "cut to its low 32 bits" in head and "at row_stride_2pow31 (4x" in head, head
    assert "it reaches 2,147,483,712" in head


@pytest.mark.parametrize("entry", ["int_offset_ok", "size_t_offset_ok", "stride_ok", "grid_stride_ok",
                                   "small_products_ok", "split_columns_ok", "masked_index_ok",
                                   "few_rows_int_offset"])
def test_64_bit_offsets_and_small_products_are_clean(entry):
    # split_columns_ok (cuda-row-amax-split's loop), masked_index_ok and few_rows_int_offset were false warnings
    r = _lint(_spec(entry))
    assert not r.findings, [f.message for f in r.findings]


def test_a_spec_that_refuses_the_large_shapes_makes_it_info():
    def small(M, N, dt):
        return None if M * N < 2 ** 31 else f"M*N={M * N} >= 2^31: 32-bit row offsets"

    r = _lint(_spec("int_offset_bad", supports=small))
    assert not _wraps(r) and r.verdict == "pass"
    (f,) = _wraps(r, "info")
    assert "not a defect here: supports() refuses the large shapes" in f.message and "32-bit row offsets" in f.message


@pytest.mark.parametrize("name", ["defect-cuda-rmsnorm-int32-row-offset", "defect-cuda-rmsnorm-unsigned-row-offset",
                                  "defect-cuda-rmsnorm-int32-row-stride"])
def test_the_rmsnorm_offset_twins_are_caught_on_the_cpu(name):
    from verifier.declare.registry import load_spec_file

    specs = {s.name: s for s in load_spec_file(str(ROOT / "kernels/defects/cuda/defects.py"))}
    assert _wraps(_lint(specs[name]))
    assert not _lint(specs["cuda-rmsnorm-rows"]).findings


def test_each_build_of_a_kernel_with_per_dtype_defines_reports_its_findings():
    # llm.c's layernorm_forward_kernel3 (floatX from -DENABLE_FP16 ...): a finding in the first build's group was
    # an internal error in the second ('str' object is not callable: a local variable shadowed an import)
    base = _spec("int_offset_bad")
    spec = CudaKernel(name="per-dtype-defines", op="reduce_sum", source=str(SRC), launches=base.launches,
                      dtypes=[dtypes("f32"), dtypes("f16")], defines=lambda dt: {f"X_{dt.tag.upper()}": True})
    r = _lint(spec)
    assert sorted(f.dtype for f in _wraps(r)) == ["f16", "f32"], [f.message for f in r.findings]


def test_launches_that_cannot_be_made_at_an_accepted_large_shape_are_not_read_as_refused():
    # ggml's group_norm_f32 takes `int ne_elements`: a spec passing Scalar("int32", M * N) cannot launch past 2^31
    # elements; the lint judged nothing there and said nothing (or "supports() refuses the large shapes")
    def launches(M, N, dt, params):
        return [Launch(entry="int_offset_bad", grid=(M,), block=(256,), args=("x", "y", Scalar("int32", M * N), "N"))]

    spec = CudaKernel(name="int-total", op="reduce_sum", source=str(SRC), launches=launches, dtypes=[dtypes("f32")])
    r = _lint(spec)
    (f,) = _wraps(r, "warning")
    head = f.message.splitlines()[0]
    assert "the spec's launches cannot be made there (large_index_2pow31 at" in head, head
    assert "out of range for int32" in head and "refuses" not in head.split("cannot be made")[0], head


def test_an_unsigned_remainder_is_bounded_by_its_divisor():
    # vLLM's merge_attn_states_kernel: `prefix_lse[head_idx * num_tokens + token_idx]`, head_idx = i % num_heads
    # formed as i - (i / heads) * heads: the difference's two ends taken apart made it [-i, i], a false error
    def launches(M, N, dt, params):
        return [Launch(entry="modulo_index_ok", grid=(M,), block=(32,),
                       args=("x", "y", Scalar("uint32", M), Scalar("uint32", 1), "N"))]

    r = _lint(CudaKernel(name="modulo", op="reduce_sum", source=str(SRC), launches=launches, dtypes=[dtypes("f32")]))
    assert not r.findings, [f.message for f in r.findings]


def test_a_numeric_scalar_is_named_by_its_position_not_one_launch_s_value():
    # the label was the first large launch's value ('Scalar(uint32, 32)' for vLLM's head_size in a finding at N=16384)
    def launches(M, N, dt, params):
        return [Launch(entry="int_offset_bad", grid=(M,), block=(256,), args=("x", "y", "M", Scalar("int32", N)))]

    (f,) = _wraps(_lint(CudaKernel(name="n-scalar", op="reduce_sum", source=str(SRC), launches=launches,
                                   dtypes=[dtypes("f32")])))
    head = f.message.splitlines()[0]
    assert "of blockIdx.x and argument 3 (int32)" in head and "Scalar(" not in head, head
