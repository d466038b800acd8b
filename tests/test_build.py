"""nvcc builds: caching, invalidation, diagnostics, concurrency. Five real compiles in all."""
from __future__ import annotations

import multiprocessing as mp
import re
from pathlib import Path

import pytest

from verifier.toolchain import nvcc as build
from verifier.toolchain import ptxas
from verifier.errors import BuildError, ToolMissing, UsageError
from verifier.spec import register_resident

FIXTURE = Path(__file__).parent / "data" / "ptxas" / "fixture_kernels.cu"
needs_nvcc = pytest.mark.skipif(build.nvcc_version() is None, reason="nvcc is not installed")
ELF = b"\x7fELF"


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("VERIFIER_CACHE_DIR", str(d))
    return d


@needs_nvcc
def test_second_compile_is_cached_and_resources_are_checked(cache, monkeypatch):
    first = build.compile_cubin(FIXTURE, flags=("-maxrregcount=32",))

    def no_compile(*a, **k):  # a cache hit must not run nvcc again
        raise AssertionError("nvcc ran for a cached build")

    monkeypatch.setattr(build, "_build", no_compile)
    second = build.compile_cubin(FIXTURE, flags=("-maxrregcount=32",))
    assert (first.cached, second.cached) == (False, True)
    assert second.cubin == first.cubin and first.cubin.is_relative_to(cache)
    assert first.cubin.read_bytes()[:4] == ELF
    assert second.ptxas_log == first.ptxas_log and second.resources == first.resources
    for f in ("-cubin", "-lineinfo", "-Xptxas", "-v", "-std=c++17", "-O3", "-arch=sm_90", "-maxrregcount=32"):
        assert f in first.command
    r = first.resources
    assert ptxas.check_expectations(r["_Z6spillsPKfPfPKii"], register_resident())  # spills: flagged
    assert ptxas.check_expectations(r["_Z11smem_reducePKfPfi"], register_resident()) == []
    assert r["_Z11smem_reducePKfPfi"].smem_bytes == 4 * 256 and r["_Z11smem_reducePKfPfi"].barriers == 1


@needs_nvcc
def test_changed_nested_include_invalidates(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "k.cu").write_text('#include "inc/cfg.h"\n'
                                   "__global__ void k(float* y) { __shared__ float s[BLOCK];\n"
                                   "  s[threadIdx.x] = y[threadIdx.x]; __syncthreads(); y[threadIdx.x] = s[BLOCK - 1 - threadIdx.x]; }\n")
    (tmp_path / "inc" / "cfg.h").write_text('#pragma once\n#include "block.h"\n')
    (tmp_path / "inc" / "block.h").write_text("#define BLOCK 64\n")
    a = build.compile_cubin(tmp_path / "k.cu")
    (tmp_path / "inc" / "block.h").write_text("#define BLOCK 128\n")
    b = build.compile_cubin(tmp_path / "k.cu")
    assert (a.cached, b.cached) == (False, False) and a.cubin != b.cubin
    assert (a.resources["_Z1kPf"].smem_bytes, b.resources["_Z1kPf"].smem_bytes) == (256, 512)


@needs_nvcc
def test_syntax_error_reports_file_and_line(tmp_path, monkeypatch, cache):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.cu").write_text("__global__ void k(float* y) {\n  int i = threadIdx.x\n  y[i] = 1.f;\n}\n")
    with pytest.raises(BuildError) as ei:
        build.compile_cubin(tmp_path / "bad.cu", defines={"BLOCK": 64})
    msg = str(ei.value)
    assert re.search(r"^\s*bad\.cu:3: error: expected a \";\"", msg, re.M), msg
    assert "command: " in msg and "-DBLOCK=64" in msg and str(tmp_path / "bad.cu") in msg
    assert not list(cache.rglob("*.cubin")), "a failed build must not be cached"


def _compile_in_child(barrier, queue):
    barrier.wait()
    r = build.compile_cubin(FIXTURE)
    queue.put((str(r.cubin), r.cached))


@needs_nvcc
def test_two_processes_same_key_compile_once(cache):
    ctx = mp.get_context("fork")
    barrier, queue = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_compile_in_child, args=(barrier, queue)) for _ in range(2)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    (paths, cached) = zip(*results)
    assert len(set(paths)) == 1 and sorted(cached) == [False, True]  # one built, the other waited
    cubin = Path(paths[0])
    assert cubin.read_bytes()[:4] == ELF
    assert list(cache.rglob("*.cubin")) == [cubin] and not list(cache.rglob(".build-*"))


def test_cache_key_covers_includes_defines_flags_and_arch(tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (tmp_path / "k.cu").write_text('#include "a.h"\n#include <lib.h>\n#include <cuda_fp16.h>\n')
    (tmp_path / "a.h").write_text('#include "b.h"\n')
    (tmp_path / "b.h").write_text("")
    (inc / "lib.h").write_text("")
    src = (tmp_path / "k.cu").resolve()
    # the fallback when nvcc writes no dependency file: a scan of the includes
    files = build._local_files(src, [inc.resolve()])
    assert files[0] == src and sorted(f.name for f in files) == ["a.h", "b.h", "k.cu", "lib.h"]
    # the command's key (file contents are the second step: verifier.toolchain.deps, tested with nvcc above)
    cmd = ["nvcc", *build.BASE_FLAGS, "-arch=sm_90", "-DX=1"]
    base = dict(source=src, inc_dirs=[inc.resolve()], base=cmd, base_flags=build.BASE_FLAGS, version="v")
    key = build._cache_key(**base)
    assert key == build._cache_key(**base)
    for change in (dict(base=[*cmd[:-2], "-arch=sm_90a", "-DX=1"]), dict(base=[*cmd[:-1], "-DX=2"]),
                   dict(base=[*cmd, "-maxrregcount=32"]), dict(version="w"), dict(inc_dirs=[]),
                   dict(base_flags=build.PTX_FLAGS)):
        assert build._cache_key(**{**base, **change}) != key, change


def test_missing_nvcc_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIFIER_NVCC", str(tmp_path / "no-nvcc"))
    with pytest.raises(ToolMissing, match="VERIFIER_NVCC"):
        build.nvcc_path()
    monkeypatch.delenv("VERIFIER_NVCC")
    for var in ("CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissing) as ei:
        build.compile_cubin(FIXTURE)
    assert "pip install nvidia-cuda-nvcc-cu12" in str(ei.value) and "$VERIFIER_NVCC" in str(ei.value)
    assert build.nvcc_version() is None


def test_bad_arch_and_define_are_usage_errors():
    with pytest.raises(UsageError, match="sm_90a"):
        build.compile_cubin(FIXTURE, arch="90")
    with pytest.raises(UsageError, match="macro name"):
        build.compile_cubin(FIXTURE, defines={"1X": 1})
    with pytest.raises(UsageError, match="clash"):
        build.compile_cubin(FIXTURE, flags=("-arch=sm_80",))


@needs_nvcc
def test_a_header_reached_through_a_flag_include_dir_invalidates(tmp_path):
    """Issue #23: the key ignored headers found through -I in extra flags, so a syntax error written into one still
    read as a passing build from the cache. The key now covers every file nvcc's dependency output lists."""
    lib = tmp_path / "vendor" / "include"
    lib.mkdir(parents=True)
    (lib / "norm.cuh").write_text("#pragma once\n#define SCALE 2.0f\n")
    (tmp_path / "k.cu").write_text('#include <norm.cuh>\n__global__ void k(float* y) { y[threadIdx.x] *= SCALE; }\n')
    flags = (f"-I{lib}",)
    a = build.compile_cubin(tmp_path / "k.cu", flags=flags)
    assert build.compile_cubin(tmp_path / "k.cu", flags=flags).cached
    (lib / "norm.cuh").write_text("#pragma once\n#define SCALE 2.0f +\n")  # a syntax error in the header
    with pytest.raises(BuildError, match="norm.cuh|expected an expression"):
        build.compile_cubin(tmp_path / "k.cu", flags=flags)
    (lib / "norm.cuh").write_text("#pragma once\n#define SCALE 2.0f\n")  # fixed again: the first cubin is reused
    again = build.compile_cubin(tmp_path / "k.cu", flags=flags)
    assert again.cached and again.cubin == a.cubin
    # include_dirs= is the same search path; a header added to the list later is seen too
    (lib / "extra.cuh").write_text("#pragma once\n#define BIAS 1.0f\n")
    (tmp_path / "k.cu").write_text('#include <norm.cuh>\n#include "extra.cuh"\n'
                                   '__global__ void k(float* y) { y[threadIdx.x] = y[threadIdx.x] * SCALE + BIAS; }\n')
    b = build.compile_cubin(tmp_path / "k.cu", include_dirs=(lib,))
    (lib / "extra.cuh").write_text("#pragma once\n#define BIAS 2.0f\n")
    c = build.compile_cubin(tmp_path / "k.cu", include_dirs=(lib,))
    assert not b.cached and not c.cached and b.cubin != c.cubin


def test_dependency_files_are_parsed_and_the_toolkit_left_out(tmp_path):
    from verifier.toolchain import deps

    text = ("out.cubin : /src/k.cu \\\n    /usr/local/cuda-13.0/include/cuda_runtime.h \\\n"
            "    /opt/vendor/a\\ b.cuh /src/k.cu\n")
    files = deps.parse(text)
    assert [str(f) for f in files] == ["/src/k.cu", "/usr/local/cuda-13.0/include/cuda_runtime.h", "/opt/vendor/a b.cuh"]
    assert deps.outside(files, Path("/usr/local/cuda-13.0")) == ["/opt/vendor/a b.cuh", "/src/k.cu"]


@needs_nvcc
def test_the_cubin_is_built_from_the_ptx_lint_reads(cache, monkeypatch):
    # the front end once per source and arch: compile_cubin builds (and caches) the PTX, then runs ptxas on it
    calls = []
    real = build._build
    monkeypatch.setattr(build, "_build", lambda base, *a: calls.append(base[1]) or real(base, *a))
    res = build.compile_cubin(FIXTURE, arch="sm_80", defines={"KV_TEST": 1})
    assert calls == ["-ptx"]  # nvcc on the source ran once, stopping at PTX
    ptx = build.compile_ptx(FIXTURE, arch="sm_80", defines={"KV_TEST": 1})
    assert calls == ["-ptx"] and ptx.is_relative_to(cache)  # lint's PTX is that one, from the cache
    assert res.resources and all(r.arch == "sm_80" for r in res.resources.values())
    assert res.command[-1] == str(FIXTURE.resolve()) and "-cubin" in res.command  # the source-level command
