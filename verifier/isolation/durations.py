"""How long each kernel's check took last time, kept beside the build cache: `verifier check -j N` starts the
longest first, so the run does not end waiting on a slow kernel started last (on the H200, Liger's Triton kernels
take 13 s each of a 27 s warm run of kernels/). Only the order of the work changes, never the reports or their order.
Without a record a kernel's kind stands in for it (Triton kernels and callables are the slow ones)."""
from __future__ import annotations

import json
import os
import tempfile

from verifier.toolchain.nvcc import cache_dir

_FILE = "check-durations.json"


def _key(spec, opts) -> str:
    return f"{opts.device}|{opts.level}|{spec.origin or ''}|{spec.name}"


def _path():
    return cache_dir() / _FILE


def _read() -> dict:
    try:
        with open(_path()) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):  # none yet, or unreadable: the kind's guess serves
        return {}


def expected(specs, opts) -> list:
    """Expected seconds of each spec's check, in order: last run's, else its kind's guess."""
    known = _read()
    return [float(known.get(_key(s, opts)) or s.guess_seconds) for s in specs]


def record(pairs, opts) -> None:
    """Keep (spec, seconds) of this run, merged into the file (written whole, then renamed: concurrent runs
    lose at most each other's update, never the file)."""
    data = _read()
    data.update({_key(s, opts): round(float(sec), 3) for s, sec in pairs if sec})
    try:
        os.makedirs(_path().parent, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=_path().parent, prefix=".durations-")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=0, sort_keys=True)
        os.replace(tmp, _path())
    except OSError:  # a read-only cache: the next run orders by kind
        pass
