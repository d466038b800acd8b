"""One kernel's problem stays that kernel's (issue #23): a bool supports(), a Triton launcher that cannot be
loaded, a spec found malformed while it runs, a Triton compiler limit on some shapes — each is a finding or that
kernel's error; the other kernels are checked and the run exits 1, never 2 or 3."""
import json
import textwrap

from verifier import cli
from verifier.launch.triton import triton_mode

SPEC = textwrap.dedent('''
    import torch
    from verifier.spec import CallableKernel, TritonKernel, dtypes

    def good(i, o, p, d):
        o["y"].copy_(torch.softmax(i["x"].float(), -1).to(o["y"].dtype))

    KERNELS = [
        CallableKernel(name="bool-supports", op="softmax", fn=good, dtypes=[dtypes("f32")],
                       supports=lambda M, N, dt: N <= 4096),
        TritonKernel(name="no-module", op="softmax", module="missing.py", launcher="launch", dtypes=[dtypes("f32")]),
        TritonKernel(name="no-launcher", op="softmax", module="kern.py", launcher="nope", dtypes=[dtypes("f32")]),
        TritonKernel(name="smem-limit", op="softmax", module="kern.py", launcher="launch", dtypes=[dtypes("f32")]),
        CallableKernel(name="good", op="softmax", fn=good, dtypes=[dtypes("f32")]),
    ]
''')

KERN = textwrap.dedent('''
    import torch
    import triton
    from triton.runtime.errors import OutOfResources

    @triton.jit
    def _noop(x_ptr):
        pass

    def launch(inputs, outputs, params, dt):
        N = inputs["x"].shape[-1]
        if N > 2048:  # as Triton's compiler refuses a block whose shared memory does not fit
            raise OutOfResources(N * 96 + 32, 232448, "shared memory")
        _noop[(1,)](inputs["x"])  # a launcher must launch Triton (one that only computes with torch is an error)
        outputs["y"].copy_(torch.softmax(inputs["x"].float(), -1))
''')


def test_every_kernel_is_reported_and_the_run_exits_1(tmp_path, capsys):
    (tmp_path / "mixed_spec.py").write_text(SPEC)
    (tmp_path / "kern.py").write_text(KERN)
    out = tmp_path / "r.json"
    # The Triton kernels here need the mode this process has (or would) set up: in a GPU machine's worker, one that
    # already ran Triton compiled refuses the interpreter (a usage error, exit 2), so the run uses its GPU there.
    device = "cuda" if triton_mode() == "compiled" else "cpu"
    code = cli.main(["check", str(tmp_path / "mixed_spec.py"), "--level", "quick", "--device", device,
                     "--format", "json", "--output", str(out)])
    err = capsys.readouterr().err
    assert code == 1, err
    kernels = {k["name"]: k for k in json.loads(out.read_text())["kernels"]}
    assert set(kernels) == {"bool-supports", "no-module", "no-launcher", "smem-limit", "good"}
    assert kernels["good"]["verdict"] == "pass"
    for name, words in (("bool-supports", "returned True (bool)"), ("no-module", "missing.py does not exist"),
                        ("no-launcher", "has no function 'nope'")):
        assert kernels[name]["verdict"] == "error" and words in kernels[name]["error"], kernels[name]
    assert "internal error" not in err and "bug in kernel-verifier" not in err
    limit = kernels["smem-limit"]
    assert limit["verdict"] == "fail"
    refusals = [f for f in limit["findings"] if f["check"] == "refusal"]
    assert refusals and all("the Triton compiler cannot build the kernel for it: OutOfResources: out of resource: "
                            "shared memory" in f["message"] and "declare the limit in supports()" in f["message"]
                            for f in refusals), refusals
    assert not [f for f in limit["findings"] if f["check"] == "crash"]


BAD = textwrap.dedent('''
    import torch
    from verifier.spec import CallableKernel, CudaKernel, Launch, dtypes

    def good(i, o, p, d):
        return {"y": torch.softmax(i["x"].float(), -1).to(o["y"].dtype)}

    def wrong_shape(i, o, p, d):
        return {"y": torch.softmax(i["x"].float(), -1).to(o["y"].dtype)[:, :1]}

    def wrong_dtype(i, o, p, d):
        return {"y": torch.softmax(i["x"].double(), -1)}

    KERNELS = [
        CallableKernel(name="wrong-shape", op="softmax", fn=wrong_shape, dtypes=[dtypes("f32")]),
        CallableKernel(name="wrong-dtype", op="softmax", fn=wrong_dtype, dtypes=[dtypes("f32")]),
        CudaKernel(name="no-source", op="softmax", source="missing.cu", dtypes=[dtypes("f32")],
                   launches=lambda M, N, dt, p: [Launch("k", (M,), (256,), ("x", "y", "M", "N"))]),
        CallableKernel(name="good", op="softmax", fn=good, dtypes=[dtypes("f32")]),
    ]
''')


def test_a_wrong_output_shape_or_a_missing_cu_is_that_kernels_error_and_the_good_kernel_passes(tmp_path, capsys):
    """Issue #35 item 6: each was the run's end (exit 2, the good kernel's result dropped)."""
    (tmp_path / "bad_spec.py").write_text(BAD)
    out = tmp_path / "r.json"
    code = cli.main(["check", str(tmp_path / "bad_spec.py"), "--level", "quick", "--device", "cpu",
                     "--format", "json", "--output", str(out)])
    err = capsys.readouterr().err
    assert code == 1, err
    kernels = {k["name"]: k for k in json.loads(out.read_text())["kernels"]}
    assert kernels["good"]["verdict"] == "pass", kernels["good"]
    for name, words, fix in (
            ("wrong-shape", "fn() of spec file", "return tensors of the op's output shapes"),
            ("wrong-dtype", "returned output 'y' of dtype torch.float64", "return the declared output dtype"),
            ("no-source", "missing.cu does not exist", "set the kernel's source= to its .cu file")):
        k = kernels[name]
        assert k["verdict"] == "error" and k["error_kind"] == "user", k
        assert words in k["error"] and f"fix: {fix}" in k["error"], k["error"]
    assert "output 'y' of shape (" in kernels["wrong-shape"]["error"]
    assert str(tmp_path / "bad_spec.py") in kernels["no-source"]["error"]  # which spec file to fix
    assert "internal error" not in err and "Traceback" not in err
