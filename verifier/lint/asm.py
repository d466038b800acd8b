"""Statements of a PTX function body as nvcc writes them, inline asm included: a line may hold several
statements and scope braces (``{  .reg .f32 r0;  .reg .pred p;  shfl.sync.down.b32 r0|p, ...;  @p add.f32 r0,
r0, %f82;  mov.f32 %f25, r0;}``), a scope may span lines, and a scope's ``.reg`` declarations (names with or
without ``%``, ``%r<4>`` ranges) shadow the function's registers of the same name.

``split`` cuts one line into scope braces, labels and statements; ``Scopes`` gives every register declared
inside a nested scope a name of its own (``r0`` -> ``%r0$3``), so that the value analysis sees one register
per declaration and every name it reads starts with ``%``.
"""
from __future__ import annotations

import re

_LABEL = re.compile(r"^[A-Za-z_$][\w$]*$")
_DECL = re.compile(r"^\.reg\s+((?:\.\w+\s+)+)(.*)$", re.S)
_RANGE = re.compile(r"^(%?[A-Za-z_$][\w$]*?)<(\d+)>$")
_NAME = re.compile(r"(?<![\w$%.])%?[A-Za-z_$][\w$]*")


def is_label(s: str) -> bool:
    return _LABEL.match(s) is not None


def simple(s: str) -> bool:
    """The common case: ``s`` (stripped) is one statement, with no scope brace and no label."""
    if not s.endswith(";") or s[0] in "{}" or s.count(";") != 1:
        return False
    c = s.find(":")
    return c < 0 or not _LABEL.match(s[:c].strip())


def split(line: str) -> list:
    """``line`` (comment already removed) as [('{',), ('}',), ('label', name), ('stmt', text, complete)]: a brace
    opens or closes a scope only where a statement could start (vector operands ``{%f1, %f2}`` stay in their
    statement); ``complete`` is False for a statement that goes on on the next line."""
    s = line.strip()
    if simple(s):
        return [("stmt", s, True)]
    out, cur, start = [], [], True
    for ch in s:
        if start:
            if ch in " \t":
                continue
            if ch in "{}":
                out.append((ch,))
                continue
            start = False
        if ch == ";":
            out.append(("stmt", "".join(cur).strip() + ";", True))
            cur, start = [], True
            continue
        if ch == ":" and _LABEL.match("".join(cur).strip()):
            out.append(("label", "".join(cur).strip()))
            cur, start = [], True
            continue
        cur.append(ch)
    rest = "".join(cur).strip()
    if rest:
        out.append(("stmt", rest, False))
    return out


class Scopes:
    """The scope nesting of one function body: depth 1 is the function's own scope (its registers keep their
    names); deeper scopes rename what they declare."""

    def __init__(self):
        self.frames: list = []  # per open scope: ({name: new name}, [(prefix, count)], frame id)
        self.count = 0  # scopes opened in this function, for unique names
        self.renaming = False  # whether an open nested scope declared a register

    @property
    def depth(self) -> int:
        return len(self.frames)

    def open(self) -> None:
        self.count += 1
        self.frames.append(({}, [], self.count))

    def close(self) -> None:
        self.frames.pop()
        self.renaming = any(f[0] or f[1] for f in self.frames[1:])

    def declare(self, stmt: str) -> None:
        """Record a ``.reg`` declaration made inside a nested scope (others are ignored)."""
        if len(self.frames) < 2:
            return
        m = _DECL.match(stmt.rstrip(";").strip())
        if m is None:
            return
        names, ranges, fid = self.frames[-1]
        for name in m.group(2).split(","):
            name = name.strip()
            r = _RANGE.match(name)
            if r:
                ranges.append((r.group(1), int(r.group(2))))
            elif name:
                names[name] = f"%{name.lstrip('%')}${fid}"
        self.renaming = True

    def rename(self, text: str) -> str:
        """``text`` with every name declared in an enclosing nested scope replaced by its own (innermost first)."""
        if not self.renaming:
            return text
        return _NAME.sub(lambda m: self._lookup(m.group(0)), text)

    def _lookup(self, tok: str) -> str:
        for names, ranges, fid in reversed(self.frames[1:]):
            if tok in names:
                return names[tok]
            for prefix, n in ranges:
                if tok.startswith(prefix) and tok[len(prefix):].isdigit() and int(tok[len(prefix):]) < n:
                    return f"%{tok.lstrip('%')}${fid}"
        return tok
