"""Achieved bandwidth of the bundled RMSNorm and softmax kernels, side by side with torch's ops, Liger-Kernel's
softmax (when installed) and a device-to-device copy of the same bytes: a thin caller of `verifier bench`.

    python benchmarks/bandwidth.py [more `verifier bench` options, e.g. --dtype bf16 --shape 8192x3584]
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SPECS = ["kernels/cuda/rmsnorm_spec.py", "kernels/cuda/softmax_spec.py", "kernels/cuda/softmax_fast_spec.py"]
AGAINST = ["kernels/torch", "benchmarks/liger_spec.py"]


def argv(extra) -> list:
    out = ["bench", *(str(ROOT / p) for p in SPECS)]
    for a in AGAINST:
        out += ["--against", str(ROOT / a)]
    return out + list(extra)


if __name__ == "__main__":
    from verifier.cli import main

    sys.exit(main(argv(sys.argv[1:])))
