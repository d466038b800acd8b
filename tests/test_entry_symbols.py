"""Entries named as C++ is written (issue #23): ``entry="ns::rms<float, 256>"`` resolves to the mangled symbol of
the cubin and the PTX; none matching lists the close candidates, several list them all, and nothing says the
entry must be extern "C"."""
import textwrap

import pytest

from verifier.battery import check_kernel
from verifier.launch.symbols import EntryNotFound, resolve
from verifier.results.options import Options
from verifier.spec import CudaKernel, Launch, dtypes
from verifier.toolchain import nvcc

SYMBOLS = {
    "_ZN2ns3rmsIfLi256EEEvPKfS2_Pfif": "void ns::rms<float, 256>(float const*, float const*, float*, int, float)",
    "_ZN2ns3rmsI6__halfLi256EEEvPKS1_S3_PS1_if":
        "void ns::rms<__half, 256>(__half const*, __half const*, __half*, int, float)",
    "_ZN2ns4warpILj4EfEEvPf": "void ns::warp<4u, float>(float*)",
    "plain_c_kernel": "plain_c_kernel",
    # cu++filt (CUDA 13, as on the H200) writes a bool template argument as a cast: (bool)0, not false
    "_ZN2ns11rms_inplaceIfLi256ELb0EEEvPT_PKS1_iif": "void ns::rms_inplace<float, 256, (bool)0>(float*, float const*, int, int, float)",
    "_ZN2ns11rms_inplaceIfLi256ELb1EEEvPT_PKS1_iif": "void ns::rms_inplace<float, 256, true>(float*, float const*, int, int, float)",
}


@pytest.mark.parametrize("entry, symbol", [
    ("ns::rms<float, 256>", "_ZN2ns3rmsIfLi256EEEvPKfS2_Pfif"),
    ("rms<float,256>", "_ZN2ns3rmsIfLi256EEEvPKfS2_Pfif"),
    ("ns::rms<__half, 256>(__half const*, __half const*, __half*, int, float)", "_ZN2ns3rmsI6__halfLi256EEEvPKS1_S3_PS1_if"),
    ("warp<4, float>", "_ZN2ns4warpILj4EfEEvPf"),  # 4u as written: 4
    ("ns::warp<(unsigned int)4, float>", "_ZN2ns4warpILj4EfEEvPf"),
    ("warp", "_ZN2ns4warpILj4EfEEvPf"),  # the only instantiation of that template
    ("plain_c_kernel", "plain_c_kernel"),
    ("ns::rms_inplace<float, 256, false>", "_ZN2ns11rms_inplaceIfLi256ELb0EEEvPT_PKS1_iif"),
    ("ns::rms_inplace<float, 256, (bool)1>", "_ZN2ns11rms_inplaceIfLi256ELb1EEEvPT_PKS1_iif"),
    ("_ZN2ns4warpILj4EfEEvPf", "_ZN2ns4warpILj4EfEEvPf"),
    # cuda_fp16.h's typedef as a source writes it (lmdeploy's RMSNorm<false, half, float, 512, 8>)
    ("ns::rms<half, 256>", "_ZN2ns3rmsI6__halfLi256EEEvPKS1_S3_PS1_if"),
    ("ns::rms<half, 256>(half const*, half const*, half*, int, float)", "_ZN2ns3rmsI6__halfLi256EEEvPKS1_S3_PS1_if"),
])
def test_cpp_names_resolve_to_the_mangled_symbol(entry, symbol):
    assert resolve(entry, SYMBOLS) == symbol


def test_no_match_lists_close_candidates_and_several_list_every_match():
    with pytest.raises(EntryNotFound) as e:
        resolve("ns::rms<float, 128>", SYMBOLS)
    assert "closest: ns::rms<float, 256>;" in e.value.message and "ns::rms<__half, 256>" in e.value.message
    assert "must" not in str(e.value) and "template arguments" in e.value.fix
    with pytest.raises(EntryNotFound, match="matches 2 functions.*rms<__half, 256>.*rms<float, 256>"):
        resolve("rms", SYMBOLS)


def test_candidates_are_listed_as_the_source_writes_them_whichever_demangler_named_them():
    # cu++filt (CUDA 13, on the H200 where binutils is missing) casts template arguments and names parameters by
    # template parameter; the listing reads as c++filt and the source do, so the same message on every machine
    cu = {"_ZN2ns3rmsIfLi256EEEvPKT_PS1_i": "void ns::rms<float, (int)256>(const T1 *, T1 *, int)",
          "_ZN2ns4warpILj4ELb0ELm8EEEvPf": "void ns::warp<(unsigned int)4, (bool)0, (unsigned long)8>(float *)"}
    with pytest.raises(EntryNotFound) as e:
        resolve("ns::rms<float, 512>", cu)
    assert e.value.detail == "closest: ns::rms<float, 256>", e.value.detail
    with pytest.raises(EntryNotFound) as e:
        resolve("ns::warp<8, true, 8>", cu)
    assert e.value.detail == "closest: ns::warp<4u, false, 8ul>", e.value.detail
    assert resolve("ns::rms<float, 256>", cu) == "_ZN2ns3rmsIfLi256EEEvPKT_PS1_i"  # matching reads both spellings
    assert resolve("ns::warp<4, false, 8>", cu) == "_ZN2ns4warpILj4ELb0ELm8EEEvPf"


SOURCE = r"""
namespace ns {
template <typename T, int BLOCK>
__global__ void rms(const T* x, const T* w, T* y, int n, float eps) {
  __shared__ float s[BLOCK];
  float acc = 0.f;
  for (int i = threadIdx.x; i < n; i += BLOCK) { float v = (float)x[(long long)blockIdx.x * n + i]; acc += v * v; }
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int k = BLOCK / 2; k > 0; k /= 2) { if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k]; __syncthreads(); }
  float r = rsqrtf(s[0] / n + eps);
  for (int i = threadIdx.x; i < n; i += BLOCK)
    y[(long long)blockIdx.x * n + i] = (T)((float)x[(long long)blockIdx.x * n + i] * r * (float)w[i]);
}
template __global__ void rms<float, 256>(const float*, const float*, float*, int, float);
}  // namespace ns
"""

SPEC = '''
from verifier.spec import CudaKernel, Launch, dtypes
KERNELS = [CudaKernel(name="tmpl-rms", op="rmsnorm", source="k.cu", dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch("{entry}", (M,), (256,), ("x", "w", "y", "N", "eps"))])]
'''


def _check(tmp_path, entry):
    from verifier.declare.registry import load_spec_file

    (tmp_path / "k.cu").write_text(SOURCE)
    (tmp_path / "k_spec.py").write_text(SPEC.format(entry=entry))
    spec = load_spec_file(str(tmp_path / "k_spec.py"))[0]
    return check_kernel(spec, Options(level="quick", device="cpu"))


@pytest.mark.skipif(nvcc.nvcc_version() is None, reason="nvcc is not installed")
def test_a_templated_kernel_builds_and_lints_under_its_cpp_name(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIFIER_CACHE_DIR", str(tmp_path / "cache"))
    report = _check(tmp_path, "ns::rms<float, 256>")
    assert not report.findings and report.error is None, report.findings
    assert {report.cells[("f32", c)].status for c in ("build", "resources", "static")} == {"pass"}
    assert any("_ZN2ns3rmsIfLi256E" in str(n) for n in report.notes)  # its resources, by symbol
    (tmp_path / "bad").mkdir()
    bad = _check(tmp_path / "bad", "ns::rms<float, 512>")
    found = [f for f in bad.findings if f.check == "build"]  # one per arch built
    assert found and all("entry ns::rms<float, 512> used by the spec's launches is not in the cubin" in f.message
                         and "closest: ns::rms<float, 256>" in f.message and "must" not in f.message
                         for f in found), found


INC_SPEC = '''
from verifier.spec import CudaKernel, Launch, dtypes
KERNELS = [CudaKernel(name="inc-rms", op="rmsnorm", source="src/k.cu", include_dirs=["vendor/include"],
                      dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch("ns::rms<float, 256>", (M,), (256,),
                                                           ("x", "w", "y", "N", "eps"))])]
'''


@pytest.mark.skipif(nvcc.nvcc_version() is None, reason="nvcc is not installed")
def test_include_dirs_are_relative_to_the_spec_file_and_their_headers_key_the_build(tmp_path, monkeypatch):
    """CudaKernel(include_dirs=...) resolves like source (beside the spec file); an edit to a header found there
    rebuilds: a syntax error in it is a build finding, not a cached pass."""
    from verifier.declare.registry import load_spec_file

    monkeypatch.setenv("VERIFIER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path.parent)  # not the spec's folder: relative paths must not depend on the cwd
    (tmp_path / "src").mkdir()
    (tmp_path / "vendor" / "include").mkdir(parents=True)
    header = tmp_path / "vendor" / "include" / "vendor_rms.cuh"
    header.write_text(SOURCE)
    (tmp_path / "src" / "k.cu").write_text("#include <vendor_rms.cuh>\n")
    (tmp_path / "inc_spec.py").write_text(INC_SPEC)
    spec = load_spec_file(str(tmp_path / "inc_spec.py"))[0]
    assert spec.include_paths() == (tmp_path / "vendor" / "include",)
    report = check_kernel(spec, Options(level="quick", device="cpu"))
    assert report.cells[("f32", "build")].status == "pass" and not report.findings, report.findings
    header.write_text(SOURCE.replace("float acc = 0.f;", "float acc = 0.f"))  # a syntax error in the header
    broken = check_kernel(spec, Options(level="quick", device="cpu"))
    assert [f.check for f in broken.findings] == ["build"] and "vendor_rms.cuh" in broken.findings[0].message


# A kernel whose return type is an enable_if on a template argument (vLLM's fused_add_rms_norm_kernel<T, width>):
# the demangled return type holds comparisons inside parentheses, `((8)>(0))`, which once read as the end of the
# template argument list, so <T, 8> matched nothing while <T, 0> resolved.
ENABLE_IF = {
    "_ZN2ns1fI6__halfLi8EEENSt9enable_ifIXgtT0_Li0EEvE4typeEPS2_": "std::enable_if<(((8)>(0)))&&ns::conv<__half>::ok, "
                                                                  "void>::type ns::f<__half, 8>(__half*)",
    "_ZN2ns1fI6__halfLi0EEENSt9enable_ifIXeqT0_Li0EEvE4typeEPS2_": "std::enable_if<((0)==(0))||(!ns::conv<__half>::ok), "
                                                                  "void>::type ns::f<__half, 0>(__half*)",
}


@pytest.mark.parametrize("entry, width", [("ns::f<__half, 8>", "Li8"), ("f<__half, 0>", "Li0"),
                                          ("ns::f<__half, 8>(__half*)", "Li8")])
def test_a_return_type_with_comparisons_in_its_template_arguments_is_dropped(entry, width):
    assert width in resolve(entry, ENABLE_IF)


def test_cstdint_names_resolve_to_the_types_the_demangler_writes():
    # TensorRT-LLM's generalRmsNorm<float, int8_t, false> demangles as <float, signed char, false>
    symbols = {"_ZN1k1gIfaLb0EEEvPKT_": "void k::g<float, signed char, false>(float const*)",
               "_ZN1k1gIfhLb0EEEvPKT_": "void k::g<float, unsigned char, false>(float const*)",
               "_ZN1k1hIlEEvPT_": "void k::h<long>(long*)"}
    assert resolve("k::g<float, int8_t, false>", symbols) == "_ZN1k1gIfaLb0EEEvPKT_"
    assert resolve("g<float, std::uint8_t, false>", symbols) == "_ZN1k1gIfhLb0EEEvPKT_"
    assert resolve("k::h<int64_t>", symbols) == "_ZN1k1hIlEEvPT_"


def test_a_cubin_without_kernels_says_a_template_needs_an_instantiation():
    # Apex's scaled_masked_softmax.h included alone: its kernels are templates no launch instantiates; the message
    # must not claim the source has no __global__ function
    with pytest.raises(EntryNotFound) as e:
        resolve("scaled_softmax_warp_forward<__half, __half, float, 5>", {})
    assert "closest: (none: the cubin holds no kernel; a __global__ template is compiled only where it is " \
           "instantiated)" in str(e.value)


# a functor template passed as a template template argument, demangled with its namespace (ONNX Runtime's
# softmax_block_forward<8, __half, float, __half, SoftMaxForwardEpilogue>, written so inside its namespace)
EPILOGUES = {
    "_ZN3ort4cuda5blockILi8E6__halfNS0_3EpiEEEvPT0_": "void ort::cuda::block<8, __half, ort::cuda::Epi>(__half*)",
    "_ZN3ort4cuda5blockILi8E6__halfNS0_6LogEpiEEEvPT0_": "void ort::cuda::block<8, __half, ort::cuda::LogEpi>(__half*)",
    "_ZN1a1kINS_1EEEEvv": "void a::k<a::E>()",
    "_ZN1a1kIN1b1EEEEvv": "void a::k<b::E>()",
}


@pytest.mark.parametrize("entry, symbol", [
    ("block<8, __half, Epi>", "_ZN3ort4cuda5blockILi8E6__halfNS0_3EpiEEEvPT0_"),
    ("ort::cuda::block<8, half, LogEpi>", "_ZN3ort4cuda5blockILi8E6__halfNS0_6LogEpiEEEvPT0_"),
    ("block<8, __half, ort::cuda::Epi>", "_ZN3ort4cuda5blockILi8E6__halfNS0_3EpiEEEvPT0_"),
    ("k<b::E>", "_ZN1a1kIN1b1EEEEvv"),
])
def test_names_in_template_arguments_may_leave_out_their_namespace(entry, symbol):
    assert resolve(entry, EPILOGUES) == symbol


def test_an_unqualified_template_argument_naming_two_types_lists_both():
    with pytest.raises(EntryNotFound, match=r"matches 2 functions") as e:
        resolve("k<E>", EPILOGUES)
    assert "a::k<a::E>" in e.value.message and "a::k<b::E>" in e.value.message
