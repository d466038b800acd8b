"""tools/changed_kernels.py on a throwaway git repository: a changed header, Triton helper module, spec
file or checker file selects exactly the kernels built from it."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from verifier.declare import registry
from verifier.errors import UsageError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import changed_kernels as ck  # noqa: E402

GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}

FILES = {
    "kernels/cuda/detail/deep.cuh": "#pragma once\n#define DEEP 1\n",
    "kernels/cuda/common.cuh": '#pragma once\n#include "detail/deep.cuh"\n#include <cuda_fp16.h>\n',
    "kernels/cuda/a.cu": '#include "common.cuh"\nextern "C" __global__ void k(float* y) {}\n',
    "kernels/cuda/b.cu": 'extern "C" __global__ void k(float* y) {}\n',
    "kernels/cuda/ab_spec.py": """
        from verifier.spec import CudaKernel, Launch, dtypes

        def _launches(M, N, dt, params):
            return [Launch("k", (M, 1, 1), (32, 1, 1), ("x", "y", "M", "N"))]

        KERNELS = [CudaKernel(name="cu-a", op="softmax", source="a.cu", launches=_launches, dtypes=[dtypes("f32")]),
                   CudaKernel(name="cu-b", op="softmax", source="b.cu", launches=_launches, dtypes=[dtypes("f32")])]
    """,
    "kernels/triton/tri_common.py": "BLOCK = 128\n",
    "kernels/triton/tri.py": "import math\nfrom tri_common import BLOCK\n\ndef launch(inputs, outputs, params, dt):\n    pass\n",
    "kernels/triton/spec.py": """
        from verifier.spec import TritonKernel, dtypes

        KERNELS = [TritonKernel(name="tri", op="softmax", module="tri.py", launcher="launch", dtypes=[dtypes("f32")])]
    """,
    "kernels/py/py_spec.py": """
        from verifier.spec import CallableKernel, dtypes

        def fn(inputs, outputs, params, dt):
            pass

        KERNELS = [CallableKernel(name="py", op="softmax", fn=fn, dtypes=[dtypes("f32")])]
    """,
    "verifier/judge/compare.py": "# stands in for the checker's own code\n",
    "README.md": "docs\n",
}


def git(root, *args):
    return subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path, monkeypatch):
    for name, text in FILES.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip())
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "base")
    git(tmp_path, "tag", "base")
    monkeypatch.chdir(tmp_path)
    return tmp_path.resolve()


def edit(root, name, extra="// changed\n"):
    p = root / name
    p.write_text(p.read_text() + extra)


def selected(root, **kw):
    specs = registry.load([str(root / "kernels")])
    return [s.name for s, _ in ck.select(specs, ck.changed_files("base", root), root, **kw)]


def test_nothing_changed_selects_nothing(repo, capsys):
    assert selected(repo) == []
    assert ck.main(["--since", "base"]) == 0
    assert capsys.readouterr().out == ""


def test_a_committed_header_change_selects_the_kernel_including_it(repo, capsys):
    edit(repo, "kernels/cuda/common.cuh")
    git(repo, "commit", "-qam", "change header")
    assert selected(repo) == ["cu-a"]
    assert ck.main(["--since", "base"]) == 0
    assert capsys.readouterr().out.split() == ["kernels/cuda/ab_spec.py", "--kernel", "cu-a"]


def test_a_header_reached_through_another_header_counts(repo):
    edit(repo, "kernels/cuda/detail/deep.cuh")
    git(repo, "commit", "-qam", "deep change")
    assert selected(repo) == ["cu-a"]


def test_uncommitted_and_staged_changes_count(repo):
    edit(repo, "kernels/triton/tri_common.py", "BLOCK2 = 256\n")  # imported by the Triton module
    assert selected(repo) == ["tri"]
    edit(repo, "kernels/cuda/b.cu")
    git(repo, "add", "kernels/cuda/b.cu")  # staged, not committed
    assert selected(repo) == ["cu-b", "tri"]


def test_a_changed_spec_file_selects_all_its_kernels(repo):
    edit(repo, "kernels/cuda/ab_spec.py", "# tweak\n")
    edit(repo, "kernels/py/py_spec.py", "# tweak\n")
    assert selected(repo) == ["cu-a", "cu-b", "py"]


def test_a_new_untracked_header_included_by_a_kernel_selects_it(repo):
    edit(repo, "kernels/cuda/b.cu", '#include "new.cuh"\n')
    git(repo, "commit", "-qam", "include a header not written yet")
    git(repo, "tag", "-f", "base")
    (repo / "kernels/cuda/new.cuh").write_text("#pragma once\n")  # untracked
    assert ck.changed_files("base", repo) == {"kernels/cuda/new.cuh"}
    assert selected(repo) == ["cu-b"]


def test_unrelated_files_select_nothing(repo):
    edit(repo, "README.md")
    git(repo, "commit", "-qam", "docs")
    assert selected(repo) == []


def test_a_change_to_the_checker_selects_every_kernel_unless_ignored(repo, capsys):
    edit(repo, "verifier/judge/compare.py")
    assert selected(repo) == ["cu-a", "cu-b", "py", "tri"]
    assert selected(repo, ignore_framework=True) == []
    assert ck.main(["--since", "base", "--print", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kernels"][0] == {"name": "cu-a", "spec": "kernels/cuda/ab_spec.py", "because": ["verifier/judge/compare.py"]}


def test_a_bad_ref_is_a_usage_error_with_a_fix(repo, capsys):
    with pytest.raises(UsageError, match="nosuchref") as e:
        ck.changed_files("nosuchref", repo)
    assert "fetch-depth" in e.value.fix
    assert ck.main(["--since", "nosuchref"]) == 2
    assert "changed_kernels: error:" in capsys.readouterr().err


def test_outside_a_git_checkout_is_a_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert ck.main(["--since", "main"]) == 2
    assert "git rev-parse" in capsys.readouterr().err
