"""CuPy streams from torch's: Stream.from_external with the CUDA stream protocol where CuPy has it (14+),
ExternalStream before. Seen on the H200 (2026-11-30, CuPy 14.2): ExternalStream raised a DeprecationWarning
per launch, 2731 per GPU suite run; from_external wrapped the same cudaStream_t with none."""
from types import SimpleNamespace

from verifier.launch.cuda import torch_stream_for_cupy

TORCH_STREAM = SimpleNamespace(cuda_stream=0xD9A9430, device=SimpleNamespace(index=1))


def _cupy(from_external=None):
    calls = []

    class Stream:
        pass

    if from_external is not None:
        Stream.from_external = classmethod(lambda cls, obj: from_external(obj))
    ext = lambda ptr, device_id=-1: calls.append(("external", ptr, device_id)) or "external-stream"
    return SimpleNamespace(cuda=SimpleNamespace(Stream=Stream, ExternalStream=ext)), calls


def test_protocol_object_carries_the_handle_to_from_external():
    seen = []
    cp, calls = _cupy(lambda obj: seen.append(obj.__cuda_stream__()) or "protocol-stream")
    assert torch_stream_for_cupy(cp, TORCH_STREAM) == "protocol-stream"
    assert seen == [(0, 0xD9A9430)] and calls == []


def test_older_cupy_uses_external_stream_on_the_stream_device():
    cp, calls = _cupy()
    assert torch_stream_for_cupy(cp, TORCH_STREAM) == "external-stream"
    assert calls == [("external", 0xD9A9430, 1)]


def test_a_from_external_refusing_the_protocol_falls_back():
    def refuse(obj):
        raise TypeError("no __cuda_stream__")

    cp, calls = _cupy(refuse)
    assert torch_stream_for_cupy(cp, TORCH_STREAM) == "external-stream" and len(calls) == 1
