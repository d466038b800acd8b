"""SARIF 2.1.0 report, for GitHub code scanning (github/codeql-action/upload-sarif).

One rule per check class (``verifier/racecheck``); one result per finding, at the source line a sanitizer
finding names, else at the kernel's declaration in its spec file. Paths are relative to SRCROOT (the
repository root). ``partialFingerprints`` hash what identifies a finding (kernel, check, dtype, input case,
file, line), never the message, whose numbers change from run to run, so alerts stay matched across pushes.
"""
from __future__ import annotations

import hashlib
import json as _json
from pathlib import Path
from urllib.parse import quote

from verifier.constants import SANITIZER_TOOLS
from verifier.results.findings import CHECK_CLASSES
from verifier.results.paths import declaration_line, relative, shown_repro, source_root
from verifier.results.run import sorted_findings

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_NAME = "kernel-verifier"
FINGERPRINT_KEY = "kernelVerifierFinding/v1"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}

# check class -> (short description, full description, what to do)
RULES = {
    "build": ("CUDA source does not build",
              "nvcc failed on the kernel's source, or an entry point named by the spec's launches is missing "
              "from the cubin.",
              "Read the compiler diagnostics in the message; check that each Launch.entry names a __global__ "
              "function of the cubin (extern \"C\" name, C++ name with template arguments, or mangled symbol)."),
    "resources": ("Resource usage over the spec's expectations, or undeclared",
                  "ptxas (or the compiled Triton kernel) reports registers, spill bytes or stack bytes above "
                  "what the spec's Expectations allow (an error), or spills / stack use while the spec declares "
                  "no limit (a warning, at the kernel's entry).",
                  "Reduce register pressure (smaller per-thread tiles, fewer live values) or raise the limit in "
                  "the spec if the cost is intended."),
    "static": ("Race, barrier or offset defect found in the PTX (verifier lint)",
               "Static analysis of the PTX nvcc emits found a barrier not every thread reaches, a shared-memory "
               "access pair of two threads with no barrier between them, a warp collective whose mask names "
               "inactive lanes, a store every block makes to one global address, or a global address whose "
               "32-bit row offset wraps at a large shape the spec accepts.",
               "Go to the two source lines the finding names; `verifier lint SPEC --kernel NAME` re-runs it."),
    "refusal": ("Shape handling does not match supports()",
                "The kernel ran on a shape its supports() refuses, failed with an unclear error instead of "
                "refusing, or refused a shape supports() accepts.",
                "Make supports(M, N, dtypes) and the kernel agree: refuse unsupported shapes before launching."),
    "value": ("Output outside its ULP budget",
              "Output elements differ from the certified float64 reference by more ULPs of the output dtype "
              "than the per-element, condition-aware budget allows.",
              "Run the repro command; the message names the worst element, its value and the expected value."),
    "rounding": ("Output biased or not correctly rounded",
                 "Every element is within its ULP budget, but over the whole output more elements are not "
                 "correctly rounded, or the mean signed error is farther from zero, than the kernel's error model "
                 "allows (truncating casts, intermediates rounded to the I/O dtype): a bias that accumulates "
                 "downstream.",
                 "Round to nearest even when converting to the output dtype and keep intermediates in fp32; declare "
                 "an intermediate rounded on purpose with tolerance={'base_ulps': 2}."),
    "invariant": ("Op invariant violated",
                  "A mathematical property of the op (softmax rows sum to 1, normalised rows have unit RMS, ...) "
                  "does not hold within its bound.",
                  "Run the repro command; the message names the invariant, the worst row and the bound."),
    "nan-inf": ("Unexpected NaN or infinity",
                "The output holds NaN or infinity where the reference is finite (or the reverse).",
                "Check max subtraction, masked rows and divisions by zero; run the repro command."),
    "unwritten": ("Output elements left unwritten",
                  "Output elements still hold the poison pattern written before the launch: the kernel skipped "
                  "them (often a row tail).",
                  "Check loop bounds and the tail handling for N not a multiple of the block or vector width."),
    "out-of-range-write": ("Write outside the output tensor",
                           "Guard bands around an output tensor changed: the kernel wrote out of bounds.",
                           "Check index arithmetic and bounds guards; run with `verifier check --sanitize` for the "
                           "faulting line."),
    "out-of-range-read": ("Read outside a tensor",
                          "A load of the Triton kernel (in the interpreter) landed in the guard band before or after "
                          "an input or output tensor: on a GPU it reads whatever lies there, or faults.",
                          "Mask the load with the tensor's bounds, or clamp the index; on a GPU `verifier check "
                          "--sanitize` (memcheck) names the line."),
    "input-clobbered": ("Input changed by the kernel",
                        "An input tensor's bits differ after the call: the kernel wrote into it (scratch, an in-place "
                        "update, a gradient over the logits), which the caller's tensor does not expect.",
                        "Write into an output, or declare it: KernelSpec(outputs_alias={'y': 'x'}) for an output "
                        "written over an input, KernelSpec(scratch_inputs=('x',)) for an input used as scratch."),
    "determinism": ("Output not bitwise reproducible",
                    "Two runs on the same input gave different bits, but the spec declares the kernel "
                    "deterministic (or a nondeterministic kernel left its tolerance).",
                    "Look for atomics or races in the reduction order, or declare Expectations(deterministic=False)."),
    "crash": ("Kernel crashed",
              "The kernel faulted (illegal address, launch failure) or the process checking it died.",
              "Run the repro command under compute-sanitizer (`verifier check --sanitize`)."),
    "timeout": ("Checks did not finish in time",
                "The kernel's checks were killed after the time limit: a hang or a very slow kernel.",
                "Look for barriers not reached by every thread and loops whose bounds depend on the input."),
    "racecheck": ("Shared-memory data race (compute-sanitizer racecheck)",
                  "compute-sanitizer racecheck saw a read and a write (or two writes) to one shared-memory "
                  "address from different threads with no barrier between them.",
                  "Add __syncthreads() (or __syncwarp()) between the write and the read the finding names."),
    "memcheck": ("Invalid memory access (compute-sanitizer memcheck)",
                 "compute-sanitizer memcheck saw an out-of-bounds or misaligned access, or a leak.",
                 "Check the index at the line the finding names against the tensor's extent."),
    "synccheck": ("Invalid barrier use (compute-sanitizer synccheck)",
                  "compute-sanitizer synccheck saw a barrier in divergent code or with an invalid mask.",
                  "Make every thread of the block (or warp mask) reach the barrier the finding names."),
    "initcheck": ("Read of uninitialised memory (compute-sanitizer initcheck)",
                  "compute-sanitizer initcheck saw a read of device memory that was never written.",
                  "Initialise the buffer, or stop the kernel reading past what was written."),
}
assert set(RULES) == set(CHECK_CLASSES), "every check class needs a SARIF rule"
# Not a check class: a kernel whose values were never checked (verdict 'unchecked'), one result at its declaration,
# a note (an error under --require-values), so code scanning never shows such a kernel as clean.
UNCHECKED = "unchecked"
EXTRA_RULES = {
    UNCHECKED: ("Values not checked",
                "Only the kernel's build, resources and static checks ran: its outputs were never compared with the "
                "reference (a CUDA kernel on a machine without a GPU). Its verdict is 'unchecked', not 'pass'.",
                "Run `verifier check` on a GPU machine; `--require-values` makes such a kernel fail the run."),
}
RULES_SANITIZER = SANITIZER_TOOLS


def rule_id(check: str) -> str:
    return f"verifier/{check}"


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version(TOOL_NAME)
    except metadata.PackageNotFoundError:
        return "0+unknown"


def _information_uri() -> str:
    """The project's home page from its package metadata, else its PyPI page."""
    from importlib import metadata

    try:
        meta = metadata.metadata(TOOL_NAME)
    except metadata.PackageNotFoundError:
        meta = None
    if meta is not None:
        if meta.get("Home-page"):
            return meta["Home-page"]
        for entry in meta.get_all("Project-URL") or []:
            label, _, url = entry.partition(",")
            if label.strip().lower() in ("homepage", "home", "source", "repository") and url.strip():
                return url.strip()
    return f"https://pypi.org/project/{TOOL_NAME}/"


def _rules() -> list[dict]:
    return [{
        "id": rule_id(c),
        "name": "".join(w.capitalize() for w in c.split("-")),
        "shortDescription": {"text": short},
        "fullDescription": {"text": full},
        "help": {"text": f"{full} Fix: {fix}", "markdown": f"{full}\n\n**Fix:** {fix}"},
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["correctness", "gpu", "sanitizer" if c in RULES_SANITIZER else "battery"]},
    } for c, (short, full, fix) in (RULES | EXTRA_RULES).items()]


def _location(f, spec, root: Path) -> tuple[str, int]:
    """(repo-relative path, line): the finding's own source line, else (or with no finding) the kernel's line in
    its spec file."""
    file = relative(f.file, root) if f is not None else None
    if file:
        return file, f.line if f.line and f.line >= 1 else 1
    return relative(spec.origin, root) or "unknown-spec-file", declaration_line(root, spec)


def _artifact(path: str) -> dict:
    """Paths inside the checkout are relative to SRCROOT; a path outside it can only be an absolute file URI."""
    if path.startswith("/"):
        return {"uri": Path(path).as_uri()}
    return {"uri": quote(path), "uriBaseId": "SRCROOT"}


def _fingerprint(parts: tuple, seen: dict) -> str:
    key = "\x1f".join("" if p is None else str(p) for p in parts)
    seen[key] = seen.get(key, 0) + 1
    if seen[key] > 1:  # several findings with one identity (e.g. two spilling entries): number them in order
        key += f"\x1f#{seen[key]}"
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def _message(f, spec, root: Path) -> str:
    where = ", ".join(x for x in (f.dtype, f.input and f"case {f.input}",
                                  f"shape {tuple(f.shape)}" if f.shape else "") if x)
    text = f"[{spec.name}] {f.check}" + (f" ({where})" if where else "") + f": {f.message}"
    if f.repro:
        text += f"\nReproduce: {shown_repro(f.repro, root)}"
    return text


def to_dict(result) -> dict:
    root = source_root(result)
    index = {c: i for i, c in enumerate(RULES | EXTRA_RULES)}
    results, seen = [], {}
    for r in result.reports:
        if r.verdict == UNCHECKED:
            uri, line = _location(None, r.spec, root)
            results.append({
                "ruleId": rule_id(UNCHECKED), "ruleIndex": index[UNCHECKED],
                "level": "error" if result.options.get("require_values") else "note",
                "message": {"text": f"[{r.spec.name}] values not checked: {'; '.join(r.unchecked_values())}"},
                "locations": [{"physicalLocation": {"artifactLocation": _artifact(uri),
                                                    "region": {"startLine": line}}}],
                "partialFingerprints": {FINGERPRINT_KEY: _fingerprint((r.spec.name, UNCHECKED, uri, line), seen)},
                "properties": {"kernel": r.spec.name, "op": r.spec.op, "kind": r.spec.kind},
            })
        for f in sorted_findings(r.findings):
            uri, line = _location(f, r.spec, root)
            results.append({
                "ruleId": rule_id(f.check),
                "ruleIndex": index[f.check],
                "level": _LEVEL[f.severity],
                "message": {"text": _message(f, r.spec, root)},
                "locations": [{"physicalLocation": {
                    "artifactLocation": _artifact(uri),
                    "region": {"startLine": line},
                }}],
                "partialFingerprints": {
                    FINGERPRINT_KEY: _fingerprint((r.spec.name, f.check, f.dtype, f.input, uri, line), seen)},
                "properties": {"kernel": r.spec.name, "op": r.spec.op, "kind": r.spec.kind, "dtype": f.dtype,
                               "input": f.input, "shape": list(f.shape) if f.shape else None, "seed": f.seed},
            })
    errors = [{"level": "error", "message": {"text": f"{r.spec.name}: internal error: {r.error}"}}
              for r in result.reports if r.internal_error]
    spec_errors = [{"level": "error", "message": {"text": f"{r.spec.name}: error in the spec's own code: {r.error}"}}
                   for r in result.reports if r.error and not r.internal_error]
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": TOOL_NAME, "version": _version(),
                                "informationUri": _information_uri(), "rules": _rules()}},
            "originalUriBaseIds": {"SRCROOT": {"uri": root.as_uri() + "/"}},
            "invocations": [{"executionSuccessful": not errors,
                             "toolExecutionNotifications": errors + spec_errors}],
            "results": results,
            "properties": {"summary": result.summary(), "environment": result.environment, "options": result.options},
        }],
    }


def render(result) -> str:
    return _json.dumps(to_dict(result), indent=2, default=str) + "\n"
