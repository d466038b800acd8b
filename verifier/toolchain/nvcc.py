"""Compile CUDA sources to cubins with nvcc, cached on disk.

The cache key covers everything that changes the cubin: the command (source path — ``-lineinfo`` records it —,
flags, defines, include dirs, arch, the ``nvcc --version`` text) and the bytes of every file the compile read, as
nvcc's own dependency output lists them (``-MD``: headers reached through ``-I`` in any flag, ``include_dirs`` or
``<...>`` included; verifier.toolchain.deps keeps the list per command, the toolkit's own headers stand in the
version text). Concurrent builds of one command (``pytest -n auto``) serialise on a per-command file lock; files
land with ``os.replace`` so a reader never sees a partial cubin. Failed builds are not cached.
"""
from __future__ import annotations

import errno
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

from verifier.errors import BuildError, SpecError, ToolMissing, UsageError
from verifier.toolchain import deps, ptxas

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


CACHE_FIX = ("set VERIFIER_CACHE_DIR to a writable directory with free space, e.g. "
             "export VERIFIER_CACHE_DIR=/tmp/kv-cache")


def cache_setting() -> str:
    """Which setting chose cache_dir(): the variable the user can change."""
    if os.environ.get("VERIFIER_CACHE_DIR"):
        return "$VERIFIER_CACHE_DIR"
    if os.environ.get("XDG_CACHE_HOME"):
        return "$XDG_CACHE_HOME/kernel-verifier"
    return "~/.cache/kernel-verifier under $HOME"


def cache_error(path, e: OSError, doing: str = "write to") -> UsageError:
    """An unusable build cache is the environment's problem, said with the setting to change (never exit 3)."""
    why = "the disk is full" if e.errno == errno.ENOSPC else e.strerror or str(e)
    if e.errno == errno.EEXIST or (Path(path).exists() and not Path(path).is_dir()):
        why = "it is not a directory"
    return UsageError(f"cannot {doing} the build cache {path} ({cache_setting()}): {why}", fix=CACHE_FIX)


_USABLE: set = set()


def usable_cache_dir() -> Path:
    """cache_dir(), created and written to once (per path and process): a read-only, full or invalid one (a file,
    a path under a file, under /proc) is a UsageError naming the path and the setting, before any build."""
    root = cache_dir()
    if str(root) in _USABLE:
        return root
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=root, prefix=".writable-")
        try:
            os.write(fd, b"0")
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as e:
        raise cache_error(root, e) from None
    _USABLE.add(str(root))
    return root


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

    ``defines`` maps macro names to values (None or True: ``-DNAME``); ``flags`` are extra nvcc flags;
    ``include_dirs`` are searched for headers (``-I``).
    """
    source, inc_dirs, dflags, flags, nvcc = _checked_inputs(source, arch, defines, flags, include_dirs)
    base = [nvcc, *BASE_FLAGS, f"-arch={arch}", *dflags, *(f"-I{d}" for d in inc_dirs), *flags]

    def from_ptx(tmp: Path) -> tuple:
        # The front end once: the cubin is built from the PTX compile_ptx caches (and verifier lint reads), by the
        # same nvcc with the same flags on the .ptx, which runs ptxas only. Byte-identical to nvcc -cubin on the
        # source (measured on the bundled kernels), and 35-40 % less compile time where both are needed.
        ptx, _, _, files = _ptx(source, arch, inc_dirs, dflags, flags, nvcc)
        out, log_path = tmp / "out.cubin", tmp / "out.ptxas.log"
        shown = shlex.join([*base, "-o", f"{source.stem}.cubin", str(source)])  # the source-level equivalent
        _run_nvcc([*base, "-o", str(out), str(ptx)], out, shown, source, log_path)
        return out, log_path, files

    cubin, log_path, cached, _ = _cached("cubin", ".cubin", ".ptxas.log", base, source, inc_dirs, BASE_FLAGS, nvcc,
                                         build=from_ptx)
    log = log_path.read_text()
    return BuildResult(cubin=cubin, ptxas_log=log, resources=ptxas.parse(log, arch=arch),
                       command=[*base, "-o", str(cubin), str(source)], cached=cached)


def _checked_inputs(source, arch, defines, flags, include_dirs) -> tuple:
    """(source, include dirs, -D flags, flags, nvcc) validated for compile_cubin / compile_ptx."""
    source = Path(source).resolve()
    if not source.is_file():
        # SpecError: found while a kernel is checked, it is that kernel's error (the others are checked)
        raise SpecError(f"CUDA source {source} does not exist",
                        fix="set the kernel's source= to its .cu file, relative to the spec file")
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
    return _ptx(source, arch, inc_dirs, dflags, flags, nvcc)[0]


def _ptx(source: Path, arch: str, inc_dirs: list, dflags: list, flags: list, nvcc: str) -> tuple:
    """_cached's answer for the PTX of checked inputs (compile_ptx's, and compile_cubin's first step)."""
    base = [nvcc, *PTX_FLAGS, f"-arch={arch}", *dflags, *(f"-I{d}" for d in inc_dirs), *flags]
    return _cached("ptx", ".ptx", ".nvcc.log", base, source, inc_dirs, PTX_FLAGS, nvcc)


def _cached(kind: str, suffix: str, log_suffix: str, base: list, source: Path, inc_dirs: list, base_flags: tuple,
            nvcc: str, build=None) -> tuple:
    """(output, log, cached, files read): the output of ``base`` on ``source`` from the cache, or built now. The
    command names a manifest of the files its last compile read (verifier.toolchain.deps); their bytes name the
    output. ``build(tmp)``, if given, builds it instead of nvcc on the source: (output, log, files it read)."""
    command_key = _cache_key(source, inc_dirs, base, base_flags, _version_text(nvcc))
    root = usable_cache_dir()
    manifest = root / "deps" / command_key[:2] / f"{command_key}.json"

    def outputs(files):
        key = hashlib.sha256(json.dumps({"command": command_key, "files": deps.digest(files)},
                                        sort_keys=True).encode()).hexdigest()
        return root / kind / key[:2] / f"{key}{suffix}", root / kind / key[:2] / f"{key}{log_suffix}"

    def hit():
        files = deps.read_manifest(manifest)
        out = outputs(files) if files is not None else None
        # the output lands last: its log is there
        return (*out, True, files) if out is not None and out[0].exists() else None

    found = hit()
    if found is not None:
        return found
    try:
        return _build_cached(kind, root, command_key, manifest, outputs, hit, base, source, suffix, log_suffix,
                             nvcc, build)
    except OSError as e:  # a cache gone read-only or full during the run (ENOSPC); nvcc's own failures are BuildErrors
        if not str(e.filename or "").startswith(str(root)):
            raise
        raise cache_error(root, e) from None


def _build_cached(kind, root, command_key, manifest, outputs, hit, base, source, suffix, log_suffix, nvcc,
                  build) -> tuple:
    """_cached's miss: build under the command's lock into the cache (a file lands whole, by rename)."""
    (root / "locks").mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / "locks" / f"{command_key}.lock")):
        found = hit()
        if found is not None:
            return found
        (root / kind).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=root / kind, prefix=".build-") as tmp:
            if build is not None:
                out_tmp, log_tmp, files = build(Path(tmp))
            else:
                out_tmp, log_tmp, read = _build(base, source, Path(tmp), suffix, log_suffix)
                files = deps.outside([source, *read], _toolkit_root(nvcc))
            out, log = outputs(files)
            out.parent.mkdir(parents=True, exist_ok=True)
            os.replace(log_tmp, log)
            os.replace(out_tmp, out)
        deps.write_manifest(manifest, files)
    return out, log, False, files


def _toolkit_root(nvcc: str) -> Optional[Path]:
    """The CUDA toolkit nvcc belongs to (``<root>/bin/nvcc``): its headers are keyed by the version text."""
    return Path(os.path.realpath(nvcc)).parent.parent


def _build(base: list, source: Path, tmp: Path, suffix: str, log_suffix: str) -> tuple:
    """Run nvcc into ``tmp``: (output, log, the files it read). Raises BuildError (nothing is cached)."""
    out, log_path, dep_file = tmp / f"out{suffix}", tmp / f"out{log_suffix}", tmp / "out.d"
    run = [*base, "-MD", "-MF", str(dep_file), "-o", str(out), str(source)]
    shown = shlex.join([*base, "-o", f"{source.stem}{suffix}", str(source)])  # reproduces the build
    _run_nvcc(run, out, shown, source, log_path)
    try:
        read = deps.parse(dep_file.read_text())
    except OSError:  # an nvcc that wrote no dependency file: the includes a scan of the sources finds
        read = _local_files(source, [Path(a[2:]) for a in base if a.startswith("-I") and len(a) > 2])
    return out, log_path, read


def _run_nvcc(run: list, out: Path, shown: str, source: Path, log_path: Path) -> None:
    """Run one nvcc command that writes ``out``; its output to ``log_path``. ``shown``: the command that reproduces
    the build from ``source``, for the message. Raises BuildError (nothing is cached)."""
    try:
        proc = subprocess.run(run, capture_output=True, text=True, timeout=_COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise BuildError(f"nvcc did not finish within {_COMPILE_TIMEOUT_S} s compiling {_shown(str(source))}\n"
                         f"  command: {shown}",
                         fix="simplify the kernel or check for runaway template/unroll expansion") from None
    output = proc.stderr + proc.stdout
    if proc.returncode != 0 or not out.is_file():
        raise BuildError(
            f"nvcc failed (exit {proc.returncode}) compiling {_shown(str(source))}:\n"
            f"{_diagnostics(output)}\n  command: {shown}",
            fix="fix the errors above (file:line); the command reproduces them")
    log_path.write_text(output)


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


def _cache_key(source: Path, inc_dirs: list, base: list, base_flags: tuple, version: str) -> str:
    """The command's key: everything but the contents of the files it reads (verifier.toolchain.deps)."""
    blob = json.dumps({"source": str(source), "include_dirs": [str(d) for d in inc_dirs], "command": base[1:],
                       "base": list(base_flags), "nvcc": version}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _local_files(source: Path, inc_dirs: list) -> list:
    """``source`` and every header it reaches through "..." includes (searched beside the including
    file, then in the include dirs) or <...> includes found in the include dirs: the fallback when nvcc wrote no
    dependency file. Conditional includes are followed too: hashing a header that is not used only costs a
    rebuild."""
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
