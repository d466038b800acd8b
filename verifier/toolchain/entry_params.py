"""The parameter list of each ``.entry`` of a PTX file: what the compiled kernel takes, in order, with each
parameter's size and alignment in bytes (what the build step checks a launch's arguments against).

NVVM writes a scalar parameter as ``.param .u32 k_param_1`` (size and alignment the type's width; pointers are
``.u64``, possibly with ``.ptr .global .align N`` after the type) and anything passed by value as bytes,
``.param .align 8 .b8 k_param_0[24]`` (a struct of 24 bytes aligned to 8). Only the headers are read (a regular
expression over the lines between ``.entry name(`` and ``)``), never the bodies: cheap on any PTX.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$.]+)\s*\(([^)]*)\)", re.M)
_PARAM = re.compile(r"\.param\s+(?:\.align\s+(\d+)\s+)?\.([a-z]+)(\d+)\s+(?:\.ptr\s+(?:\.\w+\s+)*?(?:\.align\s+\d+\s+)?)?"
                    r"[\w$]+\s*(?:\[\s*(\d+)\s*\])?")


@dataclass(frozen=True)
class Param:
    """One entry parameter: its PTX type (``u64``, ``f32``, ``b8``...), size and alignment in bytes; ``array``:
    declared as bytes (``.b8 name[N]``: a struct or array passed by value)."""

    type: str
    size: int
    align: int
    array: bool = False

    def describe(self) -> str:
        if self.array:
            return f"{self.size} bytes align {self.align}"
        return self.type

    @property
    def is_float(self) -> bool:
        return not self.array and self.type.startswith("f")


def parse(text: str) -> dict:
    """symbol -> [Param, ...] of every ``.entry`` in PTX ``text``."""
    out = {}
    for m in _ENTRY.finditer(text):
        params = []
        for p in _PARAM.finditer(m.group(2)):
            align, cls, bits, count = p.groups()
            width = int(bits) // 8
            if count is not None:
                params.append(Param(f"{cls}{bits}", width * int(count), int(align) if align else width, True))
            else:
                params.append(Param(f"{cls}{bits}", width, int(align) if align else width))
        out[m.group(1)] = params
    return out


_CACHE: dict = {}


def entry_params(path) -> dict:
    """symbol -> parameter list of the entries of the PTX file at ``path`` (cached per path, size and mtime)."""
    p = Path(path)
    st = p.stat()
    key = (str(p), st.st_size, st.st_mtime_ns)
    if key not in _CACHE:
        _CACHE[key] = parse(p.read_text(errors="replace"))
    return _CACHE[key]
