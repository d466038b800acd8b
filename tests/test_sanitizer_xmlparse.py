"""compute-sanitizer XML → records → findings, on real captures from an H200 (compute-sanitizer 2025.3.1).

The captures live in the shared reference directory beside the repository (../shared/reference-captures);
CI has a read-only copy there. Their source paths were rewritten to /src/... on capture.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from verifier.sanitizer.xmlparse import SourceMap, finding_kind, parse, to_findings

REPO = Path(__file__).resolve().parents[1]
CAPTURES = REPO.parent / "shared" / "reference-captures" / "h200-2026-11-30"
needs_captures = pytest.mark.skipif(
    not CAPTURES.is_dir(), reason=f"reference captures not found at {CAPTURES} (the shared/ directory beside the repository)")


def _parse(name, tool):
    p = parse(str(CAPTURES / name), tool)
    assert p.complete, p.error
    return p.records


@needs_captures
def test_racecheck_analysis_record_has_both_sides_and_hazard_counts():
    (r,) = _parse("rc_race.xml", "racecheck")
    assert (r.kind, r.severity, r.kernel) == ("RaceHazard", "error", "block_reduce_race")
    assert (r.where.direction, r.where.path, r.where.line, r.where.pc) == ("Read", "/src/csprobe/kern.cu", 28, "0x190")
    assert [(o.direction, o.line, o.pc, o.count) for o in r.others] == [("Write", 26, "0x130", 2048),
                                                                         ("Write", 28, "0x1b0", 2032)]
    assert r.count == 2048 + 2032
    assert r.hazard == "RAW/WAR"  # analysis records do not say which came first


@needs_captures
def test_racecheck_hazard_records_fold_into_one_with_type_and_coordinates():
    (r,) = _parse("rc_race_hazard.xml", "racecheck")  # 6 per-byte hazard records, one site
    assert (r.kind, r.hazard, r.count) == ("RaceHazard", "WAR", 6)
    assert r.block == (0, 0, 0) and r.thread == (64, 0, 0)
    assert (r.where.direction, r.where.line) == ("Read", 28)
    (other,) = r.others
    assert (other.direction, other.line, other.thread) == ("Write", 26, (192, 0, 0))


def _hazard_record(pc0, pc1, kind="WAR"):
    return f"""<record><kind>Hazard</kind><what><text>Potential {kind} hazard detected</text>
      <common><type>{kind}</type><address>0x10</address><blockIdx><x>2</x><y>0</y><z>0</z></blockIdx></common>
      <thread0><access>Read</access><threadIdx><x>5</x><y>0</y><z>0</z></threadIdx>
        <where><func>k</func><path>/r/k.cu</path><line>28</line><pc>{pc0}</pc></where></thread0>
      <thread1><access>Write</access><threadIdx><x>9</x><y>0</y><z>0</z></threadIdx>
        <where><func>k</func><path>/r/k.cu</path><line>26</line><pc>{pc1}</pc></where></thread1></what></record>"""


_ANALYSIS = """<record><kind>Analysis</kind><level>Warning</level><what><text>Race condition</text>
  <source><direction>Read</direction><where><func>k</func><path>/r/k.cu</path><line>28</line><pc>0x190</pc></where></source>
  <destination><direction>Write</direction><where><func>k</func><path>/r/k.cu</path><line>26</line><pc>0x130</pc></where>
  <count>7</count></destination></what></record>"""


def test_report_all_hazards_attach_to_their_analysis_record():
    # --racecheck-report all: the analysis record keeps its level and count, and gains type and threads.
    xml = f"<ComputeSanitizerOutput>{_ANALYSIS}{_hazard_record('0x190', '0x130')}{_hazard_record('0x190', '0x130')}" \
          f"{_hazard_record('0x500', '0x510', 'WAW')}</ComputeSanitizerOutput>"
    recs = parse(xml.encode(), "racecheck").records
    assert len(recs) == 2
    site, lone = recs
    assert (site.severity, site.count, site.hazard, site.block, site.thread) == ("warning", 7, "WAR", (2, 0, 0), (5, 0, 0))
    assert site.others[0].thread == (9, 0, 0)
    assert (lone.hazard, lone.severity, lone.where.pc) == ("WAW", "error", "0x500")  # no analysis record: error


@needs_captures
def test_warp_synchronous_races_are_warnings():
    recs = _parse("rc_warp.xml", "racecheck")
    assert len(recs) == 5 and {r.severity for r in recs} == {"warning"}


@needs_captures
def test_memcheck_precise_record_and_api_aftermath():
    recs = _parse("mc_oob_pad.xml", "memcheck")
    inv = [r for r in recs if r.kind.startswith("Invalid")]
    (r,) = inv
    assert (r.kind, r.space, r.size, r.detail, r.kernel, r.where.line) == ("InvalidWrite", "global", 4, "out of bounds",
                                                                           "oob_write", 143)
    assert (r.block, r.thread, r.address) == ((0, 0, 0), (256, 0, 0), "0x7f41aca08800")
    api = [r for r in recs if r.kind == "ApiError"]
    assert {r.detail for r in api} == {"cudaFree", "cudaGetLastError", "cudaDeviceSynchronize", "cudaMemcpy"}
    assert sum(r.count for r in api) == 5  # two cudaFree records folded
    fs = to_findings(recs, SourceMap(REPO), kernel="k")
    assert [f.severity for f in fs if finding_kind(f) == "ApiError"] == ["warning"] * 4
    assert [f.severity for f in fs if finding_kind(f) == "InvalidWrite"] == ["error"]


@needs_captures
def test_synccheck_divergent_barrier_folds_sixteen_threads():
    (r,) = _parse("sc_div.xml", "synccheck")
    assert (r.kind, r.detail, r.kernel, r.where.line, r.count) == ("SyncHazard", "Divergent thread(s) in warp",
                                                                   "sync_divergent", 88, 16)
    assert r.thread == (32, 0, 0)


@needs_captures
def test_initcheck_uninitialized_global_read():
    (r,) = _parse("ic_uninit.xml", "initcheck")
    assert (r.kind, r.space, r.size, r.where.line, r.count) == ("UninitializedGlobalRead", "global", 4, 148, 100)


@needs_captures
def test_leaks_are_warnings_with_size():
    recs = _parse("mc_leak.xml", "memcheck")
    assert {r.kind for r in recs} == {"Leak"}
    assert sum(r.count for r in recs) == 3 and {r.size for r in recs} == {16384, 12345}
    fs = to_findings(recs, SourceMap(REPO))
    assert {f.severity for f in fs} == {"warning"}


@needs_captures
def test_clean_runs_have_no_records():
    for name, tool in (("rc_ok.xml", "racecheck"), ("mc_ok.xml", "memcheck"), ("sc_early.xml", "synccheck"),
                       ("py_triton_mc.xml", "memcheck")):
        assert _parse(name, tool) == []


@needs_captures
def test_finding_message_holds_both_race_sides_and_starts_with_kind(tmp_path):
    (f,) = to_findings(_parse("rc_race.xml", "racecheck"), SourceMap(tmp_path), kernel="spec-name", dtype="f32")
    assert (f.check, f.severity, f.kernel, f.dtype, f.file, f.line) == ("racecheck", "error", "spec-name", "f32",
                                                                        "kern.cu", 28)
    assert finding_kind(f) == "RaceHazard"
    assert "Read at kern.cu:28 (pc 0x190)" in f.message
    assert "vs Write at kern.cu:26 (pc 0x130) [2048 hazards]" in f.message
    assert "vs Write at kern.cu:28 (pc 0x1b0) [2032 hazards]" in f.message
    assert "outside the repository: /src/csprobe/kern.cu" in f.message


@needs_captures
def test_cupy_nvrtc_temporary_path_maps_to_the_compiled_source(tmp_path):
    src = tmp_path / "kernels" / "race.cu"
    src.parent.mkdir()
    src.write_text("// kernel\n")
    (f,) = to_findings(_parse("py_cupy_rc.xml", "racecheck"), SourceMap(tmp_path, [src]))
    assert (f.file, f.line) == ("kernels/race.cu", 6)
    assert "CuPy/NVRTC's temporary copy /tmp/tmpgm4k3ug7/" in f.message
    (g,) = to_findings(_parse("py_cupy_rc.xml", "racecheck"), SourceMap(tmp_path))  # source unknown
    assert g.file == "695fbc05f28dc148f6134ef9081a80fe1f2b9387.cubin.cu" and "original source unknown" in g.message


def test_source_map_absolute_suffix_and_outside(tmp_path):
    (tmp_path / "kernels" / "cuda").mkdir(parents=True)
    (tmp_path / "kernels" / "cuda" / "softmax.cu").write_text("")
    m = SourceMap(tmp_path)
    assert m.map(str(tmp_path / "kernels" / "cuda" / "softmax.cu")) == ("kernels/cuda/softmax.cu", "")
    # Built in another checkout (cached cubin, CI container): the tail that names a file here.
    shown, note = m.map("/builder/w/repo/kernels/cuda/softmax.cu")
    assert shown == "kernels/cuda/softmax.cu" and "built from /builder/w/repo/kernels/cuda/softmax.cu" in note
    assert m.map("/usr/include/cuda/std/cmath") == ("cmath", "outside the repository: /usr/include/cuda/std/cmath")


def test_cut_short_xml_keeps_records_read_so_far():
    xml = f"<ComputeSanitizerOutput>{_ANALYSIS}<record><kind>Hazard".encode()
    p = parse(xml, "racecheck")
    assert not p.complete and "cut short" in p.error
    assert [r.kind for r in p.records] == ["RaceHazard"]


def test_unknown_record_kind_is_kept_as_an_error():
    xml = b"<ComputeSanitizerOutput><record><kind>Brandnew</kind><what><text>odd thing</text></what></record>" \
          b"</ComputeSanitizerOutput>"
    (r,) = parse(xml, "memcheck").records
    assert (r.kind, r.severity, r.text) == ("Brandnew", "error", "odd thing")


def test_a_host_api_initcheck_record_behind_a_python_launcher_is_a_warning_naming_the_host_code():
    """The H200 run of Liger-Kernel 0.8.5's cross entropy (docs/gpu-runs/2026-12-01-issues-23-24-25.md, runs 23 and 26): initcheck reported
    "Host API uninitialized memory access" 16 times and nothing in the Triton kernel. Behind a Python launcher that
    is the host code's (the library's .item() copies), a warning; in a CUDA spec, or beside a device record, an
    error still."""
    from verifier.declare.kernels import CallableKernel, CudaKernel, TritonKernel
    from verifier.results.findings import Finding
    from verifier.sanitizer.verdict import _host_side

    api = Finding("initcheck", "InitcheckApiError: Host API uninitialized memory access at an unknown location",
                  severity="error", kernel="k")
    device = Finding("initcheck", "UninitializedGlobalRead: Uninitialized __global__ memory read of size 4",
                     severity="error", kernel="k")
    (w,) = _host_side(TritonKernel, [api])  # the kinds answer as classes (KernelSpec.builds_source)
    assert w.severity == "warning" and "in host code" in w.message and "--show-backtrace yes" in w.message
    assert _host_side(CudaKernel, [api]) == [api]
    assert [f.severity for f in _host_side(CallableKernel, [api, device])] == ["error", "error"]
