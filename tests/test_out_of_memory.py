"""Torch's allocator running out of GPU memory inside a kernel's call (a callable's intermediates on a large case
while other kernels are checked at once: ten torch compositions on an H100 on 2026-12-05) says nothing of the
kernel: the case is not run, with the reason and how to check it alone, never a `refusal` finding."""
import torch

from verifier.battery import check_kernel
from verifier.results.options import Options
from verifier.spec import CallableKernel, dtypes


def softmax_short_of_memory(inputs, outputs, params, dt):
    if inputs["x"].shape[1] >= 1000:
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 16.00 GiB. GPU 0 has a total "
                                          "capacity of 79.18 GiB of which 4.96 GiB is free.")
    return {"y": torch.softmax(inputs["x"].float(), -1).to(inputs["x"].dtype)}


def test_an_out_of_memory_case_is_not_run_and_no_finding():
    r = check_kernel(CallableKernel(name="oom", op="softmax", fn=softmax_short_of_memory, dtypes=[dtypes("f32")]),
                     Options(level="ci", device="cpu"))
    assert not [f for f in r.findings if f.check == "refusal"], [f.message for f in r.findings][:2]
    assert r.verdict == "pass"
    notes = [str(n) for n in r.notes]
    assert any("ran out of memory" in n and "-j 1" in n for n in notes), notes[:3]


def test_a_python_error_is_still_a_refusal():
    def raises(inputs, outputs, params, dt):
        raise RuntimeError("my kernel does not take this")
    r = check_kernel(CallableKernel(name="raises", op="softmax", fn=raises, dtypes=[dtypes("f32")]),
                     Options(level="quick", device="cpu"))
    assert r.error is not None or any(f.check == "refusal" for f in r.findings)
