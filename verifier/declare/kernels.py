"""Kernel specs: a kernel under test declared as data.

A spec file is plain Python that defines ``KERNELS = [...]`` with instances of
:class:`CudaKernel`, :class:`TritonKernel` or :class:`CallableKernel`. Every field is
validated at construction; a bad field raises :class:`SpecError` naming the field and the fix.

Shapes are ``(M, N)``: M rows of length N (see :mod:`verifier.ops`).
``supports(M, N, dtypes)`` (a function or a list of them) returns ``None`` when the kernel handles the shape,
else a one-line reason; ``check_supported`` adds the ``sizes`` (verifier.declare.sizing) and ``min_capability``
(verifier.declare.device) refusals, and runners call it before every launch and raise :class:`Unsupported`.
docs/specs.md documents every field for users.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Optional, Sequence

from verifier.declare.contracts import Contracts
from verifier.declare.aliases import check_aliases, check_scratch
from verifier.declare.args import (STRIDE_SUFFIX, LaunchLayout, Pointer, Scalar, Stride, Struct,  # noqa: F401
                                   Workspace, stride_of, workspace_of)  # re-exported: their home is declare/args.py
from verifier.declare.device import capability_reason, check_capability
from verifier.declare.out_layouts import check_output_layout
from verifier.declare.packages import check_requires
from verifier.declare.packages import missing as missing_package
from verifier.declare.sizing import SizeClasses
from verifier.declare.source_lines import construction_sites, line_in
from verifier.declare.variants import Dtypes, dtypes  # noqa: F401 (dtypes re-exported: older imports)
from verifier.errors import SpecError
from verifier.numerics.errmodel import MATH_MODES  # one definition, re-exported here
from verifier.ops import OPS, Op, register, variant_for

_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True)
class Expectations:
    """What the kernel's author promises; the battery checks each promise.

    deterministic: the same input gives bitwise-identical output run to run.
    max_spill_bytes: spill stores + loads allowed by ptxas (0 for register-resident kernels).
    max_stack_bytes: stack frame allowed (None: not checked).
    max_registers: registers per thread allowed (None: not checked).
    fast_intrinsics: uses __expf / rsqrtf / fast division (selects the 'fast' tolerance column).
    """

    deterministic: bool = True
    max_spill_bytes: Optional[int] = None
    max_stack_bytes: Optional[int] = None
    max_registers: Optional[int] = None
    fast_intrinsics: bool = False


def register_resident() -> Expectations:
    """Expectations for a kernel that keeps its row in registers: no spills, no stack."""
    return Expectations(max_spill_bytes=0, max_stack_bytes=0)


@dataclass(frozen=True)
class Launch:
    """One kernel launch. ``args`` are tensor names (see verifier.ops), Scalar values, Pointer, Struct, Workspace
    buffers, row strides ('x.stride' or Stride('x', 'int64')), or the strings 'M', 'N', 'eps' which the runner
    replaces by int32 / float32 scalars (verifier.declare.args). ``smem``: dynamic shared memory in bytes.
    ``cooperative``: launched as ``cudaLaunchCooperativeKernel`` launches it, every block resident at once, so
    ``cooperative_groups::this_grid().sync()`` works (a plain launch makes its grid check trap)."""

    entry: str
    grid: tuple
    block: tuple
    args: tuple
    smem: int = 0
    cooperative: bool = False


def _check_callable(obj, field_name, kernel_name, signature_hint):
    if not callable(obj):
        raise SpecError(
            f"kernel {kernel_name!r}: field {field_name!r} must be callable, got {type(obj).__name__}",
            fix=f"pass a function {signature_hint}",
        )


def _always(M, N, dtypes):
    return None


class FirstReason:
    """Several supports functions as one (``supports=[f, g]``): the first reason given is the refusal."""

    def __init__(self, parts):
        self.parts = tuple(parts)
        self.__qualname__ = "[" + ", ".join(getattr(p, "__qualname__", repr(p)) for p in self.parts) + "]"

    def __call__(self, M, N, dt):
        for part in self.parts:
            reason = part(M, N, dt)
            if reason is not None:
                return reason
        return None

    def __repr__(self):
        return f"FirstReason({self.__qualname__})"


@dataclass(frozen=True)
class KernelSpec:
    name: str
    op: Any  # an op's name, or an Op (registered, then named)
    dtypes: Sequence[Dtypes]
    math_mode: str = "precise"
    supports: Callable[[int, int, Dtypes], Optional[str]] = _always
    expectations: Expectations = field(default_factory=Expectations)
    tolerance: dict = field(default_factory=dict)  # partial overrides, merged by max
    params: dict = field(default_factory=dict)  # overrides of the op's default params (eps)
    description: str = ""
    origin: Optional[str] = None  # spec file it came from, filled by the registry
    contracts: Contracts = field(default_factory=Contracts)  # NaN / inf / subnormal promises (verifier.declare.contracts)
    online: bool = False  # keeps a running max / sum and rescales it (online softmax): the budget adds those roundings
    sizes: Optional[SizeClasses] = None  # the size classes the launches pick from: rows past the last are refused
    min_capability: Optional[tuple] = None  # (major, minor) the GPU must have, e.g. (9, 0); refused below it
    requires: dict = field(default_factory=dict)  # {module: pip requirement} of another project's package
    outputs_alias: dict = field(default_factory=dict)  # {output: input} written over it, e.g. {"y": "x"}
    # (file, line) of the frames that built it, outside kernel-verifier (verifier.declare.source_lines); kept by
    # dataclasses.replace, so the registry's copy still points at the spec file's line
    declared_at: tuple = field(default=(), compare=False, repr=False)
    scratch_inputs: tuple = ()  # inputs the kernel may change (scratch): not an input-clobbered finding
    # {output: RowStride(...) / ColumnMajor(...)}: an output the kernel writes at strides of its own
    # (verifier.declare.out_layouts), e.g. ids rows n_expert apart
    output_layout: dict = field(default_factory=dict)
    kind: str = field(default="abstract", init=False)

    # What a kind of kernel is: the steps ask these facts and methods, never the ``kind`` string, so a new kind is a
    # new subclass here (with its runner module), and nothing else in verifier/ compares kinds.
    builds_source: ClassVar[bool] = False  # a source nvcc builds: build, ptxas resources, static lint of its PTX,
    # sanitizer filters by its entries, its host code the harness's own
    uses_triton: ClassVar[bool] = False  # Triton: a mode to commit to, compiled facts on a GPU, the interpreter on CPU
    imports_torch: ClassVar[bool] = True  # its check imports torch (a fork of a parent that preloaded it is cheap)
    may_launch_triton: ClassVar[bool] = False  # its code may launch Triton kernels it does not declare (a library
    # function): on the CPU the check commits to the interpreter for it too (verifier.isolation)
    runner: ClassVar[str] = ""  # "module:function" of its launcher run(spec, inputs, outputs, params, dtypes, device)
    what: ClassVar[str] = "a kernel"  # how messages name this kind ("a Triton kernel")
    own_device_code: ClassVar[bool] = False  # launches device code of its own (what compute-sanitizer checks)
    user_function: ClassVar[str] = "launch"  # the spec function that runs it, for messages ('fn', 'launcher')
    guess_seconds: ClassVar[float] = 4.0  # its check's time before a run has recorded one (verifier.isolation)
    # why its large cases (more than 2^31 elements) do not run on a CPU ("": said otherwise; a Triton kernel runs
    # them in the interpreter, verifier.launch.large_host.on_host)
    large_on_cpu: ClassVar[str] = ""

    def sources(self) -> list:
        """The files whose lines findings point into (sanitizer records, static findings)."""
        return []

    def interpreted(self, device: str) -> bool:
        """Whether it runs in an interpreter on ``device`` (Triton on the CPU): the interpreter's caveats apply."""
        return self.uses_triton and device == "cpu"

    def triton_sources(self) -> list:
        """(source file, entry name) whose @triton.jit code it runs, for the interpreter's source scans: none."""
        return []

    def runs_on_gpu(self, device: str) -> bool:
        """Whether its checks launch work on the GPU on ``device``."""
        return self.builds_source or (device == "cuda" and self.uses_triton)

    def build_skip(self, device: str) -> Optional[str]:
        """Why there is nothing to build or no compiled-kernel facts to read on ``device``, or None."""
        if self.builds_source or (self.uses_triton and device == "cuda"):
            return None
        return "compiled-kernel facts need a GPU" if self.uses_triton else self.what.removeprefix("a ")

    def device_reason(self, device: str) -> Optional[str]:
        """Why its launches cannot run on ``device`` (None if they can), its packages aside."""
        return None

    def static_skip(self) -> Optional[str]:
        """Why the static checks (verifier.lint reads the PTX of CUDA sources) do not apply, or None."""
        return None if self.builds_source else f"static analysis reads the PTX of CUDA sources; this is {self.what}"

    def __post_init__(self):
        if not self.declared_at:
            object.__setattr__(self, "declared_at", construction_sites())
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):
            raise SpecError(
                f"kernel name {self.name!r} is not a valid name",
                fix="use letters, digits, '_', '-', '.' only (it becomes part of test ids)",
            )
        if isinstance(self.op, Op):  # a user's op: joins the registry, and the kernel names it
            object.__setattr__(self, "op", register(self.op).name)
        if self.op not in OPS:
            raise SpecError(f"kernel {self.name!r}: field 'op' is {self.op!r}",
                            fix=f"use one of {', '.join(OPS)}, or pass your own Op(...) object (docs/specs.md)")
        ds = self.dtypes
        if isinstance(ds, Dtypes):
            ds = (ds,)
        if not ds or not all(isinstance(d, Dtypes) for d in ds):
            raise SpecError(
                f"kernel {self.name!r}: field 'dtypes' must be a non-empty list of Dtypes",
                fix="write dtypes=[dtypes('f32'), dtypes('bf16')] or dtypes=FLOAT_IO (from verifier.spec)",
            )
        object.__setattr__(self, "dtypes", tuple(ds))
        if self.math_mode not in MATH_MODES:
            raise SpecError(
                f"kernel {self.name!r}: field 'math_mode' is {self.math_mode!r}",
                fix=f"use one of {', '.join(MATH_MODES)}",
            )
        if isinstance(self.supports, (list, tuple)):
            for part in self.supports:
                _check_callable(part, "supports", self.name, "supports(M, N, dtypes) -> None | reason (each item)")
            object.__setattr__(self, "supports", FirstReason(self.supports) if self.supports else _always)
        _check_callable(self.supports, "supports", self.name, "supports(M, N, dtypes) -> None | reason")
        if self.sizes is not None:
            if not isinstance(self.sizes, SizeClasses):
                raise SpecError(f"kernel {self.name!r}: field 'sizes' must be a SizeClasses, got "
                                f"{type(self.sizes).__name__}", fix="write sizes=SizeClasses((1024, 2048), entry=...)")
            for dt in ds:
                try:
                    self.sizes.classes(dt)
                except SpecError as e:
                    raise SpecError(f"kernel {self.name!r}: field 'sizes': {e.message}", fix=e.fix) from None
        object.__setattr__(self, "min_capability", check_capability(self.name, self.min_capability))
        if not isinstance(self.expectations, Expectations):
            raise SpecError(
                f"kernel {self.name!r}: field 'expectations' must be an Expectations",
                fix="write expectations=Expectations(...) or register_resident()",
            )
        if not isinstance(self.contracts, Contracts):
            raise SpecError(
                f"kernel {self.name!r}: field 'contracts' must be a Contracts, got {type(self.contracts).__name__}",
                fix="write contracts=Contracts(nan_inputs='unsupported') (from verifier.spec import Contracts)",
            )
        if "online" in self.tolerance:  # the older spelling, tolerance={"online": True}: a property of the kernel
            tol = dict(self.tolerance)
            object.__setattr__(self, "online", bool(tol.pop("online")) or self.online)
            object.__setattr__(self, "tolerance", tol)
        if self.online and not OPS[self.op].online_override:
            with_online = ", ".join(o.name for o in OPS.values() if o.online_override)
            raise SpecError(f"kernel {self.name!r}: online=True does not apply to op {self.op!r}",
                            fix=f"declare it only for kernels with an online normalizer ({with_online})")
        object.__setattr__(self, "requires", check_requires(self.name, self.requires))
        object.__setattr__(self, "outputs_alias", check_aliases(self.name, OPS[self.op], self.outputs_alias,
                                                                 self.dtypes))
        object.__setattr__(self, "scratch_inputs", check_scratch(self.name, OPS[self.op], self.scratch_inputs,
                                                                  self.outputs_alias))
        object.__setattr__(self, "output_layout", check_output_layout(self.name, OPS[self.op], self.output_layout,
                                                                      self.outputs_alias))
        unknown = set(self.params) - set(OPS[self.op].params)
        if unknown:
            # an op of the same inputs that takes them (reduction: cross_entropy_reduced, not cross_entropy)
            other = [o.name for o in OPS.values() if unknown <= set(o.params) and o.inputs == OPS[self.op].inputs]
            raise SpecError(
                f"kernel {self.name!r}: field 'params' has {sorted(unknown)} which op {self.op!r} does not take",
                fix=f"allowed: {sorted(OPS[self.op].params) or 'none'}"
                    + (f"; op {' / '.join(other)} takes {sorted(unknown)} (declare op={other[0]!r})" if other else ""),
            )
        try:  # optional inputs (a mask) the params name: the kernel's op is the variant that has them
            object.__setattr__(self, "op", variant_for(self.op, self.params))
        except SpecError as e:
            raise SpecError(f"kernel {self.name!r}: field 'params': {e.message}", fix=e.fix) from None

    @property
    def line(self) -> Optional[int]:
        """The line of its spec file (``origin``) where it was constructed, or None when not known."""
        return line_in(self.declared_at, self.origin)

    def op_params(self) -> dict:
        return {**OPS[self.op].params, **self.params}

    def unavailable(self) -> Optional[str]:
        """Why this kernel cannot be checked on this machine at all (a package it requires is missing), or None."""
        return missing_package(self.requires)

    def check_supported(self, M: int, N: int, dt: Dtypes) -> Optional[str]:
        """Reason the kernel refuses (M, N, dt), or None. Rows = 0 and unknown dtypes are always refused."""
        if M <= 0 or N <= 0:
            return f"empty shape M={M}, N={N}: nothing to launch"
        if dt not in self.dtypes:
            return f"dtype {dt.tag} not declared by the kernel (declared: {', '.join(d.tag for d in self.dtypes)})"
        outside = self.op_refusal(N)
        if outside is not None:
            return outside
        from verifier.declare.usercode import call

        for fn in self.refusals():
            reason = call(self, "supports", fn, M, N, dt)
            if reason is None:
                continue
            if isinstance(reason, str) and reason:
                return reason
            # A bool here would be read as a refusal reason for True and False alike: every shape refused.
            # A SpecError: found while the kernel runs, it is this kernel's error (exit 1), never the run's end.
            name = getattr(fn, "__qualname__", None) or repr(fn)
            raise SpecError(
                f"kernel {self.name!r}: supports function {name} returned {reason!r} ({type(reason).__name__}) for "
                f"M={M}, N={N}, {dt.tag}; it must return None (shape supported) or a non-empty str (the reason it is not)",
                fix="e.g. supports=lambda M, N, dt: None if N <= 1024 else 'N > 1024 (one block per row)'",
            )
        return capability_reason(self.min_capability)

    def op_refusal(self, N: int) -> Optional[str]:
        """Why rows of N columns are outside the op itself (Op(supports=...), e.g. group_norm's N % channels), or
        None: no kernel is asked to refuse those (the refusal step skips them), they are simply not run."""
        return OPS[self.op].refusal(N, self.params)

    def refusals(self) -> tuple:
        """The supports functions check_supported asks in turn: the spec's own, then its size classes."""
        own = self.supports.parts if isinstance(self.supports, FirstReason) else (self.supports,)
        return own + ((self.sizes.supports,) if self.sizes is not None else ())

    def class_lengths(self, dt) -> tuple:
        """One row length per declared size class (its capacity), for steps that must visit every class."""
        return self.sizes.lengths(dt) if self.sizes is not None else ()


@dataclass(frozen=True)
class CudaKernel(KernelSpec):
    """A CUDA C++ source and how to launch it.

    source: path of the .cu file (relative paths are relative to the spec file).
    launches: function (M, N, dtypes, params) -> list[Launch]; several launches for multi-pass kernels. A fifth
    parameter, ``layout`` (verifier.declare.args.LaunchLayout), gets the tensors' alignments and row strides.
    defines: function (dtypes) -> dict of -D macros selecting the variant (one cubin per dtypes).
    include_dirs: header search paths (-I), relative to the spec file like ``source``.
    """

    source: str = ""
    launches: Optional[Callable] = None
    defines: Callable[[Dtypes], dict] = lambda dt: {}
    extra_flags: tuple = ()
    include_dirs: tuple = ()
    kind: str = field(default="cuda", init=False)
    builds_source: ClassVar[bool] = True
    own_device_code: ClassVar[bool] = True
    imports_torch: ClassVar[bool] = False  # launched through the CUDA driver API on raw device addresses
    runner: ClassVar[str] = "verifier.launch.cuda:run_cuda"
    what: ClassVar[str] = "a CUDA kernel"

    def sources(self) -> list:
        return [self.source_path()]

    def device_reason(self, device: str) -> Optional[str]:
        return None if device == "cuda" else "no CUDA GPU: CUDA kernels are built and resource-checked only"

    def __post_init__(self):
        super().__post_init__()
        if not self.source:
            raise SpecError(f"kernel {self.name!r}: field 'source' is empty", fix="give the path of the .cu file")
        _check_callable(self.launches, "launches", self.name, "launches(M, N, dtypes, params) -> list[Launch]")
        _check_callable(self.defines, "defines", self.name, "defines(dtypes) -> dict")
        dirs = (self.include_dirs,) if isinstance(self.include_dirs, (str, Path)) else self.include_dirs
        if not isinstance(dirs, (list, tuple)) or not all(isinstance(d, (str, Path)) and str(d) for d in dirs):
            raise SpecError(f"kernel {self.name!r}: field 'include_dirs' must be a list of paths",
                            fix="e.g. include_dirs=['include', package_path('flashinfer', 'data', 'include')]")
        object.__setattr__(self, "include_dirs", tuple(str(d) for d in dirs))

    def _beside_spec(self, path) -> Path:
        p = Path(path)
        if not p.is_absolute() and self.origin:
            p = Path(self.origin).parent / p
        return p

    def source_path(self) -> Path:
        return self._beside_spec(self.source)

    def include_paths(self) -> tuple:
        """The include dirs, relative ones resolved against the spec file (as ``source`` is)."""
        return tuple(self._beside_spec(d) for d in self.include_dirs)


@dataclass(frozen=True)
class TritonKernel(KernelSpec):
    """A Triton kernel, named by module path and launcher function so that it is imported only
    after the runner has chosen compiled or interpreted mode (TRITON_INTERPRET must be set before
    ``@triton.jit`` runs).

    module: file path (relative to the spec file) of the module holding the kernel.
    launcher: name of a function ``launcher(inputs, outputs, params, dtypes)`` in it that launches
    the kernel on torch tensors (outputs preallocated; in-out tensors appear in both dicts).
    """

    module: str = ""
    launcher: str = ""
    kind: str = field(default="triton", init=False)
    uses_triton: ClassVar[bool] = True
    own_device_code: ClassVar[bool] = True
    user_function: ClassVar[str] = "launcher"
    guess_seconds: ClassVar[float] = 10.0
    runner: ClassVar[str] = "verifier.launch.triton:run_triton"
    what: ClassVar[str] = "a Triton kernel"

    def sources(self) -> list:
        return [self.module_path()]

    def device_reason(self, device: str) -> Optional[str]:
        import importlib.util

        # find_spec, not import: importing triton fixes compiled vs interpreted mode for the process.
        if importlib.util.find_spec("triton") is None:
            return "triton is not installed (pip install 'kernel-verifier[triton]')"
        return None

    def __post_init__(self):
        super().__post_init__()
        if not self.module or not self.launcher:
            raise SpecError(
                f"kernel {self.name!r}: fields 'module' and 'launcher' are required",
                fix="module='my_softmax.py', launcher='launch'",
            )
        if not isinstance(self.launcher, str) or not isinstance(self.module, (str, Path)):
            what = getattr(self.launcher, "__name__", type(self.launcher).__name__)
            raise SpecError(
                f"kernel {self.name!r}: launcher={what!r} is a {type(self.launcher).__name__}, not the name of a "
                "function in the module" if not isinstance(self.launcher, str) else
                f"kernel {self.name!r}: module={self.module!r} is not a path",
                fix="name the launcher by its name in the module file (launcher='launch'), which is imported in "
                    "Triton's mode for the run; a launcher defined in the spec file itself is a CallableKernel(fn=...)",
            )

    def module_path(self) -> Path:
        p = Path(self.module)
        if not p.is_absolute() and self.origin:
            p = Path(self.origin).parent / p
        return p

    def triton_sources(self) -> list:
        return [(str(self.module_path()), self.launcher)]


_LAUNCHED_TRITON: dict = {}  # (origin, name) of a callable seen launching Triton kernels in this process's
# interpreter -> the (source file, function name) of the @triton.jit functions it ran


def mark_launched_triton(spec, functions=()) -> None:
    """The callable ran Triton kernels (``functions``: their source file and name) in the interpreter
    (verifier.launch.callable): its checks take the interpreter's caveats from then on (the refusal probe runs
    before the values), its kernels' sources included."""
    _LAUNCHED_TRITON.setdefault((spec.origin, spec.name), set()).update(functions)


@dataclass(frozen=True)
class CallableKernel(KernelSpec):
    """Any Python callable, e.g. ``torch.softmax``.

    fn(inputs, outputs, params, dtypes) writes into the preallocated ``outputs`` tensors, or returns a
    dict name -> tensor which the runner copies into them.
    """

    fn: Optional[Callable] = None
    device: str = "any"  # 'cpu', 'cuda' or 'any'
    kind: str = field(default="callable", init=False)
    runner: ClassVar[str] = "verifier.launch.callable:run_callable"
    may_launch_triton: ClassVar[bool] = True
    large_on_cpu: ClassVar[str] = (
        "a Python callable computes every one of the M·N > 2^31 elements on the host: no grid whose programs can be "
        "run in part, minutes per case, and its intermediates (x in float32 alone: 8.6 GB) in host memory")
    user_function: ClassVar[str] = "fn"
    guess_seconds: ClassVar[float] = 8.0
    what: ClassVar[str] = "a Python callable"

    def runs_on_gpu(self, device: str) -> bool:
        return device == "cuda" and self.device != "cpu"

    def interpreted(self, device: str) -> bool:
        """A callable launching Triton kernels (a library's torch function over its own Triton kernels) runs them
        in the interpreter on the CPU, with a TritonKernel's caveats; known once it has run there."""
        return device == "cpu" and (self.origin, self.name) in _LAUNCHED_TRITON

    def triton_sources(self) -> list:
        """The @triton.jit functions it was seen running (its library's kernels), each from its own file."""
        return sorted(_LAUNCHED_TRITON.get((self.origin, self.name), ()))

    def device_reason(self, device: str) -> Optional[str]:
        return None if self.device in ("any", device) else f"callable declared for {self.device}, device is {device}"

    def __post_init__(self):
        super().__post_init__()
        _check_callable(self.fn, "fn", self.name, "fn(inputs, outputs, params, dtypes)")
        if self.device not in ("cpu", "cuda", "any"):
            raise SpecError(f"kernel {self.name!r}: field 'device' is {self.device!r}", fix="use 'cpu', 'cuda' or 'any'")
