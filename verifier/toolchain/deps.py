"""What one nvcc compile read: the dependency file nvcc writes with ``-MD -MF`` (every header, through ``-I``,
``include_dirs`` or ``<...>``), and the cache's manifest of it.

The build cache (verifier.toolchain.nvcc) is keyed in two steps, as ccache's direct mode is: the command (source
path, flags, defines, include dirs, arch, nvcc version) names a manifest listing the files the last compile of
that command read; the contents of those files name the cubin. A changed header changes the second key, so the
compile runs again and writes a new manifest. Files under the CUDA toolkit's root are left out of the list: the
``nvcc --version`` text in the key stands for them (a toolkit's cub alone is hundreds of headers). A header that
appears earlier on the search path without any listed file changing is not seen (as with ccache).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Optional

_SPLIT = re.compile(r"(?<!\\)\s+")


def parse(text: str) -> list[Path]:
    """The prerequisites of a make rule ``target : a b \\ c`` (escaped spaces kept), in order, each once."""
    body = text.replace("\\\r\n", " ").replace("\\\n", " ")
    rules = [ln for ln in body.splitlines() if ln.strip()]
    out: list[Path] = []
    for rule in rules:
        head, sep, rest = rule.partition(": ")
        if not sep:
            head, sep, rest = rule.partition(":")
        for item in _SPLIT.split(rest.strip()):
            if item:
                p = Path(item.replace("\\ ", " "))
                if p not in out:
                    out.append(p)
    return out


def outside(paths, root: Optional[Path]) -> list[str]:
    """``paths`` resolved, without those under the toolkit ``root``, sorted."""
    keep = set()
    for p in paths:
        try:
            r = Path(os.path.realpath(p))
        except OSError:
            continue
        if root is not None and (r == root or root in r.parents):
            continue
        keep.add(str(r))
    return sorted(keep)


_HASHED: dict = {}  # (path, inode, size, mtime, ctime) -> sha256: a lookup per launch stats the files, reads none


def digest(files: list[str]) -> dict[str, str]:
    """path -> sha256 of its bytes ('missing' for a file that is gone: the key changes, the compile runs)."""
    out = {}
    for f in files:
        try:
            st = os.stat(f)
            key = (f, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            if key not in _HASHED:
                _HASHED[key] = hashlib.sha256(Path(f).read_bytes()).hexdigest()
            out[f] = _HASHED[key]
        except OSError:
            out[f] = "missing"
    return out


def read_manifest(path: Path) -> Optional[list[str]]:
    try:
        files = json.loads(path.read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return files if isinstance(files, list) and all(isinstance(f, str) for f in files) else None


def write_manifest(path: Path, files: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"files": files}, indent=0))
    os.replace(tmp, path)
