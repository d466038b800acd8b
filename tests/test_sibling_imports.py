"""Spec files and Triton kernel modules import modules beside them (issue #34): ``import my_helpers`` works as
``python my_spec.py`` would, in every process that loads them: the CLI and its forks, ``--isolate`` children (a
fresh interpreter), and a function importing a sibling only when it is called; two folders with a same-named helper
each get their own at load time, and the clash is said (verifier.declare.siblings)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

SPEC = textwrap.dedent('''
    import my_helpers  # beside this file
    from verifier.spec import CallableKernel, TritonKernel, dtypes

    def lazy(inputs, outputs, params, dt):
        import lazy_helpers  # beside this file too, imported only when the kernel runs
        return lazy_helpers.softmax(inputs, outputs, params, dt)

    KERNELS = [
        CallableKernel(name="helper-softmax", op="softmax", fn=my_helpers.softmax, dtypes=[dtypes("f32")]),
        CallableKernel(name="lazy-softmax", op="softmax", fn=lazy, dtypes=[dtypes("f32")]),
        TritonKernel(name="helper-triton-softmax", op="softmax", module="kern.py", launcher="launch",
                     dtypes=[dtypes("f32")], math_mode="triton_approx",
                     supports=lambda M, N, dt: None if N <= 4096 else "one block: rows up to 4096"),
    ]
''')

HELPERS = textwrap.dedent('''
    import torch

    def softmax(inputs, outputs, params, dt):
        return {"y": torch.softmax(inputs["x"].float(), -1).to(outputs["y"].dtype)}
''')

KERN = textwrap.dedent('''
    import triton
    import triton.language as tl
    from tri_helpers import block_for, row_max  # a plain helper and a @triton.jit one, beside this module

    @triton.jit
    def softmax_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        cols = tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=-float("inf")).to(tl.float32)
        e = tl.exp(x - row_max(x))
        tl.store(y_ptr + row * N + cols, e / tl.sum(e, 0), mask=mask)

    def launch(inputs, outputs, params, dt):
        x = inputs["x"]
        softmax_kernel[(x.shape[0],)](x, outputs["y"], x.shape[1], BLOCK=block_for(x.shape[1]))
''')

TRI_HELPERS = textwrap.dedent('''
    import triton
    import triton.language as tl

    def block_for(n):
        return triton.next_power_of_2(n)

    @triton.jit
    def row_max(x):  # NaN-propagating, as torch.softmax
        m = tl.max(x, 0)
        return tl.where(tl.sum((x != x).to(tl.int32), 0) > 0, float("nan"), m)
''')


def _project(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "my_spec.py").write_text(SPEC)
    (root / "my_helpers.py").write_text(HELPERS)
    (root / "lazy_helpers.py").write_text(HELPERS)
    (root / "kern.py").write_text(KERN)
    (root / "tri_helpers.py").write_text(TRI_HELPERS)
    return root


def _check(spec_dir: Path, *extra, cwd):
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET",) and not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["VERIFIER_CACHE_DIR"] = str(cwd / "cache")
    return subprocess.run([sys.executable, "-m", "verifier.cli", "check", str(spec_dir), "--device", "cpu", "--level",
                           "quick", "--format", "json", "--no-progress", *extra], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("mode", ["forks", "isolate"])
def test_a_spec_file_and_a_triton_module_import_their_helpers(tmp_path, mode):
    """The spec is run from another folder (its helpers are not on the working directory's path)."""
    proj = _project(tmp_path / "proj")
    (tmp_path / "elsewhere").mkdir()
    r = _check(proj, *(["--isolate"] if mode == "isolate" else []), cwd=tmp_path / "elsewhere")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    kernels = {k["name"]: k for k in json.loads(r.stdout)["kernels"]}
    assert set(kernels) == {"helper-softmax", "lazy-softmax", "helper-triton-softmax"}
    for k in kernels.values():
        assert k["verdict"] == "pass" and k["checks"]["f32"]["value"] == "pass", k


def test_same_named_helpers_of_two_spec_folders_each_get_their_own_and_the_clash_is_said(tmp_path):
    from verifier.declare import registry
    from verifier.declare.siblings import SiblingClash

    for name, value in (("a", 1), ("b", 2)):
        d = tmp_path / name
        d.mkdir()
        (d / "clash_helper_mod.py").write_text(f"VALUE = {value}\n")
        (d / f"{name}_spec.py").write_text(textwrap.dedent(f'''
            import clash_helper_mod
            from verifier.spec import CallableKernel, dtypes
            def fn(inputs, outputs, params, dt):
                outputs["y"].copy_(inputs["x"].softmax(-1))
            fn.helper_value = clash_helper_mod.VALUE
            KERNELS = [CallableKernel(name="k-{name}", op="softmax", fn=fn, dtypes=[dtypes("f32")])]
        '''))
    try:
        (a,) = registry.load_spec_file(tmp_path / "a" / "a_spec.py")
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            (b,) = registry.load_spec_file(tmp_path / "b" / "b_spec.py")
        assert a.fn.helper_value == 1 and b.fn.helper_value == 2  # each its own, not the first one's
        clash = [w for w in seen if issubclass(w.category, SiblingClash)]
        assert len(clash) == 1, [str(w.message) for w in seen]
        text = str(clash[0].message)
        assert "'clash_helper_mod'" in text and str(tmp_path / "a") in text and str(tmp_path / "b") in text, text
        assert "Fix: give one of them another name" in text
    finally:
        sys.modules.pop("clash_helper_mod", None)


def test_the_pytest_plugin_loads_them_too(tmp_path):
    from child_sessions import NO_HYPOTHESIS_PLUGIN

    proj = _project(tmp_path / "proj")
    (tmp_path / "elsewhere").mkdir()  # `python -m pytest` puts its working directory on sys.path: not the specs'
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VERIFIER_", "PYTEST_")) and k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
                        *NO_HYPOTHESIS_PLUGIN, "-p", "verifier.pytest_plugin", "--verifier-specs", str(proj),
                        "--verifier-device", "cpu", "--verifier-level", "quick", "-k", "normal_small", "-q"],
                       cwd=tmp_path / "elsewhere", env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "3 passed" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
