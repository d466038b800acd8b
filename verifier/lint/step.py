"""Lint CUDA kernel specs: compile each source to PTX (verifier.toolchain.nvcc, cached), analyse the entries the spec
launches (verifier.lint.checks) and turn what it finds into ``static`` findings of the spec's report.

One PTX per (source, defines of a dtype group, arch): the arch list is the build check's. Each entry is
analysed for every block shape and the largest grid its launches use at probe shapes (PROBE_M x the
battery's probe lengths, every size class included; an entry only the large shapes reach, at theirs), so facts like
"the block size is a multiple of 32" come from the spec, not a guess.
The same issue found at one pair of source lines (several unrolled copies, both arches, several entries)
is one finding that says how many copies there were.

Each entry's analysis is done once a process (cached by PTX path, entry and launch facts). ``$VERIFIER_LINT_SHARE``
names a directory where the processes of one run share them as well (this repository's conftest.py gives each
``pytest -n`` session a fresh one: its workers lint the same bundled kernels): an entry's result is stored under the
digest of the PTX's bytes, the entry, its launch facts and the bytes of verifier.lint's own sources, and read back
instead of analysing it again.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import os
import pickle
from dataclasses import replace
from pathlib import Path
from typing import Optional

from verifier.errors import BuildError, SpecError, ToolMissing
from verifier.lint import ptx, suppressions
from verifier.lint.checks import EntryAnalysis, EntryFacts, Issue
from verifier.results.cells import PASS, skipped
from verifier.results.findings import Finding

CHECK = "static"
NOTE = "note"  # an Issue's severity that is a report note, not a finding (verifier.lint.nulls)
SHARE_ENV = "VERIFIER_LINT_SHARE"
from verifier.lint.probes import (  # noqa: F401 (re-exported: the probe shapes, the facts)
    MANY_ROWS, MANY_ROWS_ELEMENTS, PROBE_M, SQUARE_M, launch_facts, probe_rows)


def in_ptx(path, facts: dict, missing: Optional[dict] = None) -> dict:
    """``facts`` keyed by the PTX's own symbols: an entry written as a C++ name (``ns::k<float, 256>``, unnamed
    namespaces elided) becomes its mangled symbol (verifier.launch.symbols); one the PTX lacks keeps its name
    (reported as not in the PTX), and its EntryNotFound goes to ``missing``."""
    from verifier.launch.symbols import EntryNotFound, ptx_entries, resolve

    out = {}
    for e, f in facts.items():
        try:
            out[resolve(e, ptx_entries(path), "the PTX")] = f
        except EntryNotFound as err:
            out[e] = f
            if missing is not None:
                missing[e] = err
    return out


@functools.lru_cache(maxsize=16)
def _text(path: str) -> str:
    return Path(path).read_text()


@functools.lru_cache(maxsize=2)  # a module is 100k+ objects; lint_spec analyses the entries of one PTX together
def _module(path: str, wanted: frozenset) -> ptx.Module:
    return ptx.parse(_text(path), wanted=wanted)


_BY_DIGEST: dict = {}  # (entry text digest, facts) -> issues: an entry identical in two PTX files is analysed once
_RESULTS: dict = {}  # (ptx path, entry, facts) -> resolved issues, or None when the entry is not in the PTX


def _entry_issues(mod: ptx.Module, fn: ptx.Function, facts: EntryFacts) -> list:
    h = fn.digest.copy()
    h.update(repr(sorted(mod.files.items())).encode())
    key = (h.hexdigest(), facts)
    if key not in _BY_DIGEST:
        _BY_DIGEST[key] = EntryAnalysis(mod, fn, facts.nulls).run(facts)
    return _BY_DIGEST[key]


@functools.lru_cache(maxsize=1)
def _lint_sources_digest() -> bytes:
    """The bytes of verifier.lint's sources: a change to the analysis changes every shared result's name."""
    h = hashlib.sha256()
    for f in sorted(Path(__file__).resolve().parent.glob("*.py")):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.digest()


@functools.lru_cache(maxsize=256)
def _ptx_digest(path: str) -> bytes:
    return hashlib.sha256(Path(path).read_bytes()).digest()


def _shared(path: str, entry: str, facts: EntryFacts) -> Optional[Path]:
    """Where the processes of this run share the result of (path, entry, facts), or None ($VERIFIER_LINT_SHARE
    unset)."""
    where = os.environ.get(SHARE_ENV)
    if not where:
        return None
    h = hashlib.sha256(_lint_sources_digest() + _ptx_digest(path))
    h.update(repr((entry, facts, _toolkit_root(), os.getcwd())).encode())  # the texts name files relative to cwd
    return Path(where) / f"{h.hexdigest()}.pickle"


def entry_result(path: str, wanted: frozenset, entry: str, facts: EntryFacts) -> Optional[list]:
    """The issues of one entry of one PTX file, each with its program points placed in the user's sources:
    [(Issue, (path, line), 'at' text, (path, line) of the other point, its text)]; None if the PTX has no such
    entry. An entry with a statement the parser cannot read is not analysed: one warning says which and where."""
    key = (path, entry, facts)
    if key in _RESULTS:
        return _RESULTS[key]
    shared = _shared(path, entry, facts)
    if shared is not None and shared.is_file():
        try:
            _RESULTS[key] = pickle.loads(shared.read_bytes())
            return _RESULTS[key]
        except Exception:  # noqa: BLE001 - unreadable: analysed again below
            pass
    with _no_cyclic_gc():
        out = _analysed(path, wanted, entry, facts)
    _RESULTS[key] = out
    if shared is not None:
        try:
            shared.parent.mkdir(parents=True, exist_ok=True)
            tmp = shared.with_name(f".{shared.name}.{os.getpid()}")
            tmp.write_bytes(pickle.dumps(out))
            os.replace(tmp, shared)  # a reader never sees a partial file
        except OSError:
            pass
    return out


@contextlib.contextmanager
def _no_cyclic_gc():
    """The cyclic collector off while an entry is parsed and analysed: they allocate millions of objects that live
    (the cached modules) or go by reference counting, and its full passes over the growing heap were a quarter of
    the time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _analysed(path: str, wanted: frozenset, entry: str, facts: EntryFacts) -> Optional[list]:
    mod = _module(path, wanted)
    fn = mod.functions.get(entry)
    out = None
    if fn is not None and fn.is_entry and fn.unparsed:
        out = [_unparsed(mod, fn, path)]
    elif fn is not None and fn.is_entry:
        prefer = _user_file(_toolkit_root())
        out = []
        for iss in _entry_issues(mod, fn, facts):
            pos, at_text = _where(mod, fn.instrs[iss.at], prefer)
            other_pos, other_text = (None, None), ""
            if iss.other is not None:
                other_pos, other_text = _where(mod, fn.instrs[iss.other], prefer)
            if iss.skipped:  # a note's instructions left out: their source lines (the issue without them)
                other_text = _lines(mod, [fn.instrs[i] for i in iss.skipped], prefer)
                iss = replace(iss, skipped=())
            out.append((iss, pos, at_text, other_pos, other_text))
    return out


def _lines(mod, instrs, prefer) -> str:
    """The source lines of some instructions, per file: 'a.cu:12-14, 20'."""
    by_file: dict = {}
    for ins in instrs:
        path, line = ptx.position(mod, ins, prefer)
        if path is not None:
            by_file.setdefault(_rel(path), set()).add(line)
    parts = []
    for path, lines in sorted(by_file.items()):
        runs, ls = [], sorted(lines)
        for ln in ls:
            if runs and ln == runs[-1][1] + 1:
                runs[-1][1] = ln
            else:
                runs.append([ln, ln])
        more = f" and {len(runs) - 6} more" if len(runs) > 6 else ""
        parts.append(f"{path}:" + ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs[:6]) + more)
    if len(parts) > 3:  # a note stays one readable line
        parts = parts[:3] + [f"{len(parts) - 3} more file(s)"]
    return "; ".join(parts) or f"{len(instrs)} PTX instruction(s) without line information"


UNREAD = -1  # Issue.at of the warning for an entry the parser could not read all of


def _unparsed(mod, fn, path: str) -> tuple:
    """The warning for an entry the parser could not read all of (its first unread statement)."""
    line, stmt, loc, why = fn.unparsed[0]
    pos, src = (None, None), ""
    if loc:
        pos, src = _where(mod, ptx.Instr(idx=-1, op="", args=(), loc=loc), _user_file(_toolkit_root()))
        src = f" ({src})"
    more = f" and {len(fn.unparsed) - 1} more" if len(fn.unparsed) > 1 else ""
    iss = Issue("not-followed", "warning",
                f"cannot read the PTX statement `{stmt}` at {path}:{line}{src}{more} ({why}); nothing of entry "
                f"{fn.name} was analysed: its barriers, shared-memory accesses and warp collectives are unchecked",
                at=UNREAD)
    return (iss, pos, f"{_rel(path)}:{line}{src}", (None, None), "")


def _job(job):
    return entry_result(*job)


def plan(spec, dts, arches) -> list:
    """The analyses ``lint_spec`` will need: [(ptx path, wanted entries, entry, facts)] (compiling the PTX)."""
    from verifier.toolchain.nvcc import compile_ptx

    jobs = []
    if not spec.builds_source:
        return jobs
    groups: dict = {}
    for dt in dts:
        groups.setdefault(tuple(sorted(spec.defines(dt).items())), []).append(dt)
    for defines, group in groups.items():
        facts = launch_facts(spec, group)
        for arch in arches:
            try:
                path = compile_ptx(spec.source_path(), arch=arch, defines=dict(defines), flags=tuple(spec.extra_flags),
                                   include_dirs=spec.include_paths())
            except (ToolMissing, BuildError, SpecError):
                return jobs  # lint_spec reports it
            here = in_ptx(path, facts)
            jobs += [(str(path), frozenset(here), e, f) for e, f in sorted(here.items())]
    return jobs


def prefetch(jobs: list, workers: int) -> None:
    """Run the analyses of ``jobs`` in ``workers`` processes, so that the lint_spec calls that follow find them
    done. Entries are independent; the parent keeps only the results."""
    todo = [j for j in dict.fromkeys(jobs) if (j[0], j[2], j[3]) not in _RESULTS]
    if workers <= 1 or len(todo) < 2:
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        for job, res in zip(todo, pool.map(_job, todo, chunksize=2)):
            _RESULTS[(job[0], job[2], job[3])] = res


@functools.lru_cache(maxsize=1)
def _toolkit_root() -> Optional[str]:
    from verifier.toolchain.nvcc import nvcc_path

    try:
        return str(Path(os.path.realpath(nvcc_path())).parents[1])
    except (ToolMissing, IndexError):
        return None


def _user_file(toolkit: Optional[str]):
    def prefer(path: str) -> bool:
        return not (toolkit and os.path.realpath(path).startswith(toolkit + os.sep))
    return prefer


def _where(mod, ins, prefer) -> tuple:
    """((path, line), 'path:line (inlined at path:line)') of an instruction, in the user's sources."""
    path, line = ptx.position(mod, ins, prefer)
    if path is None:
        return (None, None), "(no line information)"
    chain = [(mod.files.get(f, ""), ln) for f, ln in ins.loc if ln > 0]
    calls = []
    seen = False
    for p, ln in chain:
        if (p, ln) == (path, line):
            seen = True
            continue
        if seen and prefer(p) and len(calls) < 2:
            calls.append(f"{_rel(p)}:{ln}")
    text = f"{_rel(path)}:{line}" + (f" (inlined at {', '.join(calls)})" if calls else "")
    return (path, line), text


def _repo_relative(path: Optional[str], spec) -> Optional[str]:
    """A finding's file relative to the checkout holding the spec (as sanitizer findings are)."""
    from verifier.results.paths import git_toplevel, relative

    if path is None:
        return None
    where = str(Path(spec.origin).parent) if spec.origin else os.getcwd()
    return relative(path, Path(git_toplevel(where) or os.getcwd()).resolve())


def _rel(path: str) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return path


def lint_spec(spec, report, dts, arches, repro: str = "") -> None:
    """Lint one CUDA spec for dtypes ``dts``: findings and ``static`` cells go to ``report``."""
    from verifier.launch.symbols import ptx_entries, shown
    from verifier.toolchain.nvcc import compile_ptx

    if not spec.builds_source:
        for dt in dts:
            report.mark(dt.tag, CHECK, skipped("not a CUDA source: nothing to compile to PTX"))
        return
    groups: dict = {}
    for dt in dts:
        groups.setdefault(tuple(sorted(spec.defines(dt).items())), []).append(dt)
    analysed = 0
    supp = suppressions.for_spec(spec)
    found: list = []  # findings, before suppressions
    notes: dict = {}  # the analyses' notes, once each (several arches)
    for defines, group in groups.items():
        facts = launch_facts(spec, group)
        if not facts:
            for dt in group:
                report.mark(dt.tag, CHECK, skipped("supports() accepts no probe shape, or launches() returns [] at those it "
                                                     "accepts: no launch to analyse"))
            continue
        merged: dict = {}
        for arch in arches:
            try:
                path = compile_ptx(spec.source_path(), arch=arch, defines=dict(defines), flags=tuple(spec.extra_flags),
                                   include_dirs=spec.include_paths())
            except ToolMissing as e:
                for dt in group:
                    report.mark(dt.tag, CHECK, skipped(e.message))
                report.notes.append(f"static analysis skipped: {e.message}")
                return
            except BuildError as e:
                report.add(Finding("build", f"[{arch}] {e}", kernel=spec.name, repro=repro))
                return
            except SpecError as e:  # a source that does not exist: this kernel's error, the others are linted
                from verifier.declare.usercode import blame, spec_error

                blame(report, spec_error(spec, e))
                return
            missing: dict = {}
            here = in_ptx(path, facts, missing)  # keyed by the PTX's symbols (a C++ entry name resolved)
            names = ptx_entries(path)
            for entry, f in sorted(here.items()):
                resolved = entry_result(str(path), frozenset(here), entry, f)
                if resolved is None:
                    err = missing.get(entry)
                    why = f" ({err.detail})\n  fix: {err.fix}" if err is not None else ""
                    report.add(Finding(CHECK, f"[{arch}] entry {entry} used by the spec's launches is not in the PTX "
                                       f"of its source; nothing of it could be analysed{why}", kernel=spec.name,
                                       repro=repro))
                    continue
                analysed += not any(iss.at == UNREAD for iss, *_ in resolved)
                for iss, pos, at_text, other_pos, other_text in resolved:
                    if iss.severity == NOTE:
                        shown_as = shown(names[entry]) if entry in names else entry
                        left = f"; not analysed: {other_text}" if other_text else ""
                        notes[f"static: {shown_as}: {iss.message} (the test at {at_text}{left})"] = None
                        continue
                    key = (iss.cls, iss.severity, pos, other_pos)
                    m = merged.setdefault(key, {"issue": iss, "at": at_text, "other": other_text, "entries": set(),
                                                "arches": set(), "count": 0, "pos": pos, "blocks": set()})
                    m["entries"].add(shown(names[entry]) if entry in names else entry)  # as the spec names it
                    m["arches"].add(arch)
                    m["blocks"].update(iss.blocks or f.blocks)  # the shapes it was found at, not all the entry's
                    m["count"] += 1
        tag = group[0].tag if len(group) == 1 else ""
        for m in merged.values():
            iss = m["issue"]
            lines = [f"{iss.cls}: {iss.message}", f"  at {m['at']}"]
            if m["other"]:
                lines.append(f"  {iss.other_role} at {m['other']}")
            entries = sorted(m["entries"])
            listed = ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
            blocks = ", ".join("x".join(map(str, b)) for b in sorted(m["blocks"]))
            lines.append(f"  in {listed} ({', '.join(sorted(m['arches']))}; block {blocks}; "
                         f"{m['count']} instance(s) in the PTX)")
            path, line = m["pos"]
            found.append(Finding(CHECK, "\n".join(lines), severity=iss.severity, kernel=spec.name, dtype=tag,
                                 file=_repo_relative(path, spec), line=line, repro=repro,
                                 score=2.0 if iss.severity == "error" else 1.0))
        for dt in group:
            report.mark(dt.tag, CHECK, PASS)
    found, unused = suppressions.apply(supp, found)
    for f in found:  # warnings and suppressed findings are shown but do not fail the cell
        report.add(f) if f.severity == "error" else report.findings.append(f)
    for s in unused:
        report.notes.append(f"unused lint suppression {s.origin}: {s.kind} ({s.reason})")
    report.notes.extend(notes)
    if analysed:
        report.notes.append(f"static: {analysed} entry PTX(s) analysed ({', '.join(arches)})")


def lint_repro(spec) -> str:
    import shlex

    return " ".join(shlex.quote(p) for p in ("verifier", "lint", spec.origin or "<spec.py>", "--kernel", spec.name))


def battery_hook(spec, opts, report, tags) -> None:
    """Called by verifier.battery after a CUDA kernel's build passed: the static checks, for the build's arches."""
    from verifier.gpu.probe import build_arches

    lint_spec(spec, report, tags, build_arches(opts), repro=lint_repro(spec))


def lint_specs(specs, arches, progress=None) -> list:
    """One KernelReport per spec, with only ``static`` (and, on a failed compile, ``build``) cells."""
    from verifier.results.kernel import KernelReport

    reports = []
    for i, spec in enumerate(specs):
        if progress:
            progress(f"[{i + 1}/{len(specs)}] {spec.name}")
        report = KernelReport(spec=spec, device="cpu")
        lint_spec(spec, report, list(spec.dtypes), arches, repro=lint_repro(spec))
        reports.append(report)
    return reports
