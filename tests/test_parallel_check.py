"""verifier.isolation.parallel (`verifier check -j N`): kernels checked at once give the report of -j 1 — the same
reports in the same order, the same findings (a crash included), the same exit code and the same usage error."""
import json

import pytest

from verifier.cli import main
from verifier.declare.registry import load_spec_file
from verifier.errors import UsageError
from verifier.isolation import check_all, parallel
from verifier.report import render
from verifier.results.options import Options, check_setting
from verifier.results.run import Result

SPEC = """
import os, sys, time, torch
from verifier.spec import CallableKernel, dtypes

def slow(inputs, outputs, params, dt):  # finishes last: the report must still list it first
    time.sleep(0.3)
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))

def exits(inputs, outputs, params, dt):
    sys.stderr.write("lane 3 gave up\\n")
    sys.stderr.flush()
    os._exit(7)

def good(inputs, outputs, params, dt):
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))

def wrong(inputs, outputs, params, dt):  # a value finding
    outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1) * 1.01)

def wrong_dtype(inputs, outputs, params, dt):  # the kernel's error in the check
    return {"y": torch.softmax(inputs["x"].double(), -1)}

F32 = [dtypes("f32")]
KERNELS = [CallableKernel(name=n, op="softmax", fn=globals()[n], dtypes=F32)
           for n in ("slow", "exits", "good", "wrong", "wrong_dtype")]
"""
OPTS = Options(level="quick", device="cpu", case="normal_small")


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("par") / "par_spec.py"
    p.write_text(SPEC)
    return p


@pytest.fixture(scope="module")
def specs(spec_file):
    return {k.name: k for k in load_spec_file(spec_file)}


def _texts(reports):
    result = Result(reports=reports, environment={}, options={"level": "quick", "seed": 0, "device": "cpu"})
    data = json.loads(render(result, "json"))
    kernels = [{k: v for k, v in entry.items() if k != "seconds"} for entry in data["kernels"]]  # wall times
    return render(result, "text"), kernels, data["summary"], result.exit_code()


@pytest.fixture(scope="module")
def one_after_another(specs):
    return check_all([specs[n] for n in ("slow", "exits", "good", "wrong")], OPTS, jobs=1)


def test_forks_at_once_give_the_report_of_one_after_another(specs, one_after_another):
    chosen = [specs[n] for n in ("slow", "exits", "good", "wrong")]
    many = check_all(chosen, OPTS, jobs=3)
    assert [r.name for r in many] == [s.name for s in chosen]
    assert _texts(many) == _texts(one_after_another)
    verdicts = {r.name: r.verdict for r in many}
    assert verdicts == {"slow": "pass", "exits": "fail", "good": "pass", "wrong": "fail"}
    (crash,) = many[1].findings
    assert crash.check == "crash" and "exit status 7" in crash.message


def test_child_processes_at_once_give_the_same_reports(specs, one_after_another):
    # two fresh interpreters at once (each imports torch: two are enough); the same reports as the forks gave
    many = check_all([specs["slow"], specs["good"]], OPTS, isolate=True, jobs=2)
    assert _texts(many) == _texts([one_after_another[0], one_after_another[2]])


def test_a_kernels_wrong_output_is_its_error_at_any_job_count(specs):
    """Once the run's end (a usage error, exit 2); now that kernel's error, the others checked (issue #35 item 6)."""
    chosen = [specs[n] for n in ("good", "wrong_dtype", "slow")]
    for jobs in (1, 3):
        reports = check_all(chosen, OPTS, jobs=jobs)
        assert {r.name: r.verdict for r in reports} == {"good": "pass", "wrong_dtype": "error", "slow": "pass"}
        assert "returned output 'y' of dtype torch.float64" in reports[1].error


def test_progress_counts_kernels_done_and_names_those_running(specs, monkeypatch, tmp_path):
    from verifier.isolation import durations

    monkeypatch.setattr(durations, "_path", lambda: tmp_path / "none.json")  # no earlier run's order: the spec's
    seen = []

    class Bar:
        def kernels(self, done, total, running, finished=None):
            seen.append((done, total, tuple(running), finished))

    check_all([specs[n] for n in ("slow", "good", "wrong")], OPTS, progress=Bar(), jobs=2)
    assert seen[0][0] == 0 and seen[0][2] == ("slow", "good")  # two lanes: two running at once
    assert [d for d, *_ in seen] == sorted(d for d, *_ in seen)
    assert seen[-1][:3] == (3, 3, ())
    assert {n for *_, f in seen if f for n in f.split(", ")} == {"slow", "good", "wrong"}


def test_forks_do_not_run_beside_threads(specs):
    with pytest.raises(ValueError, match="forks cannot run beside threads"):
        parallel.run_parallel([(0, specs["good"], parallel.FORK), (1, specs["slow"], parallel.CHILD)], OPTS, 2)


def test_default_jobs_one_per_cpu_capped_by_free_gpu_memory():
    assert parallel.default_jobs("cpu", cpus=16) == 16
    gib = 1 << 30
    free = {"0": 140 * gib, "GPU-a": 140 * gib, "1": 5 * gib, "GPU-b": 5 * gib}
    # one H200: 16 CPUs, 140 GiB free hold 70 children: the CPUs decide
    assert parallel.default_jobs("cuda", env={"CUDA_VISIBLE_DEVICES": "0"}, cpus=16, physical=2, free=free) == 16
    # a GPU with 5 GiB free holds two 2-GiB children
    assert parallel.default_jobs("cuda", env={"CUDA_VISIBLE_DEVICES": "GPU-b"}, cpus=16, physical=2, free=free) == 2
    assert parallel.default_jobs("cuda", env={}, cpus=128, physical=2, free=free) == 72  # 70 + 2 children
    assert parallel.default_jobs("cuda", env={}, cpus=8, physical=2, free={}) == 8  # no nvidia-smi answer
    assert parallel.default_jobs("cuda", env={"CUDA_VISIBLE_DEVICES": "1"}, cpus=8, physical=2,
                                 free={"1": gib}) == 1  # never 0


def test_lanes_spread_children_over_the_gpus_round_robin():
    assert parallel.lane_env(3, ["0"]) is None  # one GPU: left as it is
    assert [parallel.lane_env(k, ["0", "1", "2"])["CUDA_VISIBLE_DEVICES"] for k in range(4)] == ["0", "1", "2", "0"]


@pytest.mark.parametrize("raw", ["0", "-2", "two", "1.5", True])
def test_jobs_setting_is_validated(raw):
    with pytest.raises(UsageError, match="not a positive whole number"):
        check_setting("jobs", raw, "--jobs")


def test_jobs_setting_auto_and_numbers():
    assert check_setting("jobs", "auto") is None and check_setting("jobs", None) is None
    assert check_setting("jobs", "4") == 4 and check_setting("jobs", 1) == 1


def test_cli_names_the_bad_jobs_value_and_the_variable(spec_file, capsys, monkeypatch):
    assert main(["check", str(spec_file), "-j", "0"]) == 2
    assert "--jobs '0' is not a positive whole number" in capsys.readouterr().err
    monkeypatch.setenv("VERIFIER_JOBS", "many")
    assert main(["check", str(spec_file)]) == 2
    assert "VERIFIER_JOBS 'many'" in capsys.readouterr().err


def test_cli_same_report_and_exit_code_at_any_jobs(spec_file, tmp_path, capsys):
    outs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"j{jobs}.txt"
        code = main(["check", str(spec_file), "--kernel", "good", "--kernel", "wrong", "--kernel", "slow",
                     "--level", "quick", "--case", "normal_small", "--device", "cpu", "-j", jobs, "--output", str(out)])
        outs.append((code, out.read_text()))
    assert outs[0] == outs[1] and outs[0][0] == 1
    err = capsys.readouterr().err
    assert "3 kernels, 2 pass, 1 fail" in err
