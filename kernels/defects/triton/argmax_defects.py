"""Row argmax defects (op row_argmax); twin: triton-row-argmax (kernels/triton/argmax_spec.py). The same kernel
(kernels/triton/argmax.py) with one switch each, every one declaring the defaults (ties='first', NaN propagating as
torch.argmax):

launch_last_tie: a lane keeps a later tie (``>=``) and the lanes merge to the largest column: the last index of the
maximum where torch.argmax returns the first. Randn rows never tie.
launch_bf16_compare: f32 logits rounded to bf16 before comparing (a kernel templated on a 16-bit compute type): a
maximum within a bf16 ULP of the second largest loses to it when the second comes first.
launch_no_tail: whole 4096-column tiles only (the last partial tile never read): a maximum in the tail is missed;
rows shorter than a tile read nothing and return 0.
"""
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("_argmax_twin", Path(__file__).resolve().parents[2] / "triton" /
                                               "argmax.py")
_twin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_twin)


def launch_last_tie(inputs, outputs, params, dtypes):
    return _twin.launch(inputs, outputs, params, dtypes, LAST_TIE=True)


def launch_bf16_compare(inputs, outputs, params, dtypes):
    return _twin.launch(inputs, outputs, params, dtypes, BF16_CMP=True)


def launch_no_tail(inputs, outputs, params, dtypes):
    return _twin.launch(inputs, outputs, params, dtypes, NO_TAIL=True)
