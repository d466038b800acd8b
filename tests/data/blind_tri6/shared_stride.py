"""RMSNorm kernels given x's row stride only, as aiter's per-token quant stores its output at x's stride and its
fused add + RMSNorm reads the residual at x's (tests/test_strided_own_stride.py): right where every tensor shares
x's layout, wrong on a slice x = qkv[:, :N] beside a fresh output. Their twins take each tensor's own stride."""
import triton
import triton.language as tl


@triton.jit
def _rmsnorm(x_ptr, w_ptr, y_ptr, N, sx, sy, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * sx + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, 0) / N + eps)
    tl.store(y_ptr + row * sy + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _add_rmsnorm(x_ptr, r_ptr, w_ptr, y_ptr, N, sx, sr, sy, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    h = tl.load(x_ptr + row * sx + cols, mask=mask, other=0.0).to(tl.float32) + \
        tl.load(r_ptr + row * sr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(r_ptr + row * sr + cols, h.to(r_ptr.dtype.element_ty), mask=mask)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(h * h, 0) / N + eps)
    tl.store(y_ptr + row * sy + cols, (h * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def _norm(inputs, outputs, params, shared):
    x, y = inputs["x"], outputs["y"]
    M, N = x.shape
    _rmsnorm[(M,)](x, inputs["w"], y, N, x.stride(0), x.stride(0) if shared else y.stride(0), float(params["eps"]),
                   BLOCK=triton.next_power_of_2(N))


def _add(inputs, outputs, params, shared):
    x, r, y = inputs["x"], outputs["residual"], outputs["y"]
    M, N = x.shape
    _add_rmsnorm[(M,)](x, r, inputs["w"], y, N, x.stride(0), x.stride(0) if shared else r.stride(0), y.stride(0),
                       float(params["eps"]), BLOCK=triton.next_power_of_2(N))


def norm_shared(inputs, outputs, params, dt):
    _norm(inputs, outputs, params, True)


def norm_own(inputs, outputs, params, dt):
    _norm(inputs, outputs, params, False)


def add_shared(inputs, outputs, params, dt):
    _add(inputs, outputs, params, True)


def add_own(inputs, outputs, params, dt):
    _add(inputs, outputs, params, False)
