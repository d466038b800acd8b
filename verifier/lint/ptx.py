"""A parser for the PTX that nvcc emits: functions, their instructions (predicate, opcode, operands) and
the source position of each (from ``.loc``, with its ``inlined_at`` chain).

It reads what NVVM writes (``.loc`` before the instructions it covers) and the inline asm it copies in
(several statements and scope braces on one line, scopes with their own registers: verifier.lint.asm). What it
cannot read is listed per function (``Function.unparsed``) with its line: that function is not analysed.
"""
from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from typing import Optional

from verifier.lint import asm, isa

_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(.*)$")
_INLINED = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)")
_FUNC = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)")
_PARAM = re.compile(r"\.param\s+[.\w]+\s+(?:\.ptr\s+[.\w]+\s+(?:\.align\s+\d+\s+)?)?(?:\.align\s+\d+\s+)?([\w$]+)")
_NTID = re.compile(r"^\s*\.(maxntid|reqntid)\s+([\d\s,]+)")
_SHARED = re.compile(r"^\s*(\.extern\s+)?\.shared\s+(?:\.align\s+\d+\s+)?\.\w+\s+([\w$]+)(?:\[(\d*)\])?")
_INSTR = re.compile(r"^\s*(?:@(!?)(%?[\w$]+)\s+)?([a-z][\w.:]*)\s*(.*?)\s*;\s*$")


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
    unparsed: list = field(default_factory=list)  # [(line, statement, .loc chain, why)]: what it cannot read
    line_no: int = 0  # line of its header


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


def parse(text: str, wanted=None) -> Module:
    """The module's functions (only those named in ``wanted``, when given: the others are skipped unread, their
    lines still counted, so that every line number is the line's number in ``text``). A statement the parser
    cannot read goes to its function's ``unparsed`` list, never raises: that function is not analysed."""
    mod = Module()
    fn: Optional[Function] = None
    scopes: Optional[asm.Scopes] = None
    header = False  # between '.entry name(' and the body's '{'
    skip = 0  # 1: in the header of a function not wanted, 2+: in its body (1 + brace depth)
    loc: tuple = ()
    locb = b"()"  # repr(loc), for the digests
    frames: dict = {}  # (file, line, column) of the .loc lines since the last outermost one -> their chains
    pending: list = []  # pieces of an unfinished statement
    pending_no = 0
    for no, raw in enumerate(text.splitlines(), 1):
        s = raw.strip()
        if "//" in s and not s.startswith(".file"):
            s = s.split("//", 1)[0].rstrip()
        if not s:
            continue
        if skip:
            if skip == 1 or "{" in s or "}" in s:
                skip = _skip(s, skip)
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
                if s.endswith(";"):  # a declaration (prototype) only
                    continue
                if wanted is not None and m.group(2) not in wanted:
                    skip = 1
                    continue
                fn = Function(name=m.group(2), is_entry=m.group(1) == "entry", line_no=no)
                header, scopes, loc, locb = True, asm.Scopes(), (), b"()"
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
                header = False
                scopes.open()
            elif s.endswith(";") and not s.startswith("."):  # prototype of a .func without body
                fn, header = None, False
            continue
        if s.startswith(".loc") and (m := _LOC.match(s)):
            loc = _chain(m, frames)
            locb = repr(loc).encode()
            continue
        if not pending and asm.simple(s):
            _statement(fn, scopes, s, no, loc, locb)
            continue
        if s[-1] == ":" and asm.is_label(s[:-1]):
            fn.labels[s[:-1]] = len(fn.instrs)
            fn.digest.update(f"{s}{len(fn.instrs)}".encode())
            continue
        for piece in asm.split(s):
            kind = piece[0]
            if kind == "{":
                scopes.open()
            elif kind == "}":
                if pending:
                    fn.unparsed.append((pending_no, " ".join(pending), loc, "the statement has no closing ';'"))
                    pending = []
                scopes.close()
                if scopes.depth == 0:
                    mod.functions[fn.name] = fn
                    fn = None
                    break
            elif kind == "label":
                fn.labels[piece[1]] = len(fn.instrs)
                fn.digest.update(f"{piece[1]}:{len(fn.instrs)}".encode())
            elif pending or not piece[2]:  # a statement over several lines ('call.uni' then its operands)
                if not pending:
                    pending_no = no
                pending.append(piece[1])
                if piece[2]:
                    _statement(fn, scopes, " ".join(pending), pending_no, loc, locb)
                    pending = []
            else:
                _statement(fn, scopes, piece[1], no, loc, locb)
    if fn is not None:
        fn.unparsed.append((fn.line_no, f".entry {fn.name}", (), "the function has no closing brace"))
        mod.functions[fn.name] = fn
    return mod


def _chain(m, frames: dict) -> tuple:
    """The source chain of a ``.loc`` (innermost first). nvcc writes an inlined call as several ``.loc`` lines,
    each ``inlined_at`` the one before: the chain follows them back to the outermost."""
    here = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
    im = _INLINED.search(m.group(4))
    if im is None:
        frames.clear()
        chain = ((here[0], here[1]),)
    else:
        at = (int(im.group(1)), int(im.group(2)), int(im.group(3)))
        chain = ((here[0], here[1]),) + frames.get(at, ((at[0], at[1]),))
    frames[here] = chain
    return chain


def _skip(s: str, state: int) -> int:
    """The skipping state after line ``s`` of a function that is not wanted (0: past its end)."""
    if state == 1:  # header
        if s.startswith("{"):
            return 2
        return 0 if s.endswith(";") and not s.startswith(".") else 1
    if "{" in s or "}" in s:
        for piece in asm.split(s):
            if piece[0] == "{":
                state += 1
            elif piece[0] == "}":
                state -= 1
                if state == 1:
                    return 0
    return state


def _statement(fn: Function, scopes, s: str, no: int, loc: tuple, locb: bytes) -> None:
    if s.startswith("."):  # .reg, .local, .pragma, .param (call scopes), .shared ...
        if s.startswith(".reg"):
            scopes.declare(s)
        elif m := _SHARED.match(s):
            fn.shared[m.group(2)] = None if m.group(1) or not m.group(3) else int(m.group(3))
        return
    m = _INSTR.match(s)
    if m is None:
        fn.unparsed.append((no, s, loc, "not a PTX statement this parser reads"))
        return
    neg, pred, op, operands = m.groups()
    if scopes.renaming:
        pred = scopes.rename(pred) if pred else pred
        operands = scopes.rename(operands)
    if pred is not None and not pred.startswith("%"):
        fn.unparsed.append((no, s, loc, f"its guard {pred!r} is no declared predicate register"))
        return
    parts = tuple(op.split("."))
    if parts[0] not in isa.KNOWN:
        fn.unparsed.append((no, s, loc, f"`{parts[0]}` is no PTX instruction this analysis knows"))
        return
    fn.instrs.append(Instr(idx=len(fn.instrs), op=op, args=split_operands(operands), pred=pred,
                           pred_neg=bool(neg), loc=loc, line_no=no, parts=parts))
    fn.digest.update(f"{'@!' if neg else '@'}{pred} {op} {operands}".encode() + locb)


def position(mod: Module, instr, prefer=None) -> tuple:
    """(path, line) of an instruction (or of a ``.loc`` chain): the innermost position in a file that
    ``prefer(path)`` accepts (the user's sources rather than CUDA's headers), else the innermost one; (None,
    None) without .loc."""
    loc = instr if isinstance(instr, tuple) else instr.loc
    chain = [(mod.files.get(f, f"<file {f}>"), ln) for f, ln in loc if ln > 0]
    if not chain:
        return (None, None)
    if prefer is not None:
        for path, ln in chain:
            if prefer(path):
                return (path, ln)
    return chain[0]
