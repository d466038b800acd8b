"""A finding every autotune config meets (a refusal on a shape no config compiles) is one finding whose label lists
the configs, not one copy per config (flash-linear-attention's norm + gate repeated it three times); findings that
differ stay apart, each under its config (verifier.battery.plan.labelled)."""
from verifier.battery.plan import labelled
from verifier.results.findings import Finding
from verifier.results.kernel import KernelReport
from verifier.spec import CallableKernel, dtypes


def _report():
    return KernelReport(spec=CallableKernel(name="k", op="softmax", fn=lambda *a: None, dtypes=[dtypes("f32")]),
                        device="cpu")


def _run(report, config, *messages):
    before = len(report.findings)
    for m in messages:
        report.add(Finding("refusal", m, kernel="k", dtype="f32", input="vocab_152064", shape=(2, 152064)))
    labelled(report, before, config)


def test_the_same_finding_under_every_config_is_one_finding_listing_them():
    r = _report()
    _run(r, "autotune config 1 of 3 (BLOCK=1024)", "out of shared memory")
    _run(r, "autotune config 2 of 3 (BLOCK=2048)", "out of shared memory", "another failure")
    _run(r, "autotune config 3 of 3 (BLOCK=4096)", "out of shared memory")
    msgs = [f.message for f in r.findings]
    assert len(msgs) == 2, msgs
    assert msgs[0] == ("out of shared memory\n    under autotune config 1 of 3 (BLOCK=1024); autotune config 2 of 3 "
                       "(BLOCK=2048); autotune config 3 of 3 (BLOCK=4096)")
    assert msgs[1] == "another failure\n    under autotune config 2 of 3 (BLOCK=2048)"


def test_without_configs_nothing_is_labelled_or_joined():
    r = _report()
    _run(r, "", "a", "a")
    assert [f.message for f in r.findings] == ["a", "a"]
