"""verifier.bench.clock on a simulated GPU timeline: the timed region holds the kernel, not its host launch.

The simulated device has one host clock and one GPU queue: a call costs host time, then queues GPU work that
starts when both the GPU is free and the work has been launched. Events read the GPU's time. So a call whose
launch takes longer than its kernel is timed at its launch if nothing hides it — what issue #24 saw with
Liger-Kernel on an H200 (131.5 µs one run, 37.1 µs the next) — and at its kernel through clock.measure.
"""
import pytest

from verifier.bench import clock
from verifier.bench.json import from_dict, to_dict
from verifier.bench.markdown import render as markdown
from verifier.bench.plan import BenchResult, Row, summarize
from verifier.bench.text import render as text


class Tensor:
    def __init__(self):
        self.written = False


class Event:
    def __init__(self, dev):
        self.dev, self.t = dev, None

    def record(self):
        self.t = self.dev.enqueue(0.0, 0.5e-6)

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


class Device:
    """One host clock, one in-order GPU queue (seconds)."""

    l2_bytes = 50 << 20

    def __init__(self, capture="ok"):
        self.host = 0.0
        self.gpu_free = 0.0
        self.capture_mode = capture

    def now(self):
        return self.host

    def enqueue(self, gpu_s, host_s, then=None):
        self.host += host_s
        start = max(self.host, self.gpu_free)
        self.gpu_free = start + gpu_s
        if then:
            then()
        return start

    def event(self):
        return Event(self)

    def flush(self):
        self.enqueue(80e-6, 3e-6)

    def sleep_us(self, us):
        self.enqueue(us * 1e-6, 2e-6)

    def synchronize(self):
        self.host = max(self.host, self.gpu_free)

    def capture(self, fn):
        if self.capture_mode == "raises":
            raise RuntimeError("operation not permitted when stream is capturing")
        ret = fn()  # the work ran while capturing
        kernel = self.kernel
        if self.capture_mode == "escapes":  # the graph holds nothing: the work went to another stream
            return (lambda: self.enqueue(0.0, 5e-6)), ret
        return (lambda: self.enqueue(kernel.gpu_s, 5e-6, kernel.write)), ret

    def poison(self, tensors):
        for t in tensors:
            t.written = False

    def all_written(self, tensors):
        return all(t.written for t in tensors)


class Kernel:
    def __init__(self, dev, host_s, gpu_s):
        self.dev, self.host_s, self.gpu_s = dev, host_s, gpu_s
        self.out = Tensor()
        dev.kernel = self

    def write(self):
        self.out.written = True

    def __call__(self):
        self.dev.enqueue(self.gpu_s, self.host_s, self.write)


def naive(dev, fn, runs=20):
    """The timing before issue #24: flush, start event, call, end event (no delay)."""
    pairs = [(dev.event(), dev.event()) for _ in range(runs)]
    for s, e in pairs:
        dev.flush()
        s.record()
        fn()
        e.record()
    dev.synchronize()
    return [s.elapsed_time(e) for s, e in pairs]


def test_a_launch_longer_than_its_kernel_inflated_the_old_timing():
    dev = Device()
    k = Kernel(dev, host_s=131e-6, gpu_s=37e-6)  # the flush (80 µs) ends before the launch does
    old = summarize(naive(dev, k)).median_ms
    assert old * 1e3 > 1.4 * 37  # the GPU idled for part of the launch inside the timed region
    t = clock.measure(dev, k, lambda ret: [k.out], runs=20, warmup=2)
    assert t.method == clock.GRAPH and t.note == ""
    assert summarize(t.times_ms).median_ms * 1e3 == pytest.approx(37, abs=1)  # the kernel
    assert t.host_ms * 1e3 == pytest.approx(131, abs=1)


@pytest.mark.parametrize("mode, why", [("raises", "not captured in a CUDA graph (RuntimeError"),
                                       ("escapes", "a replay left its outputs unwritten")])
def test_no_graph_means_the_call_behind_a_delay_still_times_the_kernel(mode, why):
    dev = Device(capture=mode)
    k = Kernel(dev, host_s=400e-6, gpu_s=20e-6)
    t = clock.measure(dev, k, lambda ret: [k.out], runs=20, warmup=2)
    assert t.method == clock.DELAY and why in t.note
    assert summarize(t.times_ms).median_ms * 1e3 == pytest.approx(20, abs=1)
    # never an empty graph's time
    assert min(t.times_ms) * 1e3 >= 19


def test_a_call_that_writes_nothing_checkable_is_not_trusted_to_a_graph():
    dev = Device()
    k = Kernel(dev, host_s=10e-6, gpu_s=50e-6)
    t = clock.measure(dev, k, lambda ret: [], runs=20, warmup=1)
    assert t.method == clock.DELAY and "writes no tensor" in t.note
    assert summarize(t.times_ms).median_ms * 1e3 == pytest.approx(50, abs=1)


def test_a_host_launch_past_the_longest_delay_says_so():
    dev = Device(capture="raises")
    k = Kernel(dev, host_s=0.3, gpu_s=1e-3)
    t = clock.measure(dev, k, lambda ret: [k.out], runs=20, warmup=1)
    assert "longer than the 200 ms delay" in t.note


def test_delay_covers_the_slowest_launch_with_margin():
    assert clock.delay_us([]) == clock.MIN_DELAY_US
    assert clock.delay_us([10e-6, 30e-6]) == pytest.approx(3 * 30 + clock.MIN_DELAY_US)
    assert clock.delay_us([10.0]) == clock.MAX_DELAY_US


def _result(host_ms):
    stats = summarize([0.037, 0.037, 0.038])
    rows = [Row("liger-rmsnorm", "against", "rmsnorm", "bf16", 8192, 4096, 1, stats=stats, copy_ms=0.036,
                host_ms=host_ms, method="delay", note="not captured in a CUDA graph (x)"),
            Row("d2d-copy", "copy", "rmsnorm", "bf16", 8192, 4096, 1, stats=stats, copy_ms=0.036, host_ms=0.004,
                method="graph")]
    return BenchResult(rows=rows, gpu="H200", l2_bytes=50 << 20, runs=3, warmup=1, date="d")


def test_host_bound_rows_are_flagged_with_both_times_in_every_format():
    r = _result(0.131)
    assert r.rows[0].host_bound and not r.rows[1].host_bound
    t = text(r)
    assert "HOST-BOUND" in t and "131.0" in t and "37.0" in t and "not captured in a CUDA graph (x)" in t
    m = markdown(r)
    assert "**host-bound**" in m and "| 131.0 | delay" in m
    d = to_dict(r)
    assert d["rows"][0]["host_bound"] is True and d["rows"][0]["method"] == "delay"
    back = from_dict(d)
    assert back.rows[0].host_ms == 0.131 and back.rows[0].host_bound
    assert "HOST-BOUND" not in text(_result(0.010))


def test_a_row_carries_the_timing_and_checks_what_the_call_returned(monkeypatch):
    """verifier.bench.timing._time_one with a stand-in timer: the tensors a replay is checked on are what the call
    returned (a callable that returns its output), else its outputs; the row carries host time, method and note."""
    import torch

    from verifier.bench import timing
    from verifier.spec import CallableKernel, dtypes

    x, y = torch.randn(4, 8), torch.full((4, 8), float("nan"))
    monkeypatch.setattr(timing, "make_inputs", lambda op, M, N, dt, params=None: ({"x": x}, {"y": y}))
    returned = torch.empty(4, 8)
    spec = CallableKernel(name="ret", op="softmax", fn=lambda i, o, p, d: {"y": returned}, dtypes=[dtypes("f32")])
    monkeypatch.setattr(timing, "launcher", lambda spec, inputs, outputs, dt: lambda: spec.fn(inputs, outputs, {}, dt))
    seen = []

    class Timer:
        def time(self, fn, written):
            seen.append(written(fn()))
            return clock.Timing([0.02, 0.02, 0.03], 0.05, clock.DELAY, "not captured in a CUDA graph (x)")

    row = timing._time_one(Timer(), spec, "against", "softmax", dtypes("f32"), 4, 8, 256, 0.01)
    assert seen == [[returned]]
    assert (row.status, row.host_ms, row.method, row.note) == ("ok", 0.05, "delay", "not captured in a CUDA graph (x)")
    assert row.host_bound and row.stats.median_ms == 0.02
    spec2 = CallableKernel(name="writes", op="softmax", fn=lambda i, o, p, d: None, dtypes=[dtypes("f32")])
    timing._time_one(Timer(), spec2, "against", "softmax", dtypes("f32"), 4, 8, 256, 0.01)
    assert seen[-1] == [y]  # nothing returned: its outputs


def test_the_copy_baseline_can_be_checked_as_a_graph_replay_like_the_kernels():
    """The copy beside every row is poisoned and checked as a kernel's outputs are, so it is timed from a CUDA graph
    replay too, not behind the delay alone (run 5 of docs/gpu-runs/2026-12-02-issue-24.md: a uint8 copy never was)."""
    import torch

    from verifier.bench import clock
    from verifier.bench.timing import copy_buffers

    nbytes = 8192 * 2048 * 2 * 2 + 2 * 2048 * 2 + 6  # bf16 x and y, w and b, and a ragged tail
    src, dst = copy_buffers(nbytes, device="cpu")
    assert src.is_floating_point() and nbytes - 8 < src.numel() * 4 * 2 <= nbytes  # the same bytes, whole floats
    assert not torch.isnan(src).any()
    dev = clock.TorchDevice.__new__(clock.TorchDevice)
    dev.torch = torch
    dev.poison([dst])
    assert not dev.all_written([dst])  # a replay that escaped the capture is seen
    dst.copy_(src)
    assert dev.all_written([dst])


def test_the_copy_baseline_draws_from_a_generator_of_its_own(monkeypatch):
    """A kernel whose CUDA graph capture failed left torch's default CUDA generator in capture mode, and the copy
    baseline's next draw from it ended `verifier bench` with an internal error (Liger's cross entropy, H200
    2026-12-05): the copy draws from its own generator."""
    import torch

    from verifier.bench.timing import copy_buffers

    seen = []
    real = torch.randn
    monkeypatch.setattr(torch, "randn", lambda *a, **k: seen.append(k.get("generator")) or real(*a, **k))
    copy_buffers(64, device="cpu")
    assert seen and isinstance(seen[0], torch.Generator)


def test_a_failed_capture_puts_the_generators_back(monkeypatch):
    """clock.TorchDevice.capture: a capture that raised restores each default CUDA generator's state copied
    before it (graphsafe_set_state), then raises for the call to be timed behind the delay."""
    from verifier.bench import clock

    log = []

    class Gen:
        def clone_state(self):
            return "copy"

        def graphsafe_set_state(self, state):
            log.append(state)

    class Graph:
        def __init__(self, g):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class Cuda:
        default_generators = (Gen(), Gen())
        CUDAGraph = object
        graph = Graph

        @staticmethod
        def Stream():
            class S:
                def wait_stream(self, other):
                    pass
            return S()

        @staticmethod
        def current_stream():
            return Cuda.Stream()

        @staticmethod
        def stream(s):
            return Graph(s)

        @staticmethod
        def synchronize():
            pass

    class Torch:
        cuda = Cuda

    dev = clock.TorchDevice.__new__(clock.TorchDevice)
    dev.torch = Torch

    calls = []

    def syncs():
        calls.append(1)
        if len(calls) == 2:  # the second call is the captured one
            raise RuntimeError("operation not permitted when stream is capturing")

    with pytest.raises(RuntimeError):
        dev.capture(syncs)
    assert log == ["copy", "copy"]
