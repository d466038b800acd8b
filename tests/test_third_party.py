"""The third-party suite (issue #23): other projects' kernels, declared as their users get them (pinned PyPI
packages, the toolkit's cub), run on the CPU as CI runs them: build, resources and static for the CUDA ones, the
Triton interpreter for the Triton ones. Goal: no internal error, no false finding, every kernel checked or
skipped with the reason (a package that cannot install here), and no spec longer than 15 lines per kernel."""
import ast
import io
import json
import os
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from verifier.declare.registry import find_spec_files, load_spec_file

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "kernels" / "third_party"


def _kernels():
    return [k for f in find_spec_files([SUITE]) for k in load_spec_file(f)]


def test_the_suite_declares_six_real_kernels_from_two_projects_and_two_through_library_wrappers():
    kernels = _kernels()
    projects = {next(iter(k.requires.values())).split()[0] for k in kernels if k.requires}
    real = [k for k in kernels if k.requires]
    assert len(real) >= 6 and len(projects) >= 2, (len(real), projects)
    wrapped = [k for k in real if k.kind == "triton"]  # launchers that call the library's own function
    assert len(wrapped) >= 2
    assert all(k.kind != "cuda" or k.include_dirs for k in real)  # CUDA: headers of the installed package


def _code_lines(path: Path) -> int:
    """Lines that hold code: not blank, not comments, not the module docstring."""
    text = path.read_text()
    doc = ast.get_docstring(ast.parse(text), clean=False)
    lines = set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            continue
        if tok.type == tokenize.STRING and doc is not None and tok.string.strip('"\'rb') .strip() == doc.strip():
            continue
        lines.update(range(tok.start[0], tok.end[0] + 1))
    return len(lines)


def test_no_spec_is_longer_than_15_lines_per_kernel():
    for f in find_spec_files([SUITE]):
        n = len(load_spec_file(f))
        assert _code_lines(Path(f)) <= 15 * n, (f, _code_lines(Path(f)), n)


# `verifier check` checks each Triton kernel in a fork of its process (verifier.isolation.forked); a fork imports
# what the parent has not: torch, and through Liger's kernels torch._dynamo (2-3 s a fork, six forks). The CLI
# loads them once before forking on a GPU only (verifier.isolation._preload); here its main() runs after loading
# the kernel modules in the same process, so the forks share them. Same command line, same checks and report.
_CHECK = """
import sys
from verifier.declare.registry import load
from verifier.launch.triton import activate, load_module
activate("interpreter")
for spec in load([sys.argv[1]]):
    if spec.kind == "triton" and not spec.unavailable():
        load_module(spec)
from verifier.cli import main
sys.exit(main(sys.argv[2:]))
"""


# True findings in third-party kernels, each checked to be found (and nothing else): Liger-Kernel 0.8.5's GroupNorm
# forward takes the group variance as E[x²] - E[x]² (on 1000 ± 1 groups in f32 y is 40% off) and sums x and x² of
# float16 inputs in float16 (1000² overflows: NaN rows; N(0, 1) rows of 65536 lose every bit).
# FlashInfer 0.7.4 forms its row offsets in uint32 (norm.cuh `bx * stride_input`, sampling.cuh `bx * d`, topk.cuh
# `row_idx * vocab_size`, cascade.cuh's merge state): past 2^32 elements they wrap, which the static offset-wrap check finds on the CPU.
FLASHINFER_U32_OFFSETS = ("flashinfer-rmsnorm", "flashinfer-gemma-rmsnorm", "flashinfer-fused-add-rmsnorm",
                          "flashinfer-rmsnorm-quant", "flashinfer-fused-add-rmsnorm-quant",
                          "flashinfer-sampling-softmax-t0.5", "flashinfer-sampling-softmax-t2.0",
                          "flashinfer-top-k-renorm-probs-k1", "flashinfer-top-k-renorm-probs-k8",
                          "flashinfer-top-k-mask-logits",
                          "flashinfer-merge-state")  # cascade.cuh `(pos * num_heads + head_idx) * head_dim`, uint32
TRUE_FINDINGS = {"liger-group-norm": {"value", "nan-inf", "invariant"},
                 **{name: {"static"} for name in FLASHINFER_U32_OFFSETS}}


@pytest.mark.verifier_spread  # about a minute of the Triton interpreter: started early, on its own worker
def test_the_suite_runs_on_the_cpu_with_no_internal_error_and_no_false_finding(tmp_path):
    kernels = _kernels()
    if all(k.unavailable() for k in kernels):
        pytest.skip("no third-party package is installed here: pip install -e '.[triton,third-party]'")
    out = tmp_path / "third_party.json"
    env = {**os.environ, "VERIFIER_TRITON_MODE": "interpreter"}
    proc = subprocess.run([sys.executable, "-c", _CHECK, str(SUITE), "check", str(SUITE), "--device", "cpu",
                           "--level", "quick", "--format", "json", "--output", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    failing = any(k.name in TRUE_FINDINGS and not k.unavailable() for k in kernels)
    assert proc.returncode == (1 if failing else 0), proc.stderr[-4000:]
    reports = json.loads(out.read_text())["kernels"]
    assert {r["name"] for r in reports} == {k.name for k in kernels}
    by_name = {k.name: k for k in kernels}
    for r in reports:
        errors = [f["message"][:300] for f in r["findings"] if f["severity"] == "error"]
        if r["name"] in TRUE_FINDINGS and not by_name[r["name"]].unavailable():
            classes = {f["check"] for f in r["findings"] if f["severity"] == "error"}
            main = "static" if r["kind"] == "cuda" else "value"
            assert r["verdict"] == "fail" and main in classes and classes <= TRUE_FINDINGS[r["name"]], (r["name"],
                                                                                                        classes)
            assert main != "static" or all(m.startswith("offset-wrap:") for m in errors), (r["name"], errors)
            continue
        # a CUDA kernel's values are not checked without a GPU: 'unchecked', never 'pass'
        ok = ("pass", "skipped") + (("unchecked",) if r["kind"] == "cuda" else ())
        assert r["verdict"] in ok and not errors and not r.get("error"), (r["name"], errors, r)
    for r in reports:
        why = by_name[r["name"]].unavailable()
        if why:  # a package that cannot install here: skipped with the pip command, never an error
            assert r["verdict"] == "skipped" and "pip install" in json.dumps(r["checks"]), r
