"""One GPU per pytest-xdist worker, and ``-n auto`` = the GPU count, without initializing CUDA.

CUDA reads ``CUDA_VISIBLE_DEVICES`` once, when the driver initializes (``cuInit``). In torch that is the
first ``torch.cuda.is_available()`` / ``device_count()`` / allocation; importing torch does not initialize it.
So the pytest plugin pins a worker in ``pytest_load_initial_conftests``, before conftest files and test
modules are imported, and counts GPUs with ``nvidia-smi -L`` (a separate process:
verifier.gpu.probe.physical_gpu_count), never through CUDA. Children (isolated kernels, compute-sanitizer
re-runs) inherit the pinned variable.

The functions here are pure: they take the environment and the device count as arguments, so the
round robin can be tested with a faked count on a machine without GPUs.
"""
from __future__ import annotations

import os
import re
import sys
from typing import Mapping, Optional

from verifier.errors import UsageError

VISIBLE = "CUDA_VISIBLE_DEVICES"
_WORKER_RE = re.compile(r"^gw(\d+)$")
_INDEX_RE = re.compile(r"^\d+$")


def parse_visible(value: Optional[str]) -> Optional[list[str]]:
    """The devices ``CUDA_VISIBLE_DEVICES`` leaves visible, in order; None when it is unset (all visible).

    Entries are indices or UUIDs ('GPU-...', 'MIG-...'). As in CUDA, a malformed entry (e.g. '-1') hides it
    and every entry after it, and an empty value hides every device."""
    if value is None:
        return None
    out: list[str] = []
    for tok in (t.strip() for t in value.split(",")):
        if not (_INDEX_RE.match(tok) or tok.startswith(("GPU-", "MIG-"))):
            break
        out.append(tok)
    return out


def visible_devices(env: Mapping[str, str], physical_count: int) -> list[str]:
    """Devices this process may use: the restricted list if CUDA_VISIBLE_DEVICES is set, else '0'..'n-1'."""
    restricted = parse_visible(env.get(VISIBLE))
    return restricted if restricted is not None else [str(i) for i in range(physical_count)]


def worker_index(worker_id: Optional[str]) -> Optional[int]:
    """'gw3' -> 3; None for the controller or a run without xdist ('master' or unset)."""
    m = _WORKER_RE.match(worker_id or "")
    return int(m.group(1)) if m else None


def device_for_worker(worker_id: Optional[str], devices: list[str]) -> Optional[str]:
    """Round robin over ``devices`` by worker number; None when there is nothing to pin."""
    i = worker_index(worker_id)
    if i is None or not devices:
        return None
    return devices[i % len(devices)]


def pinned_environment(env: Mapping[str, str], physical_count: int) -> dict:
    """The environment changes that pin this xdist worker to one GPU ({} when none apply)."""
    dev = device_for_worker(env.get("PYTEST_XDIST_WORKER"), visible_devices(env, physical_count))
    return {} if dev is None else {VISIBLE: dev}


WORKERS_PER_GPU = "VERIFIER_WORKERS_PER_GPU"


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def workers_per_gpu(env: Mapping[str, str], gpus: int, cpus: int) -> int:
    """Workers sharing one GPU under ``-n auto``: ``$VERIFIER_WORKERS_PER_GPU``, else the CPUs over the GPUs.

    A GPU test's time is CPU-side (Python, mpmath references, child processes under compute-sanitizer, nvcc),
    not GPU time: on one H200 with 16 CPUs, 16 workers ran 6x the tests of 8 in the same 140 s
    (docs/benchmarks.md). So every CPU gets a worker, and the workers are spread round robin over the GPUs."""
    raw = env.get(WORKERS_PER_GPU, "").strip()
    if raw:
        if not raw.isdigit() or int(raw) < 1:
            raise UsageError(f"{WORKERS_PER_GPU}={raw!r} is not a positive whole number of workers per GPU",
                             fix=f"set {WORKERS_PER_GPU} to 1 or more, or unset it (then: CPUs / GPUs)")
        return int(raw)
    return max(1, cpus // max(gpus, 1))


def auto_workers(env: Mapping[str, str], physical_count: int, cpu_count: Optional[int] = None) -> Optional[int]:
    """Worker count for ``pytest -n auto``: the visible GPUs times the workers per GPU (see workers_per_gpu);
    None (xdist's CPU count) without GPUs."""
    n = len(visible_devices(env, physical_count)) if physical_count else 0
    if not n:
        return None
    return n * workers_per_gpu(env, n, usable_cpus() if cpu_count is None else cpu_count)


def cuda_initialized() -> bool:
    """True if torch is imported and has already initialized CUDA in this process (pinning is too late).
    Never initializes CUDA itself. It cannot see an earlier ``torch.cuda.is_available()``, which initializes
    the driver (and reads the variable) without setting torch's flag: nothing may call it before pinning."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None) if torch is not None else None
    return bool(cuda is not None and cuda.is_initialized())
