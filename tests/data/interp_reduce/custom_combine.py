"""Row reductions through tl.reduce with combine functions of our own: a Welford merge (mean, count, M2) and an
argmax keeping the lowest index among equal values. CALLS counts the combine calls (the interpreter runs these
bodies as Python): one per element folded, about log2(n) as a tree. tests/test_interpreter_reduce.py."""
import triton
import triton.language as tl

CALLS = [0]


@triton.jit
def _welford(mean_a, n_a, m2_a, mean_b, n_b, m2_b):
    CALLS[0] += 1
    n = n_a + n_b
    d = mean_b - mean_a
    frac = tl.where(n > 0, n_b / tl.maximum(n, 1.0), 0.0)
    return mean_a + d * frac, n, m2_a + m2_b + d * d * n_a * frac


@triton.jit
def _argmax_left(v_a, i_a, v_b, i_b):
    CALLS[0] += 1
    take_b = (v_b > v_a) | ((v_b == v_a) & (i_b < i_a))
    return tl.where(take_b, v_b, v_a), tl.where(take_b, i_b, i_a)


@triton.jit
def _rows(x_ptr, var_ptr, idx_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    o = tl.arange(0, BLOCK)
    live = o < N
    x = tl.load(x_ptr + row * N + o, mask=live, other=0.0)
    mean, n, m2 = tl.reduce((x, live.to(tl.float32), tl.zeros_like(x)), 0, _welford)
    tl.store(var_ptr + row, m2 / n)
    _, i = tl.reduce((tl.where(live, x, float("-inf")), o), 0, _argmax_left)
    tl.store(idx_ptr + row, i)


def run(x, var, idx):
    _rows[(x.shape[0],)](x, var, idx, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
