"""A parser for the PTX that nvcc emits: functions, their instructions (predicate, opcode, operands) and
the source position of each (from ``.loc``, with its ``inlined_at`` chain).

It reads what NVVM writes (one statement per line, labels on their own line, ``.loc`` before the
instructions it covers), not hand-written PTX in general: statements split over several lines or several
statements on one line outside inline-asm blocks are not expected there.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from typing import Optional

_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+(.*)$")
_INLINED = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+\d+")
_FUNC = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)")
_PARAM = re.compile(r"\.param\s+[.\w]+\s+(?:\.ptr\s+[.\w]+\s+(?:\.align\s+\d+\s+)?)?(?:\.align\s+\d+\s+)?([\w$]+)")
_NTID = re.compile(r"^\s*\.(maxntid|reqntid)\s+([\d\s,]+)")
_SHARED = re.compile(r"^\s*(\.extern\s+)?\.shared\s+(?:\.align\s+\d+\s+)?\.\w+\s+([\w$]+)(?:\[(\d*)\])?")
_LABEL = re.compile(r"^\s*([\w$]+):\s*$")
_INSTR = re.compile(r"^\s*(?:@(!?)(%[\w$]+)\s+)?([a-z][\w.:]*)\s*(.*?)\s*;\s*(?://.*)?$")


@dataclass(frozen=True)
class Instr:
    idx: int
    op: str  # full opcode with modifiers: 'ld.shared.f32'
    args: tuple  # operand strings as written: '%r1', '[%r2+4]', '{%f1, %f2}', '%r3|%p1'
    pred: Optional[str] = None  # guard predicate register
    pred_neg: bool = False  # guarded by @!%p
    loc: tuple = ()  # ((file, line), ...): innermost position first, then the inlined_at call sites
    line_no: int = 0  # line in the .ptx text
    parts: tuple = ()  # op split at '.': ('ld', 'shared', 'f32')

    @property
    def base(self) -> str:
        return self.parts[0]


@dataclass
class Function:
    name: str
    is_entry: bool
    params: list = field(default_factory=list)
    maxntid: Optional[tuple] = None
    reqntid: Optional[tuple] = None
    shared: dict = field(default_factory=dict)  # name -> bytes (None: extern, dynamic)
    instrs: list = field(default_factory=list)
    labels: dict = field(default_factory=dict)  # label -> index of the next instruction
    digest: object = field(default_factory=lambda: hashlib.sha256())  # of its statements and positions


@dataclass
class Module:
    version: str = ""
    target: str = ""
    files: dict = field(default_factory=dict)  # .file index -> normalised path
    functions: dict = field(default_factory=dict)  # name -> Function
    shared: dict = field(default_factory=dict)  # module-scope shared variables

    @property
    def entries(self) -> list:
        return [f for f in self.functions.values() if f.is_entry]


class PtxSyntaxError(ValueError):
    pass


def split_operands(text: str) -> tuple:
    """Operands split at top-level commas ('{%f1, %f2}, [%r1+4]' is two operands)."""
    if "{" not in text and "(" not in text:  # addresses '[...]' hold no commas
        return tuple(t.strip() for t in text.split(",")) if text.strip() else ()
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return tuple(out)


_FUNC_START = re.compile(r"^(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)", re.M)


def parse(text: str, wanted=None) -> Module:
    """The module's functions (only those named in ``wanted``, when given: the others are skipped unread)."""
    if wanted is None:
        return _parse(text)
    pieces, pos = [], 0
    for m in _FUNC_START.finditer(text):
        end = text.find("\n}\n", m.end())
        end = len(text) if end < 0 else end + 3
        if m.group(1) not in wanted:
            pieces.append(text[pos:m.start()])
            pos = end
    pieces.append(text[pos:])
    return _parse("".join(pieces))


def _parse(text: str) -> Module:
    mod = Module()
    fn: Optional[Function] = None
    header = False  # between '.entry name(' and the body's '{'
    depth = 0
    loc: tuple = ()
    pending: list = []  # lines of an unfinished statement
    pending_no = 0
    for no, raw in enumerate(text.splitlines(), 1):
        s = raw.strip()
        if "//" in s and not s.startswith(".file"):
            s = s.split("//", 1)[0].rstrip()
        if not s:
            continue
        if s.startswith(".file") and (m := _FILE.match(s)):
            mod.files[int(m.group(1))] = os.path.normpath(m.group(2))
            continue
        if fn is None:
            if s.startswith(".version"):
                mod.version = s.split()[1]
            elif s.startswith(".target"):
                mod.target = s.split()[1].rstrip(",")
            elif m := _FUNC.match(s):
                fn = Function(name=m.group(2), is_entry=m.group(1) == "entry")
                header, depth, loc = True, 0, ()
                if s.endswith(";"):  # a declaration (prototype) only
                    fn, header = None, False
            elif m := _SHARED.match(s):
                mod.shared[m.group(2)] = None if m.group(1) or not m.group(3) else int(m.group(3))
            continue
        if header:
            if m := _PARAM.search(s):
                fn.params.append(m.group(1))
            if m := _NTID.match(s):
                dims = tuple(int(x) for x in m.group(2).replace(",", " ").split())
                setattr(fn, m.group(1), dims + (1,) * (3 - len(dims)))
            if s.startswith("{"):
                header, depth = False, 1
            elif s.endswith(";") and not s.startswith("."):  # prototype of a .func without body
                fn, header = None, False
            continue
        if s == "{":
            depth += 1
            continue
        if s.startswith("{") or (s.endswith("}") and ";" in s):
            # inline-asm scopes: '{ cvt.f32.f16 %f1, %rs1;}' on one line, or '{add.f16 %rs1,%rs1,%rs2;' ... '}'
            opened, closed = s.startswith("{"), s.endswith("}")
            for stmt in s.strip("{}").split(";"):
                stmt = stmt.strip()
                if stmt and not stmt.startswith("."):
                    _add(fn, stmt + ";", no, loc)
            depth += int(opened) - int(closed)
            continue
        if s == "}":
            if pending:
                raise PtxSyntaxError(f"line {pending_no}: unterminated PTX statement {' '.join(pending)!r}")
            depth -= 1
            if depth == 0:
                mod.functions[fn.name] = fn
                fn = None
            continue
        if s.startswith(".loc") and (m := _LOC.match(s)):
            chain = [(int(m.group(1)), int(m.group(2)))]
            rest = m.group(3)
            while (im := _INLINED.search(rest)) is not None:
                chain.append((int(im.group(1)), int(im.group(2))))
                rest = rest[im.end():]
            loc = tuple(chain)
            continue
        if s.startswith(".") and (m := _SHARED.match(s)):
            fn.shared[m.group(2)] = None if m.group(1) or not m.group(3) else int(m.group(3))
            continue
        if s.startswith("."):  # .reg, .local, .pragma, .param (call scopes) ...
            continue
        if s.endswith(":") and (m := _LABEL.match(s)):
            fn.labels[m.group(1)] = len(fn.instrs)
            fn.digest.update(f"{s}{len(fn.instrs)}".encode())
            continue
        if pending or not s.endswith(";"):  # a statement over several lines ('call.uni' then its operands)
            pending.append(s)
            if s.endswith(";"):
                _add(fn, " ".join(pending), pending_no, loc)
                pending = []
            elif len(pending) == 1:
                pending_no = no
            continue
        _add(fn, s, no, loc)
    if fn is not None:
        raise PtxSyntaxError(f"function {fn.name} has no closing brace")
    return mod


def _add(fn: Function, s: str, no: int, loc: tuple) -> None:
    m = _INSTR.match(s)
    if m is None:
        raise PtxSyntaxError(f"line {no}: cannot parse PTX statement {s!r}")
    neg, pred, op, operands = m.groups()
    fn.instrs.append(Instr(idx=len(fn.instrs), op=op, args=split_operands(operands), pred=pred,
                           pred_neg=bool(neg), loc=loc, line_no=no, parts=tuple(op.split("."))))
    fn.digest.update(s.encode())
    fn.digest.update(repr(loc).encode())


def position(mod: Module, instr: Instr, prefer=None) -> tuple:
    """(path, line) of an instruction: the innermost position in a file that ``prefer(path)`` accepts
    (the user's sources rather than CUDA's headers), else the innermost one; (None, None) without .loc."""
    chain = [(mod.files.get(f, f"<file {f}>"), ln) for f, ln in instr.loc if ln > 0]
    if not chain:
        return (None, None)
    if prefer is not None:
        for path, ln in chain:
            if prefer(path):
                return (path, ln)
    return chain[0]
