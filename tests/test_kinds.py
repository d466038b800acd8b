"""One place per kernel kind: the steps ask a kernel's class (verifier.declare.kernels: its facts, its methods and the
runner module it names), never its ``kind`` string, and the CLI and the plugin share the battery's plan and ladder
(verifier.battery.plan). A kind added by subclassing alone runs through the battery."""
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from verifier.battery import check_kernel
from verifier.battery.plan import PLAN, STEP_NAMES
from verifier.declare.kernels import KernelSpec
from verifier.results.options import Options
from verifier.spec import CallableKernel, CudaKernel, TritonKernel, dtypes

ROOT = Path(__file__).resolve().parents[1]
KINDS = re.compile(r"""kind["']?(\s*,[^)]*\))?\s*(==|!=)\s*["'](cuda|triton|callable)["']|"""
                   r"""kind["']?(\s*,[^)]*\))?\s+(not\s+)?in\s*\(\s*["'](cuda|triton|callable)""")


def test_no_module_compares_kind_strings():
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in sorted((ROOT / "verifier").rglob("*.py"))
            for i, line in enumerate(p.read_text().splitlines(), 1) if KINDS.search(line)]
    assert not hits, f"kind string switches (ask the kernel class instead: builds_source, uses_triton, ...): {hits}"


def test_each_kind_answers_for_itself():
    cu = CudaKernel(name="c", op="softmax", source="k.cu", dtypes=[dtypes("f32")], launches=lambda *a: [])
    tr = TritonKernel(name="t", op="softmax", module="k.py", launcher="launch", dtypes=[dtypes("f32")])
    ca = CallableKernel(name="f", op="softmax", fn=lambda *a: None, dtypes=[dtypes("f32")], device="cpu")
    assert (cu.builds_source, tr.builds_source, ca.builds_source) == (True, False, False)
    assert (cu.interpreted("cpu"), tr.interpreted("cpu"), tr.interpreted("cuda")) == (False, True, False)
    assert (cu.runs_on_gpu("cuda"), tr.runs_on_gpu("cuda"), ca.runs_on_gpu("cuda")) == (True, True, False)
    assert cu.device_reason("cpu").startswith("no CUDA GPU") and ca.device_reason("cuda").startswith("callable declared")
    assert (cu.build_skip("cpu"), tr.build_skip("cuda"), tr.build_skip("cpu"), ca.build_skip("cpu")) == \
        (None, None, "compiled-kernel facts need a GPU", "Python callable")
    assert cu.static_skip() is None and "a Triton kernel" in tr.static_skip()
    assert [k.user_function for k in (cu, tr, ca)] == ["launch", "launcher", "fn"]


def test_the_plugin_generates_one_test_per_step_of_the_battery_plan():
    from verifier.plugin.session import STEPS
    from verifier.plugin.suites import SUFFIXES, suite_tests

    assert STEPS == STEP_NAMES and set(SUFFIXES.values()) == set(STEP_NAMES)
    assert sorted(suite_tests("softmax")) == sorted(f"test_softmax{s.suffix}" for s in PLAN)


def run_numpy(spec, inputs, outputs, params, dt, device):
    """The runner of NumpyKernel: the kernel computes on numpy arrays; shapes its supports() refuses raise
    Unsupported, as every runner's do."""
    from verifier.errors import Unsupported

    reason = spec.check_supported(inputs["x"].shape[0], inputs["x"].shape[-1], dt)
    if reason:
        raise Unsupported(reason)
    ys = spec.numpy_fn({k: v.cpu().numpy() for k, v in inputs.items()}, dict(params))
    import torch

    for k, v in ys.items():
        outputs[k].copy_(torch.as_tensor(v))


@dataclass(frozen=True)
class NumpyKernel(KernelSpec):
    """A kind of kernel the framework does not have: a numpy function, declared by this class alone."""

    numpy_fn: object = None
    kind: str = field(default="numpy", init=False)
    runner = f"{__name__}:run_numpy"
    what = "a numpy function"
    user_function = "numpy_fn"


def _softmax(inputs, params):
    x = inputs["x"].astype(np.float64)
    with np.errstate(invalid="ignore"):  # rows of -inf and NaN give NaN, as the reference says
        e = np.exp(x - x.max(-1, keepdims=True))
    return {"y": (e / e.sum(-1, keepdims=True)).astype(np.float32)}


@pytest.mark.parametrize("scale, verdict", [(1.0, "pass"), (1.05, "fail")])
def test_a_new_kind_is_one_subclass(scale, verdict):
    k = NumpyKernel(name="np-softmax", op="softmax", dtypes=[dtypes("f32")],
                    numpy_fn=lambda i, p: {"y": _softmax(i, p)["y"] * np.float32(scale)})
    report = check_kernel(k, Options(device="cpu", level="quick"))
    assert report.verdict == verdict, [f.message for f in report.findings][:2]
    assert report.cells[("f32", "resources")].reason == "numpy function"  # its class's words
