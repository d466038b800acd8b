"""Rounding statistics (check class 'rounding', verifier.judge.rounding): the share of elements not correctly
rounded and the mean signed error, against what the error model allows; the catalogue's cancellation rows in
every I/O dtype (cancel_ulp_bumps); the truncating, bf16-offset and naive-variance defect twins on the CPU."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from verifier.judge.rounding import rounding_stats
from verifier.numerics.ulp import round_to, ulp

ROOT = Path(__file__).resolve().parents[1]
bf16 = ml_dtypes.bfloat16



@pytest.fixture
def interpreter():
    """This process in Triton's interpreter (skips where triton is absent or the process runs it compiled)."""
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")
    from verifier.launch import triton as runner

    if runner._active == "compiled":
        pytest.skip("interpreter tests need their own process: run pytest -m interpreter")
    runner.activate("interpreter")

def _truncate(v):
    """float64 -> float32 -> bfloat16 by dropping the low 16 bits."""
    bits = np.asarray(v, dtype=np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
    return bits.view(np.float32).astype(bf16)


@pytest.fixture(scope="module")
def generic():
    """float64 values spread over the ULPs of bf16, as a correct kernel's results are."""
    return np.random.default_rng(1).standard_normal(4096)


def _stats(actual, y, E, base=1.0, bound=None):
    return rounding_stats(actual, round_to(y, "bfloat16"), y, E, bound, base, "bfloat16")


def test_correct_rounding_passes_with_nothing_misrounded(generic):
    st = _stats(round_to(generic, "bfloat16"), generic, np.zeros_like(generic))
    assert st.ok and st.misrounded == 0 and st.bias == 0.0 and st.n == generic.size


def test_truncation_is_a_biased_share_even_within_one_ulp(generic):
    E = 2.0**-20 * np.abs(generic)  # an fp32-accumulated kernel's bound: a few percent of a bf16 ULP
    st = _stats(_truncate(generic), generic, E)
    assert not st.share_ok and not st.bias_ok
    assert 0.4 < st.misrounded / st.n < 0.6 and -0.6 < st.bias < -0.4
    assert st.allowed_misrounded < 0.05 * st.n
    assert "toward zero" in st.describe() and "not correctly rounded" in st.describe()


def test_away_from_zero_is_named():
    y = np.linspace(1.0, 2.0, 1000, endpoint=False) + 2.0**-10  # never on an output value
    up = round_to(y, "bfloat16").astype(np.float64) + ulp(y, "bfloat16")
    st = _stats(up.astype(bf16), y, np.zeros_like(y), base=2.0)  # 1 ULP off everywhere: within a base of 2
    assert st.share_ok and not st.bias_ok and "away from zero" in st.describe()


def test_the_allowance_follows_the_error_bound(generic):
    """A kernel whose error E crosses a midpoint may misround there: with E = half an ULP everywhere any output
    within one step is allowed by the share, and its bias only up to what E reaches."""
    E = 0.5 * ulp(generic, "bfloat16")
    st = _stats(_truncate(generic), generic, E)
    assert st.share_ok and st.allowed_misrounded >= st.misrounded
    tiny = _stats(_truncate(generic), generic, 1e-6 * E)
    assert not tiny.share_ok


def test_ties_are_allowed_only_where_the_error_bound_reaches_them():
    """Exact values on a midpoint: with E = 0 the kernel must round them as the reference (to even); with any
    E > 0 either neighbour is allowed."""
    lo = round_to(np.linspace(1.0, 1.9, 500), "bfloat16").astype(np.float64)
    y = lo + ulp(lo, "bfloat16") / 2  # exactly between two bf16 values
    away = (lo + ulp(lo, "bfloat16")).astype(bf16)
    assert not _stats(away, y, np.zeros_like(y)).ok
    assert _stats(away, y, 2.0**-24 * y).share_ok


def test_a_declared_extra_rounding_allows_any_share_and_half_an_ulp_of_bias(generic):
    E = 2.0**-20 * np.abs(generic)
    st = _stats(_truncate(generic), generic, E, base=2.0)
    assert st.share_ok and st.allowed_misrounded == st.n
    assert st.allowed_bias >= 0.5 and st.extra == 1.0


def test_non_finite_and_float64_outputs_are_not_counted():
    y = np.array([np.inf, np.nan, 1.0 + 2.0**-10])
    st = _stats(np.array([np.inf, np.nan, 1.0], dtype=bf16), y, np.zeros(3))
    assert st.n == 1
    assert rounding_stats(np.ones(3), np.ones(3), np.ones(3), np.zeros(3), None, 1.0, "float64") is None


# --------------------------------------------------------------------------- through the judge and the battery


def _callables():
    path = ROOT / "kernels" / "defects" / "callable" / "defects.py"
    from verifier.declare.registry import load_spec_file

    return {k.name: k for k in load_spec_file(path)}


def _run(spec, case):
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    return check_kernel(spec, Options(level="ci", device="cpu", case=case))


@pytest.mark.parametrize("defect, twin", [
    ("defect-fused-add-rmsnorm-truncates-bf16", "fused-add-rmsnorm-rne-bf16"),
    ("defect-gemma-rmsnorm-offset-in-bf16", "gemma-rmsnorm-offset-in-fp32"),
])
def test_rounding_defects_are_caught_and_their_twins_pass(defect, twin):
    ks = _callables()
    bad = _run(ks[defect], "normal_small")
    found = {f.check for f in bad.findings}
    assert found == {"rounding"}, [f.message for f in bad.findings]  # within every per-element budget
    msg = next(f.message for f in bad.findings)
    assert "not correctly rounded" in msg and "round to nearest even" in msg
    assert bad.cells[("bf16", "rounding")].status == "FAIL"
    good = _run(ks[twin], "normal_small")
    assert good.verdict == "pass" and not good.findings, [f.message for f in good.findings]
    assert good.cells[("bf16", "rounding")].status == "pass"


def test_truncated_residual_is_named_with_its_bias():
    bad = _run(_callables()["defect-fused-add-rmsnorm-truncates-bf16"], "n1000")
    (f,) = [f for f in bad.findings if f.message.startswith("residual:")]
    assert "biased toward zero" in f.message


def test_an_output_over_its_budget_is_the_value_checks_alone():
    """big5-style: 5% too large is over budget everywhere; the rounding statistics add no second finding."""
    import references
    from verifier.judge import Criteria, judge
    from verifier.spec import dtypes

    x = np.random.default_rng(0).standard_normal((4, 256)).astype(bf16)
    ref = references.reference("softmax", {"x": x}, {}, "bfloat16")
    y = (np.asarray(ref.exact["y"]) * 1.05).astype(bf16)
    verdict = judge(Criteria(op="softmax", dtypes=dtypes("bf16")), {"x": x}, {"y": y})
    checks = [f.check for f in verdict.comparison.findings()]
    assert checks == ["value"] and not verdict.comparison["y"].rounding_ok


def test_residual_sum_is_exactly_rounded_for_16_bit_inputs():
    """x + residual of bf16 / f16 values in fp32, rounded to the input dtype, is correctly rounded (Figueroa):
    its error bound before the output rounding is 0, so every misrounded residual counts."""
    import references
    from verifier.judge import tolerance as T
    from verifier.spec import dtypes

    rng = np.random.default_rng(0)
    for tag, npdt in (("bf16", bf16), ("f16", np.float16)):
        xs = {"x": rng.standard_normal((2, 64)).astype(npdt), "residual": rng.standard_normal((2, 64)).astype(npdt),
              "w": rng.standard_normal(64).astype(npdt)}
        dt = dtypes(tag)
        ref = references.reference("fused_add_rmsnorm", xs, {}, dt.output)
        errs = T.errors("fused_add_rmsnorm", dt, "precise", xs, ref)
        assert not errs.E["residual"].any() and errs.E["y"].all()
    f32 = dtypes("f32", acc="f32")
    xs = {k: v.astype(np.float32) for k, v in xs.items()}
    ref = references.reference("fused_add_rmsnorm", xs, {}, "float32")
    assert not T.errors("fused_add_rmsnorm", f32, "precise", xs, ref).E["residual"].any()


# --------------------------------------------------------------------------- cancellation rows


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_cancellation_rows_are_exact_in_the_dtype_and_cancel(dtype):
    from verifier.inputs.catalogue import rand_ulp_bumps

    x = rand_ulp_bumps(np.random.default_rng(0))((8, 512), dtype)
    assert np.array_equal(round_to(x, dtype).astype(np.float64), x)
    step = float(ulp(1000.0, dtype))
    assert (np.count_nonzero(x[0] != 1000.0), np.count_nonzero(x[1] != 1000.0)) == (1, 2)
    assert 0 < (x[0].max() - 1000.0) / step <= 3 and np.all(x[3] <= -1000.0)
    assert 1000.0 <= x[2].min() and x[2].max() - 1000.0 <= max(0.05, 3 * step) + step
    assert np.std(x[2]) > 0  # a spread, not a constant row


def test_cancellation_case_is_in_the_catalogue_of_the_cancelling_ops_only():
    from verifier.inputs.catalogue import catalogue

    for op in ("layernorm", "rmsnorm", "fused_add_rmsnorm", "softmax", "log_softmax", "online_softmax_stats"):
        for dt in ("bfloat16", "float16", "float32"):
            assert "cancel_ulp_bumps" in {c.name for c in catalogue(op, dt, "ci")}, (op, dt)
    assert "cancel_ulp_bumps" not in {c.name for c in catalogue("reduce_sum", "float32", "ci")}
    assert "cancel_ulp_bumps" not in {c.name for c in catalogue("layernorm", "float8_e4m3fn", "ci")}


@pytest.mark.parametrize("tag", ["bf16", "f16"])
def test_naive_variance_layernorm_fails_at_ci_in_16_bit_dtypes(tag):
    """E[x²] - E[x]² passes bf16 / f16 on the '1000 ± 1' rows (bf16 rounds them to constant rows); the ULP-bump
    rows catch it, and the two-pass twin stays clean on them."""
    from dataclasses import replace

    from verifier.spec import dtypes

    ks = _callables()
    naive = replace(ks["defect-layernorm-naive-variance"], dtypes=[dtypes(tag)])
    bad = _run(naive, "cancel_ulp_bumps")
    assert "value" in {f.check for f in bad.findings}, bad.findings
    if tag == "bf16":
        assert not _run(naive, "mean_gg_std_1000").findings  # what the catalogue had before
    good = _run(replace(ks["layernorm-two-pass"], dtypes=[dtypes(tag)]), "cancel_ulp_bumps")
    assert good.verdict == "pass" and not good.findings, [f.message for f in good.findings]


def test_bundled_torch_kernels_have_no_rounding_finding_on_the_cancellation_and_ordinary_rows():
    from verifier.declare.registry import load_spec_file

    from verifier.inputs.catalogue import catalogue

    for spec in load_spec_file(ROOT / "kernels" / "torch" / "spec.py"):
        # the ops whose catalogue has the cancellation rows (not reduce_sum and the cross entropies)
        if "cancel_ulp_bumps" not in {c.name for c in catalogue(spec.op)}:
            continue
        has = {c.name for c in catalogue(spec.op)}
        for case in ("cancel_ulp_bumps", "normal_small"):
            if case not in has:  # the cancellation case is the ops' that cancel (not routing, not the state merge)
                continue
            r = _run(spec, case)
            assert not r.findings, (spec.name, case, [f.message for f in r.findings])
            # a case whose every value bound holds 0 judges no value (a note; the cell not a pass): the f32 layer
            # norm on 1000 + a few ULPs, whose worst-case mean error (N·u·|mean|) exceeds the row's spread
            value = r.cells[(spec.dtypes[0].tag, "value")]
            assert r.verdict == "pass" or (value.skipped and "no value was judged" in value.reason), (spec.name, case)


@pytest.mark.interpreter
def test_triton_truncation_defect_is_caught_in_the_interpreter_and_its_twin_passes(interpreter):
    """The conversion is integer arithmetic, so the interpreter computes the GPU's bits; the bundled twin rounds to
    nearest even, which the interpreter truncates: its case is replayed as compiled Triton rounds and passes."""
    from verifier.declare.registry import load_spec_file

    defects = {k.name: k for k in load_spec_file(ROOT / "kernels" / "defects" / "triton" / "defects.py")}
    bad = _run(defects["defect-triton-fused-add-rmsnorm-truncates-bf16"], "normal_small")
    assert {f.check for f in bad.findings} == {"rounding"}, [f.message for f in bad.findings]
    assert all("toward zero" in f.message for f in bad.findings if f.message.startswith("residual:"))
    from dataclasses import replace

    from verifier.spec import dtypes

    twin = {k.name: k for k in load_spec_file(ROOT / "kernels" / "triton" / "spec.py")}["triton-fused-add-rmsnorm"]
    good = _run(replace(twin, dtypes=[dtypes("bf16")]), "normal_small")
    assert good.verdict == "pass" and not good.findings, [f.message for f in good.findings]
    assert not any("interpreter gap" in str(n) for n in good.notes)  # judged, not left out


def _row_stat_kernels():
    from verifier.declare.registry import load_spec_file

    return {k.name: k for k in load_spec_file(ROOT / "tests" / "data" / "rounding_pool" / "row_stat_spec.py")}


def _run_all(spec):
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    return check_kernel(spec, Options(level="ci", device="cpu"))


def test_a_truncated_row_statistic_is_found_over_the_cases_though_no_case_shows_it():
    """A case of a few rows allows 4 misrounded elements: a float16 row mean truncated toward zero passed every
    case at ci. Summed over the cases, its misroundings lie where a correct kernel cannot misround."""
    ks = _row_stat_kernels()
    bad = _run_all(ks["row-mean-toward-zero-f16"])
    assert {f.check for f in bad.findings} == {"rounding"}, [f.message for f in bad.findings]
    (f,) = [f for f in bad.findings if not f.input.startswith("hypothesis:")]  # a drawn shape of many rows may show it
    assert f.input == "all cases" and "--case" not in f.repro and "toward zero" in f.message, f.message
    assert "farther than twice the error bound E" in f.message
    for good in ("row-mean-nearest-f16", "llama-rmsnorm-f16"):  # summed too, a correct or declared kernel is clean
        r = _run_all(ks[good])
        assert r.verdict == "pass" and not r.findings, (good, [f.message for f in r.findings])


def test_the_pool_judges_only_cases_that_passed_alone_and_more_than_one():
    from verifier.judge.rounding import RoundingPool, RoundingStats

    def st(n, mis, unexplained, C=0.0):
        return RoundingStats(n=n, misrounded=mis, allowed_misrounded=4.0, bias=-mis / n, allowed_bias=1.0, extra=0.0,
                             at_risk=C, unexplained=unexplained)

    pool = RoundingPool()
    pool.add("y", st(4, 3, 3), True)
    assert pool.failing() == []  # one case: its own judgement stands
    pool.add("y", st(4, 2, 2), True)
    ((name, pooled, cases),) = pool.failing()
    assert (name, cases, pooled.unexplained, pooled.n) == ("y", 2, 5, 8) and pooled.bias == -5 / 8
    pool.add("y", st(4, 4, 4), False)  # a case that failed alone is reported alone: no second finding
    assert pool.failing() == []


@pytest.mark.interpreter
def test_triton_row_mean_toward_zero_is_found_summed_and_the_interpreters_truncation_is_not_charged(interpreter):
    """``.to(tl.float16, fp_downcast_rounding="rtz")`` is the kernel's rounding (the interpreter does it as asked):
    summed over the quick cases it is found. The default conversion is clean in float16, and in bfloat16, where the
    Triton interpreter truncates on its own: those results are left out of the sums, not charged to the kernel."""
    from verifier.battery import check_kernel
    from verifier.declare.registry import load_spec_file
    from verifier.results.options import Options

    ks = {k.name: k for k in load_spec_file(ROOT / "tests" / "data" / "rounding_pool" / "row_mean_triton_spec.py")}
    opts = Options(level="quick", device="cpu")
    bad = check_kernel(ks["triton-row-mean-toward-zero-f16"], opts)
    pooled = [f for f in bad.findings if f.input == "all cases"]
    assert {f.check for f in bad.findings} == {"rounding"} and pooled, [f.message for f in bad.findings]
    assert "toward zero" in pooled[0].message
    good = check_kernel(ks["triton-row-mean"], opts)
    assert good.verdict == "pass" and not good.findings, [f.message for f in good.findings]
