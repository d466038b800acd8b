"""A launch's ``entry`` resolved to the symbol in the cubin (or PTX): the name ``extern "C"`` gives, the mangled
symbol, or the C++ name as a person writes it (``entry="rms_norm_kernel<__nv_bfloat16, 256>"``,
``"flashinfer::norm::RMSNormKernel<8, __nv_bfloat16>"``).

A templated kernel's symbol is mangled (``_ZN10flashinfer4norm13RMSNormKernelILj8E13__nv_bfloat16EEvPT0_...``).
Its demangled form (from binutils' c++filt, else the toolkit's cu++filt: verifier.toolchain.ptxas) is matched
against the entry with the return type dropped, whitespace ignored, integer literal suffixes and casts removed
(``8u``, ``(unsigned char)8``; ``false`` and ``(bool)0`` alike), <cstdint> names as the types they stand for
(``int8_t`` is ``signed char``), with or without the parameter list, qualified or not (``RMSNormKernel<8,
__nv_bfloat16>`` matches ``flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>``; names in the template arguments
too: ``block<8, Epi>`` matches ``ort::cuda::block<8, ort::cuda::Epi>``), and with unnamed namespaces elided
as C++ source names them (``f<float>`` and ``ns::f<float>`` match ``void ns::(anonymous namespace)::f<float>(float*)``:
the symbol of an unnamed namespace also holds a hash of the file's path, so only the C++ name is stable). Exactly one
symbol must match; none lists the close candidates, several list them all.
"""
from __future__ import annotations

import difflib
import re
from pathlib import Path

from verifier.errors import SpecError
from verifier.toolchain.ptxas import elide_anonymous

_SUFFIX = re.compile(r"(?<![\w.])(-?\d+)(?:ull|ul|ll|u|l)\b", re.I)
_CAST = re.compile(r"\((?:unsigned|signed|char|short|int|long|bool|\s)+\)(-?\d+)")
_UNSIGNED = re.compile(r"\bunsigned\b(?!\s*(?:int|char|short|long)\b)")  # `unsigned` is `unsigned int`
_BOOL = re.compile(r"(?<![\w.])(true|false)(?![\w.])")  # cu++filt writes (bool)0 where c++filt writes false
_PTX_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$.]+)\s*\(", re.M)


class EntryNotFound(SpecError):
    """A launch's entry names no function of the cubin (or several): the message lists the candidates, which
    ``detail`` holds alone ('closest: ...' or 'it matches ...')."""

    def __init__(self, message: str, *, fix: str, detail: str):
        super().__init__(message, fix=fix)
        self.detail = detail


def _nesting(text: str) -> list:
    """How deep in <...>, (...) and [...] each character of ``text`` is (its own bracket counted outside). A '<'
    or '>' between parentheses is a comparison unless it opens or closes a template argument list: demangled
    template arguments parenthesize expressions (``enable_if<((8)>(0)), void>``), a template name is an
    identifier right before '<'."""
    out, stack = [], []
    for i, c in enumerate(text):
        out.append(len(stack))
        if c in "([":
            stack.append(c)
        elif c in ")]":
            while stack and stack.pop() == "<":
                pass
        elif c == "<" and (not stack or stack[-1] == "<" or (i and (text[i - 1].isalnum() or text[i - 1] in "_$"))):
            stack.append(c)
        elif c == ">" and stack and stack[-1] == "<":
            stack.pop()
    return out


def _split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside <...>, (...) and [...]."""
    out, cur, i = [], "", 0
    depth = _nesting(text)
    while i < len(text):
        if depth[i] == 0 and text.startswith(sep, i):
            out.append(cur)
            cur = ""
            i += len(sep)
            continue
        cur += text[i]
        i += 1
    out.append(cur)
    return out


def _params_at(text: str) -> int:
    """Where the parameter list starts: the first '(' outside template arguments, not at 0 (-1: none)."""
    depth = _nesting(text)
    return next((i for i, c in enumerate(text) if c == "(" and depth[i] == 0 and i > 0), -1)


# <cstdint> names as the demangler spells the types they stand for (x86-64 and aarch64 Linux: int64_t is long)
_STDINT = {"int8_t": "signed char", "uint8_t": "unsigned char", "int16_t": "short", "uint16_t": "unsigned short",
           "int32_t": "int", "uint32_t": "unsigned int", "int64_t": "long", "uint64_t": "unsigned long"}
_STDINT_NAME = re.compile(r"(?<![\w:])(?:std::)?(u?int(?:8|16|32|64)_t)\b")
# cuda_fp16.h / cuda_bf16.h typedefs as the demangler spells the types they stand for (sources write `half`)
_CUDA_TYPEDEF = {"half": "__half", "half2": "__half2", "nv_bfloat16": "__nv_bfloat16", "nv_bfloat162": "__nv_bfloat162"}
_CUDA_TYPEDEF_NAME = re.compile(r"(?<![\w:])(half2?|nv_bfloat162?)\b")


def _normal(text: str) -> str:
    text = _STDINT_NAME.sub(lambda m: _STDINT[m.group(1)], text)
    text = _CUDA_TYPEDEF_NAME.sub(lambda m: _CUDA_TYPEDEF[m.group(1)], text)
    text = _UNSIGNED.sub("unsigned int", text)
    text = _BOOL.sub(lambda m: "1" if m.group(1) == "true" else "0", text)
    text = _CAST.sub(r"\1", text)
    text = _SUFFIX.sub(r"\1", text)
    return re.sub(r"\s+", "", text)


_QUALIFIER = re.compile(r"(?<![\w:])(?:\w+::)+(?=\w)")


def _unqualified_args(name: str) -> str:
    """``name`` with the namespaces of the names in its template arguments left out: ``softmax_block_forward<8,
    __half, float, __half, SoftMaxForwardEpilogue>`` as the source, inside ``namespace onnxruntime::cuda``, writes
    ``softmax_block_forward<8, __half, float, __half, onnxruntime::cuda::SoftMaxForwardEpilogue>``."""
    at = name.find("<")
    return name if at < 0 else name[:at] + _QUALIFIER.sub("", name[at:])


def forms(demangled: str) -> set:
    """The spellings of one demangled symbol an entry may use (normalized)."""
    demangled = elide_anonymous(demangled)
    head, params = demangled, ""
    at = _params_at(demangled)  # the parameter list: the first '(' outside template arguments
    if at > 0:
        head, params = demangled[:at], demangled[at:]
    name = _split_top(head.strip(), " ")[-1]  # drops a return type ("void ...")
    parts = _split_top(name, "::")
    out = set()
    for k in range(len(parts)):
        q = "::".join(parts[k:])
        out.add(_normal(q))
        out.add(_normal(_unqualified_args(q)))  # template arguments as the kernel's own namespace writes them
        out.add(_normal(q.split("<")[0]))  # a template named without its arguments: fine if it is the only one
        if params:
            out.add(_normal(q + params))
    return out


def resolve(entry: str, symbols: dict, where: str = "the cubin") -> str:
    """The symbol ``entry`` names among ``symbols`` (symbol -> demangled form, entries only). Raises EntryNotFound
    with the close candidates (none match) or all matches (several do)."""
    if entry in symbols:
        return entry
    want = _normal(elide_anonymous(entry))
    hits = sorted(s for s, d in symbols.items() if want in forms(d))
    if len(hits) == 1:
        return hits[0]
    shown = {s: _display(d) for s, d in symbols.items()}
    if hits:
        listing = "; ".join(shown[s] for s in hits)
        raise EntryNotFound(f"entry {entry!r} matches {len(hits)} functions of {where}: {listing}",
                            fix="write the template arguments (or the parameter list) that single one out",
                            detail=f"it matches {len(hits)}: {listing}")
    bare = want.split("(")[0]

    def score(s):
        names = [_normal(n) for n in (_no_params(shown[s]), _no_params(shown[s]).split("::")[-1])]
        return max(difflib.SequenceMatcher(None, bare, n).ratio() for n in names)

    ranked = sorted(symbols, key=lambda s: (-score(s), shown[s]))
    close = [_no_params(shown[s]) for s in ranked if score(s) >= 0.5][:5] or [_no_params(shown[s]) for s in ranked[:5]]
    listing = "; ".join(close) if close else "(none: the cubin holds no kernel; a __global__ template is compiled only where it is instantiated)"
    raise EntryNotFound(
        f"entry {entry!r} is not a __global__ function of {where}; closest: {listing}", detail=f"closest: {listing}",
        fix="name the kernel as written in C++ with its template arguments (e.g. 'ns::kernel<float, 256>'), its "
            "extern \"C\" name, or its mangled symbol; a template is in the cubin only once instantiated (an "
            "explicit `template __global__ void ns::kernel<float, 256>(...);` line, or a launch in the source)")


# cu++filt's casts of template arguments, written as C++ source writes the literal (binutils' c++filt's spelling)
_SHOWN_CAST = re.compile(r"\((bool|int|unsigned int|unsigned|long|unsigned long|long long|unsigned long long)\)(-?\d+)")
_SHOWN_SUFFIX = {"int": "", "unsigned int": "u", "unsigned": "u", "long": "l", "unsigned long": "ul",
                 "long long": "ll", "unsigned long long": "ull"}


def _literal(m) -> str:
    kind, value = m.group(1), m.group(2)
    if kind == "bool":
        return "false" if int(value) == 0 else "true"
    return value + _SHOWN_SUFFIX[kind]


def _display(demangled: str) -> str:
    """A demangled symbol as an entry would name it: without its return type, and with cu++filt's
    ``<float, (int)256, (bool)0>`` shown as ``<float, 256, false>``, as c++filt and the source write it."""
    demangled = elide_anonymous(demangled)
    head = _no_params(demangled)
    return _SHOWN_CAST.sub(_literal, _split_top(head.strip(), " ")[-1]) + demangled[len(head):]


def shown(demangled: str) -> str:
    """A demangled symbol as a spec's entry names it (for messages): no return type, no parameter list, unnamed
    namespaces elided."""
    return _no_params(_display(demangled))


def _no_params(display: str) -> str:
    """``display`` up to its parameter list (the first '(' outside <...>)."""
    at = _params_at(display)
    return display[:at] if at > 0 else display


def cubin_entries(build) -> dict:
    """symbol -> demangled form of the entries of a verifier.toolchain.nvcc.BuildResult."""
    return {m: r.demangled for m, r in build.resources.items() if r.is_entry}


_PTX: dict = {}


def ptx_entries(path) -> dict:
    """symbol -> demangled form of the ``.entry`` functions of a PTX file (cached per path and size)."""
    from verifier.toolchain.ptxas import demangle_names

    p = Path(path)
    key = (str(p), p.stat().st_size)
    if key not in _PTX:
        names = _PTX_ENTRY.findall(p.read_text(errors="replace"))
        _PTX[key] = {n: d for n, (d, _) in demangle_names(names).items()}
    return _PTX[key]


def resolve_launch_entries(entries, symbols: dict, where: str) -> tuple:
    """({entry: symbol} for those found, {entry: EntryNotFound} for the others)."""
    found, missing = {}, {}
    for e in entries:
        try:
            found[e] = resolve(e, symbols, where)
        except EntryNotFound as err:
            missing[e] = err
    return found, missing
