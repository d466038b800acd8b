"""A parser for the PTX that nvcc emits: functions, their instructions (predicate, opcode, operands) and
the source position of each (from ``.loc``, with its ``inlined_at`` chain).

It reads what NVVM writes (``.loc`` before the instructions it covers) and the inline asm it copies in
(several statements and scope braces on one line, scopes with their own registers: verifier.lint.asm). What it
cannot read is listed per function (``Function.unparsed``) with its line: that function is not analysed.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import os
import re
from dataclasses import dataclass, field
from typing import Optional

from verifier.lint import asm, isa

_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"((?:[^"\\]|\\.)*)"')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(.*)$")
_INLINED = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)")
_FUNC = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)")
_PARAM = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?[.\w]+\s+(?:\.ptr\s+[.\w]+\s+(?:\.align\s+\d+\s+)?)?"
                    r"(?:\.align\s+\d+\s+)?([\w$]+)")  # '.param .align 8 .b8 k_param_0[24]': a struct by value
_NTID = re.compile(r"^\s*\.(maxntid|reqntid)\s+([\d\s,]+)")
_SHARED = re.compile(r"^\s*(\.extern\s+)?\.shared\s+(?:\.align\s+\d+\s+)?\.\w+\s+([\w$]+)(\[(\d*)\])?")


def _shared_size(m) -> Optional[int]:
    """The declared size of a shared variable (None: extern or unsized, the dynamic shared memory); a scalar
    (`.shared .align 4 .f32 scale;`, a `__shared__ float scale;`) is a variable of its own, not the dynamic one."""
    if m.group(1) or (m.group(3) and not m.group(4)):
        return None
    return int(m.group(4)) if m.group(3) else 1
# operands: greedy up to their last non-blank character, the text a lazy '(.*?)' before '\s*;' gives, without
# trying the rest of the pattern at every character (half the time of the match)
_INSTR = re.compile(r"^\s*(?:@(!?)(%?[\w$]+)\s+)?([a-z][\w.:]*)\s*((?:.*\S)?)\s*;\s*$")
_ESCAPE = re.compile(r"\\([0-7]{1,3}|.)")


def ptx_string(text: str) -> str:
    """A PTX string literal's text (a ``.file`` path): nvcc writes each byte of a non-ASCII path as an octal escape
    (``k\\303\\251`` for ``ké``); the bytes are UTF-8."""
    if "\\" not in text:
        return text
    raw = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(text):
        raw += text[pos:m.start()].encode()
        esc = m.group(1)
        raw += bytes([int(esc, 8) & 0xFF]) if esc[0] in "01234567" else esc.encode()
        pos = m.end()
    raw += text[pos:].encode()
    return raw.decode("utf-8", errors="replace")


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
    got = _SPLIT.get(text)
    if got is None:
        if len(_SPLIT) > 200_000:
            _SPLIT.clear()
        got = _SPLIT[text] = _split_operands(text)
    return got


_SPLIT: dict = {}  # operands text -> split_operands (two statements in three repeat one: unrolled copies, kin entries)


def _split_operands(text: str) -> tuple:
    if "{" not in text and "(" not in text:  # addresses '[...]' hold no commas
        return tuple(map(str.strip, text.split(","))) if text.strip() else ()
    *segs, last = text.split(",")
    out, cur, depth = [], [], 0
    for seg in segs:  # the comma after ``seg`` splits where the brackets before it are balanced
        cur.append(seg)
        depth += seg.count("{") + seg.count("[") + seg.count("(") - seg.count("}") - seg.count("]") - seg.count(")")
        if depth == 0:
            out.append(",".join(cur).strip())
            cur = []
    cur.append(last)
    if tail := ",".join(cur).strip():
        out.append(tail)
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
    lines = text.splitlines()
    rows = enumerate(lines, 1)
    twins, parsed = dict(_LAST), {}  # functions of the previous parse (the other arch's PTX), and of this one
    for no, raw in rows:
        if skip > 1 and "{" not in raw and "}" not in raw:  # in the body of a function not wanted: only braces count
            continue
        s = raw.strip()
        if "//" in s and not s.startswith(".file"):
            s = s.split("//", 1)[0].rstrip()
        if not s:
            continue
        if skip:
            if skip == 1 or "{" in s or "}" in s:
                skip = _skip(s, skip)
            continue
        if s[0] == "." and s.startswith(".file") and (m := _FILE.match(s)):
            mod.files[int(m.group(1))] = os.path.normpath(ptx_string(m.group(2)))
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
                if (twin := _twin(twins, lines, no, m.group(2), frames)) is not None:
                    mod.functions[twin.fn.name] = _copy(twin.fn)
                    parsed[(no, twin.fn.name)] = twin
                    frames.clear()
                    frames.update(twin.frames_out)
                    next(itertools.islice(rows, len(twin.lines) - 2, None), None)  # on past its closing brace
                    continue
                fn = Function(name=m.group(2), is_entry=m.group(1) == "entry", line_no=no)
                header, scopes, loc, locb = True, asm.Scopes(), (), b"()"
                frames_in, files_in = dict(frames), dict(mod.files)
            elif m := _SHARED.match(s):
                mod.shared[m.group(2)] = _shared_size(m)
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
        if s[0] == "." and s.startswith(".loc") and (here := _loc_fields(s)) is not None:
            loc = _chain(here, frames)
            locb = _LOC_BYTES.get(loc) or _loc_bytes(loc)
            continue
        if not pending and asm.simple(s):
            _statement(fn, scopes, s, no, loc, locb)
            continue
        if s[-1] == ":" and asm.is_label(s[:-1]):
            fn.labels[s[:-1]] = len(fn.instrs)
            fn.digest.update(f"{s}{len(fn.instrs)}".encode())
            continue
        for piece in _pieces(s):
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
                    if mod.files == files_in:  # (a function whose lines set a .file is not reused)
                        parsed[(fn.line_no, fn.name)] = _Twin(lines[fn.line_no - 1:no], frames_in, dict(frames),
                                                              _copy(fn))
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
    _LAST.clear()
    _LAST.update(parsed)
    return mod


@dataclass
class _Twin:
    """A function as parsed: its lines (header to closing brace), the .loc frames before and after them."""

    lines: list
    frames_in: dict
    frames_out: dict
    fn: Function


# The functions the last parse read, by (header line, name). nvcc's PTX of one source for two arches is mostly the
# same text: a function of the next parse with the same lines at the same line numbers, after the same .loc frames,
# parses to the same Function; it is copied (its Instrs, immutable, shared) instead of read again.
_LAST: dict = {}


def _twin(twins: dict, lines: list, no: int, name: str, frames: dict) -> Optional[_Twin]:
    twin = twins.get((no, name))
    if twin is None or twin.frames_in != frames or lines[no - 1:no - 1 + len(twin.lines)] != twin.lines:
        return None
    return twin


def _copy(fn: Function) -> Function:
    """A Function of its own (lists, dicts, digest) with the same (immutable) instructions."""
    return dataclasses.replace(fn, params=list(fn.params), shared=dict(fn.shared), instrs=list(fn.instrs),
                               labels=dict(fn.labels), digest=fn.digest.copy(), unparsed=list(fn.unparsed))


def _chain(fields: tuple, frames: dict) -> tuple:
    """The source chain of a ``.loc`` (innermost first). nvcc writes an inlined call as several ``.loc`` lines,
    each ``inlined_at`` the one before: the chain follows them back to the outermost."""
    here, at = fields
    if at is None:
        frames.clear()
        chain = ((here[0], here[1]),)
    else:
        chain = ((here[0], here[1]),) + frames.get(at, ((at[0], at[1]),))
    frames[here] = chain
    return chain


_LOCS: dict = {}  # .loc line -> its fields (a function's lines come back to the same few source lines)
_LOC_BYTES: dict = {}  # .loc chain -> repr(chain).encode(), for the digests


def _loc_fields(s: str):
    """((file, line, column), its inlined_at's or None) of a ``.loc`` line, None if it is no ``.loc``."""
    if s in _LOCS:
        return _LOCS[s]
    if len(_LOCS) > 100_000:
        _LOCS.clear()
    m = _LOC.match(s)
    if m is None:
        out = None
    else:
        im = _INLINED.search(m.group(4))
        out = ((int(m.group(1)), int(m.group(2)), int(m.group(3))),
               None if im is None else (int(im.group(1)), int(im.group(2)), int(im.group(3))))
    _LOCS[s] = out
    return out


def _loc_bytes(loc: tuple) -> bytes:
    if len(_LOC_BYTES) > 100_000:
        _LOC_BYTES.clear()
    out = _LOC_BYTES[loc] = repr(loc).encode()
    return out


def _skip(s: str, state: int) -> int:
    """The skipping state after line ``s`` of a function that is not wanted (0: past its end)."""
    if state == 1:  # header
        if s.startswith("{"):
            return 2
        return 0 if s.endswith(";") and not s.startswith(".") else 1
    if "{" in s or "}" in s:
        for piece in _pieces(s):
            if piece[0] == "{":
                state += 1
            elif piece[0] == "}":
                state -= 1
                if state == 1:
                    return 0
    return state


_PIECES: dict = {}  # line -> asm.split(line): inline asm lines repeat, in one function and across its kin


def _pieces(s: str) -> tuple:
    got = _PIECES.get(s)
    if got is None:
        if len(_PIECES) > 50_000:
            _PIECES.clear()
        got = _PIECES[s] = tuple(asm.split(s))
    return got


def _statement(fn: Function, scopes, s: str, no: int, loc: tuple, locb: bytes) -> None:
    if s.startswith("."):  # .reg, .local, .pragma, .param (call scopes), .shared ...
        if s.startswith(".reg"):
            scopes.declare(s)
        elif m := _SHARED.match(s):
            fn.shared[m.group(2)] = _shared_size(m)
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
    parts = _PARTS.get(op)
    if parts is None:
        parts = _PARTS[op] = tuple(op.split("."))
    if parts[0] not in isa.KNOWN:
        fn.unparsed.append((no, s, loc, f"`{parts[0]}` is no PTX instruction this analysis knows"))
        return
    fn.instrs.append(_instr(len(fn.instrs), op, split_operands(operands), pred, bool(neg), loc, no, parts))
    fn.digest.update(f"{'@!' if neg else '@'}{pred} {op} {operands}".encode() + locb)


_PARTS: dict = {}  # opcode -> its parts (a few hundred opcodes, each written thousands of times)
_new, _set = object.__new__, object.__setattr__


def _instr(idx, op, args, pred, pred_neg, loc, line_no, parts) -> Instr:
    """``Instr(...)`` without the frozen dataclass's ``object.__setattr__`` of each field (2 -> 0.7 us)."""
    ins = _new(Instr)
    _set(ins, "__dict__", {"idx": idx, "op": op, "args": args, "pred": pred, "pred_neg": pred_neg, "loc": loc,
                           "line_no": line_no, "parts": parts})
    return ins


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
