"""An autotuned row sum whose second config (BLOCK=2048) takes the process down, as a store past a buffer the
launcher allocated corrupts the heap in the Triton interpreter (FlagGems' cross entropy with BLOCK_D > D): the crash
finding must name the config it died under (tests/test_crash_names_autotune_config.py)."""
import os

import triton
import triton.language as tl


def _die(nargs):  # the second config's launch: as a process killed by heap corruption, no answer written
    os._exit(3)


@triton.autotune(configs=[triton.Config({"BLOCK": 4096}, num_warps=4),
                          triton.Config({"BLOCK": 2048}, num_warps=2, pre_hook=_die)], key=["N"])
@triton.jit
def _rowsum(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + offs, mask=offs < N, other=0.0).to(tl.float32)
    tl.store(y_ptr + row, tl.sum(acc, axis=0).to(y_ptr.dtype.element_ty))


def launch(inputs, outputs, params, dt):
    x = inputs["x"]
    _rowsum[(x.shape[0],)](x, outputs["y"], x.shape[1], x.stride(0))
