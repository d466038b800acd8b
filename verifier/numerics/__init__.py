"""The numerics stage: ULP arithmetic (``ulp``), the rounding model behind every budget and invariant bound
(``errmodel``) and the records invariant checks return (``violations``). Knows nothing of kernels or ops."""
