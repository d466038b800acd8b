"""Loads the kernel-verifier pytest plugin in a checkout that is not installed (no ``pip install -e .``, so no
``pytest11`` entry point): the suites then collect with it, from ``PYTHONPATH=.`` or pytest's rootdir on
``sys.path``. Installed, the entry point has the same name (the module path), and this second load is a no-op.

This repository's own tests follow the suites' rule: a test whose skip / skipif marks already say, at collection,
that it can only skip on this machine (no GPU, an optional package or capture not installed) is not run; the
plugin's last line counts it, with its reason, beside the suite tests it does not generate."""
import pytest

pytest_plugins = ["verifier.pytest_plugin"]


@pytest.hookimpl(trylast=True)  # after the plugin, which counts the suite tests it left without a kernel its own way
def pytest_collection_modifyitems(config, items):
    from _pytest.skipping import evaluate_skip_marks  # pytest's own reading of skip / skipif marks

    from verifier.plugin.session import NOT_GENERATED

    keep = []
    for item in items:
        skipped = evaluate_skip_marks(item)
        if skipped is None:
            keep.append(item)
        else:
            NOT_GENERATED[skipped.reason] += 1
    items[:] = keep
