"""Each row's argmax, BLOCK_M rows a program (op row_argmax), its masks written as FlagGems' argmax writes them:
Python ``and`` between block tensors, ``mask = (rows < M) and (cols < N)``, which compiled Triton makes an
element-wise logical and (tests/test_interpreter_boolops.py). ``launch_or`` is its defect twin: ``or`` where
``and`` is needed, so every column of a live row is read past N (the next row's first values, or past the end)."""
import triton
import triton.language as tl


@triton.jit
def _argmax_rows(x_ptr, out_ptr, M, N, sx, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, OR: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    best = tl.full([BLOCK_M, 1], float("-inf"), tl.float32)
    at = tl.zeros([BLOCK_M, 1], tl.int32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)[None, :]
        if OR:
            mask = (rows < M) or (cols < N)  # the defect
        else:
            mask = (rows < M) and (cols < N)
        v = tl.load(x_ptr + rows.to(tl.int64) * sx + cols, mask=mask, other=float("-inf")).to(tl.float32)
        tile_max, tile_at = tl.max(v, axis=1, return_indices=True, return_indices_tie_break_left=True)
        take = tile_max[:, None] > best  # a later tile's tie keeps the first column
        best = tl.where(take, tile_max[:, None], best)
        at = tl.where(take, start + tile_at[:, None], at)
    tl.store(out_ptr + rows, at.to(out_ptr.dtype.element_ty), mask=(rows < M) and not (rows < 0))


def _launch(use_or):
    def launch(inputs, outputs, params, dtypes):
        x = inputs["x"]
        M, N = x.shape
        block_m, block_n = 4, min(64, triton.next_power_of_2(N))
        _argmax_rows[(triton.cdiv(M, block_m),)](x, outputs["index"], M, N, x.stride(0), BLOCK_M=block_m,
                                                 BLOCK_N=block_n, OR=use_or)
    return launch


launch, launch_or = _launch(False), _launch(True)
