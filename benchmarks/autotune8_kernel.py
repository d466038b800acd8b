"""An RMSNorm autotuned over eight configs (block size x warps), for benchmarks/autotune8_spec.py: the time of
checking every config at `--level ci` (issue #36: at most 60 s on an H200)."""
import triton
import triton.language as tl

CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (256, 512, 1024, 2048) for w in (2, 8)]


@triton.autotune(configs=CONFIGS, key=["N"])
@triton.jit
def _rmsnorm(x_ptr, w_ptr, y_ptr, N, sx, sy, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * sx + offs, mask=offs < N, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for start in range(0, N, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < N
        x = tl.load(x_ptr + row * sx + offs, mask=m, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offs, mask=m, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * sy + offs, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=m)


def launch(inputs, outputs, params, dt):
    x, y = inputs["x"], outputs["y"]
    _rmsnorm[(x.shape[0],)](x, inputs["w"], y, x.shape[1], x.stride(0), y.stride(0), params["eps"])
