"""The spec helpers of verifier.spec that keep spec files short: SizeClasses (the class a row takes, its entry,
the refusal past the last class, one row per class for the build step), Tile, vector_width, whole_vectors,
max_row, FLOAT_IO, supports lists and min_capability; and the build step finding a class whose entry the .cu
lacks."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from verifier.declare import device
from verifier.inputs.cases import PROBE_N
from verifier.spec import (FLOAT_IO, CudaKernel, Launch, SizeClasses, SpecError, Tile, dtypes, grid_limit, max_row,
                           vector_width, whole_vectors)
from verifier.toolchain import nvcc

ROOT = Path(__file__).resolve().parents[1]
F32, F16, BF16 = dtypes("f32"), dtypes("f16"), dtypes("bf16")
needs_nvcc = pytest.mark.skipif(nvcc.nvcc_version() is None, reason="nvcc is not installed")


def _kernel(**kw):
    base = dict(name="k", op="softmax", source="k.cu", dtypes=[F32],
                launches=lambda M, N, dt, p: [Launch("k", grid=(M,), block=(32,), args=("x", "y", "M", "N"))])
    return CudaKernel(**{**base, **kw})


# ---- SizeClasses ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("N, cls", [(1, 1024), (1024, 1024), (1025, 2048), (2048, 2048), (2049, 4096), (4096, 4096)])
def test_the_smallest_class_holding_n_is_chosen(N, cls):
    s = SizeClasses((1024, 2048, 4096), entry="softmax_s3_n{c}_{tag}", instead="cuda-softmax-s2")
    assert s.of(N, BF16) == cls and s.entry(N, BF16) == f"softmax_s3_n{cls}_bf16"
    assert s.supports(7, N, BF16) is None


def test_elements_per_thread_classes_hold_class_times_threads():
    s = SizeClasses((1, 4, 8), threads=256, entry="rms_{tag}_e{c}", instead="cuda-rmsnorm-n2")
    assert [s.of(n, F32) for n in (1, 256, 257, 1024, 1025, 2048)] == [1, 1, 4, 4, 8, 8]
    assert s.lengths(F32) == (256, 1024, 2048) and s.limit(F32) == 2048
    assert s.supports(1, 2049, F32) == ("N=2049 exceeds the register-resident limit 2048 (8 elements per thread x "
                                        "256 threads); use cuda-rmsnorm-n2")


def test_per_dtype_tables_pick_by_the_input_dtype_and_name_it_in_the_refusal():
    s = SizeClasses({"f32": (4, 8), "bf16": (8, 16), "float16": (8,)}, threads=256, entry="n4_{tag}_e{c}", instead="n2")
    assert s.entry(1000, F32) == "n4_f32_e4" and s.entry(1000, BF16) == "n4_bf16_e8"
    assert s.lengths(F16) == (2048,) and s.supports(1, 2048, F16) is None
    assert "limit 2048 for float16" in s.supports(1, 2049, F16)
    with pytest.raises(SpecError, match="no classes for float8_e4m3fn") as e:
        s.of(8, dtypes("e4m3", "f16", "f16"))
    assert "add a 'e4m3' entry" in e.value.fix


def test_tiles_hold_threads_times_vectors_times_the_vector_width_and_name_their_entry():
    s = SizeClasses(((32, 1), (64, 8, 3), (512, 8)), entry="softmax_s5_{c}_{tag}", instead="cuda-softmax-split")
    assert s.classes(F32)[1] == Tile(64, 8, 3)
    assert s.lengths(F32) == (128, 2048, 16384) and s.lengths(BF16) == (256, 4096, 32768)
    assert s.entry(129, F32) == "softmax_s5_t64_v8_m3_f32" and s.entry(256, BF16) == "softmax_s5_t32_v1_bf16"
    assert s.entry(16384, F32) == "softmax_s5_t512_v8_f32"
    assert s.supports(1, 16385, F32) == ("N=16385 exceeds the register-resident limit 16384 (512 threads x 8 vectors "
                                         "of 4 elements); use cuda-softmax-split")


def test_a_launch_past_the_last_class_is_a_spec_error_never_a_partial_row():
    s = SizeClasses((1024, 2048), entry="k_n{c}_{tag}", instead="k-any")
    with pytest.raises(SpecError, match="N=2049 exceeds the register-resident limit 2048; use k-any") as e:
        s.entry(2049, F32)
    assert "sizes=" in e.value.fix


@pytest.mark.parametrize("args, kw, field, fix", [
    ((), {"classes": ()}, "classes", "smallest first"),
    (((2048, 1024),), {}, "class 1024 holds no more than the class 2048", "smallest first"),
    (((1024, 1024),), {}, "holds no more", "each larger"),
    (((1024, "2048"),), {}, "class '2048'", "SizeClasses((1024, 2048, 4096)"),
    (((1024, 0),), {}, "class 0", "e.g."),
    (((1024, True),), {}, "class True", "e.g."),
    (((1, 2),), {"threads": 0}, "threads=0", "block size"),
    ((((32, 1), (64, 2)),), {"threads": 256}, "threads=256 with (threads, vectors) classes", "leave threads out"),
    ((((32, 1), 4096),), {}, "mixes int and (threads, vectors)", "the same way"),
    (({"f33": (1, 2)},), {}, "unknown dtype 'f33'", "key the classes by dtype"),
    (((1024, 2048),), {"entry": "k_n{cls}_{tag}"}, "names ['cls']", "{c}: the class"),
    (((1024, 2048),), {"entry": "k_{tag}"}, "does not name the class", "put {c}"),
])
def test_bad_size_classes_are_spec_errors_naming_the_field_and_the_fix(args, kw, field, fix):
    with pytest.raises(SpecError) as e:
        SizeClasses(*args, **kw)
    assert field in e.value.message and fix in e.value.fix


def test_entry_without_a_template_says_how_to_declare_it():
    with pytest.raises(SpecError, match="no entry template") as e:
        SizeClasses((1024,)).entry(1, F32)
    assert "entry=" in e.value.fix


# ---- vectors, row limits, dtypes -------------------------------------------------------------------------------
def test_vector_width_is_the_input_dtype_elements_in_16_bytes():
    assert [vector_width(d) for d in FLOAT_IO] == [4, 8, 8]
    assert vector_width(dtypes("f16", "f32")) == 8 and vector_width("int8") == 16 and vector_width("f64") == 2
    assert [d.tag for d in FLOAT_IO] == ["f32", "f16", "bf16"] and all(d.acc == "float32" for d in FLOAT_IO)


def test_whole_vectors_refuses_a_partial_vector_and_names_the_alternative():
    s = whole_vectors("cuda-softmax-s3")
    assert s(1, 1024, F32) is None and s(1, 1028, F32) is None and s(1, 1028, BF16) is not None
    assert s(1, 1002, F16) == "N=1002 is not a multiple of the 8-element 16-byte vector of float16; use cuda-softmax-s3"


def test_max_row_refuses_past_its_limit():
    s = max_row(4096, "k-tiled", what="the one-block limit")
    assert s(1, 4096, F32) is None and s(1, 4097, F32) == "N=4097 exceeds the one-block limit 4096; use k-tiled"
    assert max_row(10)(1, 11, F32) == "N=11 exceeds this kernel's limit 10"
    with pytest.raises(SpecError, match="limit 0 is not a positive int"):
        max_row(0)


def test_grid_limit_refuses_rows_whose_blocks_overflow_the_grid():
    per_chunk = grid_limit(lambda N, dt: -(-N // 8192))
    assert per_chunk(2**28 - 1, 65536, F32) is None and per_chunk(2**27, 65536, F32) is None
    assert per_chunk(2**28 - 1, 65537, F32) == "M=268435455 rows of 9 blocks exceed the grid's 2^31 - 1 blocks"
    assert grid_limit(8)(2**28 - 1, 1, F32) is None  # 2^28 rows x 8 blocks = 2^31: one past the limit
    assert grid_limit(8)(2**28, 1, F32).startswith("M=268435456 rows of 8 blocks")
    with pytest.raises(SpecError, match="blocks_per_row 0") as e:
        grid_limit(0)
    assert "grid_limit(8)" in e.value.fix


# ---- the kernel fields -----------------------------------------------------------------------------------------
def test_sizes_refuse_past_the_last_class_after_the_kernels_own_supports():
    k = _kernel(dtypes=list(FLOAT_IO), supports=whole_vectors("k-scalar"),
                sizes=SizeClasses((1024, 2048), entry="k_n{c}_{tag}", instead="k-any"))
    assert k.check_supported(1, 2048, BF16) is None
    assert "use k-scalar" in k.check_supported(1, 2052, BF16)  # the spec's own reason comes first
    assert "limit 2048; use k-any" in k.check_supported(1, 2056, BF16)
    assert k.class_lengths(F32) == (1024, 2048) and _kernel().class_lengths(F32) == ()


def test_a_supports_list_gives_the_first_reason_and_names_a_bad_item():
    k = _kernel(supports=[max_row(100, "a"), lambda M, N, dt: "odd rows" if M % 2 else None])
    assert k.check_supported(2, 100, F32) is None and k.check_supported(2, 101, F32).endswith("use a")
    assert k.check_supported(3, 100, F32) == "odd rows" and k.supports(3, 101, F32).endswith("use a")
    bad = _kernel(supports=[max_row(100), lambda M, N, dt: False])
    with pytest.raises(SpecError, match="supports function .*<lambda> returned False"):
        bad.check_supported(1, 1, F32)
    with pytest.raises(SpecError, match="field 'supports' must be callable") as e:
        _kernel(supports=[max_row(100), 100])
    assert "each item" in e.value.fix


def test_sizes_must_be_a_size_classes_covering_every_declared_dtype():
    with pytest.raises(SpecError, match="field 'sizes' must be a SizeClasses"):
        _kernel(sizes=(1024, 2048))
    with pytest.raises(SpecError, match="field 'sizes': SizeClasses has no classes for bfloat16"):
        _kernel(dtypes=[F32, BF16], sizes=SizeClasses({"f32": (1024,)}, entry="k_{tag}"))


def test_min_capability_refuses_an_older_gpu_and_nothing_without_one(monkeypatch):
    k = _kernel(min_capability=(9, 0), supports=max_row(100))
    monkeypatch.setattr(device.probe, "capability", lambda: (8, 0))
    assert k.check_supported(1, 8, F32) == "needs compute capability 9.0 (min_capability); this GPU is 8.0"
    assert k.check_supported(1, 101, F32).startswith("N=101")  # the spec's reasons first
    monkeypatch.setattr(device.probe, "capability", lambda: (9, 0))
    assert k.check_supported(1, 8, F32) is None
    monkeypatch.setattr(device.probe, "capability", lambda: None)  # no GPU: a CPU run only builds it
    assert k.check_supported(1, 8, F32) is None
    for bad in ((9,), "9.0", (9, "0"), 9):
        with pytest.raises(SpecError, match="field 'min_capability'") as e:
            _kernel(min_capability=bad)
        assert "min_capability=(9, 0)" in e.value.fix


def test_min_capability_asks_the_one_gpu_probe():
    from verifier.gpu import probe

    assert device.probe is probe  # no second way to ask the GPU


def test_old_spellings_still_read():
    """tolerance={'online': True} is online=True; a 'tmp:name:expr:dtype' argument is a Workspace."""
    from verifier.declare.kernels import workspace_of

    old = CudaKernel(name="k", op="cross_entropy", source="k.cu", dtypes=[F32], tolerance={"online": True, "ulp": 2},
                     launches=lambda M, N, dt, p: [Launch("k", (M,), (32,), ("x", "tmp:ms:2*M:float32", "M", "N"))])
    assert old.online and old.tolerance == {"ulp": 2}
    (launch,) = old.launches(3, 8, F32, {})
    ws = workspace_of(launch.args[1])
    assert (ws.name, ws.size(3, 8), ws.dtype) == ("ms", 6, "float32")


def test_bundled_spec_files_import_only_verifier_spec():
    files = [*ROOT.glob("kernels/**/*spec.py"), *ROOT.glob("kernels/defects/*/defects.py"), ROOT / "benchmarks/liger_spec.py"]
    assert len(files) >= 12
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            bad = [n for n in names if n.split(".")[0] == "verifier" and n != "verifier.spec"]
            assert not bad, f"{f.relative_to(ROOT)}:{node.lineno} imports {bad}: spec files import only verifier.spec"


# ---- the build step visits every class ------------------------------------------------------------------------
_CU = """extern "C" __global__ void k_n{c}_f32(const float* x, float* y, int M, int N) {{
  if (blockIdx.x < M && threadIdx.x < N) y[blockIdx.x * N + threadIdx.x] = x[blockIdx.x * N + threadIdx.x];
}}
"""


@needs_nvcc
def test_the_build_step_reports_a_class_whose_entry_the_source_lacks(tmp_path, monkeypatch):
    from verifier.battery.build import check_build
    from verifier.results.options import Options

    monkeypatch.setenv("VERIFIER_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "k.cu").write_text("".join(_CU.format(c=c) for c in (1024, 1100, 2048)))
    sizes = SizeClasses((1024, 1100, 1200, 2048), entry="k_n{c}_{tag}", instead="k-any")  # 1200: not in the .cu
    # No probe length picks class 1200: only the visit of every class finds it missing.
    assert 1200 not in {sizes.of(n, F32) for n in PROBE_N if n <= 2048}
    def kernel(sizes):
        return _kernel(source=str(tmp_path / "k.cu"), sizes=sizes,
                       launches=lambda M, N, dt, p: [Launch(sizes.entry(N, dt), (M,), (256,), ("x", "y", "M", "N"))])

    def build_findings(k):
        return [f for f in check_build(k, Options(budget="quick", device="cpu"), k.dtypes).findings if f.check == "build"]

    found = build_findings(kernel(sizes))
    assert found and all("entry k_n1200_f32 used by the spec's launches is not in the cubin" in f.message for f in found)
    assert not build_findings(kernel(SizeClasses((1024, 1100, 2048), entry="k_n{c}_{tag}")))


def test_docs_specs_documents_every_public_name_and_field():
    """docs/specs.md is the user's reference: every name of verifier.spec and every field of its classes is in it."""
    import dataclasses

    import verifier.spec as public

    doc = (ROOT / "docs" / "specs.md").read_text()
    missing = [n for n in public.__all__ if f"`{n}" not in doc]
    for cls in (public.CudaKernel, public.TritonKernel, public.CallableKernel, public.Launch, public.Scalar,
                public.Workspace, public.Expectations, public.Contracts, public.Dtypes, public.Tile, public.Op,
                public.Tensor, public.Invariant, public.OpCase):
        missing += [f"{cls.__name__}.{f.name}" for f in dataclasses.fields(cls)
                    if f.init and f.name != "origin" and f.name not in doc]
    assert not missing, f"docs/specs.md does not document {missing}"
