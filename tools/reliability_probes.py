"""Inject each fault of issues #16 and #35 and record what the user sees and the exit code: docs/reliability.md.

    python tools/reliability_probes.py run --out docs/reliability.json      # runs every probe (~2 min, CPU)
    python tools/reliability_probes.py render --results docs/reliability.json --out docs/reliability.md
    python tools/reliability_probes.py run --probe 2-nvcc                   # one probe, printed

Each probe builds its fault in a temporary directory (a spec file, an environment, a recorded sanitizer XML
cut short) and runs the real command in a fresh process where there is one (``verifier check``, ``verifier
sanitize``, ``pytest``); the few that are a library step (sanitizer judging, a Triton resources cell on a GPU,
the poison table) run that step. What the user sees is the characteristic line(s) of the output, with the
temporary directory shown as <tmp> and the repository as <repo>. tests/test_reliability_doc.py checks that the
committed page is the rendering of the committed results and re-runs the cheap probes against them.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
HEADER = "import os, torch\nfrom verifier.spec import CallableKernel, dtypes\n"
GOOD = '''
def good(inputs, outputs, params, dt):
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))
'''
SMALL = 'S = lambda M, N, dt: None if N <= 256 else "N > 256"\n'


class Probe:
    """``cheap``: re-run by tests/test_reliability_doc.py (no battery run in a fresh process; the others are
    each asserted by their own test in tests/test_reliability.py / test_pytest_plugin_crash.py). ``issue``: the
    issue whose list ``item`` numbers (16, or 35 whose probes name ``test``, the test that reproduces the fault)."""

    def __init__(self, pid: str, item: int, fault: str, fn, cheap: bool = True, issue: int = 16, test: str = ""):
        self.id, self.item, self.fault, self.fn, self.cheap = pid, item, fault, fn, cheap
        self.issue, self.test = issue, test


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VERIFIER_", "PYTEST_XDIST"))}
    env.update(extra)
    return env


def _spec(tmp: Path, body: str, name: str = "k_spec.py") -> str:
    p = tmp / name
    p.write_text(HEADER + textwrap.dedent(body))
    return str(p)


def _verifier(tmp, *argv, env=None):
    p = subprocess.run([PY, "-m", "verifier.cli", *argv], capture_output=True, text=True, cwd=tmp,
                       env=env or _env(), timeout=600)
    return p.returncode, p.stdout, p.stderr


def _pick(text: str, *patterns) -> str:
    """The first line matching each pattern, in order (a pattern that matches nothing gives '(no line ...)')."""
    lines = text.splitlines()
    out = []
    for pat in patterns:
        hit = next((ln.strip() for ln in lines if re.search(pat, ln)), None)
        out.append(hit if hit is not None else f"(no line matching {pat!r})")
    return "\n".join(out)


# --- the probes, numbered as issue #16's list -------------------------------------------------------------
def p1_unreadable_xml(tmp: Path):
    from verifier.declare import registry
    from verifier.results.kernel import KernelReport
    from verifier.results.run import Result
    from verifier.sanitizer import runs as D

    (spec,) = registry.load([_spec(tmp, GOOD + 'KERNELS = [CallableKernel(name="k", op="softmax", fn=good, '
                                               'dtypes=[dtypes("f32")])]\n')])
    xml = tmp / "k.f32.memcheck.xml"
    xml.write_bytes((REPO / "tests/data/sanitizer/overread_memcheck.xml").read_bytes()[:300])  # cut short
    log = tmp / "k.f32.memcheck.log"
    log.write_text("(the tool's text output)\n")
    findings, _ = D._judge(spec, spec.dtypes[0], "memcheck", D.ERROR_EXITCODE, xml,
                           {"status": "ok", "launched": [[3, 7]]}, "", 300, [(3, 7)], log_path=log)
    report = KernelReport(spec=spec, device="cuda")
    for f in findings:
        report.add(f) if f.severity == "error" else report.findings.append(f)
    report.mark("f32", "memcheck", "pass")
    seen = [f"memcheck cell: {report.cells[('f32', 'memcheck')]}"]
    seen += [f"[{f.check} {f.severity}] {f.message.splitlines()[0]}" for f in findings if f.severity == "error"]
    return Result(reports=[report]).exit_code(), "\n".join(seen)


def p2_nvcc(tmp: Path):
    env = _env(PATH="/usr/bin:/bin")
    env.pop("CUDA_HOME", None), env.pop("CUDA_PATH", None)
    code, out, err = _verifier(tmp, "check", str(REPO / "kernels/cuda/softmax_spec.py"), "--device", "cpu",
                               "--level", "quick", "--no-progress", env=env)
    return code, _pick(err, r"nothing was checked", r"nvcc .*not found")


def p2_sanitizer(tmp: Path):
    env = _env(PATH="/usr/bin:/bin")
    env.pop("CUDA_HOME", None), env.pop("CUDA_PATH", None)
    code, out, err = _verifier(tmp, "sanitize", str(REPO / "kernels/cuda/softmax_spec.py"), "--kernel",
                               "cuda-softmax-s3", env=env)
    return code, _pick(err, r"nothing was sanitized")


def p3_supports_bool(tmp: Path):
    spec = _spec(tmp, GOOD + 'KERNELS = [CallableKernel(name="boolsup", op="softmax", fn=good, dtypes=[dtypes("f32")], '
                             'supports=lambda M, N, dt: N <= 1024)]\n')
    code, out, err = _verifier(tmp, "check", spec, "--device", "cpu", "--level", "quick", "--no-progress")
    return code, _pick(out + err, r"supports function", r"fix:")


def p4_never_ran(tmp: Path):
    spec = _spec(tmp, SMALL + '''
def wrong_signature(inputs, outputs):
    outputs["y"].zero_()

KERNELS = [CallableKernel(name="wrongsig", op="softmax", fn=wrong_signature, dtypes=[dtypes("f32")], supports=S)]
''')
    code, out, err = _verifier(tmp, "check", spec, "--device", "cpu", "--level", "quick", "--no-progress")
    return code, _pick(out, r"^kernel ", r"^wrongsig ", r"raised TypeError")


DATA = REPO / "tests" / "data" / "reliability"  # fault specs shared with tests/test_reliability.py


def _data_spec(tmp: Path, name: str) -> str:
    dst = tmp / name
    dst.write_text((DATA / name).read_text())
    return str(dst)




def p5_segfault(tmp: Path):
    spec = _data_spec(tmp, "deadly_spec.py")
    code, out, err = _verifier(tmp, "check", spec, "--device", "cpu", "--level", "quick", "--no-progress",
                               "--kernel", "segv", "--kernel", "fine")
    return code, _pick(out + err, r"^segv ", r"^fine ", r"SIGSEGV")


def p5_exit(tmp: Path):
    spec = _data_spec(tmp, "deadly_spec.py")
    code, out, err = _verifier(tmp, "check", spec, "--device", "cpu", "--level", "quick", "--no-progress",
                               "--kernel", "exits", "--kernel", "fine")
    return code, _pick(out + err, r"^exits ", r"^fine ", r"died \(exit status 1\)")


def p6_xdist(tmp: Path):
    spec = _data_spec(tmp, "deadly_spec.py")
    p = subprocess.run([PY, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-q", "-rf", "suites/test_ops.py",
                        "--verifier-specs", spec, "--verifier-kernels", "dies,fine", "--verifier-level", "quick",
                        "--verifier-device", "cpu", "--max-worker-restart", "1",
                        "-k", "test_softmax and (d7_below_warp or fully_masked or normal_small or determinism)"],
                       capture_output=True, text=True, cwd=REPO, env=_env(), timeout=600)
    text = p.stdout + p.stderr
    crashed = sum("killed its worker process" in ln for ln in text.splitlines() if ln.startswith("kernel dies"))
    summary = _pick(text, r"\d+ failed")
    summary = re.sub(r" in [\d.]+s.*", "", summary.strip("= "))
    return p.returncode, (f"{summary}; crashes attributed to kernel dies, with its repro line: "
                          f"{'one per worker at most' if 1 <= crashed <= 2 else crashed}\n"
                          + _pick(text, r"^kernel dies killed its worker", r"^repro: verifier check"))


def p7_pipe(tmp: Path):
    spec = _spec(tmp, GOOD + 'KERNELS = [CallableKernel(name="good", op="softmax", fn=good, dtypes=[dtypes("f32")])]\n')
    p = subprocess.Popen([PY, "-m", "verifier.cli", "check", spec, "--level", "quick", "--case", "normal_small",
                          "--device", "cpu", "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=_env(), cwd=tmp)
    p.stdout.close()
    err = p.stderr.read().decode()
    return p.wait(timeout=600), _pick(err, r"^verifier: \d+ kernels")


def p7_format_help(tmp: Path):
    code, out, err = _verifier(tmp, "check", "--help")
    flat = " ".join(out.split())
    start = flat.index("--format FORMAT", flat.index("options:"))
    return code, flat[start:flat.index("--output FILE", start)].strip()


def p7_duplicate(tmp: Path):
    spec = _spec(tmp, GOOD + '''
KERNELS = [
    CallableKernel(name="twin", op="softmax", fn=good, dtypes=[dtypes("f32")]),
    CallableKernel(name="twin", op="softmax", fn=good, dtypes=[dtypes("bf16")]),
]
''')
    code, out, err = _verifier(tmp, "list", spec)
    return code, _pick(err, r"declared twice")


def p8_flaky(tmp: Path):
    spec = _data_spec(tmp, "flaky_spec.py")
    code, out, err = _verifier(tmp, "check", spec, "--device", "cpu", "--level", "thorough", "--format", "json",
                               "--no-progress")
    (k,) = json.loads(out)["kernels"]
    flaky = [f for f in k["findings"] if f["check"] == "determinism" and "flaky" in f["message"]]
    if not flaky:
        return code, "(no flaky finding)"
    msg = flaky[0]["message"]
    return code, (f"[determinism] {flaky[0]['input']}: " + re.sub(r", worst: .*?; replay", "; replay",
                                                                    msg.split(". Re-run")[0]))


def p9_repro_budget(tmp: Path):
    spec = _data_spec(tmp, "big5_spec.py")
    code, out, err = _verifier(tmp, "check", spec, "--device", "cpu", "--level", "thorough", "--format", "json",
                               "--no-progress")
    (k,) = json.loads(out)["kernels"]
    f = next(f for f in k["findings"] if f["check"] == "value" and f["input"] == "d7_below_warp")
    argv = shlex.split(f["repro"])
    code2, out2, _ = _verifier(tmp, *argv[1:], "--format", "json", "--no-progress")
    (again,) = json.loads(out2)["kernels"]
    g = next(g for g in again["findings"] if g["check"] == "value" and g["input"] == f["input"])
    return code2, (f"repro: {f['repro'].replace(str(tmp), '<tmp>')}\n"
                   f"finding at shape {tuple(f['shape'])}; its repro line replays shape {tuple(g['shape'])}, "
                   f"{'the same message' if g['message'] == f['message'] else 'a different message'}")


def p10_triton_resources(tmp: Path):
    from verifier.declare import registry
    from verifier.results.kernel import KernelReport
    from verifier.results.options import Options
    from verifier.battery.build import triton_resources
    from verifier.errors import UsageError, VerifierError
    from verifier.launch import triton as rt

    (spec,) = registry.load([str(REPO / "kernels/triton/spec.py")], ["triton-softmax"])
    dts, real = spec.dtypes[:1], rt.compiled_resources

    def broken(*a, **kw):
        raise VerifierError("cannot read the compiled kernel's metadata")

    def usage(*a, **kw):
        raise UsageError("the launcher's grid is malformed")

    try:
        rt.compiled_resources = broken
        report = KernelReport(spec=spec, device="cuda")
        triton_resources(spec, Options(device="cuda"), report, dts)
        seen = f"resources cell after an error: {report.cells[(dts[0].tag, 'resources')]}"
        rt.compiled_resources = usage
        try:
            triton_resources(spec, Options(device="cuda"), KernelReport(spec=spec, device="cuda"), dts)
            seen += "\nUsageError: swallowed"
        except UsageError as e:
            seen += f"\nUsageError raised: {e.message}"
    finally:
        rt.compiled_resources = real
    return None, seen


def p11_timeout_env(tmp: Path):
    (tmp / "test_x.py").write_text("def test_x():\n    pass\n")
    p = subprocess.run([PY, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q", "test_x.py"],
                       capture_output=True, text=True, env=_env(VERIFIER_KERNEL_TIMEOUT="soon"), cwd=tmp, timeout=600)
    return p.returncode, _pick(p.stdout + p.stderr, r"VERIFIER_KERNEL_TIMEOUT")


def p11_suppressions(tmp: Path):
    from verifier.declare import registry
    from verifier.sanitizer.verdict import judge_rerun
    from verifier.sanitizer import runs as D

    (spec,) = registry.load([_spec(tmp, GOOD + 'KERNELS = [CallableKernel(name="k", op="softmax", fn=good, '
                                               'dtypes=[dtypes("f32")])]\n')])
    (tmp / "sanitizer-suppressions.toml").write_text(
        '[[suppress]]\ntool = "memcheck"\nkernel = "k"\nreason = "probe: a justified over-read"\n')
    fs = judge_rerun(spec, spec.dtypes[0], None, "memcheck", D.ERROR_EXITCODE,
                                          REPO / "tests/data/sanitizer/overread_memcheck.xml", tmp / "k.log", "")
    sev = sorted({f.severity for f in fs})
    return None, f"{len(fs)} memcheck finding(s) of the re-run, severity {', '.join(sev)}: " \
                 f"{fs[0].message.splitlines()[-1].strip()}"


def p12_fp8(tmp: Path):
    import torch

    from verifier.launch import harness

    out = []
    for fmt in ("float8_e4m3fn", "float8_e5m2"):
        bits = harness._POISON[fmt]
        vals = torch.tensor(list(bits), dtype=torch.uint8).view(getattr(torch, fmt)).float().tolist()
        out.append(f"{fmt}: poisons {', '.join(hex(b) for b in bits)} decode to {', '.join(map(str, vals))}")
    return None, "\n".join(out)


# --- issue #35 ---------------------------------------------------------------------------------------------------
SPILL = ("check", str(REPO / "kernels/defects/cuda/defects.py"), "--kernel", "defect-spill-undeclared", "--device",
         "cpu", "--level", "quick", "--no-progress")


def p35_unchecked(tmp: Path):
    code, out, err = _verifier(tmp, *SPILL)
    return code, _pick(out, r"^defect-spill-undeclared ", r"^1 kernels: ")


def p35_require_values(tmp: Path):
    code, out, err = _verifier(tmp, *SPILL, "--require-values")
    return code, _pick(err, r"--require-values: ", r"fix: ")


def p35_markdown(tmp: Path):
    code, out, err = _verifier(tmp, *SPILL, "--format", "markdown")
    return code, _pick(out, r"^### kernel-verifier", r"Values not checked")


def p35_plugin(tmp: Path):
    p = subprocess.run([PY, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q", "suites/test_ops.py",
                        "--verifier-specs", "kernels/cuda/softmax_spec.py", "--verifier-kernels", "cuda-softmax-s3",
                        "--verifier-device", "cpu", "--verifier-level", "quick", "--verifier-require-values",
                        "-k", "test_softmax and not shapes and not refusal and not determinism and not build and "
                              "not static"], capture_output=True, text=True, cwd=REPO, env=_env(), timeout=600)
    text = p.stdout + p.stderr
    return p.returncode, re.sub(r" in [\d.]+s$", "", _pick(text, r"^values not checked: ", r"errors? in "))


def _a_file(tmp: Path) -> Path:
    f = tmp / "a_file"
    f.write_text("not a directory\n")
    return f


def p35_cache_dir(tmp: Path):
    env = _env(VERIFIER_CACHE_DIR=str(_a_file(tmp) / "cache"))
    code, out, err = _verifier(tmp, "check", str(REPO / "kernels/cuda/softmax_spec.py"), "--no-progress", env=env)
    return code, _pick(err, r"build cache", r"fix: ")


def p35_home(tmp: Path):
    env = _env(HOME=str(_a_file(tmp)))
    env.pop("XDG_CACHE_HOME", None)
    code, out, err = _verifier(tmp, "lint", str(REPO / "kernels/cuda/softmax_spec.py"), "--no-progress", env=env)
    return code, _pick(err, r"build cache", r"fix: ")


def p35_output(tmp: Path):
    spec = _spec(tmp, GOOD + 'KERNELS = [CallableKernel(name="good", op="softmax", fn=good, dtypes=[dtypes("f32")])]\n')
    code, out, err = _verifier(tmp, "check", spec, "--device", "cpu", "--output", "/proc/version")
    started = "[1/1]" in err
    return code, _pick(err, r"--output ", r"fix: ") + f"\n(the run {'started' if started else 'did not start'})"


def p35_full_disk(tmp: Path):
    spec = _spec(tmp, GOOD + 'KERNELS = [CallableKernel(name="good", op="softmax", fn=good, dtypes=[dtypes("f32")])]\n')
    code, out, err = _verifier(tmp, "check", spec, "--device", "cpu", "--level", "quick", "--case", "normal_small",
                               "--no-progress", "--output", "/dev/full")
    return code, _pick(err, r"cannot write", r"fix: ")


def p35_lint_nothing(tmp: Path):
    code, out, err = _verifier(tmp, "lint", str(REPO / "kernels/triton"), "--no-progress")
    return code, _pick(err, r"nothing was linted", r"fix: ")


RACE_CU = """extern "C" __global__ void race_f32(const float* x, float* y, int M, int N) {
    __shared__ float s[256];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * N + (t % N)];
    float v = s[(t + 1) % 256];
    y[blockIdx.x * N + (t % N)] = v;
}

extern "C" __global__ void ok_f32(const float* x, float* y, int M, int N) {
    __shared__ float s[256];
    int t = threadIdx.x;
    s[t] = x[blockIdx.x * N + (t % N)];
    __syncthreads();
    float v = s[(t + 1) % 256];
    y[blockIdx.x * N + (t % N)] = v;
}
"""
RACE_SPEC = """from verifier.spec import CudaKernel, Launch, dtypes


def _launch(entry):
    return lambda M, N, dt, params: [Launch(entry=entry, grid=(M,), block=(256,), args=("x", "y", "M", "N"))]


KERNELS = [CudaKernel(name=entry, op="softmax", source="race.cu", dtypes=[dtypes("f32")], launches=_launch(entry))
           for entry in ("race_f32", "ok_f32")]
"""


def p35_sarif_places(tmp: Path):
    d = tmp / "ké"
    d.mkdir()
    (d / "race.cu").write_text(RACE_CU)
    (d / "k_spec.py").write_text(RACE_SPEC)
    code, out, err = _verifier(tmp, "lint", "ké/k_spec.py", "--no-progress")
    seen = _pick(out, r"^- \[static\]")
    code2, out2, _ = _verifier(tmp, "check", "ké/k_spec.py", "--device", "cpu", "--level", "quick", "--no-progress",
                               "--format", "sarif")
    where = []
    for r in json.loads(out2)["runs"][0]["results"]:
        loc = r["locations"][0]["physicalLocation"]
        where.append(f"{r['properties']['kernel']}: {r['ruleId']} at {loc['artifactLocation']['uri']}:"
                     f"{loc['region']['startLine']}")
    return code, f"verifier lint: {seen}\nverifier check --format sarif (exit {code2}; URIs under SRCROOT):\n" + \
        "\n".join(where)


WRONG_SHAPE = GOOD + '''
def wrong_shape(inputs, outputs, params, dt):
    return {"y": torch.softmax(inputs["x"].float(), -1)[:, :1]}
'''


def p35_6_wrong_shape(tmp: Path):
    spec = _spec(tmp, WRONG_SHAPE + '''
KERNELS = [CallableKernel(name="wrongshape", op="softmax", fn=wrong_shape, dtypes=[dtypes("f32")]),
           CallableKernel(name="fine", op="softmax", fn=good, dtypes=[dtypes("f32")])]
''')
    code, out, err = _verifier(tmp, "check", spec, "--device", "cpu", "--level", "quick", "--no-progress")
    return code, _pick(out + err, r"^wrongshape ", r"^fine ", r"returned output 'y' of shape", r"fix: return tensors")


def p35_6_missing_cu(tmp: Path):
    spec = _spec(tmp, GOOD + '''
from verifier.spec import CudaKernel, Launch
KERNELS = [CudaKernel(name="nosource", op="softmax", source="missing.cu", dtypes=[dtypes("f32")],
                      launches=lambda M, N, dt, p: [Launch("k", (M,), (256,), ("x", "y", "M", "N"))]),
           CallableKernel(name="fine", op="softmax", fn=good, dtypes=[dtypes("f32")])]
''')
    code, out, err = _verifier(tmp, "check", spec, "--device", "cpu", "--level", "quick", "--no-progress")
    return code, _pick(out + err, r"^nosource ", r"^fine ", r"missing.cu does not exist", r"fix: set the kernel")


def p35_11_user_project(tmp: Path):
    (tmp / "specs").mkdir()
    (tmp / "specs" / "my_spec.py").write_text(HEADER + textwrap.dedent(WRONG_SHAPE + '''
KERNELS = [CallableKernel(name="wrongshape", op="softmax", fn=wrong_shape, dtypes=[dtypes("f32")]),
           CallableKernel(name="fine", op="softmax", fn=good, dtypes=[dtypes("f32")])]
'''))
    p = subprocess.run([PY, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "--verifier-specs",
                        "specs", "--verifier-level", "quick", "--verifier-device", "cpu", "-k", "normal_small"],
                       capture_output=True, text=True, cwd=tmp, env=_env(), timeout=600)
    text = p.stdout + p.stderr
    summary = re.sub(r" in [\d.]+s.*", "", _pick(text, r"\d+ failed").strip("= "))
    return p.returncode, summary + "\n" + _pick(text, r"^FAILED ", r"^error in the spec's own code",
                                                  r"^  fix: return tensors", r"^kernel-verifier: ")


# --- issue #35: hangs, clobbered inputs, launches of nothing, memory, signals -----------------------------
HANG = GOOD + '''
import time

def hangs(inputs, outputs, params, dt):
    while True:
        time.sleep(0.05)

KERNELS = [CallableKernel(name="hangs", op="softmax", fn=hangs, dtypes=[dtypes("f32")]),
           CallableKernel(name="good", op="softmax", fn=good, dtypes=[dtypes("f32")])]
'''


def p35_hang(tmp: Path):
    spec = _spec(tmp, HANG)
    code, out, err = _verifier(tmp, "check", spec, "--device", "cpu", "--level", "quick", "--no-progress",
                               "--kernel-timeout", "3")
    return code, _pick(out, r"^hangs ", r"^good ", r"did not finish within")


def p35_clobber(tmp: Path):
    spec = _spec(tmp, GOOD + '''
def zeroes_x(inputs, outputs, params, dt):
    good(inputs, outputs, params, dt)
    inputs["x"].zero_()

KERNELS = [CallableKernel(name="zeroes-x", op="softmax", fn=zeroes_x, dtypes=[dtypes("f32")])]
''')
    code, out, err = _verifier(tmp, "check", spec, "--device", "cpu", "--level", "quick", "--no-progress", "--case",
                               "normal_small")
    return code, _pick(out, r"^zeroes-x ", r"input 'x' changed")


def p35_torch_launcher(tmp: Path):
    (tmp / "torch_launcher.py").write_text("import torch\nimport triton\n\n\n@triton.jit\n"
                                           "def _unused(x):\n    pass\n\n\n"
                                           "def launch(inputs, outputs, params, dt):\n"
                                           "    outputs['y'].copy_(torch.softmax(inputs['x'].float(), -1))\n")
    spec = _spec(tmp, '''
from verifier.spec import TritonKernel
KERNELS = [TritonKernel(name="torch-inside", op="softmax", module="torch_launcher.py", launcher="launch",
                        dtypes=[dtypes("f32")])]
''')
    code, out, err = _verifier(tmp, "check", spec, "--device", "cpu", "--level", "quick", "--no-progress")
    return code, _pick(out, r"^torch-inside ", r"launched no Triton kernel")


def p35_memory(tmp: Path):
    spec = _spec(tmp, GOOD + 'KERNELS = [CallableKernel(name="good", op="softmax", fn=good, dtypes=[dtypes("f32")])]\n')
    code, out, err = _verifier(tmp, "check", spec, "--device", "cpu", "--level", "quick", "--no-progress", "--case",
                               "hypothesis:64x1000000000:rng0")
    seen = _pick(err, r"nothing was checked", r"needs about")
    return code, re.sub(r"more than the [\d.]+ GB available", "more than the <N> GB available", seen)


def _hanging_check(tmp: Path, *argv):
    """`verifier check` on a hanging kernel, its TMPDIR under ``tmp``, once its checking child hangs."""
    import time

    (tmp / "t").mkdir()
    spec = _spec(tmp, HANG)
    p = subprocess.Popen([PY, "-m", "verifier.cli", "check", spec, "--kernel", "hangs", "--device", "cpu", "--level",
                          "quick", "--no-progress", "--kernel-timeout", "60", *argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=_env(TMPDIR=str(tmp / "t")), cwd=tmp)
    children = Path(f"/proc/{p.pid}/task/{p.pid}/children")
    t0 = time.monotonic()
    while not children.read_text().split() and time.monotonic() - t0 < 30:
        time.sleep(0.05)
    time.sleep(2)
    return p, [int(c) for c in children.read_text().split()]


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def p35_sigterm(tmp: Path):
    import signal
    import time

    p, kids = _hanging_check(tmp)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    time.sleep(1)
    left = os.listdir(tmp / "t")
    return p.returncode, (_pick(err, r"terminated") + f"\nchildren alive after: {sum(map(_alive, kids))}; "
                          f"verifier-* folders left in TMPDIR: {len(left)}")


def p35_sigkill(tmp: Path):
    import time

    p, kids = _hanging_check(tmp, "--isolate")
    p.kill()
    p.communicate(timeout=30)
    time.sleep(2)
    alive = [k for k in kids if _alive(k)]
    for k in alive:
        os.kill(k, 9)
    return p.returncode, f"`verifier check` killed (SIGKILL) while its child checked a hung kernel; children alive " \
                         f"2 s after: {len(alive)}"


# --- issue #35: launches validated without a GPU; lint on library code -----------------------------------------
def p35_launch_mismatch(tmp: Path):
    code, out, err = _verifier(tmp, "check", str(REPO / "tests/data/cabi/mismatch_spec.py"), "--device", "cpu",
                               "--no-progress")
    return code, _pick(out, r"^- \[build\]", r"passes 5 arguments")


LIBRARY_SPEC = """from verifier.spec import CudaKernel, Launch, dtypes
DATA = {data!r}
KERNELS = [
    CudaKernel(name="cub-block-reduce-100", op="reduce_sum", source=DATA + "/cub_partial_block.cu",
               dtypes=[dtypes("f32")], launches=lambda M, N, dt, p: [Launch("cub_warp_reductions_100", (M,), (100,),
                                                                              ("x", "y", "N"))]),
    CudaKernel(name="welford-blockdim-y", op="reduce_sum", source=DATA + "/welford_cases.cu", dtypes=[dtypes("f32")],
               launches=lambda M, N, dt, p: [Launch("ntid_ok", (M,), (32, 8), ("x", "y", "M", "N"))]),
    CudaKernel(name="welford-missing-barrier", op="reduce_sum", source=DATA + "/welford_cases.cu",
               dtypes=[dtypes("f32")],
               launches=lambda M, N, dt, p: [Launch("ntid_missing_barrier_bad", (M,), (32, 8), ("x", "y", "M", "N"))]),
]
"""


def p35_lint_library(tmp: Path):
    (tmp / "lib_spec.py").write_text(LIBRARY_SPEC.format(data=str(REPO / "tests/data/lint")))
    code, out, err = _verifier(tmp, "lint", "lib_spec.py", "--no-progress")
    return code, _pick(out, r"^cub-block-reduce-100 ", r"^welford-blockdim-y ", r"^welford-missing-barrier ",
                       r"shared-race")


def p35_interpreter_and(tmp: Path):
    src = (REPO / "tests" / "test_interpreter_caveats.py").read_text()
    quote = "'" * 3
    start = src.index("BOOLOPS_MODULE = " + quote) + len("BOOLOPS_MODULE = " + quote)
    (tmp / "rowsum.py").write_text(src[start:src.index(quote, start)])
    (tmp / "k_spec.py").write_text("from verifier.spec import TritonKernel, dtypes\n"
                                   "KERNELS = [TritonKernel(name='rowsum-py-and', op='reduce_sum', module='rowsum.py', "
                                   "launcher='py_and', dtypes=[dtypes('f32')], "
                                   "supports=lambda M, N, d: None if N <= 4096 else 'N > 4096')]\n")
    code, out, err = _verifier(tmp, "check", "k_spec.py", "--device", "cpu", "--level", "quick", "--no-progress")
    return code, _pick(out, r"^rowsum-py-and ", r"interpreter gap")  # judged now: no gap line


def p35_initcheck_torch_fill(tmp: Path):
    from verifier.sanitizer import runs

    info = runs.ToolInfo(path="compute-sanitizer", version="2025.3",
                         options=frozenset({"tool", "xml", "save", "print-limit", "error-exitcode", "kernel-name",
                                            "kernel-name-exclude"}))
    lines = []
    for tool in ("memcheck", "initcheck"):
        cmd = runs.build_command(info, tool, "k.xml", "k.log", [], ["python", "-m", "verifier.sanitizer.child"])
        excl = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--kernel-name-exclude"]
        lines.append(f"{tool}: --kernel-name-exclude " + (" ".join(excl) if excl else
                     "none (torch's kernels, torch.zeros' fill among them, are instrumented: their writes count)"))
    return None, "\n".join(lines) + ("\non the H200: a tl.atomic_add on a torch.zeros counter, and Liger's cross "
                                     "entropy, initcheck-clean (docs/gpu-runs/2026-12-04-issues-34-35-36.md, runs 10-12)")


PROBES = [
    Probe("1-unreadable-xml", 1, "compute-sanitizer exits 86 (errors found), its XML cut short before the first "
          "record (a recorded XML truncated at 300 bytes)", p1_unreadable_xml),
    Probe("2-nvcc", 2, "nvcc missing: `PATH=/usr/bin:/bin verifier check kernels/cuda/softmax_spec.py`", p2_nvcc),
    Probe("2-compute-sanitizer", 2, "compute-sanitizer missing: `PATH=/usr/bin:/bin verifier sanitize "
          "kernels/cuda/softmax_spec.py`", p2_sanitizer),
    Probe("3-supports-bool", 3, "`supports=lambda M, N, dt: N <= 1024` (returns a bool)", p3_supports_bool, cheap=False),
    Probe("4-never-ran", 4, "`fn` with a wrong signature: TypeError on every input", p4_never_ran, cheap=False),
    Probe("5-segfault", 5, "a callable that segfaults on one input, without `--isolate`", p5_segfault, cheap=False),
    Probe("5-os-exit", 5, "a callable that calls `os._exit(1)`, without `--isolate`", p5_exit, cheap=False),
    Probe("6-xdist", 6, "`pytest -n 2 --max-worker-restart 1`: a callable that calls `os._exit(7)` in every test "
          "of its kernel", p6_xdist, cheap=False),
    Probe("7-pipe", 7, "`verifier check ... | head -0` on a clean run (the reader closed the pipe)", p7_pipe, cheap=False),
    Probe("7-format-help", 7, "`verifier check --help`: the --format line", p7_format_help),
    Probe("7-duplicate", 7, "two kernels named `twin` in one spec file", p7_duplicate),
    Probe("8-flaky", 8, "a callable wrong the first time it sees each input (right on a replay), `--level thorough`", p8_flaky, cheap=False),
    Probe("9-repro-budget", 9, "a finding at `--level thorough`, replayed with its repro line", p9_repro_budget,
          cheap=False),
    Probe("10-triton-resources", 10, "a Triton resources step that errors, then a UsageError (library step)",
          p10_triton_resources),
    Probe("11-timeout-env", 11, "`VERIFIER_KERNEL_TIMEOUT=soon pytest`", p11_timeout_env),
    Probe("11-suppressions", 11, "a `--verifier-sanitize` re-run's XML with a matching sanitizer-suppressions.toml "
          "entry (library step)", p11_suppressions),
    Probe("12-fp8-poison", 12, "the fp8 poison patterns (library table)", p12_fp8),
    Probe("35-1-hang", 1, "a callable that never returns, `verifier check --kernel-timeout 3` on the CPU (no "
          "`--isolate`); also `-j 1`, `-j 2`, `VERIFIER_KERNEL_TIMEOUT`, in-process and under pytest", p35_hang,
          cheap=False, issue=35,
          test="tests/test_hangs.py::test_a_hanging_callable_is_a_timeout_finding_and_the_other_kernel_is_checked"),
    Probe("35-2-clobber", 2, "a callable that zeroes its input after computing the right output", p35_clobber,
          cheap=False, issue=35,
          test="tests/test_inputs_unchanged.py::test_a_kernel_zeroing_its_input_is_input_clobbered_naming_the_element"),
    Probe("35-3-torch-launcher", 3, "a Triton launcher that computes with torch and launches no Triton kernel (CPU, "
          "interpreter)", p35_torch_launcher, cheap=False, issue=35,
          test="tests/test_triton_launched_nothing.py::test_a_launcher_computing_with_torch_is_the_kernels_error"),
    Probe("35-8-memory", 8, "`--case hypothesis:64x1000000000:rng0`: a case past the machine's memory",
          p35_memory, cheap=False, issue=35,
          test="tests/test_case_memory.py::test_the_cli_refuses_a_huge_case_before_allocating_it"),
    Probe("35-9-sigterm", 9, "SIGTERM to `verifier check` while a forked child checks a hung kernel", p35_sigterm,
          cheap=False, issue=35, test="tests/test_hangs.py::test_sigterm_cleans_up_and_exits_143"),
    Probe("35-10-sigkill", 10, "SIGKILL to `verifier check --isolate` while its child checks a hung kernel (a CI "
          "job's timeout)", p35_sigkill, cheap=False, issue=35,
          test="tests/test_hangs.py::test_children_die_with_a_killed_verifier"),
    Probe("35-4-launch-args", 4, "a launch passing 5 arguments to an 8-parameter entry, on a machine without a GPU "
          "(`tests/data/cabi/mismatch_spec.py`)", p35_launch_mismatch, cheap=False, issue=35,
          test="tests/test_launch_args.py::test_five_arguments_to_an_eight_parameter_kernel_fail_verifier_check_on_the_cpu"),
    Probe("35-12-lint-library", 12, "`verifier lint` on cub's BlockReduce in 100-thread blocks (a partial last warp) "
          "and a Welford merge stepped by `blockDim.y`, beside the merge without its second barrier",
          p35_lint_library, cheap=False, issue=35,
          test="tests/test_lint_library.py::test_a_welford_merge_stepped_by_blockdim_is_clean"),
    Probe("35-12-interpreter-and", 12, "a Triton kernel masking with Python `and` on block tensors, on the CPU "
          "(Triton's interpreter evaluates `and` as Python: the second operand; the verifier rewrites it as compiled "
          "Triton runs it)", p35_interpreter_and, cheap=False, issue=35,
          test="tests/test_interpreter_caveats.py::test_python_and_on_blocks_is_judged_once_rewritten"),
    Probe("35-12-initcheck-fill", 12, "initcheck on a kernel reading a counter that torch.zeros filled (library "
          "step: the command line; the GPU result recorded)", p35_initcheck_torch_fill, issue=35,
          test="tests/test_sanitizer_driver.py::test_every_mandatory_option_is_on_the_command_line"),
    Probe("35-5-unchecked", 5, "a CUDA kernel on a machine without a GPU (built, resource-checked, linted; values "
          "never checked): `verifier check kernels/defects/cuda/defects.py --kernel defect-spill-undeclared`",
          p35_unchecked, cheap=False, issue=35,
          test="tests/test_unchecked_verdict.py::test_cli_cuda_kernel_on_cpu_is_unchecked_and_require_values_fails_it"),
    Probe("35-5-require-values", 5, "the same with `--require-values` (CI that must check values)", p35_require_values,
          cheap=False, issue=35,
          test="tests/test_unchecked_verdict.py::test_cli_cuda_kernel_on_cpu_is_unchecked_and_require_values_fails_it"),
    Probe("35-5-markdown", 5, "the same with `--format markdown` (the PR comment)", p35_markdown, cheap=False, issue=35,
          test="tests/test_unchecked_verdict.py::test_markdown_headline_says_values_not_checked"),
    Probe("35-5-plugin", 5, "`pytest suites/test_ops.py --verifier-specs kernels/cuda/softmax_spec.py "
          "--verifier-require-values` without a GPU", p35_plugin, cheap=False, issue=35,
          test="tests/test_unchecked_verdict.py::test_plugin_require_values_fails_the_values_tests_it_would_leave_out"),
    Probe("35-6-wrong-shape", 6, "a callable returning an output of the wrong shape, beside a good kernel",
          p35_6_wrong_shape, cheap=False, issue=35,
          test="tests/test_one_kernel_stays_one.py::"
               "test_a_wrong_output_shape_or_a_missing_cu_is_that_kernels_error_and_the_good_kernel_passes"),
    Probe("35-6-missing-cu", 6, "a `CudaKernel` whose `.cu` does not exist, beside a good kernel",
          p35_6_missing_cu, cheap=False, issue=35,
          test="tests/test_one_kernel_stays_one.py::"
               "test_a_wrong_output_shape_or_a_missing_cu_is_that_kernels_error_and_the_good_kernel_passes"),
    Probe("35-11-user-project", 11, "`pytest --verifier-specs specs` in the user's own project (no "
          "suites/test_ops.py): a good kernel and one returning the wrong shape", p35_11_user_project, cheap=False,
          issue=35, test="tests/test_plugin_user_project.py::"
                         "test_the_spec_files_suites_are_generated_and_run_in_the_users_project"),
    Probe("35-7-cache-dir", 7, "`VERIFIER_CACHE_DIR` under a regular file (no directory can be made there, even by "
          "root): `verifier check kernels/cuda/softmax_spec.py`", p35_cache_dir, issue=35,
          test="tests/test_environment_errors.py::test_an_unusable_build_cache_is_exit_2_naming_the_setting"),
    Probe("35-7-home", 7, "`HOME` a regular file, no `VERIFIER_CACHE_DIR` (the cache under ~/.cache): `verifier lint "
          "kernels/cuda/softmax_spec.py`", p35_home, issue=35,
          test="tests/test_environment_errors.py::test_an_unusable_build_cache_is_exit_2_naming_the_setting"),
    Probe("35-7-output", 7, "`verifier check ... --output /proc/version` (unwritable, even by root)", p35_output,
          issue=35, test="tests/test_environment_errors.py::test_an_unwritable_output_stops_check_before_the_run"),
    Probe("35-7-full-disk", 7, "`verifier check ... --output /dev/full` (every write: no space left on device)",
          p35_full_disk, cheap=False, issue=35,
          test="tests/test_environment_errors.py::test_output_on_a_full_disk_is_exit_2"),
    Probe("35-9-lint-no-cuda", 9, "`verifier lint kernels/triton` (no CUDA kernel to lint)", p35_lint_nothing,
          issue=35, test="tests/test_lint_cli.py::test_nothing_to_lint_is_exit_4_nothing_checked"),
    Probe("35-9-locations", 9, "two CUDA kernels (one racy) declared in a list comprehension at line 8, their `.cu` "
          "under a non-ASCII directory `ké/`: `verifier lint`, `verifier check --format sarif` without a GPU",
          p35_sarif_places, cheap=False, issue=35,
          test="tests/test_report_locations.py::"
               "test_a_non_ascii_source_path_is_shown_as_itself_and_its_sarif_uri_resolves"),
]


def run_probe(probe: Probe) -> dict:
    with tempfile.TemporaryDirectory(prefix="verifier-probe-") as tmp:
        tmp = Path(tmp).resolve()
        code, seen = probe.fn(tmp)
    seen = seen.replace(str(tmp), "<tmp>").replace(str(REPO), "<repo>")
    out = {"id": probe.id, "item": probe.item, "fault": probe.fault, "exit": code, "seen": seen}
    if probe.issue != 16:
        out.update(issue=probe.issue, test=probe.test)
    return out


def render(results: dict) -> str:
    lines = [
        "# Reliability: injected faults, what the user sees, exit code",
        "",
        "Generated by `python tools/reliability_probes.py run --out docs/reliability.json && python "
        "tools/reliability_probes.py render --results docs/reliability.json --out docs/reliability.md`; "
        "tests/test_reliability_doc.py checks this page against the results and re-runs the cheap probes "
        "(`run --probe ID --out docs/reliability.json` re-runs one and keeps the others). The first table is "
        "numbered as the list of issue #16, each later section as its issue's. Exit codes (README): 0 every "
        "kernel passed (or is `unchecked`: values not checked), 1 findings, 2 usage error, 3 internal error, 4 "
        "nothing was checked; pytest's own: 1 tests failed, 4 usage error. "
        "\"-\": a library step, no command.",
        "",
        f"Probed on: {results.get('machine', 'unknown')}.",
        "",
        "| # | fault injected | what the user sees | exit |",
        "| --- | --- | --- | --- |",
    ]
    later = [r for r in results["probes"] if r.get("issue", 16) != 16]
    for r in results["probes"]:
        if r.get("issue", 16) == 16:
            lines.append(f"| {r['item']} | {_cell(r['fault'])} | {_cell(r['seen'])} | {_exit(r)} |")
    for issue in dict.fromkeys(r["issue"] for r in later):
        lines += ["", f"## Issue #{issue}", "",
                  f"Numbered as the list of issue #{issue}; each fault with the test that reproduces it.", "",
                  "| # | fault injected | what the user sees | exit | test |", "| --- | --- | --- | --- | --- |"]
        lines += [f"| {r['item']} | {_cell(r['fault'])} | {_cell(r['seen'])} | {_exit(r)} | `{r['test']}` |"
                  for r in later if r["issue"] == issue]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return "<br>".join(s.replace("|", "\\|") for s in text.splitlines())


def _exit(r: dict) -> str:
    return "-" if r["exit"] is None else str(r["exit"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", help="write the results JSON here (default: print them)")
    r.add_argument("--probe", action="append", help="only these probe ids (with --out: merged into that file)")
    d = sub.add_parser("render")
    d.add_argument("--results", required=True)
    d.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if args.cmd == "run":
        known = {p.id for p in PROBES}
        bad = [p for p in args.probe or [] if p not in known]
        if bad:
            print(f"reliability_probes: unknown probe {bad[0]}; one of {', '.join(sorted(known))}", file=sys.stderr)
            return 2
        results = []
        for p in PROBES:
            if args.probe and p.id not in args.probe:
                continue
            print(f"probe {p.id} ...", file=sys.stderr)
            results.append(run_probe(p))
        data = {"machine": "CPU only (no CUDA GPU), torch CPU build, nvcc 13.0 (the nvcc probe takes it off PATH)",
                "probes": results}
        if args.probe and args.out and Path(args.out).exists():  # some probes re-run: the others' results are kept
            kept = {r["id"]: r for r in json.loads(Path(args.out).read_text())["probes"]}
            kept.update({r["id"]: r for r in results})
            data["probes"] = [kept[p.id] for p in PROBES if p.id in kept]
        if args.out:
            Path(args.out).write_text(json.dumps(data, indent=1) + "\n")
        else:
            print(json.dumps(data, indent=1))
        return 0
    Path(args.out).write_text(render(json.loads(Path(args.results).read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
