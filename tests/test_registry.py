"""verifier.declare.registry: finding spec files, loading them, and the usage errors for bad ones."""
import pytest

from verifier.declare import registry
from verifier.errors import SpecError, UsageError

GOOD = """
from verifier.spec import CallableKernel, dtypes
KERNELS = [CallableKernel(name="{name}", op="softmax", fn=lambda i, o, p, d: None, dtypes=[dtypes("f32")])]
"""


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_finds_spec_py_and_star_spec_py_recursively(tmp_path):
    write(tmp_path / "a" / "spec.py", GOOD.format(name="a"))
    write(tmp_path / "b" / "x_spec.py", GOOD.format(name="b"))
    write(tmp_path / "b" / "helper.py", "raise RuntimeError('not a spec file: never imported')")
    files = registry.find_spec_files([tmp_path])
    assert [f.name for f in files] == ["spec.py", "x_spec.py"]
    kernels = registry.load([tmp_path])
    assert [k.name for k in kernels] == ["a", "b"] and kernels[0].origin == str(files[0])
    assert [k.name for k in registry.load([tmp_path], ["b*"])] == ["b"]


def test_bundled_kernels_directory_loads():
    names = [k.name for k in registry.load(["kernels"])]
    assert any(n.startswith("torch-") for n in names) and any(n.startswith("cuda-") for n in names)
    assert len(names) == len(set(names))


@pytest.mark.parametrize("files, words", [
    ({}, "does not exist"),
    ({"notes.txt": "x"}, "is not a Python spec file"),
    ({"dir/readme.md": "x"}, "no spec files under"),
    ({"k_spec.py": "KERNELS = []"}, "declare no kernels"),
    ({"k_spec.py": "X = 1"}, "defines no KERNELS"),
    ({"k_spec.py": "KERNELS = [1]"}, "KERNELS must be a list of CudaKernel / TritonKernel / CallableKernel"),
    ({"k_spec.py": "import os\nraise ValueError('bad config')"}, "k_spec.py:2 failed to import: ValueError: bad config"),
])
def test_bad_paths_and_spec_files_are_usage_errors(tmp_path, files, words):
    for name, text in files.items():
        write(tmp_path / name, text)
    target = tmp_path / (next(iter(files)).split("/")[0] if files else "missing")
    with pytest.raises(UsageError, match=words.replace("(", r"\(").replace(".", r"\.")) as e:
        registry.load([target])
    assert e.value.fix and e.value.exit_code == 2


def test_spec_field_error_names_the_file_and_field(tmp_path):
    p = write(tmp_path / "k_spec.py", GOOD.format(name="k").replace('op="softmax"', 'op="softmaxx"'))
    with pytest.raises(SpecError) as e:
        registry.load([p])
    assert str(p) in e.value.message and "field 'op' is 'softmaxx'" in e.value.message and "softmax" in e.value.fix


def test_duplicate_names_and_unmatched_globs(tmp_path):
    write(tmp_path / "a_spec.py", GOOD.format(name="same"))
    write(tmp_path / "b_spec.py", GOOD.format(name="same"))
    with pytest.raises(SpecError, match="declared twice"):
        registry.load([tmp_path])
    with pytest.raises(UsageError, match="no kernel matches zzz"):
        registry.load([tmp_path / "a_spec.py"], ["zzz"])
