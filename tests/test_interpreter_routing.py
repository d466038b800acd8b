"""Two Triton interpreter gaps a production MoE router hit, each a crash finding on a kernel compiled Triton runs
(verifier.launch.interpreter): an argmax over a slice holding only NaN (padding rows of -inf - -inf, never stored:
FlagGems' topk_softmax) raised numpy's "All-NaN slice encountered", and ``tl.range(start, end, step, num_stages)``
with its hint positional raised a TypeError (vLLM's gpt-oss router). Our own minimal routers reproduce both."""
import os

import numpy as np
import pytest

from verifier.launch.triton import activate, triton_mode

pytestmark = pytest.mark.interpreter

ROUTER = '''
import triton
import triton.language as tl


@triton.jit
def _top2(x_ptr, v_ptr, i_ptr, M, E, BLOCK_M: tl.constexpr, BLOCK_E: tl.constexpr, HINTED: tl.constexpr):
    cols = tl.arange(0, BLOCK_E)
    if HINTED:  # one row per step, the loop's num_stages hint given positionally
        for r in tl.range(tl.program_id(0), M, tl.num_programs(0), 2):
            x = tl.load(x_ptr + r * E + cols, mask=cols < E, other=-float("inf"))
            e = tl.exp(x - tl.max(x, 0))
            p = e / tl.sum(e, 0)
            for j in tl.static_range(2):
                tl.store(v_ptr + r * 2 + j, tl.max(p, 0))
                a = tl.argmax(p, 0)
                tl.store(i_ptr + r * 2 + j, a)
                p = tl.where(cols == a, -float("inf"), p)
    else:  # BLOCK_M rows per program: the rows past M are all -inf, their gates NaN, never stored
        rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        live = rows < M
        x = tl.load(x_ptr + rows[:, None] * E + cols[None, :], mask=live[:, None] & (cols[None, :] < E),
                    other=-float("inf"))
        e = tl.exp(x - tl.max(x, 1)[:, None])
        p = e / tl.sum(e, 1)[:, None]
        for j in tl.static_range(2):
            tl.store(v_ptr + rows * 2 + j, tl.max(p, 1), mask=live)
            a = tl.argmax(p, 1)
            tl.store(i_ptr + rows * 2 + j, a, mask=live)
            p = tl.where(cols[None, :] == a[:, None], -float("inf"), p)


def _launch(hinted):
    def launch(inputs, outputs, params, dt):
        x = inputs["x"]
        M, E = x.shape
        grid = (2,) if hinted else (triton.cdiv(M, 4),)
        _top2[grid](x, outputs["values"], outputs["indices"], M, E, BLOCK_M=4, BLOCK_E=triton.next_power_of_2(E),
                    HINTED=hinted)
    return launch


padded, hinted = _launch(False), _launch(True)
'''


@pytest.fixture(scope="module")
def interpreter():
    if os.environ.get("VERIFIER_TRITON_MODE", "") == "compiled" or triton_mode() != "interpreter":
        pytest.skip("this process runs Triton compiled; the gaps concern the interpreter")
    activate("interpreter")


def _spec(tmp_path, launcher):
    from verifier.spec import Contracts, TritonKernel, dtypes

    path = tmp_path / "router.py"
    path.write_text(ROUTER)
    # NaN and -inf rows: the picks of a row of NaN gates are the kernel's own business, not these gaps'
    return TritonKernel(name=f"router-{launcher}", op="topk_softmax", module=str(path), launcher=launcher,
                        dtypes=[dtypes("f32")], params={"k": 2}, math_mode="triton_approx",
                        contracts=Contracts(nan_inputs="unsupported", inf_inputs="unsupported"),
                        supports=lambda M, N, d: None if 2 <= N <= 1024 else "2 <= E <= 1024")


@pytest.mark.parametrize("launcher", ["padded", "hinted"])
def test_a_router_the_interpreter_crashed_on_is_judged(interpreter, tmp_path, launcher):
    from verifier.battery import check_kernel
    from verifier.results.options import Options

    report = check_kernel(_spec(tmp_path, launcher), Options(level="quick", device="cpu"))
    assert report.error is None and not report.findings, (report.error, report.findings)
    assert report.verdict == "pass" and report.cells[("f32", "value")].status == "pass"


def test_an_all_nan_argmax_gives_nan_and_an_index_either_end(interpreter):
    """Compiled Triton leaves the index of an all-NaN slice to its reduction order: the last index (a left fold of
    its combine), or the first inside all_nan_first(); the values step replays a failure with the other."""
    import torch
    import triton
    import triton.language as tl

    from verifier.launch.interpreter import ALL_NAN_ARG, all_nan_first, recording, watch

    @triton.jit
    def argmax_rows(x, v, i, N: tl.constexpr):
        r = tl.program_id(0)
        m, a = tl.max(tl.load(x + r * N + tl.arange(0, N)), 0, return_indices=True)
        tl.store(v + r, m)
        tl.store(i + r, a)

    x = torch.tensor([[float("nan")] * 4, [1.0, float("nan"), 3.0, 2.0]])
    v, i = torch.empty(2), torch.empty(2, dtype=torch.int32)
    with watch(), recording() as seen:
        argmax_rows[(2,)](x, v, i, N=4)
    assert np.isnan(v[0].item()) and i.tolist() == [3, 2] and v[1].item() == 3.0 and ALL_NAN_ARG in seen
    with watch(), all_nan_first():
        argmax_rows[(2,)](x, v, i, N=4)
    assert i.tolist() == [0, 2]
