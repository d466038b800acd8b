"""The declare stage: kernels under test declared as data (``KernelSpec`` and its three kinds, launches,
workspaces, expectations, contracts), the spec files that hold them (``registry``) and whose fault an exception
in a spec's own code is (``usercode``). Spec files reach all of it through the public ``verifier.spec``."""
