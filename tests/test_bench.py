"""verifier bench without a GPU: shapes, bytes moved, statistics, the L2 warning, the dtype plan and the three
renderings of a result (the timing itself needs a GPU and is exercised by tools/perf_run.sh)."""
import importlib.util
import json

import pytest

from verifier.bench import json as bjson
from verifier.bench import markdown, plan, text
from verifier.bench.plan import BenchResult, Row, Stats
from verifier.errors import UsageError
from verifier.spec import CallableKernel, dtypes


@pytest.mark.parametrize("s, want", [("8192x4096", (8192, 4096)), ("32X152064", (32, 152064)), (" 1 x 7 ", (1, 7))])
def test_parse_shape(s, want):
    assert plan.parse_shape(s) == want


@pytest.mark.parametrize("s", ["8192", "0x5", "5x0", "axb", "3x", "-1x4", "2x3x4"])
def test_parse_shape_rejects(s):
    with pytest.raises(UsageError, match="MxN"):
        plan.parse_shape(s)


def test_default_shapes_cover_the_issue_list():
    assert plan.DEFAULT_SHAPES == ((8192, 1024), (8192, 2048), (8192, 3584), (8192, 4096), (8192, 8192),
                                   (32, 152064))


@pytest.mark.parametrize("op, tag, M, N, want", [
    ("softmax", "bf16", 8192, 4096, 2 * 8192 * 4096 * 2),  # x read, y written
    ("softmax", "f32", 4, 10, 2 * 40 * 4),
    ("rmsnorm", "bf16", 8, 16, (2 * 8 * 16 + 16) * 2),  # x, y and the weight vector
    ("layernorm", "f32", 2, 3, (2 * 6 + 2 * 3) * 4),  # x, y, w, b
    ("fused_add_rmsnorm", "f16", 4, 8, (4 * 32 + 8) * 2),  # x, residual read; y, residual written; w
    ("online_softmax_stats", "f32", 5, 7, (35 + 2 * 5) * 4),  # x read, m[M] and l[M] written
    ("reduce_sum", "f32", 3, 9, (27 + 3) * 4),
])
def test_bytes_moved(op, tag, M, N, want):
    assert plan.bytes_moved(op, M, N, dtypes(tag)) == want


def test_bytes_moved_uses_the_output_dtype():
    assert plan.bytes_moved("softmax", 1, 8, dtypes("bf16", "f32")) == 8 * 2 + 8 * 4


def test_l2_warning_only_when_the_working_set_fits():
    l2 = 60 << 20
    assert plan.l2_warning(plan.bytes_moved("softmax", 8192, 4096, dtypes("bf16")), l2) is None
    small = plan.bytes_moved("softmax", 32, 152064, dtypes("bf16"))
    msg = plan.l2_warning(small, l2)
    assert msg and "18.6 MiB fits in the 60 MiB L2" in msg
    assert plan.l2_warning(l2, l2) is not None and plan.l2_warning(l2 + 1, l2) is None
    assert plan.l2_warning(100, 0) is None  # unknown L2 size: no claim


def test_summarize_median_and_spread():
    s = plan.summarize([5.0] * 18 + [1.0, 100.0])
    assert s.runs == 20 and s.median_ms == 5.0 and s.min_ms == 1.0
    assert s.p10_ms == 5.0 and s.p90_ms == 5.0 and s.spread == 0.0
    t = plan.summarize(list(range(1, 21)))
    assert t.median_ms == 10.5 and t.p10_ms < t.median_ms < t.p90_ms and t.spread > 0
    with pytest.raises(ValueError):
        plan.summarize([1.0])


def test_row_bandwidth_and_ratio():
    r = Row("k", "kernel", "softmax", "bf16", 8192, 4096, bytes=4_000_000_000,
            stats=Stats(20, 1000.0, 990.0, 1010.0, 980.0), copy_ms=900.0)
    assert r.gbs == pytest.approx(4.0)
    assert r.ratio == pytest.approx(0.9)
    assert Row("k", "kernel", "softmax", "bf16", 1, 1, 4, status="refused").ratio is None


def _k(name, tags):
    return CallableKernel(name=name, op="softmax", fn=lambda *a: None, dtypes=[dtypes(t) for t in tags])


def test_dtype_plan():
    ks = [_k("a", ["f32", "bf16"]), _k("b", ["bf16", "f16"])]
    assert [d.tag for d in plan.dtype_plan(ks, None)] == ["f32", "bf16", "f16"]
    assert [d.tag for d in plan.dtype_plan(ks, ["f16", "f32", "f16"])] == ["f16", "f32"]
    with pytest.raises(UsageError, match="--dtype e4m3 is declared by none"):
        plan.dtype_plan(ks, ["e4m3"])


def _result():
    st = Stats(50, 0.040, 0.039, 0.042, 0.038)
    rows = [Row("cuda-softmax-s5", "kernel", "softmax", "bf16", 8192, 4096, 134217728, stats=st, copy_ms=0.036),
            Row("liger-softmax", "against", "softmax", "bf16", 8192, 4096, 134217728,
                stats=Stats(50, 0.038, 0.037, 0.040, 0.036), copy_ms=0.036),
            Row("liger-softmax", "against", "softmax", "bf16", 32, 152064, 19464192, status="refused",
                note="N=152064: Liger's softmax takes rows of at most 65536 columns"),
            Row("d2d-copy", "copy", "softmax", "bf16", 8192, 4096, 134217728,
                stats=Stats(50, 0.036, 0.035, 0.037, 0.035), copy_ms=0.036)]
    return BenchResult(rows=rows, warnings=[(32, 152064, "bf16", "working set 18.6 MiB fits in the 60 MiB L2")],
                       environment={"commit": "abc123", "torch": "2.11"}, gpu="NVIDIA H200", l2_bytes=60 << 20,
                       runs=50, warmup=5, date="2026-12-01T00:00:00Z")


def test_text_rendering():
    out = text.render(_result())
    assert "NVIDIA H200" in out and "commit abc123" in out and "median of 50 runs" in out
    line = next(l for l in out.splitlines() if l.startswith("cuda-softmax-s5"))
    assert "40.0" in line and "3355" in line and "0.900" in line  # us, GB/s, copy ratio
    assert "refused: N=152064" in out
    assert "warning: 32x152064 bf16: working set" in out


def test_markdown_rendering():
    out = markdown.render(_result())
    assert "| **cuda-softmax-s5** | softmax | bf16 | 8192×4096 | 40.0 | 7.5% | 3355 | 0.900 |" in out
    assert "| liger-softmax | softmax | bf16 | 8192×4096 | 38.0 |" in out
    assert "refused: N=152064" in out and "- 32×152064 bf16: working set" in out


def test_json_rendering_round_trips_numbers():
    doc = json.loads(bjson.render(_result()))
    assert doc["schema"] == 1 and doc["gpu"] == "NVIDIA H200" and doc["l2_bytes"] == 60 << 20
    s5 = doc["rows"][0]
    assert s5["kernel"] == "cuda-softmax-s5" and s5["role"] == "kernel" and s5["runs"] == 50
    assert s5["ratio_to_copy"] == pytest.approx(0.9) and s5["gbs"] == pytest.approx(134217728 / 40e-6 / 1e9)
    assert doc["rows"][2]["status"] == "refused" and "ratio_to_copy" not in doc["rows"][2]
    assert doc["warnings"][0]["N"] == 152064
    back = bjson.from_dict(doc)
    assert markdown.render(back) == markdown.render(_result())


def test_plot_panels_group_by_op_and_dtype():
    from verifier.bench.plot import panels

    p = panels(_result())[("softmax", "bf16")]
    assert p["shapes"] == ["8192x4096", "32x152064"]
    assert p["series"]["cuda-softmax-s5"][0] == pytest.approx(3355.4432)
    assert p["series"]["liger-softmax"][1] is None  # refused: no bar
    assert p["copy"][0] == pytest.approx(134217728 / 36e-6 / 1e9)


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="matplotlib is the optional extra [plot]")
def test_plot_writes_a_png(tmp_path):
    from verifier.bench.plot import write

    out = tmp_path / "b.png"
    write(_result(), str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
