"""Where each chunk of an aliased tensor's address range comes from (no CUDA here: verifier.gpu.vmm maps the plan).

The large cases hold more than 2^31 (or 2^32) elements for the cost of a few megabytes: one reserved virtual
range, cut in chunks of the allocation granularity, maps most chunks onto one *shared* physical allocation of
``shared_chunks`` chunks (each run of that many chunks free of private ones maps it whole) or onto a one-chunk
shared allocation (the chunks left over), and the chunks that hold a judged row, or a guard band, onto *private*
allocations of their own. Every mapping maps a whole allocation: cuMemMap takes no offset into one (it must be 0).
Hence:

- a judged row's data lies only on its private chunks: a wrapped 32-bit offset of it lands on other data (the
  shared pattern or another judged row), so a kernel reading there computes a wrong value; a judged output row is
  written only by the kernel's write of that row (another row's write lands on its own address, and any address
  that aliases a judged row's is the judged row's own: private chunks are mapped once);
- rows on shared chunks alias one another: their outputs race and are never judged, nor counted for poison.

A plan is a list of :class:`Piece` (a run of chunks mapped onto one physical allocation from an offset), pure
arithmetic, so tests check it (and a fake driver maps it with real aliasing: tests/fake_libcuda.py).
"""
from __future__ import annotations

from dataclasses import dataclass

SHARED = -1  # Piece.phys of the shared allocation (shared_chunks chunks)
SHARED_ONE = -2  # Piece.phys of the one-chunk shared allocation


@dataclass(frozen=True)
class Piece:
    """``chunks`` chunks from chunk ``first`` of the range, mapped onto the whole of physical allocation ``phys``
    (SHARED, SHARED_ONE, or an index into Plan.private)."""

    first: int
    chunks: int
    phys: int

    @property
    def private(self) -> bool:
        return self.phys >= 0


@dataclass(frozen=True)
class Plan:
    chunk: int  # bytes per chunk (the allocation granularity)
    chunks: int  # chunks in the reserved range
    shared_chunks: int  # chunks of the shared allocation
    private: tuple  # chunks of each private allocation, in order
    pieces: tuple  # every chunk of the range, in order

    @property
    def nbytes(self) -> int:
        return self.chunks * self.chunk

    @property
    def physical_bytes(self) -> int:
        """Device memory the range costs: the shared allocation and every private one."""
        return (self.shared_chunks + 1 + sum(self.private)) * self.chunk

    def private_chunk(self, c: int) -> bool:
        return any(p.private and p.first <= c < p.first + p.chunks for p in self.pieces)

    def is_private(self, start: int, nbytes: int) -> bool:
        """Whether bytes [start, start + nbytes) of the range lie wholly on private chunks."""
        if nbytes <= 0:
            return True
        return all(self.private_chunk(c) for c in range(start // self.chunk, (start + nbytes - 1) // self.chunk + 1))

    def physical(self, byte: int) -> tuple:
        """(allocation, byte in it) that byte ``byte`` of the range maps onto: what aliases what."""
        c = byte // self.chunk
        for p in self.pieces:
            if p.first <= c < p.first + p.chunks:
                return p.phys, (c - p.first) * self.chunk + byte % self.chunk
        raise IndexError(f"byte {byte} lies outside the {self.nbytes}-byte range")


def plan(nbytes: int, private_spans, chunk: int, shared_chunks: int) -> Plan:
    """The plan of a range of at least ``nbytes`` in which the byte spans ``private_spans`` ((start, nbytes) pairs)
    lie on private chunks (adjacent private chunks share one allocation); every run of ``shared_chunks`` other
    chunks maps the shared allocation, each chunk left over the one-chunk one."""
    if chunk <= 0 or shared_chunks <= 0:
        raise ValueError("chunk and shared_chunks must be positive")
    chunks = max(1, -(-int(nbytes) // chunk))
    mine = set()
    for start, n in private_spans:
        if n <= 0:
            continue
        if start < 0 or start + n > chunks * chunk:
            raise ValueError(f"private span ({start}, {n}) outside a {chunks * chunk}-byte range")
        mine.update(range(start // chunk, (start + n - 1) // chunk + 1))
    pieces, private, c = [], [], 0
    while c < chunks:
        end, inside = c, c in mine
        while end < chunks and (end in mine) == inside:
            end += 1
        if inside:
            pieces.append(Piece(c, end - c, len(private)))
            private.append(end - c)
        else:
            k = c
            while k + shared_chunks <= end:
                pieces.append(Piece(k, shared_chunks, SHARED))
                k += shared_chunks
            pieces += [Piece(j, 1, SHARED_ONE) for j in range(k, end)]
        c = end
    return Plan(chunk, chunks, shared_chunks, tuple(private), tuple(pieces))


def tensor_plan(shape, stride: int, itemsize: int, judged, chunk: int, shared_chunks: int, guard: int = 0) -> Plan:
    """The plan of an (M, N) tensor with rows ``stride`` elements apart starting ``guard`` bytes into its range,
    followed by ``guard`` bytes (an output's guard bands, private like the judged rows)."""
    M, N = shape
    span = ((M - 1) * stride + N) * itemsize
    spans = [(guard + int(r) * stride * itemsize, N * itemsize) for r in judged]
    if guard:
        spans += [(0, guard), (guard + span, guard)]
    return plan(2 * guard + span, spans, chunk, shared_chunks)
