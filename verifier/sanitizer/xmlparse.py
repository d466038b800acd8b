"""compute-sanitizer XML (``--xml --save FILE``) → records → findings.

Formats learnt from real captures of compute-sanitizer 2025.3.1 (see tests/test_sanitizer_xmlparse.py):

- racecheck ``Analysis`` records: one race site, a ``source`` access and one ``destination`` per conflicting
  access with its hazard ``count``; ``level`` Error or Warning (warp-synchronous races are warnings).
- racecheck ``Hazard`` records (``--racecheck-report hazard|all``): one per hazard *byte*, with the type
  (WAR/WAW/RAW), block, and both threads (``thread0``/``thread1``) with their locations; no ``level``.
- memcheck ``Precise`` records: ``who`` (thread, block), ``what`` (space, size, direction, error, address),
  ``where``; ``Api`` records for failed CUDA calls (usually the aftermath of a device error); ``Leak``
  records (``--leak-check full``) with size and address only.
- synccheck ``Synccheck`` and initcheck ``Initcheck`` records: who / what / where, one per thread.

Identical records (same kind, kernel and locations) are folded into one record with a count, so a
missing barrier seen by 2048 threads is one finding. A finding's message starts with its kind (the
first word); :mod:`verifier.sanitizer.suppressions` relies on that.
"""
from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from verifier.results.findings import Finding

SEVERITY_OF_LEVEL = {"error": "error", "warning": "warning", "warn": "warning", "info": "info", "fatal": "error"}
_SPACE_RE = re.compile(r"__(global|shared|local)__")
_NVRTC_TMP_RE = re.compile(r"^[0-9a-f]{32,64}\.cubin\.cu$")  # CuPy's NVRTC cache copies


@dataclass(frozen=True)
class Access:
    """A device code location, with the access made there (racecheck sides carry direction and count)."""

    func: str = ""
    path: str = ""
    line: Optional[int] = None
    pc: str = ""
    direction: str = ""  # Read / Write (racecheck), read / write (memcheck)
    count: Optional[int] = None  # hazards between this destination and the source (racecheck analysis)
    thread: Optional[tuple] = None  # threadIdx of this side (racecheck hazard records)


@dataclass(frozen=True)
class Record:
    """One (folded) sanitizer report."""

    tool: str
    kind: str  # RaceHazard, InvalidRead, InvalidWrite, SyncHazard, UninitializedGlobalRead, Leak, ApiError, ...
    severity: str
    text: str  # the tool's own one-line description
    kernel: str = ""  # device function as the XML gives it
    where: Optional[Access] = None  # primary location
    others: tuple = ()  # racecheck: the conflicting accesses
    hazard: str = ""  # racecheck: WAR / WAW / RAW (comma-joined when several)
    detail: str = ""  # synccheck type, memcheck error class, API name
    space: str = ""  # global / shared / local
    size: Optional[int] = None
    address: str = ""
    block: Optional[tuple] = None
    thread: Optional[tuple] = None
    count: int = 1  # folded records (or hazards, for racecheck analysis)
    xml_kind: str = ""  # the record's <kind> in the XML (Analysis, Hazard, Precise, ...)


@dataclass
class Parsed:
    records: list = field(default_factory=list)
    complete: bool = True  # False when the file ended early (a killed run) or is not XML
    error: str = ""


# --- reading --------------------------------------------------------------------------------
def _int(text) -> Optional[int]:
    try:
        return int(str(text).strip().replace(",", ""), 0)
    except (TypeError, ValueError):
        return None


def _dim3(el) -> Optional[tuple]:
    if el is None:
        return None
    vals = tuple(_int(el.findtext(k)) for k in ("x", "y", "z"))
    return None if any(v is None for v in vals) else vals


def _where(el, direction: str = "", count=None, thread=None) -> Optional[Access]:
    if el is None:
        return None
    return Access(func=el.findtext("func") or "", path=el.findtext("path") or "", line=_int(el.findtext("line")),
                  pc=el.findtext("pc") or "", direction=direction, count=count, thread=thread)


def _space(text: str, raw: str = "") -> str:
    m = _SPACE_RE.search(raw or text)
    return m.group(1) if m else (raw.strip("_") if raw else "")


def _record(rec, tool: str) -> Record:
    kind = rec.findtext("kind") or "Unknown"
    level = (rec.findtext("level") or "").lower()
    what = rec.find("what")
    what = what if what is not None else ET.Element("what")
    text = (what.findtext("text") or "").strip()
    who = rec.find("who")
    block = _dim3(who.find("blockIdx")) if who is not None else None
    thread = _dim3(who.find("threadIdx")) if who is not None else None
    where = _where(rec.find("where"))
    sev = SEVERITY_OF_LEVEL.get(level, "error")
    base = dict(tool=tool, xml_kind=kind, severity=sev, text=text, block=block, thread=thread, where=where,
                kernel=where.func if where else "", address=what.findtext("address") or "", size=_int(what.findtext("size")))
    if kind == "Analysis":  # racecheck race site: source + destinations
        src = what.find("source")
        source = _where(src.find("where"), src.findtext("direction") or "") if src is not None else None
        dests = tuple(w for w in (_where(d.find("where"), d.findtext("direction") or "", _int(d.findtext("count")))
                                  for d in what.findall("destination")) if w is not None)
        dirs = {(source.direction if source else "")} | {d.direction for d in dests}
        hazard = "WAW" if dirs == {"Write"} else ("RAW/WAR" if "Read" in dirs and "Write" in dirs else "")
        base.update(where=source, kernel=source.func if source else "")
        return Record(**base, kind="RaceHazard", others=dests, hazard=hazard, space="shared",
                      count=sum(d.count or 0 for d in dests) or 1)
    if kind == "Hazard":  # racecheck per-byte hazard: common + thread0 / thread1
        common = what.find("common")
        common = common if common is not None else ET.Element("common")
        sides = []
        for t in ("thread0", "thread1"):
            el = what.find(t)
            if el is not None:
                sides.append(_where(el.find("where"), el.findtext("access") or "", thread=_dim3(el.find("threadIdx"))))
        first = sides[0] if sides else None
        base.update(where=first, kernel=first.func if first else "", thread=first.thread if first else None,
                    block=_dim3(common.find("blockIdx")), address=common.findtext("address") or "")
        return Record(**base, kind="RaceHazard", others=tuple(sides[1:]), hazard=common.findtext("type") or "",
                      space="shared")
    if kind in ("Precise", "Imprecise"):  # memcheck device errors
        direction = (what.findtext("direction") or "").lower()
        space = _space(text, what.findtext("space") or "")
        name = {"read": "InvalidRead", "write": "InvalidWrite"}.get(direction, "MemoryError" if kind == "Precise" else "ImpreciseError")
        return Record(**base, kind=name, detail=what.findtext("error") or "", space=space)
    if kind == "Synccheck":
        return Record(**base, kind="SyncHazard", detail=what.findtext("type") or "")
    if kind == "Initcheck":
        space = _space(text)
        name = "Uninitialized" + space.capitalize() + ("Read" if "read" in text.lower() else "Access")
        return Record(**base, kind=name, space=space)
    if kind == "Leak":
        return Record(**base, kind="Leak", detail=what.findtext("type") or "")
    if kind == "Api":
        return Record(**base, kind="ApiError", detail=what.findtext("api") or "")
    return Record(**base, kind=kind)


def parse(source, tool: str) -> Parsed:
    """Records of one XML file (path, or bytes). Streams, so a large racecheck file stays cheap; a file
    cut short (the sanitizer was killed) gives the records read so far and ``complete=False``."""
    out = Parsed()
    stream = io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else open(source, "rb")
    try:
        for _, el in ET.iterparse(stream, events=("end",)):
            if el.tag == "record":
                out.records.append(_record(el, tool))
                el.clear()
    except ET.ParseError as e:
        out.complete, out.error = False, f"XML is malformed or cut short: {e}"
    finally:
        stream.close()
    out.records = fold(out.records)
    return out


# --- folding ---------------------------------------------------------------------------------
def _loc(a: Optional[Access]) -> tuple:
    return (a.func, a.path, a.line, a.pc, a.direction) if a else ()


def fold(records: list) -> list:
    """Fold identical records; attach racecheck hazard records (type, block, threads) to the race
    analysis record of the same pair of accesses. Hazards with no analysis record stay findings."""
    groups: dict = {}
    for r in records:
        key = (r.xml_kind, r.kind, r.tool, r.kernel, r.severity, r.text, r.detail, r.hazard, _loc(r.where),
               tuple(_loc(o) for o in r.others))
        if key in groups:
            g = groups[key]
            groups[key] = replace(g, count=g.count + r.count)
        else:
            groups[key] = r
    folded = list(groups.values())
    analyses = [r for r in folded if r.xml_kind == "Analysis"]
    hazards = [r for r in folded if r.xml_kind == "Hazard" and r.others]
    matched = set()
    for a in analyses:
        mine = [h for h in hazards if _pair(h) & _pairs(a)]
        if not mine:
            continue
        matched.update(id(h) for h in mine)
        h0 = mine[0]
        idx = folded.index(a)
        folded[idx] = replace(a, hazard=",".join(sorted({h.hazard for h in mine if h.hazard})) or a.hazard,
                              block=h0.block, thread=_thread_at(mine, a.where),
                              others=tuple(replace(o, thread=_thread_at(mine, o)) for o in a.others))
    return [r for r in folded if id(r) not in matched]


def _pair(h: Record) -> set:
    return {frozenset({(h.where.func, h.where.pc), (h.others[0].func, h.others[0].pc)})} if h.where else set()


def _pairs(a: Record) -> set:
    if not a.where:
        return set()
    return {frozenset({(a.where.func, a.where.pc), (o.func, o.pc)}) for o in a.others}


def _thread_at(hazards: list, other: Access) -> Optional[tuple]:
    for h in hazards:
        for side in (h.where,) + h.others:
            if side and (side.func, side.pc) == (other.func, other.pc):
                return side.thread
    return None


# --- paths --------------------------------------------------------------------------------------
class SourceMap:
    """Maps the source paths in sanitizer records (absolute paths as nvcc / Triton saw them, or CuPy's
    NVRTC temporary copies) to paths relative to ``root``. ``sources`` are the files the run compiled
    (the spec's .cu or Triton module), used for temporary copies."""

    def __init__(self, root, sources=()):
        self.root = Path(root).resolve()
        self.sources = [Path(s).resolve() for s in sources]

    def map(self, path: str) -> tuple:
        """(display path, note). The display path is repo-relative when the file is in the repository."""
        if not path:
            return "", ""
        p = Path(path)
        name = p.name
        if _NVRTC_TMP_RE.match(name):
            if len(self.sources) == 1:
                return self._rel(self.sources[0]), f"line of CuPy/NVRTC's temporary copy {path}"
            return name, f"CuPy/NVRTC temporary file {path}: original source unknown"
        if p.is_absolute():
            try:
                return p.resolve().relative_to(self.root).as_posix(), ""
            except ValueError:
                pass
        # Built in another checkout (a cached cubin, a CI container): the longest tail of the path
        # that names a file here.
        parts = p.parts[1:] if p.is_absolute() else p.parts
        for i in range(len(parts)):
            cand = self.root.joinpath(*parts[i:])
            if cand.is_file():
                note = f"built from {path}" if p.is_absolute() else ""
                return cand.resolve().relative_to(self.root).as_posix(), note
        return name, f"outside the repository: {path}"

    def _rel(self, p: Path) -> str:
        try:
            return p.relative_to(self.root).as_posix()
        except ValueError:
            return p.as_posix()


# --- findings --------------------------------------------------------------------------------------
def _xyz(t) -> str:
    return "(" + ",".join(map(str, t)) + ")"


def _at(a: Optional[Access], paths: SourceMap) -> str:
    if not a:
        return "an unknown location"
    shown, _ = paths.map(a.path)
    loc = f"{shown}:{a.line}" if shown and a.line is not None else (shown or "?")
    return f"{loc} (pc {a.pc})" if a.pc else loc


def describe(r: Record, paths: SourceMap) -> str:
    """Kind first, then what and where, one line per race side."""
    head = r.kind + (f" {r.hazard}" if r.hazard else "") + (f" [{r.detail}]" if r.detail else "")
    fn = f" in {r.kernel}" if r.kernel else ""
    lines = []
    if r.kind == "RaceHazard":
        lines.append(f"{head}: {r.severity}-level shared-memory race{fn}: {r.where.direction if r.where else '?'} at "
                     f"{_at(r.where, paths)}" + (f" by thread {_xyz(r.thread)}" if r.thread else ""))
        for o in r.others:
            cnt = f" [{o.count} hazards]" if o.count is not None else ""
            thr = f" by thread {_xyz(o.thread)}" if o.thread else ""
            lines.append(f"  vs {o.direction} at {_at(o, paths)}{thr}{cnt}")
        if r.block:
            lines.append(f"  first hazard in block {_xyz(r.block)}")
    elif r.kind == "Leak":
        lines.append(f"{head}: {r.text} at {r.address} (an allocation alive at exit; the harness's, unless the "
                     "kernel allocates)")
    elif r.kind == "ApiError":
        lines.append(f"{head}: {r.text}")
    else:
        what = r.text
        if r.size is not None and r.kind.startswith("Invalid") and "size" not in what:
            what += f" of size {r.size}"
        lines.append(f"{head}: {what}{fn} at {_at(r.where, paths)}")
        who = []
        if r.block:
            who.append(f"block {_xyz(r.block)}")
        if r.thread:
            who.append(f"thread {_xyz(r.thread)}")
        if r.address:
            who.append(f"address {r.address}")
        if who:
            lines.append("  first: " + ", ".join(who))
    if r.count > 1 and r.kind != "RaceHazard":
        lines.append(f"  reported {r.count} times (identical records folded)")
    notes = {paths.map(a.path)[1] for a in (r.where,) + tuple(r.others) if a and a.path} - {""}
    lines += [f"  note: {n}" for n in sorted(notes)]
    return "\n".join(lines)


def finding_kind(f: Finding) -> str:
    """The record kind a sanitizer finding was made from (its message's first word)."""
    return f.message.split(None, 1)[0] if f.message else ""


def to_findings(records: list, paths: SourceMap, **ctx) -> list:
    """One finding per record. ``ctx`` fills kernel / dtype / shape / repro. API errors that follow
    a device error are its aftermath: warnings; alone, they are errors."""
    device_errors = any(r.kind not in ("ApiError", "Leak") and r.severity == "error" for r in records)
    out = []
    for r in records:
        sev = r.severity
        if r.kind == "ApiError" and device_errors:
            sev = "warning"
        elif r.kind == "Leak":
            sev = "warning"
        file, _ = paths.map(r.where.path) if r.where and r.where.path else (None, "")
        out.append(Finding(check=r.tool, message=describe(r, paths), severity=sev, file=file or None,
                           line=r.where.line if r.where else None, score=float(r.count), **ctx))
    return out
