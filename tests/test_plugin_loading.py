"""How the plugin gets loaded, and what it leaves alone.

- The ``pytest11`` entry point is named by the module path, so ``-p verifier.pytest_plugin`` and the top-level
  conftest.py's ``pytest_plugins`` name the same plugin: loading it twice is a no-op, not "Plugin already
  registered under a different name".
- An uninstalled checkout (no entry point) collects the suites with the plugin, through conftest.py.
- In a session that selects no verifier test the plugin is inert: Hypothesis keeps its own default profile
  and the environment keeps no TRITON_INTERPRET; a session with a suite test does get the Triton mode.
"""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from child_sessions import NO_HYPOTHESIS_PLUGIN

REPO = Path(__file__).resolve().parents[1]


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VERIFIER_", "PYTEST_XDIST", "PYTEST_ADDOPTS")) and k != "TRITON_INTERPRET"}
    env.update(extra)
    return env


def _pytest(*args, cwd, env=None, timeout=240):
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
                           *NO_HYPOTHESIS_PLUGIN, *args],
                          cwd=cwd, env=env or _env(), capture_output=True, text=True, timeout=timeout)


def test_entry_point_and_explicit_load_are_one_plugin():
    r = _pytest("-p", "verifier.pytest_plugin", "--co", "-q", "tests/test_ulp.py", "--verifier-device", "cpu",
                cwd=REPO)  # the entry point, conftest.py and -p: three loads of one plugin
    assert r.returncode == 0, r.stdout + r.stderr
    assert "already registered" not in r.stdout + r.stderr


def test_uninstalled_checkout_collects_the_suites_with_the_plugin():
    """No entry points at all (as without `pip install -e .`): conftest.py loads the plugin from PYTHONPATH."""
    env = _env(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTHONPATH=str(REPO))
    r = _pytest("--co", "-q", "suites/test_ops.py", "-k", "test_softmax", "--verifier-device", "cpu",
                "--verifier-kernels", "torch-softmax", cwd=REPO, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "suites/test_ops.py::test_softmax[torch-softmax-f32-normal_small]" in r.stdout, r.stdout


UNRELATED = '''
import os

from hypothesis import settings


def test_untouched(request):
    assert request.config.pluginmanager.has_plugin("verifier.pytest_plugin")  # loaded, through the entry point
    assert settings().max_examples == 100  # Hypothesis's own default: no profile loaded
    assert "TRITON_INTERPRET" not in os.environ
'''

SUITE = '''
import os

import pytest

pytestmark = pytest.mark.verifier(op="softmax")


def test_suite(verifier_kernel):
    assert os.environ.get("TRITON_INTERPRET") == "1"  # a verifier session on the CPU: interpreted Triton
'''


def test_plugin_is_inert_in_a_session_without_verifier_tests(tmp_path):
    (tmp_path / "test_unrelated.py").write_text(textwrap.dedent(UNRELATED))
    r = _pytest("-q", "test_unrelated.py", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    # The same plugin does act in a session that selects a suite test: the check above can fail.
    (tmp_path / "test_suite.py").write_text(textwrap.dedent(SUITE))
    r = _pytest("-q", "test_suite.py", "test_unrelated.py", "--verifier-device", "cpu",
                "--verifier-kernels", "torch-softmax", cwd=tmp_path)
    assert r.returncode == 1 and "1 failed, 1 passed" in r.stdout, r.stdout + r.stderr
    assert "test_unrelated.py::test_untouched" in r.stdout and "TRITON_INTERPRET" in r.stdout
