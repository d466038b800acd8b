"""The memory one case needs, estimated before anything of it is allocated, and what this machine has: a case
past it is not run (the gate's note says which case, the estimate and what is available), never a process the
out-of-memory killer ends and a report that blames the kernel with a crash.

Where the bytes go for one case of M x N, from the code that allocates them:
- the draw (verifier.inputs.cases): each input in its dtype, drawn through float64 (numpy's samplers);
- the harness (verifier.launch.harness): each input's and output's host buffer (outputs with two guard bands),
  and on the CPU their torch copies, the kernel's view of them; the outputs read back;
- the kernel's own work: a torch or interpreted kernel upcasts its rows to float32 at least (one copy of x);
- the judge (references, verifier.judge): every input upcast to float64, and per output the float64 exact
  result, the correctly rounded one, the float64 budget, the float64 ULP distances and two float64 temporaries of
  the reference's formula; mpmath recomputes only near-tie elements (``MARGIN_BYTES`` covers it);
- on a GPU the inputs and outputs also live on the device (verifier.launch.large.required_bytes).
The large-index case (more than 2^31 elements) holds only its judged rows on the host: its own gate checks the GPU.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from verifier import dtypes as _dt

MARGIN_BYTES = 256 << 20  # the process itself beyond the case's arrays: mpmath's rows, Python, torch's allocator
QUERY_FROM_BYTES = 512 << 20  # smaller cases are not worth a question to the machine
F64 = 8
REFERENCE_ARRAYS = 6  # per output element, float64: exact, budget, ULP distances, two temporaries; rounded apart


def _tensors(op, dt, M: int, N: int, params: dict):
    """(elements, itemsize, is_output) of every tensor of the op at M x N (an in-out tensor once, as an output)."""
    from verifier.launch.outcome import out_dtype

    for t in op.inputs:
        if t not in op.inouts:
            yield int(np.prod(op.shape_of(t, M, N))), _dt.numpy_dtype(op.input_dtype(t, dt, params)).itemsize, False
    for t in op.outputs:
        yield int(np.prod(op.shape_of(t, M, N, params))), _dt.numpy_dtype(out_dtype(t, op, dt, params)).itemsize, True


def host_bytes(op_name: str, dt, M: int, N: int, params: dict, device: str) -> int:
    """Host memory one case of M x N needs at its peak (the module's docstring says where it goes)."""
    from verifier.launch.outcome import GUARD_BYTES
    from verifier.ops import get_op

    op = get_op(op_name)
    copies = 3 if device == "cpu" else 2  # drawn / host buffer (/ the CPU tensor the kernel gets)
    total = MARGIN_BYTES + M * N * 4  # the kernel's float32 working copy of x
    for n, size, output in _tensors(op, dt, M, N, params):
        if output:
            total += n * (copies * size + size + REFERENCE_ARRAYS * F64) + 2 * GUARD_BYTES  # + rounded reference
        else:
            total += n * (copies * size + F64 + F64)  # + the float64 draw and the judge's float64 upcast
    return total


def available_host_bytes() -> Optional[int]:
    """MemAvailable of /proc/meminfo (what can be allocated without swapping), None where there is none."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def available_device_bytes() -> Optional[int]:
    from verifier.gpu.probe import free_memory

    return free_memory()


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB"


def too_large(spec, dt, M: int, N: int, device: Optional[str]) -> Optional[str]:
    """Why a case of M x N cannot be checked in this machine's memory (None: it fits, or nothing says it does
    not): the estimate and what is available, host and (on a GPU) device."""
    from verifier.launch.large import required_bytes

    params = spec.op_params()
    need = host_bytes(spec.op, dt, M, N, params, device or "cpu")
    if need >= QUERY_FROM_BYTES:
        have = available_host_bytes()
        if have is not None and need > have:
            return (f"{M}x{N} needs about {_gb(need)} of host memory (inputs, outputs, the float64 reference and the "
                    f"judge's arrays), more than the {_gb(have)} available (MemAvailable); check a smaller shape or on a "
                    "machine with more memory")
    if device == "cuda":
        dev = required_bytes(spec.op, dt, M, N, params)
        if dev >= QUERY_FROM_BYTES:
            free = available_device_bytes()
            if free is not None and dev > free:
                return (f"{M}x{N} needs about {_gb(dev)} of GPU memory (inputs, outputs, guard bands, the context), "
                        f"more than the {_gb(free)} free on device 0")
    return None
