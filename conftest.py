"""Loads the kernel-verifier pytest plugin in a checkout that is not installed (no ``pip install -e .``, so no
``pytest11`` entry point): the suites then collect with it, from ``PYTHONPATH=.`` or pytest's rootdir on
``sys.path``. Installed, the entry point has the same name (the module path), and this second load is a no-op."""
pytest_plugins = ["verifier.pytest_plugin"]
