"""ptxas -v parsing on real reports.

Fixtures under tests/data/ptxas/ are raw compiler stderr for fixture_kernels.cu, made by capture.sh:
cuda13_sm90.txt (nvcc 13.0.88), cuda13_sm80_sm90.txt (nvcc 13.0.88, two gencodes: sm_80 still
prints cmem[0]) and cuda12_9_sm90.txt (ptxas 12.9.86 from the nvidia-cuda-nvcc-cu12 wheel).
"""
from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from verifier.toolchain import ptxas
from verifier.errors import UsageError
from verifier.spec import Expectations, register_resident

DATA = Path(__file__).parent / "data" / "ptxas"
SPILLS, SMEM, HELPER = "_Z6spillsPKfPfPKii", "_Z11smem_reducePKfPfi", "_Z15helper_noinlinePKfi"
TPL_F, TPL_D = "_Z9scale_tplIfLi4EEvPKT_PS0_S0_i", "_Z9scale_tplIdLi2EEvPKT_PS0_S0_i"


def load(name, **kw):
    return ptxas.parse((DATA / name).read_text(), **kw)


def test_cuda13_sm90_every_function():
    r = load("cuda13_sm90.txt")
    assert set(r) == {SPILLS, SMEM, HELPER, TPL_F, TPL_D, "uses_helper"}
    assert {k for k, v in r.items() if not v.is_entry} == {HELPER}
    assert all(v.arch == "sm_90" for v in r.values())
    s = r[SPILLS]
    assert (s.registers, s.barriers, s.smem_bytes) == (32, 0, 0)
    assert (s.stack_frame_bytes, s.cumulative_stack_bytes, s.spill_store_bytes, s.spill_load_bytes) == (304, 304, 40, 72)
    assert s.spill_bytes == 112 and s.cmem == () and s.other == ()
    m = r[SMEM]
    assert (m.registers, m.barriers, m.smem_bytes, m.spill_bytes, m.stack_bytes) == (12, 1, 1024, 0, 0)
    assert (r[TPL_F].registers, r[TPL_D].registers, r["uses_helper"].registers) == (18, 14, 12)
    # A non-inlined device function has properties but no register/barrier figures of its own.
    h = r[HELPER]
    assert (h.registers, h.barriers, h.stack_frame_bytes, h.spill_bytes) == (None, None, 0, 0)


def test_cuda12_9_report_parses_like_cuda13():
    r12, r13 = load("cuda12_9_sm90.txt"), load("cuda13_sm90.txt")
    assert r12 == r13  # same kernels, same numbers; only compile times differ in the text


def test_two_architectures_need_a_choice():
    text = (DATA / "cuda13_sm80_sm90.txt").read_text()
    with pytest.raises(UsageError, match="sm_80, sm_90"):
        ptxas.parse(text)
    assert ptxas.parse(text, arch="sm_90") == load("cuda13_sm90.txt")
    r80 = ptxas.parse(text, arch="sm_80")
    assert r80[SMEM].cmem == ((0, 372),) and r80[SMEM].registers == 9 and r80[SMEM].smem_bytes == 1024
    assert r80[SPILLS].cmem == ((0, 380),)
    assert (r80[SPILLS].cumulative_stack_bytes, r80[SPILLS].spill_store_bytes, r80[SPILLS].spill_load_bytes) == (288, 32, 56)
    assert r80[HELPER].arch == "sm_80" and not r80[HELPER].is_entry and r80[HELPER].cmem == ()


# Older "Used" line layouts, quoted from public pages (leading whitespace normalised; no toolkit that
# prints them is installed here).
# moderngpu usage notes, https://moderngpu.github.io/doc/usage.html (sm_35): smem before cmem, no barriers.
MODERNGPU = """\
ptxas info    : Compiling entry function '_ZN4mgpu16launch_box_cta_kINS_15launch_params_tILi16ELi1ELi1ELi0EEEZ13simple_reduceILi16EPiS4_EvT0_T1_RNS_9context_tEEUnvdl2_PFvPiPiRN4mgpu9context_tEE13simple_reduceILi16EPiPiE1_PiPiEEvT0_' for 'sm_35'
ptxas info    : Function properties for _ZN4mgpu16launch_box_cta_kINS_15launch_params_tILi16ELi1ELi1ELi0EEEZ13simple_reduceILi16EPiS4_EvT0_T1_RNS_9context_tEEUnvdl2_PFvPiPiRN4mgpu9context_tEE13simple_reduceILi16EPiPiE1_PiPiEEvT0_
  0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, 64 bytes smem, 336 bytes cmem[0]
"""
# tpruvot/ccminer pull request #36 (CUDA 9.1 build log under MSBuild, "1>" prefixes): spills,
# cumulative stack, two constant banks.
CCMINER = """\
1>  ptxas info    : Compiling entry function '_Z14digit_last_wdcILj9ELj1248ELi9ELj2E13packer_cantorLj64ELj8ELj4EEvP4equiIXT_EXT0_EE' for 'sm_50'
1>  ptxas info    : Function properties for _Z14digit_last_wdcILj9ELj1248ELi9ELj2E13packer_cantorLj64ELj8ELj4EEvP4equiIXT_EXT0_EE
1>      296 bytes stack frame, 176 bytes spill stores, 312 bytes spill loads
1>  ptxas info    : Used 255 registers, 312 bytes cumulative stack size, 8192 bytes smem, 324 bytes cmem[0], 4 bytes cmem[2]
1>  ptxas info    : Function properties for cudaMalloc
1>      8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""


def test_older_layouts_from_public_logs():
    (m,) = ptxas.parse(MODERNGPU).values()
    assert (m.arch, m.registers, m.barriers, m.smem_bytes, m.cmem) == ("sm_35", 8, None, 64, ((0, 336),))
    r = ptxas.parse(CCMINER)
    k = r["_Z14digit_last_wdcILj9ELj1248ELi9ELj2E13packer_cantorLj64ELj8ELj4EEvP4equiIXT_EXT0_EE"]
    assert (k.registers, k.smem_bytes, k.cmem) == (255, 8192, ((0, 324), (2, 4)))
    assert (k.stack_frame_bytes, k.cumulative_stack_bytes, k.spill_store_bytes, k.spill_load_bytes) == (296, 312, 176, 312)
    dev = r["cudaMalloc"]
    assert not dev.is_entry and dev.stack_frame_bytes == 8 and dev.registers is None
    assert dev.demangled_with == "not-mangled"


def test_demangling():
    r = load("cuda13_sm90.txt")
    if ptxas._demangler() is None:
        pytest.skip("neither cu++filt nor c++filt is installed")
    # binutils' c++filt is preferred; the toolkit's cu++filt (CUDA 13, seen on the H200) spells it otherwise
    want = {"c++filt": ("void scale_tpl<float, 4>(float const*, float*, float, int)",
                        "helper_noinline(float const*, int)"),
            "cu++filt": ("void scale_tpl<float, (int)4>(const T1 *, T1 *, T1, int)",
                         "helper_noinline(const float *, int)")}[r[TPL_F].demangled_with]
    assert (r[TPL_F].demangled, r[HELPER].demangled) == want
    if shutil.which("c++filt"):
        assert r[TPL_F].demangled_with == "c++filt"
    assert r["uses_helper"].demangled_with == "not-mangled"


def test_without_demangler_names_stay_mangled_and_say_so(monkeypatch):
    monkeypatch.setattr(ptxas, "_demangler", lambda: None)
    r = load("cuda13_sm90.txt")
    assert (r[TPL_F].demangled, r[TPL_F].demangled_with) == (TPL_F, "unavailable")
    assert r["uses_helper"].demangled_with == "not-mangled"


def test_expectations_flag_spills_and_stack():
    r = load("cuda13_sm90.txt")
    problems = ptxas.check_expectations(r[SPILLS], register_resident())
    assert len(problems) == 2
    assert "spills 112 bytes (stores 40, loads 72) but declared register-resident (max_spill_bytes=0)" in problems[0]
    assert "304 bytes of stack" in problems[1] and "max_stack_bytes=0" in problems[1]
    assert ptxas.check_expectations(r[SMEM], register_resident()) == []
    # Limits are inclusive.
    assert ptxas.check_expectations(r[SPILLS], Expectations(max_spill_bytes=112, max_stack_bytes=304)) == []
    (p,) = ptxas.check_expectations(r[SPILLS], Expectations(max_spill_bytes=111))
    assert "but max_spill_bytes=111" in p


def test_expectations_registers():
    r = load("cuda13_sm90.txt")
    assert ptxas.check_expectations(r[TPL_F], Expectations(max_registers=18)) == []
    (p,) = ptxas.check_expectations(r[TPL_F], Expectations(max_registers=17))
    assert "uses 18 registers but max_registers=17" in p and r[TPL_F].demangled in p
    # Device functions report no registers of their own: nothing to hold against them.
    assert ptxas.check_expectations(r[HELPER], Expectations(max_registers=1)) == []
    assert ptxas.check_expectations(replace(r[HELPER], spill_store_bytes=4), register_resident())
