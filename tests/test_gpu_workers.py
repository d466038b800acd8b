"""Workers per GPU under `pytest -n auto` (verifier.gpu.pinning.workers_per_gpu / auto_workers)."""
import pytest

from verifier.gpu import pinning as gp
from verifier.errors import UsageError


def test_every_cpu_gets_a_worker_spread_over_the_gpus():
    assert gp.auto_workers({}, 1, cpu_count=16) == 16  # one H200, 16 CPUs: 16 workers share it
    assert gp.auto_workers({}, 8, cpu_count=128) == 128
    assert gp.auto_workers({}, 4, cpu_count=18) == 16  # whole workers per GPU, the same count on each
    assert gp.auto_workers({}, 4, cpu_count=2) == 4  # at least one worker per GPU
    assert gp.auto_workers({"CUDA_VISIBLE_DEVICES": "0"}, 8, cpu_count=16) == 16  # CPUs over the visible GPUs


def test_workers_per_gpu_from_the_environment():
    assert gp.auto_workers({gp.WORKERS_PER_GPU: "3"}, 2, cpu_count=64) == 6
    assert gp.auto_workers({gp.WORKERS_PER_GPU: " 1 "}, 1, cpu_count=64) == 1
    assert gp.auto_workers({gp.WORKERS_PER_GPU: "3"}, 0, cpu_count=64) is None  # no GPU: xdist's CPU count


@pytest.mark.parametrize("bad", ["0", "-2", "two", "1.5"])
def test_a_bad_workers_per_gpu_is_a_usage_error(bad):
    with pytest.raises(UsageError, match=gp.WORKERS_PER_GPU):
        gp.auto_workers({gp.WORKERS_PER_GPU: bad}, 1, cpu_count=4)


def test_round_robin_pins_the_workers_of_one_gpu_to_it():
    devices = gp.visible_devices({}, 2)
    assert [gp.device_for_worker(f"gw{i}", devices) for i in range(6)] == ["0", "1", "0", "1", "0", "1"]


def test_usable_cpus_is_positive():
    assert gp.usable_cpus() >= 1
