"""Per-function resource usage from ``ptxas -v`` (``nvcc -Xptxas -v``) reports.

A report is a sequence of blocks, one per function::

    ptxas info    : Compiling entry function '_Z6spillsPKfPfPKii' for 'sm_90'
    ptxas info    : Function properties for _Z6spillsPKfPfPKii
        304 bytes stack frame, 40 bytes spill stores, 72 bytes spill loads
    ptxas info    : Used 32 registers, used 0 barriers, 304 bytes cumulative stack size

Entry kernels have a "Compiling entry function" line and a "Used ..." line; a non-inlined
``__device__`` function only has its own "Function properties" block (its registers are
counted in the callers). The "Used" line is a comma list whose items vary by toolkit and
target: zero smem is omitted, and ``N bytes cmem[k]`` appears for sm_80 (and in CUDA <= 12
reports generally) but not for sm_90 with CUDA 12.9/13. Unknown items are kept in ``other``.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from verifier.errors import UsageError

# Lines may carry a build-tool prefix (MSBuild writes "1>  ptxas info : ..."), hence search().
_COMPILING = re.compile(r"ptxas info\s*: Compiling entry function '([^']+)' for '([^']+)'")
_PROPS_FOR = re.compile(r"ptxas info\s*: Function properties for (\S+)")
_PROPS = re.compile(
    r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"ptxas info\s*: Used (\d+) registers(.*)$")
_ITEMS = (
    ("barriers", re.compile(r"^used (\d+) barriers$")),
    ("smem", re.compile(r"^(\d+) bytes smem$")),
    ("cumulative_stack", re.compile(r"^(\d+) bytes cumulative stack size$")),
    ("cmem", re.compile(r"^(\d+) bytes cmem\[(\d+)\]$")),
)


@dataclass(frozen=True)
class KernelResources:
    """Resources of one function as reported by ptxas for one architecture.

    ``registers`` and ``barriers`` are None where the report has no such figure (device
    functions; barriers in pre-CUDA-11 reports). ``demangled_with`` names the tool that
    demangled ``name`` ('cu++filt' or 'c++filt'); 'not-mangled' for extern "C" names;
    'unavailable' when no demangler was found and ``demangled`` is just ``name``.
    """

    name: str
    demangled: str
    demangled_with: str
    arch: Optional[str]
    is_entry: bool
    registers: Optional[int] = None
    barriers: Optional[int] = None
    smem_bytes: int = 0  # static shared memory; dynamic smem is a launch parameter
    stack_frame_bytes: int = 0
    cumulative_stack_bytes: int = 0  # this frame plus callees' (entries only)
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    cmem: tuple = ()  # ((bank, bytes), ...)
    other: tuple = field(default=())  # "Used" items this parser does not know, verbatim

    @property
    def spill_bytes(self) -> int:
        return self.spill_store_bytes + self.spill_load_bytes

    @property
    def stack_bytes(self) -> int:
        return max(self.stack_frame_bytes, self.cumulative_stack_bytes)


def parse(text: str, arch: Optional[str] = None) -> dict[str, KernelResources]:
    """Functions in a ptxas -v report, keyed by mangled name.

    A report for several architectures names each function once per architecture; pass
    ``arch`` ('sm_90') to choose one. Device functions take the architecture of the entry
    compiled just before them (ptxas reports them inside that compilation).
    """
    recs: list[dict] = []
    by_key: dict[tuple, dict] = {}
    current_arch: Optional[str] = None
    entry: Optional[dict] = None  # the entry being compiled: "Used ..." lines belong to it
    pending: Optional[dict] = None  # record whose "stack frame" line comes next
    for line in text.splitlines():
        if m := _COMPILING.search(line):
            current_arch = m.group(2)
            entry = _record(recs, by_key, m.group(1), current_arch)
            entry["is_entry"] = True
            pending = None
        elif m := _PROPS_FOR.search(line):
            pending = _record(recs, by_key, m.group(1), current_arch)
        elif pending is not None and (m := _PROPS.search(line)):
            pending["stack_frame_bytes"], pending["spill_store_bytes"], pending["spill_load_bytes"] = (
                int(g) for g in m.groups())
            pending = None
        elif entry is not None and (m := _USED.search(line)):
            entry["registers"] = int(m.group(1))
            _used_items(entry, m.group(2))
    archs = sorted({r["arch"] for r in recs if r["arch"]})
    if arch is not None:
        recs = [r for r in recs if r["arch"] == arch]
    elif len(archs) > 1:
        raise UsageError(f"the ptxas report covers several architectures ({', '.join(archs)})",
                         fix="call parse(text, arch='sm_90') to pick one")
    names = _demangle([r["name"] for r in recs])
    out = {}
    for r in recs:
        demangled, tool = names[r["name"]]
        out[r["name"]] = KernelResources(demangled=demangled, demangled_with=tool, **r)
    return out


def _record(recs, by_key, name, arch) -> dict:
    key = (name, arch)
    if key not in by_key:
        by_key[key] = {"name": name, "arch": arch, "is_entry": False, "cmem": (), "other": ()}
        recs.append(by_key[key])
    return by_key[key]


def _used_items(rec: dict, rest: str) -> None:
    for item in (s.strip() for s in rest.split(",")):
        if not item:
            continue
        for key, rx in _ITEMS:
            if m := rx.match(item):
                if key == "cmem":
                    rec["cmem"] += ((int(m.group(2)), int(m.group(1))),)
                elif key == "barriers":
                    rec["barriers"] = int(m.group(1))
                else:
                    rec[f"{key}_bytes"] = int(m.group(1))
                break
        else:
            rec["other"] += (item,)


def check_expectations(resources: KernelResources, expectations) -> list[str]:
    """Problems with ``resources`` against a kernel's declared ``verifier.spec.Expectations``.

    A device function has no register count of its own, so max_registers is checked on entries.
    """
    r, e = resources, expectations
    problems = []
    if e.max_spill_bytes is not None and r.spill_bytes > e.max_spill_bytes:
        what = ("declared register-resident (max_spill_bytes=0)" if e.max_spill_bytes == 0
                else f"max_spill_bytes={e.max_spill_bytes}")
        problems.append(
            f"{r.demangled} ({r.arch}): spills {r.spill_bytes} bytes (stores {r.spill_store_bytes}, "
            f"loads {r.spill_load_bytes}) but {what}; reduce register pressure (fewer live values, "
            f"no dynamically indexed local arrays) or raise max_spill_bytes")
    if e.max_stack_bytes is not None and r.stack_bytes > e.max_stack_bytes:
        problems.append(
            f"{r.demangled} ({r.arch}): uses {r.stack_bytes} bytes of stack (frame {r.stack_frame_bytes}, "
            f"cumulative {r.cumulative_stack_bytes}) but max_stack_bytes={e.max_stack_bytes}; stack comes "
            f"from spills, dynamically indexed local arrays and non-inlined calls")
    if e.max_registers is not None and r.registers is not None and r.registers > e.max_registers:
        problems.append(
            f"{r.demangled} ({r.arch}): uses {r.registers} registers but max_registers={e.max_registers}; "
            f"cap them with __launch_bounds__ / -maxrregcount or raise max_registers")
    return problems


def _demangle(names: list[str]) -> dict[str, tuple[str, str]]:
    """name -> (demangled, tool). One subprocess for all mangled names."""
    out = {n: (n, "not-mangled") for n in names if not n.startswith("_Z")}
    mangled = sorted({n for n in names if n.startswith("_Z")})
    if not mangled:
        return out
    tool = _demangler()
    lines = None
    if tool is not None:
        try:
            proc = subprocess.run([tool, *mangled], capture_output=True, text=True, timeout=60)
            lines = proc.stdout.splitlines() if proc.returncode == 0 else None
        except (OSError, subprocess.SubprocessError):
            lines = None
    if lines is None or len(lines) != len(mangled):
        out.update({n: (n, "unavailable") for n in mangled})
    else:
        label = Path(tool).name
        out.update({n: (d.strip(), label) for n, d in zip(mangled, lines)})
    return out


# An unnamed namespace as the demanglers write it (c++filt; cu++filt / EDG's `<unnamed>`), or its raw mangled part
_ANON = re.compile(r"(?:\(anonymous namespace\)|\{anonymous\}|<unnamed>|_GLOBAL__N_\w*)::")


def elide_anonymous(text: str) -> str:
    """``text`` with every unnamed namespace left out: the name the C++ source uses for what it declares in one."""
    return _ANON.sub("", text)


def demangle_names(names: list[str]) -> dict[str, tuple[str, str]]:
    """name -> (demangled, tool) for symbols of a cubin or PTX (verifier.launch.symbols resolves entries with it)."""
    return _demangle(list(names))


@functools.lru_cache(maxsize=None)
def _demangler() -> Optional[str]:
    # binutils' c++filt first: it writes a name as C++ source does (``scale<float, 4>(float const*, ...)``), where
    # the toolkit's cu++filt writes ``scale<float, (int)4>(const T1 *, ...)`` (CUDA 13, seen on the H200); both read
    # the Itanium ABI names nvcc emits, so the messages then read the same on a full toolkit and without one.
    # cu++filt (beside nvcc in full toolkits) where binutils is missing.
    nvcc = os.environ.get("VERIFIER_NVCC") or shutil.which("nvcc")
    dirs = [Path(os.path.realpath(nvcc)).parent] if nvcc else []
    dirs += [Path(os.environ[v]) / "bin" for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    candidates = [shutil.which("c++filt")] + [str(d / "cu++filt") for d in dirs] + [shutil.which("cu++filt")]
    for c in candidates:
        if c and os.access(c, os.X_OK) and Path(c).is_file():
            return str(c)
    return None


def undeclared_usage(resources: KernelResources, expectations) -> list[str]:
    """Spills and stack use that no declared limit covers: with no max_spill_bytes (max_stack_bytes)
    declared, any spill (stack) is reported as a warning, so an undeclared fact still speaks."""
    r, e = resources, expectations
    facts = []
    if e.max_spill_bytes is None and r.spill_bytes > 0:
        facts.append(f"spills {r.spill_bytes} bytes (stores {r.spill_store_bytes}, loads {r.spill_load_bytes})")
    if e.max_stack_bytes is None and r.stack_bytes > 0:
        facts.append(f"uses {r.stack_bytes} bytes of stack (frame {r.stack_frame_bytes}, cumulative "
                     f"{r.cumulative_stack_bytes})")
    if not facts:
        return []
    # a stack frame with no spill is the kernel's own local memory (an array indexed at run time), not a row
    # that left the registers: say what the numbers show
    why = ("a spill in a reduction kernel usually means its row does not stay in registers" if r.spill_bytes > 0
           else "a stack frame with no spill is a local array the kernel indexes at run time (local memory)")
    return [f"{r.demangled} ({r.arch}): {' and '.join(facts)}, and the spec declares no limit for it; {why}. "
            "Declare Expectations(max_spill_bytes=..., max_stack_bytes=...) to accept it, or register_resident() "
            "to forbid it"]


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def entry_line(source: Path, demangled: str) -> Optional[tuple[str, int]]:
    """(file, line) where the __global__ function ``demangled`` is defined: in ``source`` or a header it
    includes with quotes (one level); None when not found."""
    name = re.split(r"[\s:*&]+", elide_anonymous(demangled).split("(")[0].split("<")[0].strip())[-1]
    if not re.fullmatch(r"[A-Za-z_]\w*", name or ""):
        return None
    rx = re.compile(r"\b" + re.escape(name) + r"\s*(?:<[^;{}()]*>)?\s*\(")
    try:
        text = Path(source).read_text(errors="replace")
    except OSError:
        return None
    files = [(Path(source), text)]
    for inc in _INCLUDE.findall(text):
        p = Path(source).parent / inc
        try:
            files.append((p, p.read_text(errors="replace")))
        except OSError:
            continue
    for path, body in files:
        for m in rx.finditer(body):
            start = body.rfind(";", 0, m.start())
            start = max(start, body.rfind("}", 0, m.start()))
            if "__global__" in body[start + 1:m.start()]:
                return str(path.resolve()), body.count("\n", 0, m.start()) + 1
    return None
