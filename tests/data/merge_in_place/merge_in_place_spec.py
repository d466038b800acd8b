"""An attention-state merge written in place over the first state (FlashInfer's merge_state_in_place: v and its
log2-sum-exp2 s updated with v_other, s_other), as a torch model; and one that forgets to update s
(tests/test_merge_in_place.py)."""
import torch

from verifier.spec import CallableKernel, dtypes


def _merge(inputs, outputs, params, dt, write_lse=True):
    v, s, sb = outputs["v"], outputs["lse"], inputs["lse_b"]  # v is v_a's buffer, lse is lse_a's
    m = torch.maximum(s, sb)
    wa, wb = torch.exp2(s - m), torch.exp2(sb - m)
    tot = wa + wb
    v.copy_((v.float() * (wa / tot)[:, None] + inputs["v_b"].float() * (wb / tot)[:, None]).to(v.dtype))
    if write_lse:
        s.copy_(m + torch.log2(tot))


KERNELS = [CallableKernel(name=f"merge-in-place{'' if ok else '-stale-lse'}", op="merge_attn_states", device="cpu",
                          fn=lambda i, o, p, dt, ok=ok: _merge(i, o, p, dt, ok), dtypes=[dtypes("f32"), dtypes("bf16")],
                          params={"lse_base": "2"}, outputs_alias={"v": "v_a", "lse": "lse_a"})
           for ok in (True, False)]
