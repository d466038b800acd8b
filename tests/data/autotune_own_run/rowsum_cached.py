"""A library cache above an autotuner (as FlagGems' libentry): the first call per argument signature goes through
the autotuner and the cache keeps the config it launched; later calls relaunch that config without asking the
autotuner. The row sum's BLOCK=32 config has no loop over the row. Pinned to config 2, every launch whose signature
config 1 already met still runs config 1: the verifier says so (a note), where before config 2 passed unseen."""
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 4096}, num_warps=4), triton.Config({"BLOCK": 32}, num_warps=1)],
                 key=["N"])
@triton.jit
def _rowsum(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < N, other=0.0).to(tl.float32)
    tl.store(y_ptr + row, tl.sum(x, axis=0).to(y_ptr.dtype.element_ty))


_CACHE = {}  # argument signature -> the config the autotuner launched for it


def launch(inputs, outputs, params, dt):
    x, y = inputs["x"], outputs["y"]
    key = (x.dtype, x.shape[1], x.stride(0))
    if key in _CACHE:  # a cache hit relaunches the kernel as first configured, the autotuner not asked
        _rowsum.fn[(x.shape[0],)](x, y, x.shape[1], x.stride(0), **_CACHE[key])
        return
    _rowsum[(x.shape[0],)](x, y, x.shape[1], x.stride(0))
    _CACHE[key] = _rowsum.best_config.all_kwargs()
