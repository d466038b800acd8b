"""Row-size helpers a spec declares once: size classes, 16-byte vector widths, row limits.

A kernel that keeps its row in registers is compiled once per *size class* (a row capacity) and dtype; its spec
picks the smallest class holding N, names that class's entry, and refuses rows past the last class.
:class:`SizeClasses` holds the table and derives all three, so the refusal, the entry suffix and the build
step's check (every class's entry must be in the cubin: verifier.battery.build) cannot drift apart.

``whole_vectors(instead)`` (N a multiple of ``vector_width(dt)``, the elements of a 16-byte vector),
``max_row(limit, instead)`` and ``grid_limit(blocks_per_row)`` are the other refusals the bundled specs share.
docs/specs.md documents each.
"""
from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any, Callable, Optional

from verifier import dtypes as _dt
from verifier.declare.variants import Dtypes, dtypes
from verifier.errors import SpecError

VECTOR_BYTES = 16  # one 128-bit load / store
_FIELDS = {"c", "tag"}  # what an entry template may name


def _positive(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def _input_dtype(dt) -> str:
    return dt.input if isinstance(dt, Dtypes) else _dt.canonical(dt)


def vector_width(dt) -> int:
    """Elements of the input dtype in one 16-byte vector: 4 for float32, 8 for float16 / bfloat16, 16 for 8-bit.
    ``dt`` is a Dtypes or a dtype name."""
    return VECTOR_BYTES // _dt.numpy_dtype(_input_dtype(dt)).itemsize


def whole_vectors(instead: Optional[str] = None) -> Callable:
    """A supports function refusing rows that are not a whole number of 16-byte vectors of the input dtype
    (N % vector_width(dt) != 0), naming ``instead``, the kernel to use for such rows."""
    use = f"; use {instead}" if instead else ""

    def supports(M, N, dt):
        w = vector_width(dt)
        return None if N % w == 0 else f"N={N} is not a multiple of the {w}-element 16-byte vector of {dt.input}{use}"

    supports.__qualname__ = f"whole_vectors({instead!r})"
    return supports


def max_row(limit: int, instead: Optional[str] = None, *, what: str = "this kernel's limit") -> Callable:
    """A supports function refusing rows longer than ``limit`` columns: 'N=... exceeds WHAT LIMIT; use INSTEAD'."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise SpecError(f"max_row: limit {limit!r} is not a positive int", fix="e.g. max_row(65536, 'my-tiled-kernel')")
    use = f"; use {instead}" if instead else ""

    def supports(M, N, dt):
        return None if N <= limit else f"N={N} exceeds {what} {limit}{use}"

    supports.__qualname__ = f"max_row({limit}, {instead!r})"
    return supports


GRID_BLOCKS = 2**31 - 1  # CUDA's limit on a grid's x dimension


def grid_limit(blocks_per_row) -> Callable:
    """A supports function refusing M rows of ``blocks_per_row`` blocks (an int, or a function (N, dt) -> int)
    past the 2^31 - 1 blocks of a grid's x dimension: for kernels that spread a row over several blocks."""
    per_row = blocks_per_row if callable(blocks_per_row) else (lambda N, dt: blocks_per_row)
    if not callable(blocks_per_row) and not _positive(blocks_per_row):
        raise SpecError(f"grid_limit: blocks_per_row {blocks_per_row!r} is neither a positive int nor a function",
                        fix="e.g. grid_limit(8), or grid_limit(lambda N, dt: -(-N // 8192))")

    def supports(M, N, dt):
        n = per_row(N, dt)
        return f"M={M} rows of {n} blocks exceed the grid's 2^31 - 1 blocks" if M * n > GRID_BLOCKS else None

    supports.__qualname__ = f"grid_limit({blocks_per_row!r})"
    return supports


@dataclass(frozen=True)
class Tile:
    """A size class of a row spread over ``threads`` threads holding ``vectors`` 16-byte vectors each:
    threads x vectors x vector_width(dt) columns. ``min_blocks`` (the entry's __launch_bounds__ minimum blocks
    per SM) only names a different entry. In an entry template it reads t<threads>_v<vectors>[_m<min_blocks>]."""

    threads: int
    vectors: int
    min_blocks: Optional[int] = None

    def capacity(self, dt) -> int:
        return self.threads * self.vectors * vector_width(dt)

    def __format__(self, spec: str) -> str:
        return f"t{self.threads}_v{self.vectors}" + (f"_m{self.min_blocks}" if self.min_blocks else "")


def _class(c, where: str):
    """An int class or a Tile from a (threads, vectors[, min_blocks]) tuple; anything else is a SpecError."""
    if isinstance(c, tuple) and 2 <= len(c) <= 3 and all(_positive(v) for v in c):
        return Tile(*c)
    if isinstance(c, Tile) or _positive(c):
        return c
    raise SpecError(f"SizeClasses {where}: class {c!r} is neither a positive int nor a (threads, vectors"
                    f"[, min_blocks]) tuple", fix="e.g. SizeClasses((1024, 2048, 4096), entry='k_n{c}_{tag}') or "
                                                  "SizeClasses(((32, 1), (64, 4)), entry='k_{c}_{tag}')")


class SizeClasses:
    """The size classes of one kernel family: which class (and entry) a row of N columns takes, and the refusal
    past the last class. Declare it once, pass it as the kernel's ``sizes=`` and use ``.entry(N, dt)`` /
    ``.of(N, dt)`` in its launches.

    classes: the classes, smallest first, for every dtype alike, or a dict {dtype: classes} when the dtypes
      differ (e.g. {"f32": (4, 8, 16, 32), "f16": (8, 16, 32), "bf16": (8, 16, 32)}). A class is an int, or a
      (threads, vectors[, min_blocks]) tuple read as a :class:`Tile` (a row over threads x 16-byte vectors).
    threads: for int classes that count elements per thread: a class c holds c x threads columns. Without it an
      int class is the row length it holds.
    entry: the entry name, a template naming the class ``{c}`` and the dtypes tag ``{tag}``, e.g.
      "rmsnorm_n3_{tag}_e{c}" or "softmax_s5_{c}_{tag}" (a Tile reads t<threads>_v<vectors>[_m<min_blocks>]).
    instead: the kernel to use for rows past the last class (named in the refusal).
    """

    def __init__(self, classes, *, threads: Optional[int] = None, entry: Optional[str] = None,
                 instead: Optional[str] = None):
        if threads is not None and not _positive(threads):
            raise SpecError(f"SizeClasses: threads={threads!r} is not a positive int",
                            fix="threads is the block size when the classes count elements per thread, e.g. 256")
        self.threads, self.entry_template, self.instead = threads, entry, instead
        if isinstance(classes, dict):
            try:
                tables = {_dt.canonical(k): v for k, v in classes.items()}
            except Exception as e:
                raise SpecError(f"SizeClasses: a key of the per-dtype classes: {getattr(e, 'message', e)}",
                                fix="key the classes by dtype name, e.g. {'f32': (4, 8), 'bf16': (8,)}") from None
            self.tables: dict = {k: self._table(v, f"classes[{k!r}]") for k, v in tables.items()}
        else:
            self.tables = {None: self._table(classes, "classes")}
        if entry is not None:
            self._check_template(entry)

    def _table(self, classes, where: str) -> tuple:
        if isinstance(classes, (str, bytes)) or not hasattr(classes, "__iter__") or not list(classes):
            raise SpecError(f"SizeClasses {where}: {classes!r} is not a non-empty sequence of classes",
                            fix="give the classes smallest first, e.g. (1024, 2048, 4096)")
        table = tuple(_class(c, where) for c in classes)
        if any(isinstance(c, Tile) for c in table) and self.threads is not None:
            raise SpecError(f"SizeClasses {where}: threads={self.threads} with (threads, vectors) classes",
                            fix="leave threads out: a (threads, vectors) class names its own threads")
        if any(isinstance(c, Tile) for c in table) and not all(isinstance(c, Tile) for c in table):
            raise SpecError(f"SizeClasses {where}: {classes!r} mixes int and (threads, vectors) classes",
                            fix="write every class the same way")
        caps = [self._capacity(c, dtypes("f32")) for c in table]  # the order is the same for every width
        for a, b, cap_a, cap_b in zip(table, table[1:], caps, caps[1:]):
            if cap_b <= cap_a:
                raise SpecError(f"SizeClasses {where}: class {b!r} holds no more than the class {a!r} before it",
                                fix="list the classes smallest first, each larger than the one before")
        return table

    def _check_template(self, entry: str) -> None:
        try:
            names = {f for _, f, _, _ in string.Formatter().parse(entry) if f is not None}
        except (TypeError, ValueError) as e:  # not a str, or an unbalanced brace
            names = {f"<{e}>"}
        if names - _FIELDS:
            raise SpecError(f"SizeClasses entry {entry!r} names {sorted(names - _FIELDS)}, not only {{c}} and {{tag}}",
                            fix="write the entry as e.g. 'softmax_s3_n{c}_{tag}' ({c}: the class, {tag}: dtypes tag)")
        if "c" not in names and any(len(t) > 1 for t in self.tables.values()):
            raise SpecError(f"SizeClasses entry {entry!r} does not name the class {{c}}: every class would "
                            "launch the same entry", fix="put {c} in the entry name, e.g. 'softmax_s3_n{c}_{tag}'")

    def _capacity(self, c, dt) -> int:
        if isinstance(c, Tile):
            return c.capacity(dt)
        return c * (self.threads or 1)

    def classes(self, dt) -> tuple:
        """The classes of ``dt``'s input dtype, smallest first (a SpecError when the table has none for it)."""
        if None in self.tables:
            return self.tables[None]
        key = _input_dtype(dt)
        if key not in self.tables:
            raise SpecError(f"SizeClasses has no classes for {key} (it has {', '.join(self.tables)})",
                            fix=f"add a {_dt.SHORT[key]!r} entry to the classes dict, or drop the dtype from the kernel")
        return self.tables[key]

    def lengths(self, dt) -> tuple:
        """One row length per class, its capacity: the longest row the class holds (the build step visits each)."""
        return tuple(self._capacity(c, dt) for c in self.classes(dt))

    def limit(self, dt) -> int:
        """The longest row any class holds."""
        return self.lengths(dt)[-1]

    def of(self, N: int, dt) -> Any:
        """The smallest class holding N columns; past the last class a SpecError (a launch must never cover a
        partial row: refuse such rows with the kernel's ``sizes=``)."""
        for c, cap in zip(self.classes(dt), self.lengths(dt)):
            if N <= cap:
                return c
        raise SpecError(self._too_long(N, dt), fix="pass this SizeClasses as the kernel's sizes= so the row is refused")

    def entry(self, N: int, dt) -> str:
        """The entry name of the class holding N, for ``dt`` (a Dtypes)."""
        if self.entry_template is None:
            raise SpecError("SizeClasses.entry: no entry template was declared",
                            fix="declare SizeClasses(..., entry='my_kernel_n{c}_{tag}')")
        return self.entry_template.format(c=self.of(N, dt), tag=dt.tag)

    def supports(self, M: int, N: int, dt) -> Optional[str]:
        """None when a class holds N, else the refusal naming the limit and ``instead``."""
        return None if N <= self.limit(dt) else self._too_long(N, dt)

    def _too_long(self, N: int, dt) -> str:
        last, limit = self.classes(dt)[-1], self.limit(dt)
        if isinstance(last, Tile):
            how = f" ({last.threads} threads x {last.vectors} vectors of {vector_width(dt)} elements)"
        elif self.threads:
            how = f" ({last} elements per thread x {self.threads} threads)"
        else:
            how = ""
        of = f" for {dt.input}" if None not in self.tables else ""
        use = f"; use {self.instead}" if self.instead else ""
        return f"N={N} exceeds the register-resident limit {limit}{of}{how}{use}"

    def __repr__(self) -> str:
        tables = self.tables[None] if None in self.tables else self.tables
        return f"SizeClasses({tables!r}, threads={self.threads!r}, entry={self.entry_template!r})"
