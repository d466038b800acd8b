"""``ctype``: a dtype's C++ type name for a templated CUDA entry, in CUDA's and PyTorch's (c10) spelling; the bundled
FlashInfer specs name their instantiations with it, so a wrong name would be a missing entry in their build."""
import pytest
import torch

from verifier.spec import SpecError, ctype, dtypes


@pytest.mark.parametrize("dt, cuda, c10", [("f32", "float", "float"), ("f16", "__half", "c10::Half"),
                                           ("bf16", "__nv_bfloat16", "c10::BFloat16"),
                                           ("e4m3", "__nv_fp8_e4m3", "c10::Float8_e4m3fn"),
                                           ("e5m2", "__nv_fp8_e5m2", "c10::Float8_e5m2"), ("i8", "int8_t", "int8_t")])
def test_both_spellings(dt, cuda, c10):
    assert ctype(dt) == cuda and ctype(dt, "c10") == c10


def test_a_variant_names_its_input_and_torch_dtypes_are_accepted():
    assert ctype(dtypes("bf16", "e4m3")) == "__nv_bfloat16" and ctype(torch.float16) == "__half"


def test_unknown_dtype_or_style_is_a_spec_error_with_the_fix():
    with pytest.raises(SpecError, match="unknown dtype"):
        ctype("f17")
    with pytest.raises(SpecError, match="style 'torch'"):
        ctype("f16", "torch")
