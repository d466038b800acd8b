"""Build docs/detection-matrix.md from measured results.

    # 1. battery results (on this machine: the CPU entries; on a GPU machine: all of them)
    python tools/detection_table.py run --out kernels/defects/results/detection-cpu.json
    python tools/detection_table.py run --device cuda --sanitize --out kernels/defects/results/detection-gpu.json   # GPU machine
    # (a whole GPU run is slow in one process: run one --defect per process in parallel, then
    #  python tools/detection_table.py merge --battery a.json --battery b.json ... --out joined.json)
    # 2. does plain torch.testing.assert_close on randn catch them?
    python tools/assert_close_matrix.py --out kernels/defects/results/assert-close-cpu.json
    # 3. what `verifier lint` (static, no GPU) reports on every CUDA defect and twin
    python tools/detection_table.py lint --out kernels/defects/results/lint-cpu.json
    # 4. lint against the sanitizers, class by class (the sanitizer side from a recorded GPU run: gpu_run.sh lint-defects)
    python tools/detection_table.py classes --lint kernels/defects/results/lint-cpu.json \
        --sanitize kernels/defects/results/sanitize-sync-defects-h200.json --out docs/static-vs-sanitizers.md
    # 5. the table (per defect the first file that ran it counts: GPU results first; tests/test_defects_table.py
    #    checks that docs/detection-matrix.md is this rendering of the committed files)
    python tools/detection_table.py render --battery kernels/defects/results/detection-gpu.json \
        --battery kernels/defects/results/detection-gpu-triton.json --battery kernels/defects/results/detection-gpu-inputs.json \
        --battery kernels/defects/results/detection-cpu.json --assert-close kernels/defects/results/assert-close-gpu.json \
        --assert-close kernels/defects/results/assert-close-gpu-inputs.json --assert-close kernels/defects/results/assert-close-cpu.json \
        --lint kernels/defects/results/lint-cpu.json --out docs/detection-matrix.md

`run` checks each defect with the whole battery (budget 'ci' by default, seed 0) and each twin with
the 'quick' battery plus its defects' exposing inputs; entries the device cannot run are recorded
with the reason. `render` takes, per defect, the first battery file that ran it.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from assert_close_matrix import NUMERIC, _matrix  # noqa: E402  (loads kernels/defects/matrix.py by path)

GPU_RUN = ("python tools/detection_table.py run --device cuda --sanitize --out kernels/defects/results/detection-gpu.json && "
           "python tools/assert_close_matrix.py --device cuda --out kernels/defects/results/assert-close-gpu.json")


def run(device: str, budget: str, sanitize: bool, names=None) -> dict:
    from verifier.gpu.probe import resolve_device

    device = resolve_device(device)
    matrix = _matrix()
    entries = [e for e in matrix.load_entries() if not names or e.name in names]
    defects, twins = {}, {}
    for e in entries:
        base = {"caught_by": e.caught_by, "severity": e.severity, "twin": e.twin, "pitfall": e.pitfall, "exposing_input": e.exposing_input,
                "device": e.device, "kind": e.spec.kind}
        why = matrix.skip_reason(e, device)
        if why is None and e.sanitizer and not sanitize:
            why = f"{e.name}: sanitizer class {e.caught_by}: rerun with --sanitize"
        if why:
            defects[e.name] = {**base, "skipped": why}
            continue
        print(f"defect {e.name} ...", file=sys.stderr)
        defects[e.name] = {**base, **matrix.run_defect(e, device, level=budget, whole_battery=True)}
    for twin in sorted({e.twin for e in entries}):
        mine = [e for e in entries if e.twin == twin]
        spec = mine[0].twin_spec
        print(f"twin {twin} ...", file=sys.stderr)
        twins[twin] = matrix.run_twin(spec, [e.exposing_input for e in mine], device,
                                      sanitize=sanitize and device == "cuda" and any(e.sanitizer for e in mine))
        twins[twin]["kind"] = spec.kind
    return {"device": device, "budget": budget, "seed": 0, "sanitize": sanitize, "defects": defects, "twins": twins}


def lint(names=None) -> dict:
    """`verifier lint` (the static check class) on every CUDA defect and CUDA twin of the catalogue: per kernel
    its verdict and the lint classes of its findings (errors and warnings apart)."""
    from verifier.results.kernel import KernelReport
    from verifier.gpu.probe import CPU_BUILD_ARCHES
    from verifier.toolchain.nvcc import nvcc_version
    from verifier.report.environment import environment
    from verifier.lint.step import lint_spec

    matrix = _matrix()
    entries = [e for e in matrix.load_entries() if not names or e.name in names]
    out = {"arches": list(CPU_BUILD_ARCHES), "nvcc": nvcc_version(), "commit": environment().get("commit"),
           "defects": {}, "twins": {}}
    for part, specs in (("defects", {e.name: e.spec for e in entries}), ("twins", {e.twin: e.twin_spec for e in entries})):
        for name, spec in sorted(specs.items()):
            if spec.kind != "cuda":
                out[part][name] = {"skipped": f"a {spec.kind} kernel: lint reads the PTX of CUDA sources"}
                continue
            print(f"lint {name} ...", file=sys.stderr)
            report = KernelReport(spec=spec, device="cpu")
            lint_spec(spec, report, list(spec.dtypes), CPU_BUILD_ARCHES)
            by_sev = {sev: sorted({f.message.split(":", 1)[0] for f in report.findings if f.severity == sev
                                   and f.check == "static"}) for sev in ("error", "warning")}
            out[part][name] = {"verdict": report.verdict, "errors": by_sev["error"], "warnings": by_sev["warning"],
                               "findings": len(report.findings),
                               "first": next((f.message.splitlines()[0] for f in report.findings), None)}
    return out


def _cell_lint(e, lints) -> str:
    if e.spec.kind != "cuda":
        return "n/a (not CUDA)"
    for lt in lints:
        row, twin = lt["defects"].get(e.name), lt["twins"].get(e.twin)
        if row is None or "skipped" in row:
            continue
        got = ", ".join(f"**{c}**" for c in row["errors"]) or "no finding"
        if row["warnings"]:
            got += " (warnings: " + ", ".join(row["warnings"]) + ")"
        if twin is None or "skipped" in twin:
            return got + "; twin not CUDA"
        clean = "clean" if not twin["findings"] else (f"{twin['findings']} finding(s): "
                                                        + ", ".join(twin["errors"] + twin["warnings"]))
        return f"{got}; twin {clean}"
    return "not yet run (`tools/detection_table.py lint`)"


# The sync/race defects of the catalogue, grouped by the class of defect they are (docs/static-vs-sanitizers.md).
DEFECT_CLASSES = (
    ("divergent barrier: __syncthreads inside a thread-dependent branch", "defect-divergent-syncthreads"),
    ("divergent barrier: after a thread-dependent early exit", "defect-early-exit-before-barrier"),
    ("shared-memory RAW: warp partials read without the barrier after their write", "defect-missing-syncthreads"),
    ("shared-memory RAW: tree stage reads a partial before the barrier after the store",
     "defect-tree-first-barrier-missing"),
    ("shared-memory WAR: one scratch reused by two block reductions, no barrier before the second write",
     "defect-block-reduce-twice-no-barrier"),
    ("warp collective with inactive lanes: full-mask shuffle inside `if (lane < nwarps)`",
     "defect-shuffle-inactive-lanes"),
    ("cross-block global race: a global workspace not indexed by block", "defect-global-scratch-shared-by-blocks"),
)
SANITIZER_COLUMNS = ("racecheck", "synccheck", "memcheck")
# The recorded sanitizer run behind kernels/defects/results/sanitize-sync-defects-h200.json.
SANITIZE_RUN = ("2026-12-01 00:32–00:35 UTC, one NVIDIA H200 (device kind nvidia-h200), commit 25f3038, "
                "`SAN_JOBS=16 SAN_TIMEOUT=80 bash tools/gpu_run.sh env lint-defects` (record: "
                "docs/gpu-runs/2026-12-01-h200-lint.md)")


def render_classes(lint_result: dict, sanitize_result: dict, run_note: str) -> str:
    """docs/static-vs-sanitizers.md: per class of sync/race defect, which of lint, racecheck, synccheck and memcheck
    caught it, from the committed lint result and a recorded `verifier sanitize --format json` run on a GPU."""
    san = {k["name"]: k for k in sanitize_result["kernels"]}
    matrix = _matrix()
    entries = {e.name: e for e in matrix.load_entries()}

    def san_cell(name, tool):
        k = san.get(name)
        if k is None:
            return "not run"
        cells = [c.get(tool) for c in k["checks"].values() if c.get(tool)]
        if not cells:
            return "not run"
        hung = [f for f in k["findings"] if f["check"] == "timeout" and f["message"].startswith(tool + " ")]
        if hung and not any(f["check"] == tool for f in k["findings"]):
            return "no record: the run hung and was killed (" + hung[0]["message"].split(" and was killed")[0] \
                .replace(tool + " did not finish", "not finished") + ")"
        if any(c == "FAIL" for c in cells):
            n = sum(1 for f in k["findings"] if f["check"] == tool and f["severity"] == "error")
            return f"**caught** ({n} finding(s))"
        if all(c.startswith("skipped") for c in cells):
            return cells[0]
        return "missed"

    def lint_cell(name, part="defects"):
        row = lint_result[part].get(name)
        if row is None or "skipped" in row:
            return "not run"
        if row["errors"]:
            return "**caught** (" + ", ".join(row["errors"]) + ")"
        return "missed" + (" (warnings: " + ", ".join(row["warnings"]) + ")" if row["warnings"] else "")

    env = sanitize_result.get("environment", {})
    lines = [
        "# Static lint against compute-sanitizer, class by class",
        "",
        "Generated by `tools/detection_table.py classes` from `kernels/defects/results/lint-cpu.json` (`verifier lint`,",
        "no GPU) and `kernels/defects/results/sanitize-sync-defects-h200.json` (`verifier sanitize --tool racecheck",
        "--tool synccheck --tool memcheck --format json` on the catalogue's sync/race defects and their twins, recorded",
        "on a GPU: `bash tools/gpu_run.sh env lint-defects`). Do not edit by hand.",
        "",
        f"Sanitizer run: {run_note}; GPU {env.get('gpu')}, driver {env.get('driver')}, CUDA {env.get('cuda')}.",
        f"Lint run: {', '.join(lint_result['arches'])}, {lint_result['nvcc']}, commit {lint_result['commit']}.",
        "",
        "| class of defect | defect | lint | " + " | ".join(SANITIZER_COLUMNS) + " |",
        "|---|---|---|" + "---|" * len(SANITIZER_COLUMNS),
    ]
    for what, name in DEFECT_CLASSES:
        lines.append(f"| {what} | `{name}` | {lint_cell(name)} | "
                     + " | ".join(san_cell(name, t) for t in SANITIZER_COLUMNS) + " |")
    lines += ["", "'missed': the tool ran to its end on the defect and wrote no error record. 'no record: the run hung': "
              "the tool's run did not finish and was killed, so it named no line (whether the kernel also hangs "
              "without a sanitizer was not measured). 'caught' for lint: the classes of its error "
              "findings, each naming both source lines."]
    twins = sorted({entries[n].twin for _, n in DEFECT_CLASSES if n in entries})
    lines += ["", "Correct twins (false alarms would show here):", "",
              "| twin | lint | " + " | ".join(SANITIZER_COLUMNS) + " |", "|---|---|" + "---|" * len(SANITIZER_COLUMNS)]
    for t in twins:
        lc = lint_cell(t, "twins").replace("missed", "clean")
        lines.append(f"| `{t}` | {lc} | " + " | ".join(san_cell(t, tool).replace("missed", "clean")
                                                            for tool in SANITIZER_COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def merge(results: list) -> dict:
    """One result from several `run` results of the same device, budget, seed and sanitize setting (the
    defects run in parallel, one process each). A defect or twin present in two of them is an error."""
    keys = ("device", "budget", "seed", "sanitize")
    settings = {tuple(r[k] for k in keys) for r in results}
    if len(settings) != 1:
        raise SystemExit(f"detection_table merge: the files were run with different settings {sorted(settings)}; "
                         "merge only runs of one device, budget, seed and sanitize setting")
    out = {**{k: results[0][k] for k in keys}, "defects": {}, "twins": {}}
    for r in results:
        for part in ("defects", "twins"):
            for name, row in r[part].items():
                if name in out[part] and part == "defects":
                    raise SystemExit(f"detection_table merge: defect {name} is in two of the files")
                if name not in out[part]:
                    out[part][name] = dict(row)
                else:  # a twin run once per defect, each time with that defect's exposing input: join them
                    t = out[part][name]
                    t["classes"] = sorted(set(t["classes"]) | set(row["classes"]))
                    t["warnings"] = sorted(set(t.get("warnings", [])) | set(row.get("warnings", [])))
                    t["first"] = {**row.get("first", {}), **t.get("first", {})}
                    t["error"] = "; ".join(e for e in (t.get("error"), row.get("error")) if e) or None
                    t["verdict"] = next((v for v in ("error", "fail") if v in (t["verdict"], row["verdict"])),
                                        t["verdict"])
                    t["scope"] = " + ".join(dict.fromkeys([t.get("scope", ""), row.get("scope", "")]))
    return out


def _cell_assert_close(name, twin, files) -> str:
    for ac in files:
        row = ac["defects"].get(name)
        if row is None or "cells" not in row:
            continue
        cells = row["cells"]
        caught = [k for k, v in cells.items() if v["result"] == "caught"]
        ran = [k for k, v in cells.items() if v["result"] != "refused"]
        false_alarms = [k for k, v in ac.get("twins", {}).get(twin, {}).items() if v["result"] == "caught"]
        control = f"; twin also flagged on {', '.join(false_alarms)}" if false_alarms else ""
        if not ran:
            return f"every randn shape refused ({ac['device']})"
        if not caught:
            return f"**no** (missed on all {len(ran)} runs, {ac['device']}{control})"
        return f"yes on {len(caught)}/{len(ran)}: {', '.join(caught)} ({ac['device']}{control})"
    return "not run (not numeric, or not yet run on GPU)"


def _alone(battery: dict) -> str:
    """What the Runs line says of the defects whose exposing case the battery's level lacks (run alone)."""
    alone = sorted(n for n, d in battery["defects"].items() if "skipped" not in d and d.get("case")
                   and not str(d["case"]).startswith("whole battery"))
    return f", except {', '.join(f'`{n}`' for n in alone)}: their exposing case alone" if alone else ""


def render(batteries: list, assert_close: list, lints: list = ()) -> str:
    matrix = _matrix()
    entries = matrix.load_entries()
    lines = [
        "# Detection matrix",
        "",
        "Generated by `tools/detection_table.py render` from measured runs; do not edit by hand. Each defect in",
        "`kernels/defects/` reproduces one known pitfall and has a correct twin. Columns: the check class the",
        "defect declares (`DEFECTS` in its `defects.py`), what the battery actually reported (whole battery,",
        "seed 0), the input that exposes it, and whether plain `torch.testing.assert_close(actual, expected)` with",
        "default tolerances on `torch.randn` inputs of shapes (4, 1024), (8, 4096), (2, 152064) catches it",
        "(expected = the torch op in float32 on the same inputs, cast to the output dtype; see",
        "`tools/assert_close_matrix.py`). The twin runs through the same comparison as a control: a shape",
        "where the twin is flagged too is a false alarm of assert_close, not a detection. The `lint` column is",
        "what `verifier lint` (check class `static`: the PTX analysed without a GPU, in CI) reports on the CUDA",
        "defect and on its twin; sanitizer classes are in the battery column. Class by class, lint against the",
        "sanitizer tools: `docs/static-vs-sanitizers.md`.",
        "",
        "| defect | pitfall | declared | battery caught it with | lint (static, no GPU) | exposing input | assert_close on randn | twin (verdict) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    pending = []
    for e in entries:
        got = next((b for b in batteries if e.name in b["defects"] and "skipped" not in b["defects"][e.name]), None)
        if got is None:
            caught = f"not yet run on GPU ({e.device})"
            pending.append(e.name)
            twin = "not yet run"
        else:
            r = got["defects"][e.name]
            fired = r["classes"] if e.severity == "error" else r.get("warnings", [])
            mark = "**" + e.caught_by + "**" if e.caught_by in fired else f"MISSED {e.caught_by}"
            if e.severity != "error":
                mark += f" ({e.severity})"
            others = [c for c in r["classes"] if c != e.caught_by or e.severity != "error"]
            caught = mark + (f" (also: {', '.join(others)})" if others else "") + f" [{got['device']}]"
            t = got["twins"].get(e.twin, {})
            twin = t.get("verdict", "not run")
            if t.get("kind") == "cuda" and got["device"] != "cuda":
                twin += ": build, resources and static only, no GPU"
            if t.get("classes"):
                twin += " (" + ", ".join(t["classes"]) + ")"
        ac = _cell_assert_close(e.name, e.twin, assert_close) if e.caught_by in NUMERIC else "n/a (not a value defect)"
        declared = e.caught_by + (f" ({e.severity})" if e.severity != "error" else "")
        lines.append(f"| `{e.name}` | {e.pitfall} | {declared} | {caught} | {_cell_lint(e, lints)} | "
                     f"`{e.exposing_input}` | {ac} | `{e.twin}` ({twin}) |")
    lines += ["", "Runs: " + "; ".join(f"battery on {b['device']} (defects: whole battery at budget {b['budget']}"
                                         f"{_alone(b)}; twins: whole quick battery plus their defects' exposing inputs; seed "
                                         f"{b['seed']}, sanitize {b['sanitize']})" for b in batteries)
              + "; " + "; ".join(f"assert_close on {a['device']}" for a in assert_close)
              + "".join(f"; lint ({', '.join(lt['arches'])}, {lt['nvcc']}, commit {lt['commit']})" for lt in lints)
              + "."]
    lines += [
        "",
        "Notes:",
        "- No uninitialized-shared-memory defect: compute-sanitizer's initcheck checks global memory only",
        "  (`compute-sanitizer --help`: \"initcheck : Global memory initialization checking\"), so it cannot",
        "  catch one, and `--initcheck-address-space` is rejected (reference captures, h200-2026-11-30).",
        "- `defect-float4-tail-overread` reads at most 12 bytes past the end of `w`. memcheck sees that only",
        "  when `w` is its own allocation: under PyTorch's caching allocator the bytes belong to the same",
        "  cached block. The sanitizer run must disable caching (`PYTORCH_NO_CUDA_MEMORY_CACHING=1`).",
        "- `defect-divergent-syncthreads` also reads `s[0]` early in the threads that skipped a barrier, so",
        "  its values may be wrong too; synccheck flags the barrier itself, on every input.",
        "- The defects of issue #25 are right on fresh contiguous `torch.randn` tensors: a 32-bit row offset faults",
        "  only past 2^31 elements (`large_index_2pow31`, GPU only), an ignored row stride only on strided rows, a",
        "  vector load chosen from N alone only on a tensor one element past a 16-byte boundary. Alignment has no",
        "  Triton defect: Triton specializes a kernel on each pointer's 16-byte alignment, so an unaligned view",
        "  gets code without the wide loads.",
    ]
    if pending:
        lines += ["", f"Not yet run on a GPU ({len(pending)}): " + ", ".join(f"`{n}`" for n in pending) + ".",
                  "To fill them in, on a GPU machine with compute-sanitizer:", "", "```sh", GPU_RUN,
                  "python tools/detection_table.py render --battery kernels/defects/results/detection-cpu.json --battery "
                  "kernels/defects/results/detection-gpu.json --assert-close kernels/defects/results/assert-close-cpu.json --assert-close "
                  "kernels/defects/results/assert-close-gpu.json --lint kernels/defects/results/lint-cpu.json "
                  "--out docs/detection-matrix.md", "```"]
    return "\n".join(lines) + "\n"


def _load(paths, what):
    out = []
    for p in paths or []:
        try:
            out.append(json.loads(Path(p).read_text()))
        except (OSError, json.JSONDecodeError) as e:
            raise SystemExit(f"detection_table: cannot read {what} file {p}: {e}\n  fix: produce it with the "
                             f"command in this tool's docstring")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="detection matrix: run the battery on the defects, render the table")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--device", choices=("cpu", "cuda", "auto"), default="auto")
    r.add_argument("--level", choices=("quick", "ci", "thorough"), default="ci")
    r.add_argument("--sanitize", action="store_true", help="run the compute-sanitizer classes (GPU)")
    r.add_argument("--defect", action="append", help="only this defect (repeatable)")
    r.add_argument("--out", required=True)
    m = sub.add_parser("merge", help="join `run` results made in parallel (one --defect each) into one file")
    m.add_argument("--battery", action="append", required=True)
    m.add_argument("--out", required=True)
    lt = sub.add_parser("lint", help="`verifier lint` on every CUDA defect and twin (no GPU)")
    lt.add_argument("--defect", action="append", help="only this defect (repeatable)")
    lt.add_argument("--out", required=True)
    c = sub.add_parser("classes", help="docs/static-vs-sanitizers.md from a lint result and a recorded sanitize run")
    c.add_argument("--lint", required=True)
    c.add_argument("--sanitize", required=True, help="`verifier sanitize --format json` result of the GPU run")
    c.add_argument("--run-note", default=SANITIZE_RUN, help="date, machine and commit of the sanitizer run "
                   "(default: the recorded run of sanitize-sync-defects-h200.json)")
    c.add_argument("--out", required=True)
    d = sub.add_parser("render")
    d.add_argument("--battery", action="append", required=True)
    d.add_argument("--assert-close", action="append", default=[])
    d.add_argument("--lint", action="append", default=[], help="result of `lint` (the lint column)")
    d.add_argument("--out", required=True)
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    from verifier.errors import VerifierError

    try:
        if args.cmd == "run":
            result = run(args.device, args.level, args.sanitize, set(args.defect or ()))
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
        elif args.cmd == "lint":
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(lint(set(args.defect or ())), indent=1, sort_keys=True) + "\n")
        elif args.cmd == "classes":
            (lint_result,), (san,) = _load([args.lint], "lint"), _load([args.sanitize], "sanitize")
            Path(args.out).write_text(render_classes(lint_result, san, args.run_note))
        elif args.cmd == "merge":
            Path(args.out).write_text(json.dumps(merge(_load(args.battery, "battery")), indent=1, sort_keys=True) + "\n")
        else:
            text = render(_load(args.battery, "battery"), _load(args.assert_close, "assert_close"),
                          _load(args.lint, "lint"))
            Path(args.out).write_text(text)
    except VerifierError as e:
        print(f"detection_table: {e}", file=sys.stderr)
        return 2
    except SystemExit as e:
        print(e, file=sys.stderr)
        return 2
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
