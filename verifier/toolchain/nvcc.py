"""Compile CUDA sources to cubins with nvcc, cached on disk.

The cache key covers everything that changes the cubin: source bytes and path (``-lineinfo``
records the path), the bytes of every local ``#include`` reached from it, flags, defines,
include dirs, arch, and the ``nvcc --version`` text. Concurrent builds of one key (``pytest -n
auto``) serialise on a per-key file lock; files land with ``os.replace`` so a reader never sees
a partial cubin. Failed builds are not cached.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

from filelock import FileLock

from verifier.errors import BuildError, ToolMissing, UsageError
from verifier.toolchain import ptxas

BASE_FLAGS = ("-cubin", "-lineinfo", "-Xptxas", "-v", "-std=c++17", "-O3")
PTX_FLAGS = ("-ptx", "-lineinfo", "-std=c++17", "-O3")  # compile_ptx: the same front end, stopped at PTX
_ARCH_RE = re.compile(r"^sm_\d{2,3}[af]?$")
_DEFINE_RE = re.compile(r"^[A-Za-z_]\w*$")
_INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.M)
# nvcc front end: "path(12): error: ..."; rewritten to the "path:12: error: ..." form editors link.
_NVCC_DIAG = re.compile(r"^(.+?)\((\d+)\): (?=(?:fatal )?error|warning|remark)", re.M)
_COMPILE_TIMEOUT_S = 600


@dataclass(frozen=True)
class BuildResult:
    cubin: Path
    ptxas_log: str
    resources: dict  # mangled name -> ptxas.KernelResources
    command: list
    cached: bool


def cache_dir() -> Path:
    """``$VERIFIER_CACHE_DIR``, else ``$XDG_CACHE_HOME/kernel-verifier``, else ``~/.cache/kernel-verifier``."""
    if os.environ.get("VERIFIER_CACHE_DIR"):
        return Path(os.environ["VERIFIER_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kernel-verifier"


def nvcc_path() -> str:
    """The nvcc to use: ``$VERIFIER_NVCC``, else nvcc on PATH, else ``$CUDA_HOME/bin/nvcc``."""
    env = os.environ.get("VERIFIER_NVCC")
    if env:
        if shutil.which(env):
            return shutil.which(env)
        raise ToolMissing(f"$VERIFIER_NVCC is {env!r}, which is not an executable",
                          fix="point $VERIFIER_NVCC at an nvcc binary, or unset it to use nvcc on PATH")
    found = shutil.which("nvcc")
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if not found and os.environ.get(var):
            found = shutil.which(str(Path(os.environ[var]) / "bin" / "nvcc"))
    if not found:
        raise ToolMissing(
            "nvcc (the CUDA compiler) was not found on PATH",
            fix="install the CUDA toolkit, or `pip install nvidia-cuda-nvcc-cu12` and put its bin/ on PATH, "
                "or set $VERIFIER_NVCC to the nvcc binary")
    return found


def nvcc_version() -> Optional[str]:
    """nvcc's release line ('Cuda compilation tools, release 13.0, V13.0.88'), or None without nvcc."""
    try:
        text = _version_text(nvcc_path())
    except ToolMissing:
        return None
    lines = text.splitlines()
    return next((ln.strip() for ln in lines if "release" in ln), lines[-1].strip() if lines else text)


@functools.lru_cache(maxsize=None)
def _version_text(nvcc: str) -> str:
    proc = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise ToolMissing(f"`{nvcc} --version` failed: {proc.stderr.strip() or proc.stdout.strip()}",
                          fix="check the CUDA install, or set $VERIFIER_NVCC to a working nvcc")
    return proc.stdout


def compile_cubin(source: Path, *, arch: str = "sm_90", defines: Optional[Mapping[str, object]] = None,
                  flags: Sequence[str] = (), include_dirs: Sequence[Path] = ()) -> BuildResult:
    """Compile ``source`` to a cubin for ``arch`` (cached); raises BuildError on compiler errors.

    ``defines`` maps macro names to values (None or True: ``-DNAME``); ``flags`` are extra nvcc flags.
    """
    source, inc_dirs, dflags, flags, nvcc = _checked_inputs(source, arch, defines, flags, include_dirs)
    key = _cache_key(source, inc_dirs, arch, dflags, flags, _version_text(nvcc))
    root = cache_dir()
    out_dir = root / "cubin" / key[:2]
    cubin, log_path = out_dir / f"{key}.cubin", out_dir / f"{key}.ptxas.log"
    base = [nvcc, *BASE_FLAGS, f"-arch={arch}", *dflags, *(f"-I{d}" for d in inc_dirs), *flags]
    cmd = [*base, "-o", str(cubin), str(source)]
    cached = True
    if not cubin.exists():  # the cubin lands last, so its presence means the log is there too
        (root / "locks").mkdir(parents=True, exist_ok=True)
        with FileLock(str(root / "locks" / f"{key}.lock")):
            if not cubin.exists():
                _build(base, source, cubin, log_path)
                cached = False
    log = log_path.read_text()
    return BuildResult(cubin=cubin, ptxas_log=log, resources=ptxas.parse(log, arch=arch),
                       command=cmd, cached=cached)


def _checked_inputs(source, arch, defines, flags, include_dirs) -> tuple:
    """(source, include dirs, -D flags, flags, nvcc) validated for compile_cubin / compile_ptx."""
    source = Path(source).resolve()
    if not source.is_file():
        raise UsageError(f"CUDA source {source} does not exist", fix="check the kernel spec's 'source' path")
    if not _ARCH_RE.match(arch):
        raise UsageError(f"arch {arch!r} is not an SM architecture", fix="use a name like 'sm_90', 'sm_90a' or 'sm_80'")
    inc_dirs = [Path(d).resolve() for d in include_dirs]
    dflags = _define_flags(defines or {})
    flags = [str(f) for f in flags]
    clash = [f for f in flags if re.match(r"^(-o|--output-file|-arch|--gpu-architecture|-gencode|-code|-ptx|-c)(=|$)", f)]
    if clash:
        raise UsageError(f"flags {clash} clash with what compile_cubin sets (output, arch, -cubin)",
                         fix="pass the architecture as arch='sm_90' and leave the output to the cache")
    return source, inc_dirs, dflags, flags, nvcc_path()


def compile_ptx(source: Path, *, arch: str = "sm_90", defines: Optional[Mapping[str, object]] = None,
                flags: Sequence[str] = (), include_dirs: Sequence[Path] = ()) -> Path:
    """The PTX nvcc emits for ``source`` (with -lineinfo: .loc lines), cached like compile_cubin's cubins;
    what verifier.lint analyses. Raises BuildError on compiler errors."""
    source, inc_dirs, dflags, flags, nvcc = _checked_inputs(source, arch, defines, flags, include_dirs)
    key = _cache_key(source, inc_dirs, arch, dflags, flags, _version_text(nvcc), base=PTX_FLAGS)
    root = cache_dir()
    out_dir = root / "ptx" / key[:2]
    ptx_path = out_dir / f"{key}.ptx"
    if not ptx_path.exists():
        (root / "locks").mkdir(parents=True, exist_ok=True)
        with FileLock(str(root / "locks" / f"{key}.lock")):
            if not ptx_path.exists():
                base = [nvcc, *PTX_FLAGS, f"-arch={arch}", *dflags, *(f"-I{d}" for d in inc_dirs), *flags]
                _build(base, source, ptx_path, out_dir / f"{key}.nvcc.log")
    return ptx_path


def _build(base: list, source: Path, cubin: Path, log_path: Path) -> None:
    cubin.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cubin.parent, prefix=".build-") as tmp:
        tmp_cubin = Path(tmp) / cubin.name
        run = [*base, "-o", str(tmp_cubin), str(source)]
        shown = shlex.join([*base, "-o", str(cubin), str(source)])  # reproduces the build outside the cache
        try:
            proc = subprocess.run(run, capture_output=True, text=True, timeout=_COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise BuildError(f"nvcc did not finish within {_COMPILE_TIMEOUT_S} s compiling {_shown(str(source))}\n"
                             f"  command: {shown}",
                             fix="simplify the kernel or check for runaway template/unroll expansion") from None
        output = proc.stderr + proc.stdout
        if proc.returncode != 0 or not tmp_cubin.is_file():
            raise BuildError(
                f"nvcc failed (exit {proc.returncode}) compiling {_shown(str(source))}:\n"
                f"{_diagnostics(output)}\n  command: {shown}",
                fix="fix the errors above (file:line); the command reproduces them")
        tmp_log = Path(tmp) / log_path.name
        tmp_log.write_text(output)
        os.replace(tmp_log, log_path)
        os.replace(tmp_cubin, cubin)


def _diagnostics(output: str, max_lines: int = 60) -> str:
    text = _shown(_NVCC_DIAG.sub(r"\1:\2: ", output)).rstrip()
    lines = text.splitlines()
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"... ({len(lines) - max_lines} more lines)"]
    return "\n".join("  " + ln for ln in lines)


def _shown(text: str) -> str:
    """Paths under the working directory shown relative to it."""
    return text.replace(os.getcwd().rstrip(os.sep) + os.sep, "")


def _define_flags(defines: Mapping[str, object]) -> list:
    out = []
    for name, value in sorted(defines.items()):
        if not _DEFINE_RE.match(str(name)):
            raise UsageError(f"define {name!r} is not a valid macro name",
                             fix="use a C identifier, e.g. {'BLOCK': 256}")
        out.append(f"-D{name}" if value is None or value is True else f"-D{name}={value}")
    return out


def _cache_key(source: Path, inc_dirs: list, arch: str, dflags: list, flags: list, version: str,
               base: tuple = BASE_FLAGS) -> str:
    files = {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in _local_files(source, inc_dirs)}
    blob = json.dumps({"files": files, "source": str(source), "include_dirs": [str(d) for d in inc_dirs],
                       "arch": arch, "defines": dflags, "flags": flags, "base": base, "nvcc": version},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _local_files(source: Path, inc_dirs: list) -> list:
    """``source`` and every header it reaches through "..." includes (searched beside the including
    file, then in the include dirs) or <...> includes found in the include dirs. Conditional
    includes are followed too: hashing a header that is not used only costs a rebuild."""
    seen, todo = [], [source]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.append(f)
        for quote, name in _INCLUDE_RE.findall(f.read_text(errors="replace")):
            dirs = ([f.parent] if quote == '"' else []) + inc_dirs
            hit = next((d / name for d in dirs if (d / name).is_file()), None)
            if hit is not None:
                todo.append(hit.resolve())
    return seen
