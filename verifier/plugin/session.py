"""The session state behind verifier.pytest_plugin's hooks: validated options, the registered kernels, the
parametrization of suites, the process's CUDA state, and how findings are shown.

Nothing here runs unless a hook calls it; the first suite module collected commits the process to compiled or
interpreted Triton (activate_triton), so a session without verifier tests keeps its environment.
"""
from __future__ import annotations

import fnmatch
import os
import shlex
from collections import Counter
from pathlib import Path
from typing import Optional

import pytest

from verifier.battery import gate
from verifier.battery.plan import STEP_NAMES
from verifier.constants import DEVICES, SANITIZER_TOOLS
from verifier.declare import registry
from verifier.declare.usercode import UserCodeError
from verifier.errors import SpecError, UsageError
from verifier.gpu.probe import resolve_device
from verifier.declare import contracts as _contracts
from verifier.inputs.cases import cases_for, draw
from verifier.ops import OPS
from verifier.launch import runnable_reason
from verifier.report.text import format_finding
from verifier.results.levels import TABLE as LEVELS
from verifier.results.options import Options, check_setting, environment_timeout
from verifier.results.run import sorted_findings

BUNDLED_KERNELS = Path(__file__).resolve().parent.parent.parent / "kernels"
# catalogued defective kernels (the detection matrix's) and other projects' kernels (tests/test_third_party.py runs
# them, at the quick level: the Triton interpreter is slow on their long rows) are not the suites'
SKIPPED_BUNDLED_DIRS = ("defects", "third_party")
ENTRY_POINT_GROUP = "kernel_verifier.specs"
CHILD_ENV = "VERIFIER_PYTEST_CHILD"  # set in child pytest runs: no re-isolation, no sanitizer re-runs
PARAMS = ("verifier_kernel", "verifier_dtypes", "verifier_case")


def _source(config, flags: tuple, envs: tuple) -> str:
    """The spelling the user wrote a setting with: the first of ``flags`` on the command line, else the first of
    ``envs`` set, else the first flag."""
    args = [str(a) for a in config.invocation_params.args]
    for flag in flags:
        if any(a == flag or a.startswith(flag + "=") for a in args):
            return flag
    return next((e for e in envs if os.environ.get(e) is not None), flags[0])


def validated(config) -> dict:
    """The --verifier-* options, checked by the Options rules (verifier.results.options): a bad one is a pytest
    usage error naming the option or variable the user set."""
    opt = config.getoption
    dev, level, seed = opt("--verifier-device"), opt("verifier_level"), opt("--verifier-seed")
    if dev not in DEVICES:
        raise pytest.UsageError(f"--verifier-device {dev!r}: choose one of {', '.join(DEVICES)}")
    try:
        level = check_setting("level", level, _source(config, ("--verifier-level", "--verifier-budget"),
                                                      ("VERIFIER_LEVEL", "VERIFIER_BUDGET")))
        seed = check_setting("seed", seed, _source(config, ("--verifier-seed",), ("VERIFIER_SEED",)))
    except UsageError as e:
        raise pytest.UsageError(str(e)) from None
    specs = []
    for p in opt("--verifier-specs"):
        if not Path(p).exists():
            raise pytest.UsageError(f"--verifier-specs {p}: no such file or directory "
                                    "(pass a spec file or a directory holding spec.py / *_spec.py files)")
        specs.append(str(Path(p).resolve()))
    tools = opt("--verifier-sanitize-tool") or ["memcheck"]
    bad = [t for t in tools if t not in SANITIZER_TOOLS]
    if bad:
        raise pytest.UsageError(f"--verifier-sanitize-tool {bad[0]!r}: choose one of {', '.join(SANITIZER_TOOLS)}")
    globs = [g.strip() for g in (opt("--verifier-kernels") or "").split(",") if g.strip()]
    try:
        environment_timeout()
    except UsageError as e:
        raise pytest.UsageError(str(e)) from None
    child = os.environ.get(CHILD_ENV) == "1"
    return {"device": dev, "level": level, "seed": seed, "specs": specs, "globs": globs,
            "bundled": bool(opt("--verifier-bundled")),
            "sanitize": opt("--verifier-sanitize") and not child, "tools": list(dict.fromkeys(tools)),
            "child": child, "strict": bool(opt("--verifier-strict")),
            "require_values": bool(opt("--verifier-require-values"))}


def activate_triton(device: str):
    """Commit the process to compiled or interpreted Triton before any test module imports triton:
    importing triton fixes the mode of its own tl.sum / tl.max (see verifier/launch/triton.py).
    Runs after GPU pinning: deciding the mode asks torch whether CUDA is available."""
    import importlib.util

    if importlib.util.find_spec("triton") is None:
        return
    from verifier.launch.triton import activate  # its module is cheap; triton itself is imported on launch

    try:
        activate(os.environ.get("VERIFIER_TRITON_MODE") or ("interpreter" if device == "cpu" else None))
    except UsageError as e:
        raise pytest.UsageError(str(e)) from None


def bundled_spec_files(root: Path = BUNDLED_KERNELS) -> list:
    if not root.is_dir():
        return []
    return [f for f in registry.find_spec_files([root])
            if not set(f.relative_to(root.resolve()).parts) & set(SKIPPED_BUNDLED_DIRS)]


def entry_point_spec_files() -> list:
    """Spec modules named by ``[project.entry-points."kernel_verifier.specs"] mine = "pkg.my_spec"``.
    The module is loaded as a spec file by path (not imported), like any other spec file."""
    import importlib.util
    from importlib.metadata import entry_points  # looked up at call time: tests replace it

    files = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            found = importlib.util.find_spec(ep.module)
        except (ImportError, ValueError):
            found = None
        if found is None or not found.origin or not found.origin.endswith(".py"):
            raise UsageError(f"entry point {ep.name} = {ep.value!r} (group {ENTRY_POINT_GROUP}) names no Python "
                             "module file", fix="point it at a spec module: mine = \"mypkg.kernels_spec\"")
        files.append(found.origin)
    return files


def registered_kernels(config) -> list:
    """Every selected kernel (cached per session); a broken spec or a glob matching nothing is a usage error."""
    v = config._verifier
    if "kernels" not in v:
        activate_triton(v["device"])  # before any spec file, in a session that collects suites
        try:
            paths = [str(f) for f in bundled_spec_files()] + v["specs"] + entry_point_spec_files()
            kernels = registry.load(paths) if paths else []
            if v["globs"]:
                kernels = [k for k in kernels if any(fnmatch.fnmatchcase(k.name, g) for g in v["globs"])]
                if not kernels:
                    raise UsageError(f"--verifier-kernels {','.join(v['globs'])} matches no registered kernel",
                                     fix="list them with `verifier list kernels/` (plus your --verifier-specs)")
            if any(k.builds_source for k in kernels):  # their builds land in the cache: unusable, say so now
                from verifier.toolchain.nvcc import usable_cache_dir

                usable_cache_dir()
        except UsageError as e:
            raise pytest.UsageError(str(e)) from None
        v["kernels"] = kernels
    return v["kernels"]


def resolved_device(config) -> str:
    v = config._verifier
    if "resolved" not in v:
        try:
            v["resolved"] = resolve_device(v["device"])
        except UsageError as e:  # the battery names its CLI option
            raise pytest.UsageError(str(e).replace("--device", "--verifier-device")) from None
    return v["resolved"]


def options(config) -> Options:
    """The battery Options of this session (device resolved)."""
    v = config._verifier
    return Options(level=v["level"], seed=v["seed"], device=resolved_device(config), sanitize=v["sanitize"])


def _runs_on_gpu(spec, device: str) -> bool:
    return spec.builds_source or (device == "cuda" and (spec.uses_triton or getattr(spec, "device", "") == "cuda"))


def _marks(spec, device: str) -> list:
    if _runs_on_gpu(spec, device):
        return [pytest.mark.gpu]
    return [pytest.mark.interpreter] if spec.uses_triton else []


# The steps of a generated suite (suites/test_ops.py marks each test ``verifier(op=..., step=...)``).
STEPS = STEP_NAMES  # the battery's plan (verifier.battery.plan), one test per step
NO_SANITIZER_GPU = "no CUDA GPU: compute-sanitizer re-runs need one"
# a tool instruments every access: minutes for a launch over 2^32 elements; their offset bugs show as faults, wrong
# and unwritten rows without it
LARGE_NOT_SANITIZED = "a large case (over 2^31 elements) is not re-run under compute-sanitizer (minutes a launch)"
# Suite tests not generated because on this machine they could only skip: reason -> count. Shown in one line at
# the end of the session (pytest_terminal_summary); an xdist worker hands its count to the controller.
NOT_GENERATED: Counter = Counter()


def known_skip(spec, step: str, device: str, level: str) -> Optional[str]:
    """Why test ``step`` of ``spec`` can only skip on ``device`` at ``level``, known before it runs (None: it runs).
    The checker skips with these words; a generated suite does not generate such a test at all."""
    missing = spec.unavailable() if hasattr(spec, "unavailable") else None
    if missing:  # a package it needs (its headers, its kernels) is not installed here
        return missing
    if step == "build":
        why = spec.build_skip(device)
        return None if why is None else "nothing to build: " + ("Triton's " + why if spec.uses_triton else spec.what)
    if step == "static":
        return spec.static_skip()
    why = runnable_reason(spec, device)
    if why:
        return why
    if step == "shapes" and not LEVELS[level].hypothesis:
        return f"level {level} draws no Hypothesis shapes (verifier.results.levels); use --verifier-level ci or thorough"
    return None


def values_not_checked(why: str) -> str:
    """The failure of a values test that cannot check values here, under --verifier-require-values."""
    return (f"values not checked: {why}; --verifier-require-values fails such a test (run it where its values can "
            "be checked, e.g. a CUDA kernel on a GPU machine, or leave the option out)")


def _refused(spec, dt, case, device: str, level: Optional[str] = None) -> Optional[str]:
    """Why the per-case gate closes ``case`` before its inputs are drawn (supports()'s refusal, a declared layout,
    a device that cannot hold it, a large case the level leaves to a GPU), or None; a spec error is left to its
    test."""
    try:
        closed = gate.before_inputs(spec, dt, case.name, case.M, case.N, case.layout, device, level)
    except (UserCodeError, SpecError):
        return None
    if closed is None:
        return None
    if closed.kind == gate.REFUSED:
        return "a case the kernel's supports() refuses (verifier check notes it)"
    return f"a case not checked here ({closed.reason}; verifier check notes it)"


def _closed_by_inputs(spec, dt, case, device: str, seed) -> Optional[str]:
    """Why the gate closes ``case`` once its inputs are drawn (an interpreter caveat: bf16 subnormals in the Triton
    interpreter; a declared contract leaving NaN or inf inputs out), or None. Drawn here only where the gate can
    close, with the test's own seed: the test would draw the same inputs and only skip."""
    c, _ = _contracts.effective(spec)
    may_close = (spec.interpreted(device) and dt.input == "bfloat16") or not (
        c.nan_inputs == "propagate" and c.inf_inputs == "propagate")
    if not may_close or getattr(case.layout, "large", False):
        return None
    try:
        closed = gate.after_inputs(spec, dt, case.name, draw(spec, dt, case, seed), device)
    except Exception:  # noqa: BLE001 - the spec's own code raised: its test reports it
        return None
    if closed is None:
        return None
    if closed.kind == gate.INTERPRETER:
        return closed.reason
    return f"a case whose inputs the kernel's declared contracts leave out ({closed.reason})"


def suite_params(config, op: str, names: tuple, step: Optional[str] = None, origin: Optional[str] = None) -> list:
    """The pytest.params of a suite test of ``op`` taking ``names`` (a prefix of PARAMS): one per registered
    kernel (x dtype (x case)), ids ``NAME[-TAG[-CASE]]``, plus a ``-TOOL`` re-run per sanitizer tool asked for.
    With ``step`` (one of STEPS: a generated suite), a test that could only skip here (known_skip, a refused
    case, a case whose drawn inputs the gate closes, a sanitizer re-run without a GPU) is not generated;
    NOT_GENERATED counts it, with the reason. With ``origin`` (a spec file's generated suites), only the kernels
    that file declares."""
    device, v = resolved_device(config), config._verifier
    params = []
    for k in registered_kernels(config):
        if OPS[k.op].base != op or (origin is not None and k.origin != origin):  # a variant: its op's suite
            continue
        why = known_skip(k, step, device, v["level"]) if step else None
        variants = [((k,), k.name)] if len(names) == 1 else [((k, d), f"{k.name}-{d.tag}") for d in k.dtypes]
        if why and step == "values" and v.get("require_values"):  # one failing test per dtype says why
            params += [pytest.param(*vals, None, id=f"{ident}-values-not-checked",
                                    marks=[pytest.mark.verifier_values_not_checked(values_not_checked(why))])
                       for vals, ident in variants]
            continue
        if why:
            n = _count(k, variants, names, v["level"])
            NOT_GENERATED[why] += n
            if v["sanitize"] and len(names) > 1 and k.own_device_code:
                NOT_GENERATED[NO_SANITIZER_GPU] += n * len(v["tools"])
            continue
        if len(names) == 3:
            cased = []
            for vals, ident in variants:
                try:
                    cases = cases_for(k, vals[1], v["level"])
                except (UserCodeError, SpecError) as e:  # this kernel's error: one failing test, the others run
                    params.append(pytest.param(*vals, None, id=f"{ident}-spec-error",
                                               marks=[pytest.mark.verifier_spec_error(str(e))]))
                    continue
                for c in cases:
                    refused = _refused(k, vals[1], c, device, v["level"]) if step else None
                    if step and not refused:
                        refused = _closed_by_inputs(k, vals[1], c, device, v["seed"])
                    if refused:
                        NOT_GENERATED[refused] += 1
                    else:
                        cased.append((vals + (c,), f"{ident}-{c.name}"))
            variants = cased
        for vals, ident in variants:
            params.append(pytest.param(*vals, id=ident, marks=_marks(k, device)))
            if v["sanitize"] and len(names) > 1 and k.own_device_code:
                if step and device != "cuda":
                    NOT_GENERATED[NO_SANITIZER_GPU] += len(v["tools"])
                    continue
                if len(vals) > 2 and getattr(vals[2].layout, "large", False):
                    NOT_GENERATED[LARGE_NOT_SANITIZED] += len(v["tools"])
                    continue
                params += [pytest.param(*vals, id=f"{ident}-{tool}", marks=[
                    pytest.mark.gpu, pytest.mark.sanitizer, pytest.mark.verifier_rerun(tool)])
                    for tool in v["tools"]]
    return params


def _count(k, variants, names, level) -> int:
    """Tests a kernel's variants stand for (its cases for a values test, with their sanitizer re-runs)."""
    if len(names) < 3:
        return len(variants)
    n = 0
    for vals, _ in variants:
        try:
            n += len(cases_for(k, vals[1], level))
        except UserCodeError:
            n += 1
    return n


def drop_empty_suites(items: list) -> None:
    """Remove the one skipped item pytest makes for a generated suite test with no parameters (every kernel's
    test of that step could only skip here): it is counted with the others instead."""
    keep = []
    for item in items:
        marker = item.get_closest_marker("verifier")
        skip = item.get_closest_marker("skip")
        if marker is not None and marker.kwargs.get("step") and skip is not None and \
                str(skip.kwargs.get("reason", "")).startswith("got empty parameter set"):
            NOT_GENERATED["generated suite tests left with no kernel that runs here"] += 1
            continue
        keep.append(item)
    items[:] = keep


def not_generated_line(counts) -> Optional[str]:
    """The one summary line of the tests not generated here, or None when every test was generated."""
    total = sum(counts.values())
    if not total:
        return None
    parts = "; ".join(f"{n} {why}" for why, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"kernel-verifier: {total} tests not generated on this machine, where they could only skip: {parts}"


class _State:
    poisoned: str | None = None  # the CUDA fault that made this process's context unusable

STATE = _State()


def worker_property() -> list:
    """[("worker", "gw3")] in a pytest-xdist worker, else []: junit then shows which worker (and GPU) ran a test."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return [("worker", worker)] if worker else []


def repro_command(config, nodeid: str) -> str:
    """The pytest command line that re-runs one test with this session's options."""
    v = config._verifier
    parts = ["pytest", nodeid, "--verifier-level", v["level"], "--verifier-seed", str(v["seed"])]
    if v["device"] != "auto":
        parts += ["--verifier-device", v["device"]]
    for p in v["specs"]:
        rel = os.path.relpath(p, config.invocation_params.dir)
        parts += ["--verifier-specs", p if rel.startswith("..") else rel]
    return " ".join(shlex.quote(p) for p in parts)


class VerifierWarning(UserWarning):
    """A finding of severity warning: something undeclared (a spill with no limit declared) that passes."""


def format_findings(findings) -> str:
    """Findings worst first, as the text report shows them: check class, where, message, repro line."""
    return "\n".join(line for f in sorted_findings(findings) for line in format_finding(f))
