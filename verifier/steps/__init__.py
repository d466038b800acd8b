"""The battery's steps, one module each, each public for callers that run one check at a time (the pytest
plugin's test bodies, verifier.plugin.checker): a suite test and ``verifier check`` then judge the same input
the same way.

build (build and resources) · refusal · values (one input through the value, invariant, nan-inf, unwritten
and out-of-range-write checks) · hypothesis (drawn shapes through the values step) · determinism.
The orchestrator that runs them in order for one kernel, and for many, is verifier.battery.
"""
