"""A library module as users import one: a Python wrapper calling its own autotuned row sum, whose BLOCK=32 config
has no loop over the row (sums only the first 32 columns). Its early_config_prune drops BLOCK=8, declared invalid
for rows wider than 8 (that config would sum 8 columns: never picked there, so never a finding). The spec beside it
launches through the wrapper, never naming the autotuner (tests/test_autotune_configs.py)."""
import triton
import triton.language as tl


def _valid(configs, nargs, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK"] >= 32 or nargs["N"] <= c.kwargs["BLOCK"]]


@triton.autotune(configs=[triton.Config({"BLOCK": 4096}, num_warps=4), triton.Config({"BLOCK": 8}, num_warps=1),
                          triton.Config({"BLOCK": 32}, num_warps=1)],
                 key=["N"], prune_configs_by={"early_config_prune": _valid})
@triton.jit
def _rowsum_lib(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + offs, mask=offs < N, other=0.0).to(tl.float32)
    tl.store(y_ptr + row, tl.sum(x, axis=0).to(y_ptr.dtype.element_ty))


def row_sum(x, y):
    _rowsum_lib[(x.shape[0],)](x, y, x.shape[1], x.stride(0))
