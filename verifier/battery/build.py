"""The build and resources step: a CUDA source built with nvcc for the device's arch (CPU_BUILD_ARCHES
without a GPU), every entry the spec's launches use present in the cubin, every launch valid and its arguments
matching its entry's parameters (verifier.battery.launch_check, on any machine), ptxas resources within the spec's
Expectations (undeclared spills and stack speak as warnings); a Triton kernel on a GPU has its compiled
kernels' resources checked."""
from __future__ import annotations

from typing import Optional

from verifier.battery import launch_check
from verifier.declare import usercode
from verifier.declare.kernels import KernelSpec
from verifier.errors import BuildError, ToolMissing, UsageError, VerifierError
from verifier.gpu.probe import build_arches
from verifier.launch import runnable_reason
from verifier.launch import triton as triton_runner
from verifier.launch.harness import KernelFault
from verifier.launch.symbols import cubin_entries, resolve_launch_entries
from verifier.results.findings import Finding
from verifier.results.kernel import PASS, KernelReport, skipped
from verifier.results.options import Options, repro_line
from verifier.toolchain.entry_params import entry_params
from verifier.toolchain.nvcc import compile_cubin, compile_ptx
from verifier.toolchain.ptxas import KernelResources, check_expectations, entry_line, undeclared_usage


def build_and_resources(spec, opts, report, dts) -> bool:
    missing = spec.unavailable()
    if missing:  # its package is not installed here (requires=): nothing to build, said once per cell
        for dt in dts:
            for check in ("build", "resources") + (("static",) if spec.builds_source else ()):
                report.mark(dt.tag, check, skipped(missing))
        return False
    if not spec.builds_source:
        why = spec.build_skip(opts.device)
        for dt in dts:
            report.mark(dt.tag, "build", skipped("not a CUDA source"))
            if why is not None:
                report.mark(dt.tag, "resources", skipped(why))
        _compiled_triton_refusals(spec, opts, report, dts)
        return True
    arches = build_arches(opts)
    # One build per distinct set of -D macros (spec.defines(dtypes)); most specs have one.
    groups: dict = {}
    for dt in dts:
        defines = usercode.call(spec, "defines", spec.defines, dt)
        groups.setdefault(tuple(sorted(defines.items())), []).append(dt)
    ok = True
    for defines, group in groups.items():
        # the launches at every shape the battery uses, checked on any machine (verifier.battery.launch_check)
        evaluated = launch_check.evaluate(spec, group, opts.level)
        entries = {l.entry for ev in evaluated for l in ev.launches}
        linted = _linted_only(spec, group, entries)
        problems = launch_check.Problems()
        launch_check.check_launches(spec, evaluated, problems)
        for arch in arches:
            try:
                res = compile_cubin(spec.source_path(), arch=arch, defines=dict(defines), flags=tuple(spec.extra_flags),
                                    include_dirs=spec.include_paths())
            except ToolMissing as e:
                why = f"{e.message}; fix: {e.fix}" if e.fix else e.message  # name the tool and the fix
                for dt in dts:
                    report.mark(dt.tag, "build", skipped(why))
                report.notes.append(f"build skipped: {why}")
                return False
            except BuildError as e:
                report.add(Finding("build", f"[{arch}] {e}", kernel=spec.name, repro=repro_line(spec, opts)))
                return False
            found, missing = resolve_launch_entries(sorted(entries), cubin_entries(res), f"the cubin of {spec.source}")
            for e, err in missing.items():  # a mangled name, an extern "C" one or a C++ name with its template args
                for tag in _naming(evaluated, e, group):  # the dtypes whose launches name it (all: one finding)
                    report.add(Finding("build", f"[{arch}] entry {e} used by the spec's launches is not in the cubin "
                                       f"({err.detail})\n  fix: {err.fix}", kernel=spec.name, dtype=tag,
                                       repro=repro_line(spec, opts, tag)))
            ok = ok and not missing
            ptx = compile_ptx(spec.source_path(), arch=arch, defines=dict(defines), flags=tuple(spec.extra_flags),
                              include_dirs=spec.include_paths())  # the one the cubin was built from (cached)
            launch_check.check_parameters(spec, evaluated, found, entry_params(ptx), arch, problems)
            launch_check.check_smem(evaluated, found, res.resources, arch, problems)
            # an entry only lint's shapes reach has its resources checked too; one the cubin lacks is the static
            # step's finding (not in the PTX), not said twice
            also, _ = resolve_launch_entries(sorted(linted), cubin_entries(res), f"the cubin of {spec.source}")
            if entries or also:
                _check_resources(spec, opts, report, group, arch,
                                 {s: res.resources[s] for s in {*found.values(), *also.values()}})
            else:  # no launch at any shape evaluated: nothing was checked, which is not a pass
                for dt in group:
                    report.mark(dt.tag, "resources", skipped(
                        "supports() accepts none of the shapes the build step evaluates (every probe row length at "
                        f"{', '.join(map(str, (launch_check.PROBE_ROWS, *launch_check.MORE_ROWS)))} rows, the cases "
                        "of the level), or launches() returns [] at all of them: no entry's registers or spills were "
                        "checked"))
        problems.report(spec, opts, report)
        ok = ok and not problems
    for dt in dts:
        report.mark(dt.tag, "build", PASS)
    return ok


def _naming(evaluated, entry: str, group) -> list:
    """The dtype tags whose launches name ``entry``, or [""] (the whole kernel) when every dtype of the group's does:
    a misnamed f16 entry fails the f16 variant, not the f32 one beside it."""
    tags = {ev.dt.tag for ev in evaluated for l in ev.launches if l.entry == entry}
    return [""] if not tags or tags >= {dt.tag for dt in group} else sorted(tags)


def _linted_only(spec, dts, entries: set) -> set:
    """The entries verifier lint analyses that none of the build step's shapes reaches: one a host picks only at
    65537 rows (verifier.lint.probes.MANY_ROWS) or only at the large shapes (a 64-bit-index variant). Launches that
    cannot be made there are the static step's to report, a malformed grid or block this step's (launch_check)."""
    from verifier.lint.probes import launch_facts

    try:
        return set(launch_facts(spec, dts)) - entries
    except (VerifierError, TypeError, ValueError, ArithmeticError):
        return set()


def _compiled_triton_refusals(spec, opts, report, dts) -> None:
    """An interpreted Triton kernel's module globals that compiled Triton refuses (verifier.launch.triton_globals):
    the interpreter runs them, a GPU never compiles the kernel. Certain reads are build errors, reads under a
    constexpr branch warnings (compiled only for some values). Compiled runs say it themselves (a crash finding)."""
    if not spec.uses_triton or not spec.interpreted(opts.device):
        return
    from verifier.launch.triton_globals import plain_globals, refuses_plain_globals

    if not refuses_plain_globals():
        return
    for path, entry in spec.triton_sources():
        for fn, name, where, under in plain_globals(path, entry):
            when = (" where that constexpr branch is compiled" if under else "")
            report.add(Finding(
                "build", f"{fn} reads the module global {name} ({where}), which is not a tl.constexpr: compiled "
                f"Triton refuses it (NameError: cannot access global variable {name} from within @jit'ed function)"
                f"{when}, so the kernel does not compile on a GPU; the interpreter on this CPU runs it\n"
                f"  fix: {name} = tl.constexpr(...) at the module's top, or pass it as a tl.constexpr argument",
                kernel=spec.name, severity="warning" if under else "error", repro=repro_line(spec, opts)))


def check_build(spec: KernelSpec, opts: Options, dts, report: Optional[KernelReport] = None) -> KernelReport:
    """The build and resources step on its own: a CUDA source is built with nvcc for the device's arch
    (sm_80 and sm_90 without a GPU), every entry the launches use must be in the cubin and ptxas resources
    within the spec's expectations; a Triton kernel on a GPU has its compiled kernels' resources checked.
    Other kernels get skipped cells. Findings and cells go to ``report`` (a new one if None), returned.
    A KernelFault (Triton compiling on a GPU) propagates."""
    report = report if report is not None else KernelReport(spec=spec, device=opts.device)
    dts = list(dts)
    if not build_and_resources(spec, opts, report, dts) and spec.unavailable():
        return report
    if spec.uses_triton and opts.device == "cuda" and runnable_reason(spec, opts.device) is None:
        triton_resources(spec, opts, report, dts)
    return report


def _check_resources(spec, opts, report, dts, arch, resources: dict):
    for entry, r in sorted(resources.items()):
        problems = check_expectations(r, spec.expectations)
        report.notes.append(f"[{arch}] {entry}: {r.registers} registers, {r.spill_bytes} spill bytes, "
                            f"{r.stack_bytes} stack bytes, {r.smem_bytes} smem bytes")
        where = dict(zip(("file", "line"), entry_line(spec.source_path(), r.demangled) or (None, None)))
        for p in problems:
            report.add(Finding("resources", f"[{arch}] {entry}: {p}", kernel=spec.name, repro=repro_line(spec, opts),
                               score=1.0, **where))
        for p in undeclared_usage(r, spec.expectations):  # nothing declared: the fact speaks as a warning
            report.add(Finding("resources", f"[{arch}] {entry}: {p}", severity="warning", kernel=spec.name,
                               repro=repro_line(spec, opts), score=0.5, **where))
    for dt in dts:
        report.mark(dt.tag, "resources", PASS)


def triton_resources(spec, opts, report, dts):
    """Compiled Triton kernels: registers, local memory and shared memory from the compiled kernel
    object, for each dtype at a few row lengths. Triton reports local memory as one figure (spills and
    stack together), so it is checked against both max_spill_bytes and max_stack_bytes."""
    for dt in dts:
        # the three longest supported rows: a one-block kernel's local memory grows with its row
        sizes = [n for n in (1024, 4096, 8192, 16384, 32768, 65536, 152064) if spec.check_supported(4, n, dt) is None]
        for n in sizes[-3:]:
            try:
                res = triton_runner.compiled_resources(spec, 4, n, dt, spec.op_params(), device="cuda")
            except UsageError:
                raise  # a malformed spec: the kernel's error (verifier.battery), not a skipped cell
            except VerifierError as e:
                report.mark(dt.tag, "resources", skipped(e.message))  # mark() keeps it over the PASS below
                break
            except KernelFault as e:  # the launcher raised: a compiler limit is a refusal, the rest a crash
                if e.cuda or usercode.classify(spec, e) != "refusal":
                    raise
                report.add(Finding("refusal", usercode.refusal_message(e), kernel=spec.name, dtype=dt.tag,
                                   input="resources", shape=(4, n), repro=repro_line(spec, opts, dt.tag)))
                continue
            for k in res["kernels"]:
                r = KernelResources(name=k["name"], demangled=k["name"], demangled_with="not-mangled", arch=None,
                                    is_entry=True, registers=k["registers"], smem_bytes=k["shared_bytes"],
                                    spill_store_bytes=k["local_bytes"], stack_frame_bytes=k["local_bytes"])
                report.notes.append(f"[{dt.tag} N={n}] {k['name']}: {k['registers']} registers, "
                                    f"{k['local_bytes']} local bytes, {k['shared_bytes']} smem bytes")
                for p in check_expectations(r, spec.expectations):
                    report.add(Finding("resources", f"[N={n}] {k['name']}: {p} (Triton local memory = spills + stack)",
                                       kernel=spec.name, dtype=dt.tag, repro=repro_line(spec, opts, dt.tag)))
                if spec.expectations.max_spill_bytes is None and spec.expectations.max_stack_bytes is None \
                        and k["local_bytes"] > 0:  # undeclared local memory speaks as a warning
                    report.add(Finding(
                        "resources", f"[N={n}] {k['name']}: uses {k['local_bytes']} bytes of local memory (Triton: "
                        "spills + stack) and the spec declares no limit for it; declare Expectations(max_spill_bytes="
                        "..., max_stack_bytes=...) to accept it, or register_resident() to forbid it",
                        severity="warning", kernel=spec.name, dtype=dt.tag, repro=repro_line(spec, opts, dt.tag),
                        score=0.5))
        report.mark(dt.tag, "resources", PASS)
