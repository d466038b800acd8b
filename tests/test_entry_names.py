"""Entries named as C++ source names them (issue #34): kernels in an unnamed namespace (``row_sum<float>`` finds
``void (anonymous namespace)::row_sum<float>(float const*, float*, int)``), in nested namespaces, with type and int
template arguments, and in an unnamed namespace inside a named one, resolve in the PTX and the cubin the local nvcc
builds from tests/data/entry_names/row_sum.cu, in the build and static steps, in ``verifier lint`` and in the
sanitizer's kernel filter. (tests/test_entry_names_gpu.py launches them on a GPU.)"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from verifier.toolchain import nvcc

DATA = Path(__file__).resolve().parent / "data" / "entry_names"
SPEC = DATA / "row_sum_spec.py"
pytestmark = pytest.mark.skipif(nvcc.nvcc_version() is None, reason="nvcc is not installed")

# entry as written -> the demangled symbol it must find
NAMES = {
    "row_sum<float>": "void (anonymous namespace)::row_sum<float>(float const*, float*, int)",
    "row_sum<float>(float const*, float*, int)": "void (anonymous namespace)::row_sum<float>(float const*, float*, int)",
    "(anonymous namespace)::row_sum<float>": "void (anonymous namespace)::row_sum<float>(float const*, float*, int)",
    "outer::inner::row_sum<float, 128>": "void outer::inner::row_sum<float, 128>(float const*, float*, int)",
    "inner::row_sum<float,128>": "void outer::inner::row_sum<float, 128>(float const*, float*, int)",
    "lib::row_sum<float, 64>": "void lib::(anonymous namespace)::row_sum<float, 64u>(float const*, float*, int)",
    "lib::row_sum<float, 32u>": "void lib::(anonymous namespace)::row_sum<float, 32u>(float const*, float*, int)",
    "row_sum<float, (unsigned)32>": "void lib::(anonymous namespace)::row_sum<float, 32u>(float const*, float*, int)",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    import os

    cache = tmp_path_factory.mktemp("cache")
    old = os.environ.get("VERIFIER_CACHE_DIR")
    os.environ["VERIFIER_CACHE_DIR"] = str(cache)
    try:
        yield nvcc.compile_ptx(DATA / "row_sum.cu", arch="sm_90"), nvcc.compile_cubin(DATA / "row_sum.cu", arch="sm_90")
    finally:
        os.environ.pop("VERIFIER_CACHE_DIR") if old is None else os.environ.__setitem__("VERIFIER_CACHE_DIR", old)


@pytest.mark.parametrize("entry", sorted(NAMES))
def test_cpp_names_find_their_symbol_in_the_ptx_and_the_cubin(built, entry):
    from verifier.launch.symbols import cubin_entries, ptx_entries, resolve

    ptx, cubin = built
    for symbols in (ptx_entries(ptx), cubin_entries(cubin)):
        assert symbols[resolve(entry, symbols)] == NAMES[entry], symbols


def test_a_name_that_fits_several_or_none_lists_them_as_the_source_names_them(built):
    from verifier.launch.symbols import EntryNotFound, ptx_entries, resolve

    symbols = ptx_entries(built[0])
    with pytest.raises(EntryNotFound) as e:
        resolve("lib::row_sum", symbols)  # two instantiations
    assert e.value.detail == ("it matches 2: lib::row_sum<float, 32u>(float const*, float*, int); "
                              "lib::row_sum<float, 64u>(float const*, float*, int)"), e.value.detail
    with pytest.raises(EntryNotFound) as e:
        resolve("row_sum<double>", symbols)
    assert "closest: row_sum<float>" in e.value.detail and "void" not in e.value.detail, e.value.detail
    assert "anonymous" not in e.value.detail and "_GLOBAL__N_" not in e.value.detail


def test_every_kernel_of_the_spec_builds_and_lints_under_its_cpp_name(tmp_path, monkeypatch):
    from verifier.battery import check_kernel
    from verifier.declare.registry import load_spec_file
    from verifier.results.options import Options

    monkeypatch.setenv("VERIFIER_CACHE_DIR", str(tmp_path / "cache"))
    specs = load_spec_file(SPEC)
    assert len(specs) == 6
    for spec in specs:
        report = check_kernel(spec, Options(level="quick", device="cpu"))
        assert report.error is None and not report.findings, (spec.name, report.error, report.findings)
        assert {report.cells[("f32", c)].status for c in ("build", "resources", "static")} == {"pass"}, spec.name
        assert any("entry PTX(s) analysed" in str(n) for n in report.notes), (spec.name, report.notes)


def test_verifier_lint_analyses_every_entry_and_names_it_as_written(tmp_path):
    import os

    env = dict(os.environ, VERIFIER_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-m", "verifier.cli", "lint", str(SPEC), "--format", "json", "-j", "1",
                          "--no-progress"], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    kernels = json.loads(out.stdout)["kernels"]
    assert len(kernels) == 6 and all(k["verdict"] == "pass" for k in kernels), kernels
    assert all(any("entry PTX(s) analysed" in n for n in k["notes"]) for k in kernels), kernels


RACY = r"""
namespace { template <typename T>
__global__ void racy(const T* x, T* y, int N) {
  __shared__ float s[64];
  s[threadIdx.x] = (float)x[(long long)blockIdx.x * N + threadIdx.x];  // 64-bit row offset: no offset-wrap
  y[blockIdx.x] = (T)s[(threadIdx.x + 1) % 64];  // reads a neighbour's slot with no barrier between
}
template __global__ void racy<float>(const float*, float*, int); }
"""
RACY_SPEC = '''
from verifier.spec import CudaKernel, Launch, dtypes
KERNELS = [CudaKernel(name="racy", op="reduce_sum", source="racy.cu", dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch("racy<float>", (M,), (64,), ("x", "y", "N"))])]
'''


def test_lint_findings_in_an_unnamed_namespace_kernel_are_found_and_name_it(tmp_path, monkeypatch):
    """The entry is analysed (not skipped as 'not in the PTX'), and its finding names it as the spec does."""
    from verifier.battery import check_kernel
    from verifier.declare.registry import load_spec_file
    from verifier.results.options import Options

    monkeypatch.setenv("VERIFIER_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "racy.cu").write_text(RACY)
    (tmp_path / "racy_spec.py").write_text(RACY_SPEC)
    report = check_kernel(load_spec_file(tmp_path / "racy_spec.py")[0], Options(level="quick", device="cpu"))
    static = [f for f in report.findings if f.check == "static"]
    assert static and all("shared-race" in f.message for f in static), report.findings
    assert all("in racy<float> (" in f.message for f in static), [f.message for f in static]


def test_an_entry_the_source_lacks_is_a_build_finding_naming_the_closest(tmp_path, monkeypatch):
    from verifier.battery import check_kernel
    from verifier.declare.registry import load_spec_file
    from verifier.results.options import Options

    monkeypatch.setenv("VERIFIER_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "racy.cu").write_text(RACY)
    (tmp_path / "racy_spec.py").write_text(RACY_SPEC.replace('"racy<float>"', '"racy<double>"'))
    report = check_kernel(load_spec_file(tmp_path / "racy_spec.py")[0], Options(level="quick", device="cpu"))
    build = [f for f in report.findings if f.check == "build"]
    assert build and all("entry racy<double> used by the spec's launches is not in the cubin (closest: racy<float>)"
                         in f.message for f in build), report.findings


def test_the_sanitizer_filter_names_the_mangled_symbols_of_the_entries(tmp_path, monkeypatch):
    """compute-sanitizer's kne= filter matches mangled names: each C++ name becomes its symbol (unnamed namespace's
    hash included), so the tools watch the kernel rather than nothing."""
    from verifier.declare.registry import load_spec_file
    from verifier.gpu import probe
    from verifier.sanitizer import runs

    monkeypatch.setenv("VERIFIER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(probe, "device_arch", lambda *a, **k: "sm_90")
    for spec in load_spec_file(SPEC):
        dt = spec.dtypes[0]
        filters = runs.kernel_filters(spec, dt, [(4, 256)])
        assert len(filters) == 1 and filters[0].exact, (spec.name, filters)
        assert filters[0].name.startswith("_ZN") and "row_sum" in filters[0].name, (spec.name, filters)
        if spec.name.startswith(("anon", "lib-anon")):
            assert "_GLOBAL__N_" in filters[0].name
