"""The child pytest that re-runs a test after a CUDA fault must load the plugin, however the parent did.

Seen on the H200 (2026-11-30): in a checkout loaded with `-p verifier.pytest_plugin` the child was started
without it and rejected every --verifier-* option (exit 4), so the tests after a crash gave no result. The
entry point is now named by the module path, so the child always names it: a second load is a no-op.
"""
import subprocess
import sys
import textwrap

from child_sessions import NO_HYPOTHESIS_PLUGIN


def _child_command_from(tmp_path, *plugin_args):
    test = tmp_path / "test_probe.py"
    test.write_text(textwrap.dedent("""
        def test_probe(request):
            from verifier.plugin.children import child_command
            print("CMD", child_command(request.config, "suites/x.py::t", "j.xml"))
    """))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", *NO_HYPOTHESIS_PLUGIN,
                          *plugin_args, str(test), "--verifier-device", "cpu"], capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    (line,) = [ln for ln in out.stdout.splitlines() if "CMD" in ln]
    return line


def test_child_names_the_plugin_however_the_parent_loaded_it(tmp_path):
    for plugin_args in ((), ("-p", "verifier.pytest_plugin")):  # entry point; entry point and -p (one plugin)
        line = _child_command_from(tmp_path, *plugin_args)
        assert "'-p', 'verifier.pytest_plugin'" in line
