"""The detection matrix: load the defect catalogue (kernels/defects/*/defects.py) with each defect's
twin, and run the battery on them. Used by suites/test_detection_matrix.py, tools/detection_table.py
and tools/assert_close_matrix.py (import it by path: kernels/ is not a package).

A defect spec file defines KERNELS and DEFECTS = {name: {caught_by, twin, pitfall, exposing_input,
device[, severity]}} (severity 'warning': the class reports it as a warning, e.g. an undeclared spill); `exposing_input` is a catalogue case name (run alone with Options(case=...)) or a free
description for checks that need no case (resources, determinism), in which case the whole battery runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from verifier.errors import SpecError
from verifier.results.findings import CHECK_CLASSES
from verifier.spec import KernelSpec

HERE = Path(__file__).resolve().parent
KERNELS_DIR = HERE.parent
DEFECT_FILES = (HERE / "cuda" / "defects.py", HERE / "triton" / "defects.py", HERE / "callable" / "defects.py")
BUNDLED_DIRS = (KERNELS_DIR / "cuda", KERNELS_DIR / "triton")
DEFECT_KEYS = ("caught_by", "twin", "pitfall", "exposing_input", "device")
OPTIONAL_KEYS = {"severity": "error"}  # 'warning': caught as a warning (an undeclared fact), not an error
SEVERITIES = ("error", "warning")
SANITIZER_CLASSES = ("racecheck", "memcheck", "synccheck", "initcheck")
DEVICES = ("cpu", "gpu")


@dataclass(frozen=True)
class Entry:
    name: str
    caught_by: str
    twin: str
    pitfall: str
    exposing_input: str
    device: str  # where the declared class can catch it: 'cpu' (CI) or 'gpu'
    spec: KernelSpec
    twin_spec: KernelSpec
    source_file: str
    severity: str = "error"  # the severity its class reports it with

    @property
    def sanitizer(self) -> bool:
        return self.caught_by in SANITIZER_CLASSES


def _module_defects(path: Path) -> dict:
    import sys

    from verifier.declare.registry import _module_name, load_spec_file

    load_spec_file(path)  # validates KERNELS, caches the module
    defects = getattr(sys.modules[_module_name(path.resolve())], "DEFECTS", None)
    if not isinstance(defects, dict) or not defects:
        raise SpecError(f"{path} defines no DEFECTS dict", fix="add DEFECTS = {'defect-name': {...}} next to KERNELS")
    return defects


def _validate(path: Path, name: str, d: dict, kernels: dict, twins: dict, all_defects: set) -> Optional[str]:
    if not isinstance(d, dict):
        return f"{name}: entry is {type(d).__name__}, not a dict"
    missing, extra = set(DEFECT_KEYS) - set(d), set(d) - set(DEFECT_KEYS) - set(OPTIONAL_KEYS)
    if missing or extra:
        return f"{name}: keys missing {sorted(missing)}, unknown {sorted(extra)}"
    if not all(isinstance(d[k], str) and d[k].strip() for k in DEFECT_KEYS):
        return f"{name}: every field must be a non-empty string"
    if d.get("severity", "error") not in SEVERITIES:
        return f"{name}: severity {d['severity']!r} is not one of {SEVERITIES}"
    if name not in kernels:
        return f"{name}: not in the file's KERNELS"
    if d["caught_by"] not in CHECK_CLASSES:
        return f"{name}: caught_by {d['caught_by']!r} is not a check class ({', '.join(CHECK_CLASSES)})"
    if d["device"] not in DEVICES:
        return f"{name}: device {d['device']!r} is not one of {DEVICES}"
    if d["twin"] not in twins:
        return f"{name}: twin {d['twin']!r} is neither in {path.name} nor a bundled kernel"
    if d["twin"] in all_defects:
        return f"{name}: twin {d['twin']!r} is itself a defect"
    return None


def load_entries(files=DEFECT_FILES) -> list[Entry]:
    """Every defect with its twin resolved; raises SpecError listing every malformed entry."""
    from verifier.declare.registry import load, load_spec_file

    bundled = {k.name: k for k in load([str(d) for d in BUNDLED_DIRS])}
    per_file = [(Path(f), _module_defects(Path(f)), {k.name: k for k in load_spec_file(f)}) for f in files]
    all_defects = {n for _, defects, _ in per_file for n in defects}
    entries, problems = [], []
    for path, defects, kernels in per_file:
        twins = {**bundled, **{n: k for n, k in kernels.items() if n not in defects}}
        for name, d in defects.items():
            why = _validate(path, name, d, kernels, twins, all_defects)
            if why:
                problems.append(f"{path}: {why}")
                continue
            entries.append(Entry(name=name, spec=kernels[name], twin_spec=twins[d["twin"]], source_file=str(path),
                                 severity=d.get("severity", "error"), **{k: d[k] for k in DEFECT_KEYS}))
    if problems:
        raise SpecError("malformed defect catalogue:\n  " + "\n  ".join(problems),
                        fix="fix the DEFECTS entries (keys: " + ", ".join(DEFECT_KEYS) + ")")
    return entries


def case_names(spec: KernelSpec, level: Optional[str] = None) -> set:
    """The case names of ``level`` for the spec (None: of every level, e.g. the large-index case of 'thorough')."""
    from verifier.inputs.cases import cases_for
    from verifier.results.levels import TABLE

    levels = [level] if level else list(TABLE)
    return {c.name for lv in levels for dt in spec.dtypes for c in cases_for(spec, dt, lv)}


BUILD_TIME_CLASSES = ("resources", "static")  # decided without launching the kernel


def skip_reason(entry: Entry, device: str) -> Optional[str]:
    """Why the defect's declared check cannot run on ``device`` (None: it can)."""
    if entry.device == "gpu" and device != "cuda":
        what = "compute-sanitizer " + entry.caught_by if entry.sanitizer else f"the {entry.caught_by} check"
        return f"{entry.name}: {what} needs a CUDA GPU (launches of {entry.spec.kind} kernels); this run is on {device}"
    if entry.sanitizer:
        import importlib.util

        if importlib.util.find_spec("verifier.sanitizer") is None:
            return f"{entry.name}: verifier.sanitizer (compute-sanitizer battery hook) is not installed"
    return None


def _summary(report) -> dict:
    classes = sorted({f.check for f in report.findings if f.severity == "error"})
    warnings = sorted({f.check for f in report.findings if f.severity == "warning"})
    by_class: dict = {}
    for f in report.findings:
        if f.severity == "error":
            by_class.setdefault(f.check, set()).add(f.dtype or "*")
    return {"verdict": report.verdict, "classes": classes, "warnings": warnings, "error": report.error,
            "dtypes_by_class": {k: sorted(v) for k, v in by_class.items()},
            "first": {c: next(f.message.splitlines()[0] for f in report.findings if f.check == c)
                      for c in classes + warnings}}


def _check(spec: KernelSpec, opts, isolate=None):
    """One kernel's battery; on a GPU in a child process (verifier.isolation.children), so that a fault or a
    hang in a defective kernel is recorded as crash / timeout instead of ending the matrix run. ``isolate``:
    as check_all's (False: in this process)."""
    from verifier.isolation import check_all

    return check_all([spec], opts, isolate=isolate)[0]


def run_defect(entry: Entry, device: str, level: str = "quick", seed: int = 0, whole_battery: bool = False) -> dict:
    """Run the battery on the defect: its exposing case alone (or, with ``whole_battery`` when the battery of
    ``level`` includes that case, or when the exposing input is not a catalogue case, the whole battery at
    ``level``)."""
    from verifier.results.options import Options

    case = entry.exposing_input if entry.exposing_input in case_names(entry.spec) else None
    if whole_battery and (case is None or case in case_names(entry.spec, level)):
        case = None
    if entry.caught_by in BUILD_TIME_CLASSES:
        # Judged from the build (ptxas, PTX) alone: on a GPU the battery would also launch the defect, and some
        # of these hang there (a full-mask shuffle over exited lanes) until the kernel timeout.
        device = "cpu"
    # Only the declared tool: the question is whether it catches the defect (the twin runs all four).
    opts = Options(level="ci" if case else level, seed=seed, device=device, case=case, sanitize=entry.sanitizer,
                   sanitize_tools=(entry.caught_by,) if entry.sanitizer else None)
    out = _summary(_check(entry.spec, opts))
    fired = out["classes"] if entry.severity == "error" else out["warnings"]
    out.update(caught=entry.caught_by in fired, case=case or f"whole battery ({opts.level})")
    return out


def run_twin(spec: KernelSpec, cases, device: str, level: str = "quick", seed: int = 0, sanitize: bool = False,
             whole_battery: bool = True) -> dict:
    """The twin on each of ``cases`` (its defects' exposing inputs) and either its whole battery at
    ``level`` or, with ``whole_battery=False``, every catalogue case of ``level`` run one by one
    (values, invariants, poison and guards; no refusal, boundary or determinism check: those cost
    minutes for loop-heavy kernels in the Triton interpreter). With ``sanitize``, the four sanitizer tools
    run once per dtype, with the first case (level 'ci': every dtype; the whole battery when there is no case,
    level permitting): their launches are the sanitizer's own tail shapes whatever the case, so sanitizing
    every case would repeat the same runs."""
    from verifier.results.options import Options
    from verifier.inputs.catalogue import catalogue

    known = case_names(spec)
    run_cases = set(cases) & known
    reports = []
    # A twin is a correct kernel: on the CPU (the Triton interpreter, torch) its cases run in this process, one
    # warm interpreter for all of them, where a fork per case paid each kernel's first-call costs again (about
    # half of suites/test_detection_matrix.py's time in CI). A defect keeps its fork (run_defect); a GPU, children.
    isolate = False if device == "cpu" else None
    if whole_battery:
        reports.append(_check(spec, Options(level=level, seed=seed, device=device,
                                            sanitize=sanitize and not run_cases), isolate))
    else:
        run_cases |= {c.name for dt in spec.dtypes for c in catalogue(spec.op, dtypes=dt, level=level)}
    for i, c in enumerate(sorted(run_cases)):
        opts = Options(level="ci", seed=seed, device=device, case=c, sanitize=sanitize and i == 0)
        reports.append(_check(spec, opts, isolate))
    merged = [_summary(r) for r in reports]
    classes = sorted({c for m in merged for c in m["classes"]})
    warnings = sorted({c for m in merged for c in m["warnings"]})
    errors = [m["error"] for m in merged if m["error"]]
    verdicts = [m["verdict"] for m in merged]
    verdict = "error" if errors else "fail" if classes else "skipped" if all(v == "skipped" for v in verdicts) else "pass"
    return {"verdict": verdict, "classes": classes, "warnings": warnings, "error": "; ".join(errors) or None,
            "first": {k: v for m in merged for k, v in m["first"].items()},
            "scope": (f"whole {level} battery + " if whole_battery else f"{level} cases one by one + ")
            + "exposing inputs " + ", ".join(sorted(set(cases) & known))}
