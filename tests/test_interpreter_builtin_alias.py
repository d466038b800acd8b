"""Triton builtins called through module-level aliases (``triton_cast = tl.cast``: Unsloth) run in the interpreter
(verifier.launch.interpreter.resolve_builtin_aliases): such a kernel is judged on the CPU, a right one passes and one
summing 32 columns of longer rows fails, where both were 'unchecked' (an interpreter gap) before."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SPEC = Path(__file__).parent / "data" / "builtin_alias" / "rowsum_alias_spec.py"


@pytest.mark.interpreter
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_aliased_builtins_are_judged_in_the_interpreter():
    from verifier.declare.registry import load_spec_file
    from verifier.isolation import check_all
    from verifier.results.options import Options

    ok, bug = load_spec_file(str(SPEC))
    r_ok, r_bug = check_all([ok, bug], Options(device="cpu", level="quick", seed=0, case="normal_small"))
    assert r_ok.verdict == "pass", ([f.message for f in r_ok.findings], r_ok.notes)
    assert not any("interpreter gap" in str(n) for n in r_ok.notes + r_bug.notes)
    assert r_bug.verdict == "fail" and any(f.check == "value" for f in r_bug.findings)


def test_only_builtins_of_the_language_modules_are_replaced():
    import types

    import triton.language as tl

    from verifier.launch.interpreter import _LateBuiltin, resolve_builtin_aliases

    mod = types.ModuleType("m")
    mod.tl, mod.tcast, mod.texp, mod.helper, mod.n = tl, tl.cast, tl.exp, (lambda v: v), 3
    assert sorted(resolve_builtin_aliases(mod)) == ["tcast", "texp"]
    assert isinstance(mod.tcast, _LateBuiltin) and mod.tl is tl and mod.n == 3 and not isinstance(mod.helper,
                                                                                                   _LateBuiltin)
    assert mod.tcast.__name__ == "cast"


@pytest.mark.interpreter
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_libdevice_through_an_alias_runs_in_numpy():
    """triton_tanh = libdevice.tanh (Unsloth's softcap): the interpreter's stub returned None (an interpreter gap,
    'unchecked'); the runner runs it in numpy, so the kernel is judged: right passes, uncapped fails."""
    from verifier.declare.registry import load_spec_file
    from verifier.isolation import check_all
    from verifier.results.options import Options

    ok, bug = load_spec_file(str(SPEC.with_name("softcap_libdevice_spec.py")))
    r_ok, r_bug = check_all([ok, bug], Options(device="cpu", level="quick", seed=0, case="normal_small"))
    assert r_ok.verdict == "pass", ([f.message for f in r_ok.findings], r_ok.notes)
    assert not any("interpreter gap" in str(n) for n in r_ok.notes)
    assert r_bug.verdict == "fail"


@pytest.mark.interpreter
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_libdevice_from_a_module_loaded_afresh_runs_in_numpy():
    """rsqrt = libdevice_find("rsqrt") (xformers' rmsnorm): a copy of the libdevice module exec'd outside
    sys.modules, so its rsqrt is another object than Triton's; it stayed the interpreter's stub ('unchecked', an
    interpreter gap). Now judged: right passes, the twin forgetting the weight fails."""
    from verifier.declare.registry import load_spec_file
    from verifier.isolation import check_all
    from verifier.results.options import Options

    ok, bug = load_spec_file(str(SPEC.with_name("rmsnorm_fresh_libdevice_spec.py")))
    r_ok, r_bug = check_all([ok, bug], Options(device="cpu", level="quick", seed=0, case="normal_small"))
    assert r_ok.verdict == "pass", ([f.message for f in r_ok.findings], r_ok.notes)
    assert not any("interpreter gap" in str(n) for n in r_ok.notes + r_bug.notes)
    assert r_bug.verdict == "fail" and any(f.check == "value" for f in r_bug.findings)
